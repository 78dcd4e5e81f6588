"""Measuring rebalances: start, end, phases, trigger, coordinator clock, stop-the-world."""

import pytest

from oracle import History, check_history
from oracle.rebalances import (
    COMPLETED,
    INCOMPLETE,
    SUPERSEDED,
    rebalances_of,
    run_rebalances,
)

ms = lambda x: pytest.approx(x, abs=0.05)


def test_first_generation_starts_at_the_first_join_and_times_its_phases(pause_story):
    r = rebalances_of(History(pause_story.build()))[0]
    assert (r.generation, r.status, r.members, r.leader) == (1, COMPLETED, ["consumer-1", "consumer-2"], "consumer-1")
    assert r.start.mono_ms == ms(100) and r.end.mono_ms == ms(3190)
    assert r.duration_ms == ms(3090)
    assert r.trigger == "group_join_sent by consumer-1"
    assert r.detect_ms == ms(0)
    assert r.join_ms == ms(3050)  # consumer-1: 100 -> 3150 is the slowest
    assert r.sync_ms == ms(30)  # consumer-2: 3160 -> 3190
    assert r.coordinator_ms == ms(3025)
    assert len(r.moves) == 5 and r.unowned_ms == {}


def test_an_eviction_starts_at_the_coordinator_and_a_paused_owner_leaves_no_gap(pause_story):
    r = rebalances_of(History(pause_story.build()))[1]
    assert (r.generation, r.status, r.members) == (2, COMPLETED, ["consumer-1"])
    assert r.start.mono_ms == ms(15000) and r.duration_ms == ms(130)
    assert r.trigger == "coordinator: removing member consumer-2-1-id on heartbeat expiration"
    assert r.detect_ms == ms(110) and r.join_ms == ms(10) and r.sync_ms == ms(5)
    assert r.coordinator_ms == ms(140)
    assert r.moves == ["events-3: consumer-2 -> consumer-1", "events-4: consumer-2 -> consumer-1"]
    # events-0..2 were revoked and given back 30 ms later; the zombie still held 3 and 4
    assert r.unowned_ms == {
        "events-0": ms(30),
        "events-1": ms(30),
        "events-2": ms(30),
        "events-3": 0.0,
        "events-4": 0.0,
    }


def test_a_lost_partition_triggers_the_rejoin(pause_story):
    r = rebalances_of(History(pause_story.build()))[2]
    assert r.trigger == "partitions_lost by consumer-2"
    assert r.start.mono_ms == ms(20010) and r.duration_ms == ms(150)
    assert r.join_ms == ms(130)  # consumer-2: 20020 -> 20150
    assert r.coordinator_ms is None  # no broker log lines for generation 3
    assert r.unowned_ms["events-3"] == ms(60)  # consumer-1 revoked at 20100, consumer-2 owns it at 20160
    assert r.to_dict()["max_unowned_ms"] == ms(60)
    assert r.to_dict()["partitions_moved"] == 2


def test_a_crashed_owner_leaves_partitions_unowned_until_the_next_assignment(history_builder):
    b = history_builder(topics={"events": 2})
    _c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=0)
    b.at(1000).fault("crash", "consumer-2")
    c2.exited(returncode=-9)
    b.rebalance(2, {"consumer-1": [0, 1]}, at=11000)
    r = rebalances_of(History(b.build()))[1]
    assert r.unowned_ms["events-1"] == ms(10015)
    assert r.trigger == "partitions_revoked by consumer-1"


def test_superseded_and_incomplete_generations_are_reported_not_dropped(history_builder):
    b = history_builder(topics={"events": 2})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=0)
    c1.at(1000).revoked().join_sent()
    c2.revoked().join_sent()
    c1.at(1010).joined(2, leader=True)
    c2.joined(2)
    b.at(1011).fault("crash", "consumer-2")
    c2.exited(returncode=-9)  # dies before SyncGroup ...
    c1.at(1020).synced()  # ... and the generation is torn down before consumer-1's callback
    c1.at(11000).join_sent()
    c1.at(11010).joined(3, leader=True)
    c1.at(11020).synced().assigned(0, 1)
    c1.at(12000).revoked().join_sent()
    c1.at(12010).joined(4)  # the run ends here
    r1, r2, r3, r4 = rebalances_of(History(b.build()))
    assert (r2.status, r2.superseded_by, r2.duration_ms) == (SUPERSEDED, 3, None)
    assert r2.to_dict()["duration_ms"] is None and r2.join_ms == ms(10)
    # generation 3 starts at the first JoinGroup after generation 2's members had joined it
    assert (r3.status, r3.trigger) == (COMPLETED, "group_join_sent by consumer-1")
    assert r3.start.mono_ms == ms(11000) and r3.duration_ms == ms(20)
    assert (r4.status, r4.end) == (INCOMPLETE, None)


def test_both_endpoints_are_named_and_compared_like_with_like(pause_story):
    """stabilized: the last JoinGroup answer (the members' side of the coordinator's
    "Stabilized"); assigned: the last assignment. Each is compared with its own clock."""
    r = next(r for r in rebalances_of(History(pause_story.build())) if r.generation == 2)
    d = r.to_dict()
    assert (d["stabilized_ms"], d["assigned_ms"], d["duration_ms"]) == (ms(120), ms(130), ms(130))
    assert d["start_vs_coordinator_ms"] == ms(100)  # the members' first sign (a revoke) came 100 ms after "Preparing"
    assert d["stabilized_vs_coordinator_ms"] == ms(-20)
    assert (d["coordinator_ms"], d["coordinator_members"], d["teardown"]) == (ms(140), 1, False)


def test_the_coordinator_clock_is_compared_with_the_join_it_acted_on(history_builder):
    """A newcomer's first JoinGroup is answered MEMBER_ID_REQUIRED; "Preparing" answers its retry.
    The rebalance still starts at the first one; the clock comparison takes the retry."""
    b = history_builder(topics={"events": 2})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1]}, at=0)
    c2.at(1000).join_sent()  # answered MEMBER_ID_REQUIRED
    c2.at(1300).join_sent()  # with its member id
    b.at(1304).coordinator("coordinator_preparing_rebalance", old_generation=1, reason="Adding new member consumer-2")
    c1.at(1800).revoked().join_sent()  # told by its heartbeat
    b.at(1810).coordinator("coordinator_stabilized", generation=2, members=2)
    c1.at(1812).joined(2, leader=True)
    c2.joined(2)
    c1.at(1820).synced().assigned(0)
    c2.synced().assigned(1)
    r = rebalances_of(History(b.build()))[1]
    assert r.start.mono_ms == ms(1000) and r.trigger == "group_join_sent by consumer-2"
    assert r.join_ms == ms(812)  # consumer-2's join phase began with its first JoinGroup
    assert r.to_dict()["start_vs_coordinator_ms"] == ms(-4)


def test_a_join_the_coordinator_held_over_the_previous_generation_is_the_next_ones_sign(history_builder):
    """consumer-2's JoinGroup arrives while generation 1 is settling; the coordinator begins generation 2
    with it once 1 is stable. Its sign is that JoinGroup, not consumer-1's heartbeat learning of it."""
    b = history_builder(topics={"events": 2})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    c1.at(0).join_sent()
    b.at(2).coordinator("coordinator_preparing_rebalance", old_generation=0, reason="adding member consumer-1")
    c2.at(10).join_sent()
    b.at(60).coordinator("coordinator_stabilized", generation=1, members=1)
    b.at(70).coordinator("coordinator_preparing_rebalance", old_generation=1, reason="adding member consumer-2")
    c1.at(62).joined(1, leader=True)
    c1.at(63).synced().assigned(0, 1)
    c1.at(1070).revoked().join_sent()
    b.at(1080).coordinator("coordinator_stabilized", generation=2, members=2)
    c1.at(1082).joined(2, leader=True)
    c2.joined(2)
    c1.at(1090).synced().assigned(0)
    c2.synced().assigned(1)
    r = rebalances_of(History(b.build()))[1]
    assert r.to_dict()["start_vs_coordinator_ms"] == ms(-60)  # held 60 ms: a member-triggered rebalance
    assert r.start.mono_ms == ms(70)  # its window begins once generation 1 settled


def test_the_harness_taking_the_group_apart_is_no_rebalance_of_the_run(history_builder):
    b = history_builder()
    _c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=0)
    b.at(5000).done()
    c2.at(5100).revoked().stopped()
    b.rebalance(2, {"consumer-1": [0, 1, 2, 3, 4]}, at=5200)
    history = History(b.build())
    assert [(r.generation, r.teardown) for r in rebalances_of(history)] == [(1, False), (2, True)]
    assert [r.generation for r in run_rebalances(history)] == [1]
    verdict = check_history(b.build())
    assert [r["generation"] for r in verdict.to_dict()["rebalances"]] == [1]


def test_without_done_the_teardown_starts_at_heal_checked(history_builder):
    b = history_builder()
    _c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=0)
    b.at(3000).emit(
        "heal_checked", "harness", stopped_processes=[], proxies=0, proxies_with_toxics=[], proxies_disabled=[]
    )
    c2.at(3100).revoked().stopped()
    b.rebalance(2, {"consumer-1": [0, 1, 2, 3, 4]}, at=3200)
    assert [r.teardown for r in rebalances_of(History(b.build()))] == [False, True]
