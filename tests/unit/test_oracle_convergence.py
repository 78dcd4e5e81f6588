"""convergence: the group settles after the last fault heals, and lag drains."""

import pytest

from oracle import check_history

CHECK = "convergence"


def run(builder, **options):
    return check_history(builder.build(), {CHECK: options}).checks[CHECK]


@pytest.fixture
def recovered(pause_story):
    pause_story.at(25000).lag(dict.fromkeys(range(5), 0))
    pause_story.at(26000).done()
    pause_story["consumer-1"].stopped()  # teardown after done does not count
    pause_story["consumer-2"].stopped()
    return pause_story


def test_a_group_that_settles_after_the_heal_passes(recovered):
    result = run(recovered)
    assert result.status == "passed"
    # after the heal at 20000: zombie gone at 20010, eager revoke at 20100, all assigned at 20160
    assert result.detail["converged_after_ms"] == pytest.approx(160, abs=0.1)
    assert result.detail["since"] == "fault f1 healed"


def test_settling_later_than_the_bound_is_a_violation(recovered):
    [v] = run(recovered, within_s=0.1).violations
    assert v.kind == "slow-convergence"
    assert v.message == ("the group settled 160 ms after fault f1 healed (t+20.000s), later than the allowed 0.1 s")


def test_a_partition_nobody_owns_at_the_end_is_a_violation(history_builder):
    b = history_builder()
    b.consumer("consumer-1").start()
    b.consumer("consumer-2").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0, 1, 2], "consumer-2": [3]}, at=100)  # events-4 handed to nobody
    b.at(5000).done()
    [v] = run(b).violations
    assert v.kind == "not-converged"
    assert v.message == "the group never settled after the workload started (t+0.000s): at t+5.000s events-4 unowned"


def test_a_zombie_still_owning_at_the_end_is_a_violation(pause_story):
    pause_story.events = [e for e in pause_story.events if e["mono_ms"] < 20000]  # consumer-2 never resumes
    pause_story.at(20000).healed("pause", "consumer-2")
    pause_story.at(21000).done()
    [v] = run(pause_story).violations
    assert v.message.endswith(
        "events-3 owned by consumer-2 and consumer-1; events-4 owned by consumer-2 and consumer-1"
    )


def test_lag_must_drain(recovered):
    recovered.events = [e for e in recovered.events if e["name"] != "lag_sampled"]
    recovered.at(25500).lag({0: 0, 1: 0, 2: 40, 3: 0, 4: 0})
    [v] = run(recovered).violations
    assert (v.kind, v.partition) == ("lag-not-drained", "events-2")
    assert "events-2 lag 40 (committed 60, high watermark 100)" in v.message


def test_an_interrupted_run_is_skipped(pause_story):
    assert run(pause_story).status == "skipped"


def _steady_group(b, stall_at: int | None):
    """One member owning events-0, records acknowledged every second for 60 s; it
    processes them every second, except from `stall_at` on."""
    c1 = b.consumer("consumer-1").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0]}, at=100)
    for second in range(1, 61):
        lo = (second - 1) * 10
        b.at(second * 1000).acked(0, lo, lo + 9)
        if stall_at is None or second * 1000 < stall_at:
            c1.at(second * 1000 + 50).consumed(0, lo, lo + 9)
    c1.at(61_000).consumed(0, 0 if stall_at is None else (stall_at // 1000 - 1) * 10, 599)  # catches up at last
    b.at(62_000).done()
    return c1


def test_a_partition_that_stalls_while_the_group_is_stable_is_a_violation(history_builder):
    b = history_builder(topics={"events": 1})
    _steady_group(b, stall_at=20_000)
    [v] = run(b, stall_s=15).violations
    assert v.kind == "stalled" and v.partition == "events-0"
    assert v.message.startswith("events-0 stalled for 41.0 s (t+20.000s..t+61.000s) with acknowledged records waiting")
    assert "owner: consumer-1" in v.message


def test_a_stall_behind_the_owners_other_backlog_says_what_the_owner_did_meanwhile(history_builder):
    """One member, two partitions: it works through events-1's backlog while events-0 waits
    (librdkafka serves one partition's fetched records before the next's). Still a stall —
    events-0 made no progress — but the report says the owner was busy, not stuck."""
    b = history_builder(topics={"events": 2})
    c1 = b.consumer("consumer-1").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0, 1]}, at=100)
    for second in range(1, 31):
        b.at(second * 1000).acked(0, (second - 1) * 10, second * 10 - 1)
        c1.at(second * 1000 + 50).consumed(1, (second - 1) * 100, second * 100 - 1)  # events-1 only
    c1.at(31_000).consumed(0, 0, 299)
    b.at(32_000).done()
    [v] = run(b, stall_s=15).violations
    assert v.kind == "stalled" and v.partition == "events-0"
    assert v.message.endswith(
        "; meanwhile consumer-1 processed 3,000 records of events-1: the owner kept processing, only not this partition"
    ), v.message


def test_a_stall_while_a_fault_is_active_is_excused(history_builder):
    b = history_builder(topics={"events": 1})
    _steady_group(b, stall_at=20_000)
    b.at(19_500).fault("pause", "consumer-1")
    b.at(60_900).healed("pause", "consumer-1")
    assert [v.kind for v in run(b, stall_s=15).violations] == []


def test_steady_progress_has_no_stall(history_builder):
    b = history_builder(topics={"events": 1})
    _steady_group(b, stall_at=None)
    assert run(b, stall_s=2).violations == []


def test_a_load_profile_is_judged_from_its_last_change_and_the_members_it_stopped_are_not_the_end(history_builder):
    """The group churned as the profile asked (group_resized); its last change stopped consumer-2,
    which says `end-of-run` like a member the teardown stops: the check goes on to `done`."""
    b = history_builder(topics={"events": 2})
    _c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=100)
    b.at(5000).emit("group_resized", "harness", members=1, started=[], stopped=["consumer-2"])
    c2.at(5010).revoked().stopped()
    b.rebalance(2, {"consumer-1": [0, 1]}, at=5100)
    b.at(9000).lag({0: 0, 1: 0})
    b.at(9100).done()
    result = run(b)
    assert result.status == "passed", result.violations
    assert result.detail["since"] == "the load profile's last change (to 1 members)"
    assert result.detail["converged_after_ms"] == pytest.approx(115, abs=1)  # consumer-1 owns both at 5115


def _looping_group(b, generations: int, every_ms: int = 2000):
    """Two members that form generation 1, then rejoin again and again: every later
    generation's leader fails to hand out an assignment (the members join but are never
    synced), so the group keeps rebalancing with nobody joining or leaving."""
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=100)
    for generation in range(2, generations + 2):
        t = generation * every_ms
        c1.at(t).revoked()
        c2.revoked()
        c1.join_sent()
        c2.join_sent()
        c1.at(t + 10).joined(generation, leader=True)
        c2.joined(generation)
    b.at((generations + 2) * every_ms).done()
    return b


def test_a_group_that_keeps_rebalancing_with_nothing_to_explain_it_is_a_rebalance_loop(history_builder):
    b = _looping_group(history_builder(), generations=6)
    [v] = run(b).violations
    assert v.kind == "rebalance-loop"
    # generation 1 is the group forming (the first after the anchor); 2–7 have nothing to explain them
    assert v.message == (
        "the group kept rebalancing after the workload started: 6 rebalances (generations 2–7) in 10.0 s "
        "from t+4.000s, each with the same members (consumer-1, consumer-2), none explained by a member "
        "joining or leaving, a subscription or partition change or a fault; at t+16.000s events-0,1,2,3,4 unowned"
    )
    assert {k: i.mono_ms for k, i in v.times.items()} == {"first": 4000.0, "last": 14000.0, "horizon": 16000.0}


def test_fewer_unexplained_rebalances_than_the_threshold_stay_not_converged(history_builder):
    b = _looping_group(history_builder(), generations=6)
    assert [v.kind for v in run(b, loop_rebalances=7).violations] == ["not-converged"]
    assert [v.kind for v in run(_looping_group(history_builder(), generations=4)).violations] == ["not-converged"]


def test_members_joining_explain_the_rebalances(history_builder):
    b = _looping_group(history_builder(), generations=6)
    for i, t in enumerate((5000, 9000)):  # a new member started before generations 3 and 5: runs of 2
        b.consumer(f"consumer-{3 + i}").at(t).start()
    assert [v.kind for v in run(b).violations] == ["not-converged"]


def test_an_active_fault_explains_the_rebalances(history_builder):
    b = _looping_group(history_builder(), generations=6)
    b.at(5000).fault("network-partition", "consumer-2")  # never healed: active to the end
    assert [v.kind for v in run(b).violations] == ["not-converged"]


def test_a_group_that_settles_in_time_after_a_few_rebalances_passes(history_builder):
    b = history_builder()
    b.consumer("consumer-1").start()
    b.phase("workload")
    for generation in range(1, 8):  # seven rebalances, the last assigns everything, within the bound
        b.rebalance(generation, {"consumer-1": [0, 1, 2, 3, 4]}, at=generation * 100)
    b.at(5000).done()
    assert run(b).status == "passed"
