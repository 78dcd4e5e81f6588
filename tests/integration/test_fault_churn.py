"""Membership and topology churn, each one line of YAML, on real brokers."""

from __future__ import annotations

from tests.integration.conftest import assert_healed, small_scenario


def test_rolling_deploy_with_static_membership_causes_no_rebalance(module_run):
    """Each member is stopped and started again within its session timeout; with a
    group.instance.id the coordinator keeps its assignment: no new generation."""
    scenario = small_scenario(
        "static-deploy",
        duration_s=35,
        faults=[{"kind": "rolling-restart", "targets": "consumers", "at_s": 8, "down_s": 1, "interval_s": 4}],
    )
    scenario["workload"].update(protocol="classic-static", session_timeout_ms=10000)
    run = module_run("static-deploy", scenario)
    [started] = run.named("fault_started")
    assert started["details"]["order"] == ["consumer-1", "consumer-2"]
    restarts = [e for e in run.named("consumer_started") if e["incarnation"] == 2]
    assert {e["member"] for e in restarts} == {"consumer-1", "consumer-2"}
    generations = {e["generation"] for e in run.named("group_joined") if e["mono_ms"] > started["mono_ms"]}
    before = max(e["generation"] for e in run.named("group_joined") if e["mono_ms"] < started["mono_ms"])
    assert generations <= {before}, (before, generations)
    assert run.exit_code == 0, run.output[-3000:]
    assert_healed(run)


def test_scale_up_then_down_and_more_partitions(module_run):
    scenario = small_scenario(
        "scale",
        duration_s=40,
        faults=[
            {"kind": "scale", "consumers": 4, "at_s": 6},
            {"kind": "add-partitions", "topic": "events", "partitions": 8, "at_s": 14},
            {"kind": "scale", "consumers": 1, "at_s": 26},
        ],
    )
    run = module_run("scale", scenario)
    up, more, down = run.named("fault_started")
    assert up["details"]["changed"] == ["consumer-3", "consumer-4"]
    assert down["details"]["changed"] == ["consumer-2", "consumer-3", "consumer-4"]
    # The new partitions reached the group, and after scaling down one member owns all 8.
    assigned = {(p["topic"], p["partition"]) for e in run.named("partitions_assigned") for p in e["partitions"]}
    assert {("events", 6), ("events", 7)} <= assigned
    last = [e for e in run.named("partitions_assigned") if e["member"] == "consumer-1"][-1]
    assert len(last["partitions"]) == 8 and last["mono_ms"] > down["mono_ms"]
    assert run.exit_code == 0, run.output[-3000:]
    assert_healed(run)


def test_a_new_topic_matching_the_pattern_joins_the_assignment(module_run):
    scenario = small_scenario(
        "pattern", duration_s=30, faults=[{"kind": "create-topic", "topic": "events-extra", "partitions": 2, "at_s": 8}]
    )
    scenario["workload"]["topic_pattern"] = "^events.*"
    run = module_run("pattern", scenario)
    [created] = run.named("topic_created")
    assert created["subscribed"] is True
    got = [e for e in run.named("partitions_assigned") if any(p["topic"] == "events-extra" for p in e["partitions"])]
    # after the creation began (topic_created is written once its leaders are known: a member's
    # metadata refresh may see the topic first)
    [creating] = [e for e in run.named("fault_started") if e["kind"] == "create-topic"]
    assert got and got[0]["mono_ms"] > creating["mono_ms"]
    # Each member's own metadata matched the new topic (and the oracle holds each to its list).
    matched = {e["member"] for e in run.named("subscription_changed") if "events-extra" in e["topics"]}
    assert matched == {"consumer-1", "consumer-2"}
    assert run.exit_code == 0, run.output[-3000:]
    assert_healed(run)
