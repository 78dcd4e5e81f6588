"""convergence/late-eviction: a member a fault silenced for good is evicted once the session
timeout its incarnation joined with has run out, not later (KAFKA-14009: a coordinator that kept a
static member's old session timeout when it rejoined)."""

import pytest

from oracle import check_history

CHECK = "convergence"
CRASHED = {"silences": "heartbeats", "silenced_as": "crashed", "down": "killed", "restart_after_s": None}
PAUSED = {"silences": "heartbeats", "silenced_as": "paused", "down": "paused", "restart_after_s": None}


def late(builder):
    result = check_history(builder.build(), {CHECK: {"within_s": 600}}).checks[CHECK]
    return [v for v in result.violations if v.kind == "late-eviction"]


def story(b, evicted_at: float, effects=CRASHED, session_ms=None, **more):
    """consumer-1 and consumer-2 form generation 1; consumer-2 is silenced at 5 s and the
    coordinator evicts it at ``evicted_at``; consumer-1 takes everything in generation 2."""
    c1 = b.consumer("consumer-1").start()
    c2 = b.consumer("consumer-2").start(**({"session_timeout_ms": session_ms} if session_ms else {}))
    b.formed(c1, c2)
    for at, emit in sorted(more.items()):
        emit(b.at(float(at.lstrip("t"))))
    b.at(5000).emit(
        "fault_started", "fault", fault_id="f1", kind="crash", target="consumer-2", params={}, effects=effects
    )
    b.evicted("consumer-2", evicted_at, "consumer-1", 0, 1, 2, 3, 4)
    b.at(evicted_at + 5000).done()
    return b


def test_a_crashed_member_evicted_its_session_timeout_later_is_fine(history_builder):
    assert late(story(history_builder(), evicted_at=5000 + 10_000)) == []  # session.timeout.ms 10000


def test_a_crashed_member_evicted_long_after_its_session_timeout_is_a_violation(history_builder):
    [v] = late(story(history_builder(), evicted_at=5000 + 30_000))
    assert (v.members, v.generation) == (("consumer-2",), 2)
    assert v.message == (
        "consumer-2 was crashed (fault f1, crash) at t+5.000s, but its coordinator evicted it only 30.0 s later "
        "(t+35.000s, generation 2), though the incarnation it silenced joined with session.timeout.ms 10000: "
        "the coordinator held it to another session timeout"
    )
    assert v.times["evicted"].mono_ms == pytest.approx(35_000)


def test_the_session_timeout_is_the_silenced_incarnations_own(history_builder):
    """The KAFKA-14009 shape: restarted with 6 s, evicted 30 s after the crash."""
    b = history_builder()
    # a static member's new incarnation, started with a shorter session timeout before the crash
    restart = {"t3000": lambda b: b["consumer-2"].start(session_timeout_ms=6000)}
    assert late(story(b, evicted_at=5000 + 30_000, session_ms=30_000, **restart))
    assert late(story(history_builder(), evicted_at=5000 + 30_000, session_ms=30_000)) == []  # it asked for 30 s


def test_a_silence_that_ended_before_the_eviction_is_not_judged(history_builder):
    healed = {"t9000": lambda b: b.healed("crash", "consumer-2")}
    assert late(story(history_builder(), evicted_at=5000 + 30_000, effects=PAUSED, **healed)) == []
    # the same pause, still on at the eviction: judged
    assert late(story(history_builder(), evicted_at=5000 + 30_000, effects=PAUSED))


def test_a_cluster_fault_meanwhile_excuses_a_late_eviction(history_builder):
    broker = {"t6000": lambda b: b.fault("crash", "broker-1", fault_id="f0")}
    assert late(story(history_builder(), evicted_at=5000 + 30_000, **broker)) == []
