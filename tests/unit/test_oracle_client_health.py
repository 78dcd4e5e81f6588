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
