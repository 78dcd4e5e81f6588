"""librdkafka's cgrp lines, as each client version the harness runs really wrote them, are read.

Each fixture (tests/fixtures/client_logs/<librdkafka version>.log) holds lines a member of a real
smoke run on that confluent-kafka release wrote (recorded with record.py there). From every one
the reader must learn what the oracle needs: the JoinGroup it sent, the generation and member id
it joined with, the SyncGroup that completed the join, the rebalances that followed. A version
whose wording it no longer reads fails here, not as a run judged on half its events; and a run
whose member could not read them is INCOMPLETE (oracle.verdict.unrecognised), never judged.
"""

from __future__ import annotations

import contextlib
import re
import struct
from pathlib import Path

import pytest

from oracle import check_history
from oracle import vocabulary as ev
from runtime.errors import EXIT_FOR_VERDICT
from tests.recording import Recording
from tests.unit.test_client_log import RecordingMember, read
from workloads import consumer
from workloads.client_log import parse_line
from workloads.client_versions import DISTRIBUTIONS, parse_client, version_key

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "client_logs"
VERSIONS = sorted((p.stem for p in FIXTURES.glob("*.log")), key=version_key)
# KIP-848 members (group.protocol=consumer), on the releases that run it (client_versions.consumer_heartbeat).
CONSUMER_VERSIONS = sorted((p.stem for p in (FIXTURES / "consumer").glob("*.log")), key=version_key)
_MEMBER_ID = re.compile(r"^consumer-1-[0-9a-f-]{36}$")


def lines_of(version: str, protocol: str = "") -> list[str]:
    return [line for line in (FIXTURES / protocol / f"{version}.log").read_text().splitlines() if line]


def test_there_is_a_recording_of_the_floor_and_of_the_pinned_release():
    # The pinned confluent-kafka 2.16.1 loads librdkafka 2.16.0.
    assert {DISTRIBUTIONS["confluent-kafka"].floor, "2.16.0"} <= set(VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_recorded_line_is_a_librdkafka_line(version):
    assert all(parse_line(line) is not None for line in lines_of(version))


@pytest.mark.parametrize("version", VERSIONS)
def test_a_classic_members_join_sync_and_rebalances_are_read(version):
    member = read(lines_of(version), RecordingMember())
    said = member.recording
    joined = said.of(ev.GROUP_JOINED)
    assert joined, f"librdkafka {version}: no JoinGroup response read"
    assert all(j["protocol_name"] == "range" for j in joined)
    generations = [e["generation"] for e in member.written if e["name"] == ev.GROUP_JOINED]
    assert generations == sorted(generations) and generations[0] >= 1
    assert _MEMBER_ID.match(member.member_id), member.member_id
    assert member.joins >= 2 and said.of(
        ev.GROUP_JOIN_SENT
    )  # the one refused with MEMBER_ID_REQUIRED, then the real one
    assert "Group member needs a valid member ID" in {f["error"] for f in said.of(ev.GROUP_JOIN_FAILED)}
    assert said.of(ev.GROUP_SYNCED), f"librdkafka {version}: no SyncGroup response read"
    assert said.of(ev.REBALANCE_STARTED), f"librdkafka {version}: no rebalance read"
    assert said.of(ev.SUBSCRIPTION_CHANGED)[0] == {"topics": {"events": 6}}
    # Nothing the reader took for a warning: every line it was given is a step it knows.
    assert not said.of(ev.CLIENT_LOG)


def test_there_is_a_recording_of_each_consumergroupheartbeat_version_and_of_the_pinned_release():
    spoken = {parse_client(f"confluent-kafka=={v}").consumer_heartbeat_version for v in CONSUMER_VERSIONS}
    assert spoken == {0, 1} and "2.16.0" in CONSUMER_VERSIONS


# librdkafka before 2.10 (ConsumerGroupHeartbeat v0, Kafka 3.7/3.8's early access) logs no member epoch with
# the heartbeat response: only the next request carries it ("generation id N"), after the assignment
# callback ran. The member asks librdkafka for it there (consumer_group_metadata: Member._epoch_now).
EPOCH_NOT_LOGGED = [
    v for v in CONSUMER_VERSIONS if parse_client(f"confluent-kafka=={v}").consumer_heartbeat_version == 0
]


def test_there_is_a_recording_of_an_early_access_client():
    assert EPOCH_NOT_LOGGED


@pytest.mark.parametrize("version", EPOCH_NOT_LOGGED)
def test_an_early_access_members_epoch_is_not_in_its_log_when_its_assignment_comes(version):
    lines = lines_of(version, "consumer")
    first_assignment = next(
        i for i, line in enumerate(lines) if "ConsumerGroupHeartbeat response received target" in line
    )
    member = read(lines[: first_assignment + 1], RecordingMember(assignor="uniform", protocol="consumer"))
    assert member.generation is None and not member.recording.of(ev.GROUP_JOINED)
    assert member.recording.of(ev.GROUP_JOIN_SENT)  # its epoch-0 heartbeat is read


@pytest.mark.parametrize("version", EPOCH_NOT_LOGGED)
def test_an_early_access_members_later_epochs_are_read_from_its_requests(version):
    """Epochs that come without an assignment (the group's epoch moved on) are said by the next
    request only: read there, each once."""
    lines = lines_of(version, "consumer")
    assert all(parse_line(line) is not None for line in lines)
    member = read(lines, RecordingMember(assignor="uniform", protocol="consumer"))
    said = member.recording
    sent = sorted({int(e) for e in re.findall(r"generation id (\d+),", "\n".join(lines)) if int(e) > 0})
    assert [j["generation"] for j in member.written if j["name"] == ev.GROUP_JOINED] == sent and sent
    assert all(j["protocol_name"] == "uniform" and j["leader_id"] is None for j in said.of(ev.GROUP_JOINED))
    assert re.fullmatch(r"[A-Za-z0-9+/_-]{22}", member.member_id), member.member_id
    assert said.of(ev.GROUP_SYNCED), f"librdkafka {version}: no acknowledged target assignment read"
    assert not said.of(ev.CLIENT_LOG)


@pytest.mark.parametrize("version", VERSIONS)
def test_lines_worded_otherwise_leave_the_member_without_a_generation(version):
    """The reader's one failure mode: wording it does not know reads as nothing. A member in that state
    says so when the group hands it partitions (below)."""
    reworded = [line.replace("JoinGroup response", "JoinGroup reply") for line in lines_of(version)]
    member = read(reworded, RecordingMember())
    assert member.generation is None and not member.recording.of(ev.GROUP_JOINED)


# --------------------------------------------------------------------- not recognised: INCOMPLETE


class Tap:
    """The stderr tap's catch-up, with nothing in the pipe."""

    def __init__(self):
        self.caught_up = contextlib.nullcontext


class Spec:
    group_protocol = "classic"
    cooperative = incremental = False


def test_an_assignment_without_a_generation_read_is_said_once_and_makes_the_run_incomplete():
    recording = Recording()
    member = consumer.Member.__new__(consumer.Member)  # its callbacks only: no client, no tap
    member.spec, member.generation, member.unrecognised, member.assigned = Spec(), None, set(), set()
    member.reader = type("Reader", (), {"synced": False})()
    member.events, member.tap = recording.events, Tap()
    fake = type("Consumer", (), {"assign": lambda self, p: None})()
    member._on_assign(fake, [])
    member._on_assign(fake, [])
    [said] = recording.of(ev.LOG_UNRECOGNISED)
    assert said["missing"].startswith("generation and member id")
    assert said["client_version"] == consumer.librdkafka_version()

    history = [
        {"name": ev.RUN_STARTED, "source": "harness", "seq": 1, "ts": 1.0, "mono_ms": 1.0, "run_id": "r", "topics": []},
        {"name": ev.LOG_UNRECOGNISED, "source": "consumer-1", "seq": 1, "ts": 2.0, "mono_ms": 2.0, **said},
        {"name": ev.PHASE, "source": "harness", "seq": 2, "ts": 3.0, "mono_ms": 3.0, "phase": "done"},
    ]
    verdict = check_history(history)
    assert verdict.status == "incomplete" and EXIT_FOR_VERDICT[verdict.status] == 4
    reasons = {r.skipped for name, r in verdict.checks.items() if name != "history-integrity"}
    assert reasons == {
        f"log lines not recognised, consumer-1: {said['missing']} unreadable in its librdkafka cgrp log "
        f"({said['client_version']})"
    }


def test_a_member_that_read_its_join_and_sync_says_nothing():
    recording = Recording()
    member = consumer.Member.__new__(consumer.Member)
    member.spec, member.generation, member.unrecognised, member.assigned = Spec(), 3, set(), set()
    member.reader = type("Reader", (), {"synced": True})()
    member.events, member.tap = recording.events, Tap()
    member._on_assign(type("Consumer", (), {"assign": lambda self, p: None})(), [])
    assert not recording.of(ev.LOG_UNRECOGNISED)
    assert recording.of(ev.PARTITIONS_ASSIGNED)


def test_lines_still_in_the_pipe_when_the_assignment_comes_are_read_before_anything_is_said_missing():
    """The callback can run before the tap's thread read the JoinGroup and SyncGroup lines librdkafka
    wrote just before it: they are read first (the catch-up), never taken for missing."""
    recording = Recording()
    member = consumer.Member.__new__(consumer.Member)
    member.spec, member.generation, member.unrecognised, member.assigned = Spec(), None, set(), set()
    member.reader = type("Reader", (), {"synced": False, "unread": []})()

    @contextlib.contextmanager
    def caught_up():
        member.generation, member.reader.synced = 3, True  # what the pipe still held
        yield

    member.events, member.tap = recording.events, type("Tap", (), {"caught_up": staticmethod(caught_up)})()
    member._on_assign(type("Consumer", (), {"assign": lambda self, p: None})(), [])
    assert not recording.of(ev.LOG_UNRECOGNISED)


class KIP848Spec:
    group_protocol, assignor = "consumer", "uniform"
    cooperative = incremental = True


def _kip848_member(recording: Recording) -> consumer.Member:
    member = consumer.Member.__new__(consumer.Member)  # its callbacks only: no client, no tap
    member.spec, member.generation, member.member_id, member.unrecognised, member.assigned = (
        KIP848Spec(),
        None,
        None,
        set(),
        set(),
    )
    member.reader = consumer.GroupLogReader(member, recording.events)
    member.events, member.tap = recording.events, Tap()
    return member


def _librdkafka(metadata: bytes):
    return type(
        "Consumer",
        (),
        {"incremental_assign": lambda self, p: None, "consumer_group_metadata": lambda self: metadata},
    )()


def test_an_early_access_assignment_carries_the_epoch_librdkafka_holds():
    """Where the log has not said the epoch yet (librdkafka < 2.10), the member reads it from librdkafka's
    consumer group metadata — its own serialization, as 2.6.1 writes it — and joins in it, then is assigned."""
    recording = Recording(lambda: (member.member_id, member.generation))
    member = _kip848_member(recording)
    metadata = b"CGMDv2:" + struct.pack("=i", 3) + b"ea\0jw2FlRt2Rqms4VMfW4TkHQ\0\x01"
    member._on_assign(_librdkafka(metadata), [])
    [joined] = [e for e in recording.written if e["name"] == ev.GROUP_JOINED]
    assert (joined["generation"], joined["member_id"], joined["protocol_name"]) == (
        3,
        "jw2FlRt2Rqms4VMfW4TkHQ",
        "uniform",
    )
    [assigned] = [e for e in recording.written if e["name"] == ev.PARTITIONS_ASSIGNED]
    assert (assigned["generation"], assigned["member_id"]) == (3, "jw2FlRt2Rqms4VMfW4TkHQ")
    assert not recording.of(ev.LOG_UNRECOGNISED)
    # The same epoch again (a second assignment of it, or its request line read later): no second join.
    member._on_assign(_librdkafka(metadata), [])
    assert len(recording.of(ev.GROUP_JOINED)) == 1


@pytest.mark.parametrize(
    "metadata", [b"CGMDv3:\x03\0\0\0ea\0m\0\x01", b"CGMDv2:" + struct.pack("=i", -1) + b"ea\0\0\x01"]
)
def test_metadata_it_cannot_read_or_without_an_epoch_leaves_the_epoch_missing_and_said(metadata):
    recording = Recording(lambda: (member.member_id, member.generation))
    member = _kip848_member(recording)
    member._on_assign(_librdkafka(metadata), [])
    assert not recording.of(ev.GROUP_JOINED)
    [said] = recording.of(ev.LOG_UNRECOGNISED)
    assert said["missing"] == "member epoch (no ConsumerGroupHeartbeat response line read)"
