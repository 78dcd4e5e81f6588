"""Faults on the cluster side: a broker pair partitioned, ZooKeeper paused, brokers bounced."""

from __future__ import annotations

import re

import pytest

from tests.integration.conftest import assert_healed


@pytest.fixture(scope="module")
def cluster_chaos(module_run):
    return module_run(
        "cluster-chaos",
        {
            "name": "cluster-chaos",
            "seed": 11,
            "duration_s": 55,
            "cluster": {"kafka": "3.9", "brokers": 3, "broker_config": {"replica.lag.time.max.ms": 4000}},
            "topics": [{"name": "events", "partitions": 6, "replication_factor": 3}],
            "workload": {"group": "cluster-chaos", "consumers": 2, "processing_ms": 1, "producer": {"rate": 100}},
            "faults": [
                {
                    "kind": "network",
                    "target": "broker-2",
                    "link": "broker-3",
                    "effect": "blackhole",
                    "at_s": 4,
                    "duration_s": 12,
                },
                {"kind": "pause", "target": "zookeeper-1", "at_s": 18, "duration_s": 3},
                {"kind": "rolling-restart", "targets": "brokers", "at_s": 24, "down_s": 2, "interval_s": 5},
            ],
            "recovery": {"timeout_s": 90},
        },
    )


def test_a_partition_between_two_brokers_shrinks_the_isr(cluster_chaos):
    [cut] = [e for e in cluster_chaos.named("fault_started") if e["kind"] == "network"]
    assert sorted(cut["details"]["proxies"]) == ["broker-2.to.broker-3", "broker-3.to.broker-2"]
    logs = "".join((cluster_chaos.run_dir / "cluster" / "logs" / f"broker-{b}.log").read_text() for b in (2, 3))
    # A leader on one side dropped the follower on the other side from its ISR.
    assert re.search(r"Shrinking ISR from [0-9,]*[23][0-9,]* to", logs)


def test_every_broker_was_bounced_in_turn(cluster_chaos):
    [rolling] = [e for e in cluster_chaos.named("fault_started") if e["kind"] == "rolling-restart"]
    assert rolling["details"]["order"] == ["broker-1", "broker-2", "broker-3"]
    restarts = [e["process"] for b in rolling["details"]["order"] for e in cluster_chaos.started_after(b, rolling)]
    assert restarts == ["broker-1", "broker-2", "broker-3"]
    exits = [
        e
        for e in cluster_chaos.named("process_exited")
        if e["process"].startswith("broker-") and e["mono_ms"] < cluster_chaos.named("phase")[-1]["mono_ms"]
    ]
    assert [e["returncode"] for e in exits] == [143, 143, 143]  # SIGTERM: controlled shutdown, clean exit


def test_the_group_rides_it_out(cluster_chaos):
    assert cluster_chaos.exit_code == 0, cluster_chaos.output[-3000:]
    assert cluster_chaos.verdict["checks"]["no-loss"]["status"] == "passed"
    assert_healed(cluster_chaos)
