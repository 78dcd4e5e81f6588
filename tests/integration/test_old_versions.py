"""An old Kafka release and an old client, really run, once: the smoke scenario on Kafka 3.3.2
(the oldest supported, in ZooKeeper mode, installed from Maven Central on first use) with its
members on confluent-kafka 2.2.0, in that release's own environment (installed on first use
too), judged by the same oracle. The history names what really ran.

The full matrices are benchmarks/kafka_releases.py and benchmarks/client_versions.py
(docs/inputs.md: Kafka releases, Client releases)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.integration.conftest import REPO, assert_healed

RELEASE = "3.3.2"
CLIENT = "confluent-kafka==2.2.0"


@pytest.fixture(scope="module")
def run(module_run):
    smoke = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    return module_run(
        "smoke-old-versions",
        {
            **smoke,
            "name": "smoke-kafka-3-3-2-client-2-2-0",
            "cluster": {**smoke["cluster"], "kafka": RELEASE},
            "workload": {**smoke["workload"], "client": CLIENT},
        },
    )


def test_the_run_passes_and_names_the_versions_it_ran(run):
    assert run.exit_code == 0, run.output[-3000:]
    assert run.verdict["status"] == "pass", run.verdict["checks"]
    [started] = run.named("run_started")
    assert (started["kafka"], started["metadata"], started["client"]) == (RELEASE, "zookeeper", CLIENT)
    recorded = json.loads((run.run_dir / "run.json").read_text())
    assert (recorded["kafka"], recorded["client"]) == (RELEASE, CLIENT)
    assert not run.named("log_unrecognised")
    assert_healed(run)


def test_the_brokers_lines_were_read_in_3_3s_wording(run):
    [started] = run.named("run_started")
    stabilized = [e for e in run.named("coordinator_stabilized") if e["group"] == started["group"]]
    assert len(stabilized) >= 2  # a generation per rebalance, from the brokers' own log
    assert {e["generation"] for e in stabilized} <= {e["generation"] for e in run.named("group_joined")}


def test_each_member_loaded_the_old_librdkafka_and_its_lines_were_read(run):
    members = run.named("consumer_started")
    assert {m["member"] for m in members} == {"consumer-1", "consumer-2", "consumer-3"}
    # What each process really loaded: librdkafka's own version string, not the requirement's.
    assert {(m["client_library"], m["client_version"]) for m in members} == {("librdkafka", "2.2.0")}
    assert {e["member"] for e in run.named("group_joined") if e["generation"] >= 1} == {m["member"] for m in members}
    # The producer and the observer stay on the harness's own (pinned) client.
    assert not any(e.get("client_version") for e in run.named("producer_started"))
