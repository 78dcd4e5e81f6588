"""Deriving ownership sessions from eager and cooperative callbacks and process lifecycles."""

from oracle import History
from oracle.history import MemberSlot, TopicPartition
from oracle.ownership import (
    CRASHED,
    LOST,
    OWNED_AT_END,
    PROCESS_EXITED,
    REVOKED,
    STOPPED,
    ownership_of,
)

E = lambda p: TopicPartition("events", p)


def sessions(builder, partition):
    # The builder spaces events written at the same instant by 1 µs to keep their order.
    return [
        (str(s.slot), s.generation, round(s.start_ms), round(s.end_ms) if s.end else s.end_ms, s.ended_by)
        for s in ownership_of(History(builder.build())).of_partition(E(partition))
    ]


def test_eager_full_assignments_and_revokes(history_builder):
    b = history_builder()
    b.consumer("consumer-1").start()
    b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2, 3, 4]}, at=100)
    b.rebalance(2, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=1000)
    assert sessions(b, 0) == [
        ("consumer-1", 1, 115, 1000, REVOKED),
        ("consumer-1", 2, 1015, float("inf"), OWNED_AT_END),
    ]
    [first, second] = sessions(b, 4)
    assert first[:2] == ("consumer-1", 1) and first[4] == REVOKED
    assert second[:2] == ("consumer-2", 2)
    own = ownership_of(History(b.build()))
    assert own.assignments[2] == {
        MemberSlot("consumer-1"): frozenset(map(E, [0, 1, 2])),
        MemberSlot("consumer-2"): frozenset(map(E, [3, 4])),
    }


def test_eager_assignment_without_a_revoke_still_ends_what_it_drops(history_builder):
    b = history_builder()
    c1 = b.consumer("consumer-1").start()
    b.at(10)
    c1.joined(1).assigned(0, 1)
    b.at(20)
    c1.joined(2).assigned(1)
    assert sessions(b, 0)[0][3:] == (20, REVOKED)
    assert ownership_of(History(b.build())).of_partition(E(1))[0].generations == [1, 2]


def test_cooperative_deltas_keep_sessions_across_generations(history_builder):
    b = history_builder(protocol="classic-cooperative", assignor="cooperative-sticky")
    b.consumer("consumer-1").start()
    b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2, 3, 4]}, at=100)
    b.rebalance(2, {"consumer-1": [0, 1, 2], "consumer-2": []}, at=1000)  # first phase: 3, 4 revoked
    b.rebalance(3, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=2000)
    [kept] = ownership_of(History(b.build())).of_partition(E(0))
    assert (kept.generations, kept.ended_by) == ([1, 2, 3], OWNED_AT_END)
    assert [(s[0], s[1], s[4]) for s in sessions(b, 3)] == [("consumer-1", 1, REVOKED), ("consumer-2", 3, OWNED_AT_END)]
    assert ownership_of(History(b.build())).incremental_revokes == {2: {MemberSlot("consumer-1")}}


def test_sessions_end_when_the_process_exits_or_stops(history_builder):
    b = history_builder()
    c1, c2, c3 = (b.consumer(f"consumer-{i}").start() for i in (1, 2, 3))
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1], "consumer-3": [2, 3, 4]}, at=10)
    b.at(100).fault("crash", "consumer-1")
    c1.exited(returncode=-9)
    b.at(200)
    c2.exited(returncode=1)
    b.at(300)
    c3.stopped("signal")
    c3.exited(returncode=0)
    assert sessions(b, 0)[0][3:] == (100, CRASHED)
    assert sessions(b, 1)[0][3:] == (200, PROCESS_EXITED)
    assert sessions(b, 2)[0][3:] == (300, STOPPED)


def test_a_restart_ends_the_previous_incarnation_and_lost_ends_a_session(history_builder):
    b = history_builder()
    b.consumer("consumer-1").start()
    b.rebalance(1, {"consumer-1": [0, 1]}, at=10)
    b.at(100)
    b.consumer("consumer-1", incarnation=2).start()  # no process_exited line for incarnation 1
    b.rebalance(2, {"consumer-1": [0]}, at=200)
    b.at(300)
    b["consumer-1"].lost(0)
    assert [(s[0], s[4]) for s in sessions(b, 0)] == [("consumer-1", PROCESS_EXITED), ("consumer-1#2", LOST)]
