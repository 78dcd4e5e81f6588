"""Each rebalance explained (oracle/explain.py): the seeds' classic cases, told by hand-built
histories; tests/integration checks the same sentences on real brokers."""

import pytest

from oracle import History, check_history
from oracle.explain import CAUSES, explain_rebalances

ms = lambda x: pytest.approx(x, abs=0.05)


def explained(b, generation):
    return explain_rebalances(History(b.build()))[generation]


def wait(x, phase):
    [w] = [w for w in x.waits if w.phase == phase]
    return w


def test_a_paused_member_is_evicted_only_at_its_session_timeout(pause_story):
    x = explained(pause_story, 2)
    w = wait(x, "trigger")
    assert (w.cause, w.member, w.ms) == ("session-timeout", "consumer-2", ms(10000))  # paused at 5 s, evicted at 15 s
    assert x.critical is w
    assert x.sentence == (
        "generation 2: consumer-2 was paused (fault f1, pause) and the coordinator evicted it only "
        "when its session timed out (session.timeout.ms 10000), 10.0 s later"
    )
    assert x.to_dict()["waited_for"] == "consumer-2" and x.to_dict()["cause"] == "session-timeout"


def test_a_new_group_held_open_by_the_initial_delay_names_no_member(pause_story):
    pause_story.events[0]["group_settings"] = {"initial_rebalance_delay_ms": 3000}
    w = wait(explained(pause_story, 1), "join")
    assert (w.cause, w.member) == ("initial-delay", None)
    assert w.ms == ms(3060) and "group.initial.rebalance.delay.ms 3000" in w.detail


def test_without_the_delay_the_group_waited_for_the_last_member_to_join(pause_story):
    pause_story.events[0]["group_settings"] = {"initial_rebalance_delay_ms": 0}
    w = wait(explained(pause_story, 1), "join")
    assert (w.cause, w.member) == ("late-join", "consumer-2")


def stuck_member(b, stall_ms: float):
    """consumer-1 stops polling; consumer-3 joins; the eager group cannot finish joining until
    consumer-1's rebalance timeout (max.poll.interval.ms, 300 s here) runs out."""
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1], "consumer-2": [2, 3]}, at=0)
    c1.at(10_000).emit("poll_stall_started", fault_id="f1", duration_s=stall_ms / 1000)
    c3 = b.consumer("consumer-3").start()
    c3.at(10_100).join_sent()
    b.at(10_105).coordinator(
        "coordinator_preparing_rebalance",
        old_generation=1,
        reason="Adding new member consumer-3-3-id with group instance id None",
    )
    c2.at(11_000).revoked().join_sent()
    c2.at(310_105).joined(2, leader=True)
    c3.joined(2)
    b.at(310_106).coordinator("coordinator_assignment_received", generation=2, leader_id="consumer-2-1-id")
    c2.at(310_110).synced().assigned(0, 1)
    c3.synced().assigned(2, 3)
    return b


def test_an_eager_join_phase_waits_out_a_member_stuck_in_processing(history_builder):
    x = explained(stuck_member(history_builder(topics={"events": 4}), 400_000), 2)
    assert (wait(x, "trigger").cause, wait(x, "trigger").member) == ("joined", "consumer-3")
    w = x.critical
    assert (w.phase, w.cause, w.member, w.ms) == ("join", "rebalance-timeout", "consumer-1", ms(300_005))
    assert "stuck in processing (poll stall) (fault f1)" in w.detail and "max.poll.interval.ms 300000" in w.detail
    assert wait(x, "sync").cause == "leader-assignment" and wait(x, "sync").member == "consumer-2"


def test_a_stalled_member_leaving_at_its_poll_interval_is_a_poll_timeout(history_builder):
    b = history_builder(topics={"events": 2})
    b.consumer("consumer-1").start()
    c2 = b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=0)
    c2.at(1_000).emit("poll_stall_started", fault_id="f2", duration_s=400)
    b.at(301_000).coordinator(
        "coordinator_preparing_rebalance", old_generation=1, reason="Removing member consumer-2-1-id on LeaveGroup"
    )
    b.rebalance(2, {"consumer-1": [0, 1]}, at=301_500)
    w = wait(explained(b, 2), "trigger")
    assert (w.cause, w.member, w.ms) == ("poll-timeout", "consumer-2", ms(300_000))


def test_a_member_that_left_or_joined_is_named_from_the_coordinators_reason(history_builder):
    b = history_builder(topics={"events": 2})
    b.consumer("consumer-1").start(), b.consumer("consumer-10").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-10": [1]}, at=0)
    b.at(5_000).coordinator(
        "coordinator_preparing_rebalance", old_generation=1, reason="Removing member consumer-10-1-id on LeaveGroup"
    )
    b.rebalance(2, {"consumer-1": [0, 1]}, at=5_100)
    w = wait(explained(b, 2), "trigger")
    assert (w.cause, w.member, w.ms) == ("left", "consumer-10", 0.0)  # not consumer-1, a prefix of its name


def test_a_coordinator_that_moved_is_the_trigger(history_builder):
    b = history_builder(topics={"events": 2})
    b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.at(0).emit("group_described", "observer", group="g", state="STABLE", coordinator=2, members={})
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=10)
    b.at(5_000).emit("group_described", "observer", group="g", state="PREPARING_REBALANCE", coordinator=3, members={})
    b.rebalance(2, {"consumer-1": [0], "consumer-2": [1]}, at=5_100)
    w = wait(explained(b, 2), "trigger")
    assert (w.cause, w.member) == ("coordinator-moved", None) and "(2 -> 3)" in w.detail


def test_the_verdict_carries_each_rebalances_explanation_as_data_and_words(pause_story):
    pause_story.done()
    rebalances = check_history(pause_story.build()).to_dict()["rebalances"]
    r = next(r for r in rebalances if r["generation"] == 2)
    assert r["cause"] == "session-timeout" and r["waited_for"] == "consumer-2"
    assert r["explanation"].startswith("generation 2: consumer-2 was paused")
    assert [w["phase"] for w in r["critical_path"]] == ["trigger", "join", "sync"]
    assert all(w["cause"] in CAUSES for r in rebalances for w in r["critical_path"])


def test_a_late_join_behind_a_revoke_callback_that_waits_for_the_processing_thread(history_builder):
    """processing: worker — consumer-1's revoke callback waits until its worker has processed the
    800 records it held; only then does it send its JoinGroup."""
    b = history_builder(topics={"events": 4})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1], "consumer-2": [2, 3]}, at=0)
    c3 = b.consumer("consumer-3").start()
    c3.at(10_100).join_sent()
    c2.at(10_200).revoked().join_sent()
    c1.at(10_150).emit("revoke_started", partitions=[{"topic": "events", "partition": 0}], in_flight=800)
    c1.at(14_000).revoked().join_sent()
    c1.at(14_010).joined(2, leader=True)
    c2.joined(2)
    c3.joined(2)
    c1.at(14_020).synced().assigned(0)
    c2.synced().assigned(1, 2)
    c3.synced().assigned(3)
    w = wait(explained(b, 2), "join")
    assert (w.cause, w.member) == ("late-join", "consumer-1")
    assert (
        "consumer-1, which spent 3.9 s in its revoke callback while its processing thread finished the 800 "
        "records it held, sent its JoinGroup last"
    ) in w.detail, w.detail


def test_a_revoke_callback_the_member_was_killed_in_never_ends(history_builder):
    """consumer-1 was killed inside its revoke callback; its next incarnation's revoke is its own
    (a quick one): the late join is not blamed on a callback that never ended."""
    b = history_builder(topics={"events": 4})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1], "consumer-2": [2, 3]}, at=0)
    c1.at(5_000).emit("revoke_started", partitions=[{"topic": "events", "partition": 0}], in_flight=800)
    c1b = b.consumer("consumer-1", incarnation=2).start()
    b.rebalance(2, {"consumer-1": [0, 1], "consumer-2": [2, 3]}, at=9_000)
    c2.at(20_000).revoked().join_sent()
    c1b.at(20_050).emit("revoke_started", partitions=[{"topic": "events", "partition": 0}], in_flight=0)
    c1b.at(20_060).revoked()
    c1b.at(24_000).join_sent()
    c1b.at(24_010).joined(3, leader=True)
    c2.joined(3)
    c1b.at(24_020).synced().assigned(0, 1)
    c2.synced().assigned(2, 3)
    w = wait(explained(b, 3), "join")
    assert (w.cause, w.member) == ("late-join", "consumer-1")
    assert "revoke callback" not in w.detail, w.detail


def test_a_member_that_rejoins_right_after_a_message_fault_names_the_message(history_builder):
    """The message proxy replaced consumer-2's SyncGroup answer: its rejoin is told as that message's doing."""
    b = history_builder(topics={"events": 2})
    b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=0)
    b.at(5_000).emit(
        "message_faulted",
        "message-proxy",
        fault_id="f3",
        member="consumer-2",
        broker="broker-1",
        api="SyncGroup",
        api_version=5,
        correlation_id=41,
        action="error",
        error="REBALANCE_IN_PROGRESS",
        replaced_error="NONE",
    )
    b.at(5_120).coordinator(
        "coordinator_preparing_rebalance", old_generation=1, reason="Updating metadata for member consumer-2-1-id"
    )
    b.rebalance(2, {"consumer-1": [0], "consumer-2": [1]}, at=5_150)
    w = wait(explained(b, 2), "trigger")
    assert (w.cause, w.member, w.ms) == ("message", "consumer-2", ms(120.0))
    assert w.detail == (
        "consumer-2's SyncGroup response was replaced by REBALANCE_IN_PROGRESS (fault f3), "
        "and consumer-2 rejoined 120 ms later"
    )
    assert "message" in CAUSES


def test_the_faults_lines_say_how_many_messages_a_message_fault_acted_on(history_builder):
    from oracle.verdict import _faults_done, fault_lines

    b = history_builder(topics={"events": 2})
    b.at(1_000).fault("message", "consumer-1", "f1")
    for correlation_id in (7, 9):
        b.at(1_500).emit(
            "message_faulted",
            "message-proxy",
            fault_id="f1",
            member="consumer-1",
            api="Heartbeat",
            action="delay",
            correlation_id=correlation_id,
        )
    b.at(2_000).healed("message", "consumer-1", "f1")
    b.at(3_000).fault("pause", "consumer-2", "f2")
    done = _faults_done(History(b.build()))
    assert [f.get("messages") for f in done] == [2, None]
    lines = fault_lines({"faults": done})
    assert lines[0].endswith("; the message proxy acted on 2 message(s)") and "message proxy" not in lines[1]
