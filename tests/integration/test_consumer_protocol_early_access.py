"""The `consumer` protocol (KIP-848) on Kafka 3.7.2 in KRaft mode, its early access: members on a
confluent-kafka release that speaks ConsumerGroupHeartbeat v0 (librdkafka 2.4 … 2.9; 2.6.1 here), the
only version 3.7's brokers answer. Their epochs come partly from librdkafka itself (its log says them
late), the observer describes the group with 3.7's own ConsumerGroupDescribe schema; the history says
which release ran, which client each member loaded, and the oracle passes the run."""

from __future__ import annotations

from harness.components.install import install_kafka
from tests.integration.conftest import assert_healed, assert_observer_ran_throughout, small_scenario

RELEASE, CLIENT = "3.7.2", "confluent-kafka==2.6.1"


def test_the_consumer_protocol_runs_on_3_7_2_in_kraft_with_an_early_access_client(run_scenario):
    install_kafka(RELEASE, print)  # what a run does on first use
    scenario = small_scenario(
        "kip848-early-access",
        duration_s=20,
        faults=[{"kind": "pause", "target": "consumer-2", "at_s": 5, "duration_s": 10}],
    )
    scenario["cluster"] = {"kafka": RELEASE, "metadata": "kraft", "brokers": 1}
    scenario["workload"].update(protocol="consumer", assignor="uniform", client=CLIENT)
    run = run_scenario(scenario)
    [started] = run.named("run_started")
    assert (started["kafka"], started["metadata"], started["client"]) == (RELEASE, "kraft", CLIENT)
    members = run.named("consumer_started")
    assert {m["member"] for m in members} == {"consumer-1", "consumer-2"}
    assert {(m["protocol"], m["client_library"], m["client_version"]) for m in members} == {
        ("consumer", "librdkafka", "2.6.1")
    }
    # Every member joined with an epoch, and every assignment carries one.
    assert {e["member"] for e in run.named("group_joined") if e["generation"] >= 1} == {"consumer-1", "consumer-2"}
    assert all(e["generation"] is not None for e in run.named("partitions_assigned"))
    assert not run.named("log_unrecognised")
    # The observer saw the group stable with both members (3.7's describe), and never died.
    assert any(
        e["state"] == "STABLE" and e["covers_all"] and len(e["members"]) == 2 for e in run.named("group_described")
    )
    assert run.exit_code == 0, run.output[-3000:]
    assert run.verdict["status"] == "pass", run.verdict["skipped_checks"]
    assert_healed(run)
    assert_observer_ran_throughout(run)
