"""A suite's variants on one shared cluster (harness.cluster.shared), on a real 3-broker
cluster: a broker crash healed by its restart leaves the cluster to the next variant, a
broker left dead gets it replaced; each run's history holds only its own group, topics and
process events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.supervision.processes import registered
from oracle import load_history
from tests.integration.conftest import lab


def _scenario(name: str, faults: list[dict], duration_s: float) -> dict:
    return {
        "name": name,
        "seed": 1,
        "duration_s": duration_s,
        "cluster": {"kafka": "3.9", "brokers": 3},
        "topics": [{"name": "events", "partitions": 3, "replication_factor": 3}],
        "workload": {
            "group": "shared",
            "protocol": "classic-eager",
            "consumers": 2,
            "commit": "sync",
            "session_timeout_ms": 6000,
            "heartbeat_interval_ms": 1000,
            "producer": {"rate": 100},
        },
        "faults": faults,
        "recovery": {"timeout_s": 60, "stable_for_s": 2},
    }


SCENARIOS = [
    _scenario("healed", [{"kind": "crash", "target": "broker-2", "at_s": 2, "restart_after_s": 3}], 10),
    _scenario("reuses", [{"kind": "pause", "target": "consumer-1", "at_s": 2, "duration_s": 2}], 8),
    _scenario("breaks", [{"kind": "crash", "target": "broker-3", "at_s": 2}], 8),  # no restart: stays dead
    _scenario("fresh", [], 6),
]


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shared")
    for s in SCENARIOS:
        (tmp / f"{s['name']}.yaml").write_text(yaml.safe_dump(s))
    (tmp / "suite.yaml").write_text(
        yaml.safe_dump({"name": "shared", "scenarios": [f"{s['name']}.yaml" for s in SCENARIOS]})
    )
    proc = lab("suite", str(tmp / "suite.yaml"), "--runs-dir", str(tmp / "runs"), timeout=600)
    [out] = (tmp / "runs").glob("suite-*-shared")
    return proc, out, {v["scenario"]: v for v in json.loads((out / "suite.json").read_text())["variants"]}


def test_a_healthy_cluster_is_lent_on_and_an_unhealthy_one_replaced(suite_run):
    proc, out, variants = suite_run
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert {name: v["state"] for name, v in variants.items()} == dict.fromkeys(variants, "passed")
    # The crash that was healed left the cluster healthy: lent to two more runs. The broker
    # left dead made it unhealthy: stopped, and the last run started a fresh one.
    assert [variants[s["name"]]["shared_cluster"] for s in SCENARIOS] == [1, 2, 3, 1]
    clusters = [(Path(variants[s["name"]]["run_dir"]) / "cluster").resolve().name for s in SCENARIOS]
    assert clusters == ["cluster-1", "cluster-1", "cluster-1", "cluster-2"]
    assert "unhealthy after the run: broker-3 is not running" in " ".join((proc.stdout + proc.stderr).split())
    # Nothing of the suite's clusters outlives it.
    assert [p for p in registered() if p.owner.startswith(f"suite:{out.resolve()}")] == []


def test_each_history_holds_only_its_own_run(suite_run):
    _, _, variants = suite_run
    for name, v in variants.items():
        run_dir = Path(v["run_dir"])
        events = load_history(run_dir)
        [started] = [e for e in events if e["name"] == "run_started"]
        prefix = f"rl-{run_dir.name}-"
        assert started["group"] == prefix + "shared" and [t["topic"] for t in started["topics"]] == [prefix + "events"]
        # The brokers' GroupCoordinator lines read into this history are this run's group's only.
        from_logs = [e for e in events if e.get("clock") == "broker-log"]
        assert from_logs and {e.get("group") for e in from_logs} <= {started["group"]}, name
        brokers = [
            (e["name"], e["process"])
            for e in events
            if e["name"] in ("process_started", "process_exited") and e["process"].startswith("broker-")
        ]
        if name == "healed":  # the crash and the restart, recorded in the run that held the cluster
            assert brokers == [("process_exited", "broker-2"), ("process_started", "broker-2")]
        elif name == "breaks":
            assert brokers == [("process_exited", "broker-3")]
        else:
            assert brokers == []  # a shared cluster's start is no run's event
