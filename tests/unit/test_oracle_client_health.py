"""client-health: a member's library crashing, hanging in its close or giving up is named once,
by what it did; a fault's kill and a stop the member obeyed are nobody's failure."""

from oracle import History
from oracle.checks import client_health


def judge(b):
    return client_health.check(History(b.build()), {})


def kinds(b):
    return [(a.kind, a.members) for a in judge(b).violations]


def started(history_builder, *names):
    b = history_builder()
    for name in names:
        b.consumer(name).start()
    b.rebalance(1, {name: [i] for i, name in enumerate(names)}, at=10)
    b.at(100)
    return b


def test_members_told_to_stop_that_exit_cleanly_pass(history_builder):
    b = started(history_builder, "consumer-1", "consumer-2")
    for name in ("consumer-1", "consumer-2"):
        b[name].stopped().exited(0)
    result = judge(b)
    assert result.violations == [] and result.detail == {"by_kind": {}}


def test_a_member_dead_on_sigabrt_is_a_library_crash(history_builder):
    b = started(history_builder, "consumer-1", "consumer-2")
    b["consumer-2"].exited(-6)  # "free(): double free detected"
    b["consumer-1"].stopped().exited(0)
    [anomaly] = judge(b).violations
    assert (anomaly.kind, anomaly.members) == ("library-crash", ("consumer-2",))
    assert "SIGABRT" in anomaly.message and anomaly.times["exited"].mono_ms == 100


def test_stops_someone_sent_are_no_crash(history_builder):
    b = started(history_builder, "consumer-1", "consumer-2")
    b["consumer-1"].exited(-15)  # SIGTERM it had no handler for (a test hook's own stop)
    b["consumer-2"].exited(-9)
    assert kinds(b) == []


def test_a_fault_that_kills_its_target_explains_the_exit(history_builder):
    b = started(history_builder, "consumer-1")
    b.emit(
        "fault_started",
        "fault",
        fault_id="f1",
        kind="crash",
        target="consumer-1",
        params={},
        effects={"down": "killed"},
    )
    b["consumer-1"].exited(-9)
    b.consumer("consumer-1", incarnation=2).start()
    b.at(200)
    b["consumer-1"].exited(1)  # the fault's kill was the first incarnation's: this one failed on its own
    assert kinds(b) == [("unexpected-exit", ("consumer-1",))]


def test_a_faults_stop_explains_neither_a_hung_close_nor_a_crash(history_builder):
    b = started(history_builder, "consumer-1", "consumer-2")
    for name in ("consumer-1", "consumer-2"):
        b.emit(
            "fault_started", "fault", fault_id=name, kind="crash", target=name, params={}, effects={"down": "killed"}
        )
    b["consumer-1"].exited(-9)
    b.events[-1]["escalated_after_ms"] = 30_000  # the crash fault's SIGTERM, then its close hung
    b["consumer-2"].exited(-6)  # aborted in its close
    assert kinds(b) == [("close-hang", ("consumer-1",)), ("library-crash", ("consumer-2",))]


def test_a_member_killed_after_its_stop_timeout_hung_in_its_close(history_builder):
    b = started(history_builder, "consumer-1")
    b["consumer-1"].exited(-9)
    b.events[-1]["escalated_after_ms"] = 20_000
    [anomaly] = judge(b).violations
    assert anomaly.kind == "close-hang" and "20.0 s" in anomaly.message


def test_a_fatal_error_is_named_once_and_its_exit_not_again(history_builder):
    b = started(history_builder, "consumer-1")
    c = b["consumer-1"]
    c.emit("consumer_error", error="INVALID_REQUEST", error_code=42, fatal=True)
    c.emit("consumer_error", error="_FATAL", error_code=-150, fatal=True)
    c.emit("consumer_error", error="_MAX_POLL_EXCEEDED", error_code=-147, fatal=False)
    c.stopped("error").exited(1)
    [anomaly] = judge(b).violations
    assert anomaly.kind == "fatal-error" and "INVALID_REQUEST" in anomaly.message


def test_a_non_zero_exit_without_an_error_said_is_unexpected(history_builder):
    b = started(history_builder, "consumer-1")
    b["consumer-1"].exited(1)
    assert kinds(b) == [("unexpected-exit", ("consumer-1",))]


def test_only_members_are_judged(history_builder):
    b = started(history_builder, "consumer-1")
    b.emit("process_exited", "harness", process="observer", role="observer", pid=77, returncode=-6)
    assert kinds(b) == []


def cooperative_pair(history_builder, client_words: str, **error_fields):
    """consumer-1 and consumer-2 share a cooperative group; consumer-2's SyncGroup of generation 2 is
    answered `client_words` (how its client logged the error), and it then declares events-1 lost."""
    b = history_builder(protocol="classic-cooperative", assignor="cooperative-sticky")
    b.consumer("consumer-1").start()
    b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=10)
    b.at(50)
    b["consumer-2"].joined(2).emit("group_sync_failed", error=client_words, **error_fields)
    b["consumer-2"].lost(1)
    return b


def test_a_loss_after_only_rebalance_in_progress_is_needless(history_builder):
    # KAFKA-14016: kafka-clients 3.3.1 reset its generation on a SyncGroup REBALANCE_IN_PROGRESS
    words = "SyncGroup failed: The group began another rebalance. Need to re-join the group."
    b = cooperative_pair(history_builder, words)
    b["consumer-2"].emit("offsets_committed", error="RebalanceInProgressException", offsets=[])
    [anomaly] = judge(b).violations
    assert (anomaly.kind, anomaly.members) == ("needless-loss", ("consumer-2",))
    assert "events-1" in anomaly.message and "group_sync_failed" in anomaly.message
    assert round(anomaly.times["lost"].mono_ms) == 50


def test_a_loss_after_a_membership_error_or_none_is_not_judged(history_builder):
    for words, fields in (("ILLEGAL_GENERATION", {"error_code": 22}), ("Broker: Unknown member", {})):
        assert kinds(cooperative_pair(history_builder, words, **fields)) == []
    # no error at all: a session its client timed out (librdkafka), or one this reader cannot see
    b = history_builder(protocol="classic-cooperative", assignor="cooperative-sticky")
    b.consumer("consumer-1").start()
    b.rebalance(1, {"consumer-1": [0, 1]}, at=10)
    b.at(50)
    b["consumer-1"].lost(0, 1)
    assert kinds(b) == []


def test_rejoin_answers_in_any_words_and_what_clears_them(history_builder):
    b = cooperative_pair(history_builder, "Broker: Group rebalance in progress")
    assert kinds(b) == [("needless-loss", ("consumer-2",))]  # librdkafka's words for it
    assert kinds(cooperative_pair(history_builder, "?", error_code=27)) == [("needless-loss", ("consumer-2",))]
    b = history_builder(protocol="classic-cooperative", assignor="cooperative-sticky")
    b.consumer("consumer-1").start()
    b.rebalance(1, {"consumer-1": [0]}, at=10)
    b.at(50)
    b["consumer-1"].emit("heartbeat_failed", error="REBALANCE_IN_PROGRESS")
    b["consumer-1"].emit("consumer_error", error="IllegalStateException", fatal=False)
    b["consumer-1"].lost(0)
    assert kinds(b) == []
    # a sync since the rejoin answer clears it: the loss after a later, silent session is not judged
    b = history_builder(protocol="classic-cooperative", assignor="cooperative-sticky")
    b.consumer("consumer-1").start()
    b.at(20)
    b["consumer-1"].emit("heartbeat_failed", error="REBALANCE_IN_PROGRESS")
    b.rebalance(2, {"consumer-1": [0]}, at=30)
    b.at(60)
    b["consumer-1"].lost(0)
    assert kinds(b) == []
