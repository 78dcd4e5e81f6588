"""Seed 003's "rebalance takes minutes", and KIP-134's initial delay, measured on real brokers."""

from __future__ import annotations

import pytest

from tests.integration.conftest import assert_healed, small_scenario

MAX_POLL_MS = 20000


def test_an_eager_rebalance_waits_out_a_member_stuck_in_processing(module_run):
    """consumer-1 stops polling; consumer-3 joins. The group cannot finish joining until the
    stuck member rejoins or its rebalance timeout (= max.poll.interval.ms) expires, so the
    whole group stops for about max.poll.interval.ms."""
    scenario = small_scenario(
        "stuck-join",
        duration_s=50,
        faults=[
            {"kind": "poll-stall", "target": "consumer-1", "at_s": 8, "duration_s": 35},
            {"kind": "join-storm", "consumers": 1, "at_s": 8},
        ],
    )
    scenario["workload"]["max_poll_interval_ms"] = MAX_POLL_MS
    run = module_run("stuck-join", scenario)
    [join] = [e for e in run.named("fault_started") if e["kind"] == "join-storm"]
    assert join["details"]["started"] == ["consumer-3"]
    after = [
        r for r in run.verdict["rebalances"] if r["status"] == "completed" and r["start_mono_ms"] >= join["mono_ms"]
    ]
    slow = after[0]
    # It ended when the stuck member's max.poll.interval.ms ran out, counted from its last
    # poll (just before the stall began) — not when consumer-3, a new process, got to join.
    [stall] = run.named("poll_stall_started")
    assert abs(slow["end_mono_ms"] - (stall["mono_ms"] + MAX_POLL_MS)) <= 2000, slow
    assert MAX_POLL_MS - 4000 <= slow["duration_ms"] <= MAX_POLL_MS + 2000, slow
    # The broker's own clock agrees.
    assert slow["coordinator_ms"] is not None and abs(slow["coordinator_ms"] - slow["duration_ms"]) <= 1500, slow
    # Explained: the join phase waited for the stuck member until its rebalance timeout.
    assert (slow["cause"], slow["waited_for"]) == ("rebalance-timeout", "consumer-1"), slow["critical_path"]
    assert "stuck in processing" in slow["explanation"] and f"max.poll.interval.ms {MAX_POLL_MS}" in slow["explanation"]
    # Nobody consumed anything in the middle of it (after every member heard of it at its
    # next heartbeat): the eager group stopped the world.
    heard = scenario["workload"].get("heartbeat_interval_ms", 1000) + 1000
    middle = [
        e
        for e in run.named("records_consumed")
        if slow["start_mono_ms"] + heard < e["mono_ms"] < slow["end_mono_ms"] - 1000
    ]
    assert middle == [], middle[:3]
    assert_healed(run)


@pytest.mark.parametrize("delay_ms,expect_one", [(3000, True), (0, False)])
def test_a_join_storm_into_an_empty_group(module_run, delay_ms, expect_one):
    # Eight members within a second, in two waves: processes started at the same instant may well
    # land in one JoinGroup round even without the delay; a wave a second later cannot — unless
    # the 3 s initial delay (KIP-134) is still holding the group open for it. The delay is renewed
    # while newcomers keep joining within it: no 3 s gap between first JoinGroups is enough.
    scenario = small_scenario(
        f"storm-{delay_ms}",
        duration_s=20,
        faults=[{"kind": "join-storm", "consumers": 4, "at_s": 2}, {"kind": "join-storm", "consumers": 4, "at_s": 3}],
    )
    scenario["cluster"]["broker_config"] = {"group.initial.rebalance.delay.ms": delay_ms}
    scenario["workload"]["consumers"] = 0
    scenario["topics"] = [{"name": "events", "partitions": 8}]
    run = module_run(f"storm-{delay_ms}", scenario)
    generations = sorted({e["generation"] for e in run.before_recovery("group_joined")})
    stabilized = sorted({e["generation"] for e in run.before_recovery("coordinator_stabilized")})
    causes = {r["generation"]: (r["cause"], r["waited_for"]) for r in run.verdict["rebalances"]}
    if expect_one:
        first_joins = sorted({e["member"]: e["mono_ms"] for e in reversed(run.named("group_join_sent"))}.values())
        gaps = [round(b - a) for a, b in zip(first_joins, first_joins[1:], strict=False)]
        assert generations == [1] and stabilized == [1], (generations, stabilized, f"first JoinGroups {gaps} ms apart")
        # Explained: the coordinator itself held the new group open, for no member in particular.
        assert causes[1] == ("initial-delay", None), run.verdict["rebalances"][0]["critical_path"]
    else:
        # Several generations formed; a join that arrives before the leader's SyncGroup ends
        # one before the broker logs it stabilized, so only the last one surely did.
        assert len(generations) > 1 and stabilized[-1] == generations[-1], (generations, stabilized)
        # Explained: each generation after the first began with a storm member's JoinGroup, none held open.
        storm = {m for e in run.named("fault_started") for m in e["details"]["started"]}
        triggers = [
            wait
            for r in run.verdict["rebalances"]
            if r["generation"] > 1
            for wait in r["critical_path"]
            if wait["phase"] == "trigger"
        ]
        assert triggers and all(w["cause"] == "joined" and w["member"] in storm for w in triggers), triggers
        assert "initial-delay" not in {c for c, _ in causes.values()}
    members = {e["member"] for e in run.named("partitions_assigned") if e["generation"] == generations[-1]}
    assert len(members) == 8
    assert run.exit_code == 0, run.output[-3000:]
    assert_healed(run)


def test_killing_the_group_coordinator_moves_it_and_loses_nothing(module_run):
    scenario = small_scenario(
        "coordinator-crash",
        duration_s=40,
        faults=[
            # Down for 20 s: the observer sees the group's new coordinator 6-10 s after the kill (the
            # brokers' ZooKeeper session, then admin requests to the dead broker timing out).
            {"kind": "crash", "target": "coordinator", "at_s": 10, "restart_after_s": 20}
        ],
    )
    scenario["cluster"]["brokers"] = 3
    scenario["topics"] = [{"name": "events", "partitions": 6, "replication_factor": 3}]
    run = module_run("coordinator-crash", scenario)
    [started] = run.named("fault_started")
    assert started["requested_target"] == "coordinator" and started["target"].startswith("broker-")
    killed = int(started["target"].rsplit("-", 1)[1])
    [restarted] = run.started_after(started["target"], started)
    described = run.named("group_described")
    before = [e for e in described if e["mono_ms"] < started["mono_ms"]]
    assert before[-1]["coordinator"] == killed
    # The coordinator moved while the broker was down: judged before its restart, since a
    # preferred-leader election may hand the offsets partition (and the group) back after it.
    moved = [
        e
        for e in described
        if started["mono_ms"] < e["mono_ms"] < restarted["mono_ms"] and e["coordinator"] not in (None, killed)
    ]
    assert moved, [e for e in described if e["mono_ms"] > started["mono_ms"]][:5]
    # Written on change only: the move itself may be the STABLE description.
    assert [e for e in described if e["mono_ms"] >= moved[0]["mono_ms"] and e["state"] == "STABLE"]
    assert run.exit_code == 0, run.output[-3000:]
    assert run.verdict["checks"]["no-loss"]["status"] == "passed"
    assert_healed(run)
