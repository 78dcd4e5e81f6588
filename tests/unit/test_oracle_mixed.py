"""A migrated group (docs/history.md, "Mixed groups"): members of one run on different protocol
generations, each judged by its own; the group's mode (classic or consumer group) by who was in
it; layouts only where the group was classic; each move's hand-over measured."""

from __future__ import annotations

import pytest

from oracle import check_history
from oracle.history import History, MemberSlot
from oracle.migrations import migrations
from oracle.ownership import ownership_of


def upgraded(history_builder):
    """consumer-2 moved from classic-eager to consumer: the group is a consumer group while
    consumer-2#2 is in it (its first epoch at 2010), classic consumer-1 rejoining with its epoch."""
    b = history_builder(protocol="classic-eager", assignor="range")
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=0)
    c1.at(100).consumed(0, 0, 9)
    c2.at(1000).revoked().stopped().exited()
    c2b = b.consumer("consumer-2", incarnation=2)
    c2b.at(1500).start(protocol="consumer")
    c2b.at(2000).join_sent()
    c2b.at(2010).joined(2)
    return b, c1, c2b


def test_each_incarnation_is_judged_by_its_own_generation(history_builder):
    b, c1, c2b = upgraded(history_builder)
    c2b.at(2020).assigned(3, 4, incremental=True)
    h = History(b.build())
    assert h.mixed and h.protocols == ("classic-eager", "consumer")
    assert h.protocol_of(MemberSlot("consumer-1")) == "classic-eager"
    assert h.protocol_of(MemberSlot("consumer-2", 2)) == "consumer"
    t0 = h.t0
    assert not h.consumer_group_at(t0 + 1500)  # consumer-2#2 started, not yet in the group
    assert h.consumer_group_at(t0 + 2010) and h.consumer_group_at(t0 + 5000)  # until its end (none: the run's)
    # the last consumer-protocol member leaving ends it: the brokers convert the group back
    c2b.at(6000).stopped()
    h = History(b.build())
    assert h.consumer_group_at(h.t0 + 5999) and not h.consumer_group_at(h.t0 + 6000)


def test_a_classic_and_a_consumer_member_owning_one_partition_at_once_fails(history_builder):
    b, c1, c2b = upgraded(history_builder)
    c2b.at(2020).assigned(3, 4, incremental=True)
    # consumer-1, classic in the consumer group, rejoins at its epoch 2 and takes events-3 as well
    c1.at(2100).join_sent()
    c1.at(2110).joined(2).synced().assigned(0, 1, 2, 3)
    c1.at(2200).consumed(3, 0, 9)
    c2b.at(2300).consumed(3, 0, 9)
    verdict = check_history(b.build(), {"exclusive-ownership": {}})
    result = verdict.checks["exclusive-ownership"]
    assert result.status == "failed"
    [v] = result.violations
    assert (v.kind, v.partition, v.members, v.generation) == (
        "two-owners-in-generation",
        "events-3",
        ("consumer-2#2", "consumer-1"),
        2,
    )


def test_fencing_is_per_member_only_while_the_group_was_a_consumer_group(history_builder):
    b, c1, c2b = upgraded(history_builder)
    c2b.at(2020).assigned(3, 4, incremental=True)
    c2b.at(3000).joined(3)  # consumer-2#2 alone moves to epoch 3
    h = History(b.build())
    ownership = ownership_of(h)
    # A consumer group: consumer-2#2's epoch 3 does not move consumer-1 on from its 1 (or 2).
    assert not ownership._moved_on(MemberSlot("consumer-1"), 1, h.t0 + 3500)
    assert ownership._moved_on(MemberSlot("consumer-2", 2), 2, h.t0 + 3500)
    # In a run of classic members only, the same join would have moved the whole group on.
    classic = ownership_of(History([e for e in b.build() if e.get("protocol") != "consumer"]))
    assert not classic.epochs_at and classic._moved_on(MemberSlot("consumer-1"), 1, h.t0 + 3500)


def test_no_layout_is_judged_while_the_brokers_assigned(history_builder):
    b, c1, c2b = upgraded(history_builder)
    c2b.at(2020).assigned(0, 1, incremental=True)  # the brokers' uniform assignor, not range
    c1.at(2100).join_sent()
    c1.at(2110).joined(2).synced().revoked().assigned(2, 3, 4)
    result = check_history(b.build(), {"assignment-validity": {}}).checks["assignment-validity"]
    assert result.status == "passed", [v.message for v in result.violations]
    assert 2 in result.detail["partial_cooperative_generations"] and 1 in result.detail["layouts_checked"]
    # the same assignment in a classic generation of range members is a layout mismatch
    pure = history_builder(protocol="classic-eager", assignor="range")
    pure.consumer("consumer-1").start(), pure.consumer("consumer-2").start()
    pure.rebalance(1, {"consumer-1": [2, 3, 4], "consumer-2": [0, 1]}, at=0)
    failed = check_history(pure.build(), {"assignment-validity": {}}).checks["assignment-validity"]
    assert {v.kind for v in failed.violations} == {"layout-mismatch"}


def test_each_move_is_measured_from_the_old_incarnations_exit(history_builder):
    b, c1, c2b = upgraded(history_builder)
    c2b.at(2020).assigned(3, 4, incremental=True)
    b.at(2500).emit(
        "group_described",
        "observer",
        group="g",
        state="STABLE",
        coordinator=1,
        covers_all=True,
        members={"consumer-1/a": [["events", 0]], "consumer-2/b": [["events", 3]]},
    )
    h = History(b.build())
    [move] = migrations(h)
    assert (move["member"], move["incarnation"], move["from"], move["to"]) == (
        "consumer-2",
        2,
        "classic-eager",
        "consumer",
    )
    exited = 1000  # consumer-2's process exit: the anchor
    assert (move["joined_ms"], move["owning_ms"], move["stable_ms"]) == pytest.approx(
        (2010 - exited, 2020 - exited, 2500 - exited), abs=0.01
    )
