"""workloads/member_events.py: the one contract between a driver and the history. Each member
event has one method, which writes the fields docs/history.md gives it and refuses others; the
drivers write through it and nothing else (an AST check over workloads/)."""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
from dataclasses import fields as dataclass_fields
from pathlib import Path

import pytest

from oracle import fields as format_fields
from oracle import vocabulary as ev
from oracle.fields import ENVELOPE, FIELDS, unknown_fields
from oracle.protocols import GENERATIONS
from tests.recording import Recording
from workloads import member_events
from workloads.driver import MemberSpec, protocol_fields
from workloads.member_events import ABSENT, CLIENT_CLOCK, MemberEvents, member_writer

WORKLOADS = Path(__file__).resolve().parents[2] / "workloads"
P0, P3 = ("events", 0), ("events", 3)
TP0, TP3 = {"topic": "events", "partition": 0}, {"topic": "events", "partition": 3}

# Each method, called as the drivers call it, and the fields it writes (beside the stamps).
CALLS = {
    ev.CONSUMER_STARTED: (
        dict(
            pid=7,
            group="g",
            protocol="zk-eager",
            assignor="range",
            group_instance_id=None,
            commit_mode="sync",
            session_timeout_ms=6000,
            max_poll_interval_ms=None,
            consumer_id="consumer-1-ab",
            rebalance_max_retries=4,
            rebalance_backoff_ms=2000,
        ),
        dict(
            pid=7,
            group="g",
            protocol="zk-eager",
            assignor="range",
            group_instance_id=None,
            commit_mode="sync",
            session_timeout_ms=6000,
            max_poll_interval_ms=None,
            consumer_id="consumer-1-ab",
            rebalance_max_retries=4,
            rebalance_backoff_ms=2000,
        ),
    ),
    ev.SUBSCRIPTION_CHANGED: (dict(topics={"events": 4}), dict(topics={"events": 4})),
    ev.LOG_UNRECOGNISED: (
        dict(log="librdkafka cgrp", missing="generation", client_version="2.0.2"),
        dict(log="librdkafka cgrp", missing="generation", client_version="2.0.2"),
    ),
    ev.GROUP_JOIN_SENT: ({}, {}),
    ev.GROUP_JOINED: (
        dict(generation=3, member_id="m-1", leader_id="m-1", is_leader=True, protocol_name="range"),
        dict(generation=3, member_id="m-1", leader_id="m-1", is_leader=True, protocol_name="range"),
    ),
    ev.GROUP_JOIN_FAILED: (
        dict(error="UNKNOWN_MEMBER_ID", error_code=25, message="who?"),
        dict(error="UNKNOWN_MEMBER_ID", error_code=25, message="who?"),
    ),
    ev.GROUP_SYNCED: ({}, {}),
    ev.GROUP_SYNC_FAILED: (
        dict(error="events-3 is owned by consumer-2-x-0", attempt=2),
        dict(error="events-3 is owned by consumer-2-x-0", attempt=2),
    ),
    ev.HEARTBEAT_FAILED: (
        dict(error="Broker: Group rebalance in progress"),
        dict(error="Broker: Group rebalance in progress"),
    ),
    ev.REBALANCE_STARTED: (
        dict(reason="rebalance in progress", rebalance_protocol="EAGER"),
        dict(reason="rebalance in progress", rebalance_protocol="EAGER"),
    ),
    ev.PARTITIONS_ASSIGNED: (
        dict(partitions=[P0, P3], incremental=True),
        dict(partitions=[TP0, TP3], incremental=True),
    ),
    ev.REVOKE_STARTED: (dict(partitions=[P3], in_flight=12), dict(partitions=[TP3], in_flight=12)),
    ev.PARTITIONS_REVOKED: (dict(partitions=[P0], incremental=False), dict(partitions=[TP0], incremental=False)),
    ev.PARTITIONS_LOST: (dict(partitions=[P3, P0], incremental=False), dict(partitions=[TP3, TP0], incremental=False)),
    ev.RECORDS_CONSUMED: (
        dict(processed={P0: [5, 6, 8]}, e2e_ms=[[12, 3]]),
        dict(
            ranges=[
                {"topic": "events", "partition": 0, "min_offset": 5, "max_offset": 6, "count": 2},
                {"topic": "events", "partition": 0, "min_offset": 8, "max_offset": 8, "count": 1},
            ],
            e2e_ms=[[12, 3]],
        ),
    ),
    ev.OFFSETS_COMMITTED: (
        dict(
            offsets=[(P3, 9), (P0, 7)],
            trigger="revoke",
            started_mono_ms=1000.12345,
            error="ILLEGAL_GENERATION",
            error_code=22,
        ),
        dict(
            offsets=[{**TP3, "offset": 9}, {**TP0, "offset": 7}],
            success=False,
            error="ILLEGAL_GENERATION",
            error_code=22,
            trigger="revoke",
            started_mono_ms=1000.123,
        ),
    ),
    ev.CONSUMER_ERROR: (
        dict(error="_MAX_POLL_EXCEEDED", error_code=-147, fatal=False),
        dict(error="_MAX_POLL_EXCEEDED", error_code=-147, fatal=False),
    ),
    ev.POLL_STALL_STARTED: (dict(fault_id="f1", duration_s=5), dict(fault_id="f1", duration_s=5)),
    ev.POLL_STALL_ENDED: (dict(fault_id="f1"), dict(fault_id="f1")),
    ev.CLIENT_LOG: (dict(level="WARNING", message="slow"), dict(level="WARNING", message="slow")),
    ev.REBALANCE_FAILED: (
        dict(attempts=4, reason="events-3 is owned", trigger="consumer started"),
        dict(attempts=4, reason="events-3 is owned", trigger="consumer started"),
    ),
    ev.CONSUMER_STOPPED: (dict(reason="end-of-run"), dict(reason="end-of-run")),
    ev.CLIENT_DESTROYED: ({}, {}),
    ev.TEST_HOOK_ARMED: (
        dict(hook="sigterm_after_join", params={"join": 2}),
        dict(hook="sigterm_after_join", params={"join": 2}),
    ),
    ev.TEST_HOOK_FIRED: (dict(hook="sigterm_after_join", join=2), dict(hook="sigterm_after_join", join=2)),
    ev.COORDINATOR_FOUND: (
        dict(instance="coordinator-2", address="127.0.0.1:1", answered_by="coordinator-1"),
        dict(instance="coordinator-2", address="127.0.0.1:1", answered_by="coordinator-1"),
    ),
    ev.COORDINATOR_LOST: (
        dict(instance="coordinator-2", error="NOT_COORDINATOR", error_code=16, message="moved"),
        dict(instance="coordinator-2", error="NOT_COORDINATOR", error_code=16, message="moved"),
    ),
}


def test_every_member_event_has_one_method_named_as_the_event():
    methods = {name for name, f in vars(MemberEvents).items() if inspect.isfunction(f) and not name.startswith("_")}
    methods -= {f.name for f in dataclass_fields(MemberEvents)}  # its identity's default
    assert methods - {"at"} == set(ev.CONSUMER_EVENTS) == set(CALLS)


@pytest.mark.parametrize("name", ev.CONSUMER_EVENTS)
def test_each_method_takes_only_fields_the_format_names_for_its_event(name):
    params = set(inspect.signature(getattr(MemberEvents, name)).parameters) - {"self"}
    # Its arguments are its fields, but for the shapes it makes: records_consumed's ranges come from
    # the offsets processed, offsets_committed's success from its error.
    made = {"processed": ev.RANGES}
    assert {made.get(p, p) for p in params} <= FIELDS[name] | ENVELOPE


@pytest.mark.parametrize("name", ev.CONSUMER_EVENTS)
def test_each_method_writes_its_fields_stamped_with_the_members_id_and_generation(name):
    recording = Recording(lambda: ("m-1", 3))
    kwargs, written = CALLS[name]
    getattr(recording.events, name)(**kwargs)
    [event] = recording.written
    assert event == {"name": name, "member_id": "m-1", "generation": 3, **written}
    assert unknown_fields(event) == ()


def test_a_field_the_driver_does_not_have_is_left_out_and_none_is_written_as_null():
    recording = Recording()
    recording.events.consumer_started(
        pid=1,
        group="g",
        protocol="classic-eager",
        assignor="range",
        group_instance_id=None,
        commit_mode="auto",
        processing="inline",
        session_timeout_ms=6000,
        max_poll_interval_ms=300_000,
    )
    recording.events.offsets_committed([(P0, 5)], trigger="auto", started_mono_ms=None)
    recording.events.group_join_failed("needs a valid member ID", error_code=ABSENT)
    started, committed, failed = recording.written
    assert "jvm_pid" not in started and "consumer_id" not in started and started["group_instance_id"] is None
    assert (committed["success"], committed["error"], committed["error_code"]) == (True, None, None)
    assert committed["started_mono_ms"] is None and "error_message" not in committed
    assert set(failed) == {"name", "member_id", "generation", "error"}


def test_a_field_the_format_does_not_name_is_refused(monkeypatch):
    events = Recording().events
    with pytest.raises(TypeError):
        events.partitions_assigned([P0], incremental=False, owner="consumer-2")  # type: ignore[call-arg]
    # A method whose signature drifted from the format is refused when it writes, before the history sees it.
    monkeypatch.setattr(member_events, "FIELDS", {**format_fields.FIELDS, ev.CONSUMER_STOPPED: frozenset()})
    with pytest.raises(ValueError, match="consumer_stopped has no field reason"):
        events.consumer_stopped("end-of-run")


def test_another_clocks_instant_is_stamped_with_its_name_and_without_catching_up():
    caught_up = []
    generation = [1]

    @contextlib.contextmanager
    def catch_up():
        generation[0] = 2  # the client's lines read first: they said the member joined generation 2
        caught_up.append(True)
        yield

    recording = Recording(lambda: (None, generation[0]))
    events = MemberEvents(recording, recording.events.identity, catch_up=catch_up)
    events.at(1_795_000_000_123.0, 5_000.5, CLIENT_CLOCK).group_join_sent()
    assert caught_up == [] and recording.written[-1]["generation"] == 1
    assert {k: recording.written[-1][k] for k in ("ts", "mono_ms", "clock")} == {
        "ts": 1_795_000_000_123.0,
        "mono_ms": 5_000.5,
        "clock": "client",
    }
    events.partitions_assigned([P0], incremental=False)
    assert caught_up == [True] and recording.written[-1]["generation"] == 2  # read after catching up
    assert "clock" not in recording.written[-1] and "ts" not in recording.written[-1]


def test_a_members_writer_stamps_member_incarnation_and_driver_on_every_line(tmp_path):
    spec = MemberSpec(
        member="consumer-2",
        incarnation=3,
        history=str(tmp_path / "history.jsonl"),
        group="g",
        topics=["events"],
        **protocol_fields(GENERATIONS["classic-eager"]),
        assignor="range",
        bootstrap_servers="b",
        commit="sync",
        processing_ms=0,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        max_poll_interval_ms=300_000,
        settings=None,
    )
    MemberEvents(member_writer(spec, driver="java"), lambda: ("m-2", 4)).consumer_stopped("signal")
    [line] = (tmp_path / "history.jsonl").read_text().splitlines()
    event = json.loads(line)
    assert {
        k: event[k]
        for k in ("name", "source", "seq", "member", "incarnation", "driver", "member_id", "generation", "reason")
    } == {
        "name": "consumer_stopped",
        "source": "consumer-2",
        "seq": 1,
        "member": "consumer-2",
        "incarnation": 3,
        "driver": "java",
        "member_id": "m-2",
        "generation": 4,
        "reason": "signal",
    }


# --------------------------------------------------------------------- the drivers write through it


MEMBER_EVENTS = set(ev.CONSUMER_EVENTS)
CONSTANTS = {name for name, value in vars(ev).items() if isinstance(value, str) and value in MEMBER_EVENTS}
# The processes of a run that are no group member write their own events with a writer of their own.
OWN_WRITERS = {"member_events.py", "producer.py", "observer.py"}


def _modules():
    return sorted(p for p in WORKLOADS.rglob("*.py") if p.name != "member_events.py")


def _names_a_member_event(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in MEMBER_EVENTS
    return isinstance(node, ast.Attribute) and node.attr in CONSTANTS


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(WORKLOADS)))
def test_no_driver_writes_a_member_event_by_hand(path):
    """No ``emit(<member event>, …)`` outside the emitter, and no writer of its own for a member."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if "emit" in callee:
            assert not (node.args and _names_a_member_event(node.args[0])), f"{path.name}:{node.lineno}"
        if callee == "HistoryWriter":
            assert path.name in OWN_WRITERS, f"{path.name}:{node.lineno} writes the history itself"
