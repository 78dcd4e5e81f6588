"""The member side of the project's coordinator (workloads/coordinated.py), against fake
coordinator instances speaking the line-JSON protocol on 127.0.0.1 and a fake fetcher:
discovery and failover between instances, the group protocol of each variant, and what a
refused heartbeat or commit does to the member's partitions."""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from types import SimpleNamespace

import pytest

from coordinator.group import variant
from coordinator.protocol import (
    COORDINATOR_NOT_AVAILABLE,
    ILLEGAL_GENERATION,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    encode,
    error,
)
from oracle.protocols import GENERATIONS
from tests.recording import Recording
from workloads.coordinated import (
    CoordinatedMember,
    CoordinatedSettings,
    CoordinatorLink,
    CoordinatorUnavailable,
    GroupMembership,
    Signal,
    commit_signal,
    heartbeat_signal,
)
from workloads.driver import MemberSpec, protocol_fields

TOPIC = "events"


# --------------------------------------------------------------------- fakes


class FakeCoordinator:
    """One coordinator instance answering from a script: per api, answers used in turn (the
    last one repeats); an answer is a dict or a function of the request."""

    def __init__(self, name: str):
        self.name = name
        self.requests: list[dict] = []
        self.script: dict[str, list] = {}
        fake = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                for line in self.rfile:
                    request = json.loads(line)
                    fake.requests.append(request)
                    self.wfile.write(encode({"correlation_id": request["correlation_id"], **fake.answer(request)}))

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def on(self, api: str, *answers) -> FakeCoordinator:
        self.script[api] = list(answers)
        return self

    def answer(self, request: dict) -> dict:
        answers = self.script.get(request["api"]) or [error(0)]
        a = answers.pop(0) if len(answers) > 1 else answers[0]
        return {**error(0), **(a(request) if callable(a) else a)}

    def received(self, api: str) -> list[dict]:
        return [r for r in self.requests if r["api"] == api]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def leader_is(name: str) -> dict:
    return {"leader": name, "address": "203.0.113.9:1", "instance": "whoever"}  # the address is never dialled


def refused(code: int) -> dict:
    return error(code, "scripted")


def unused_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"  # closed again: connections are refused


class FakeMessage:
    def __init__(self, partition: int, offset: int):
        self._partition, self._offset = partition, offset

    def topic(self):
        return TOPIC

    def partition(self):
        return self._partition

    def offset(self):
        return self._offset

    def error(self):
        return None

    def timestamp(self):
        return 1, 1_795_000_000_000  # TIMESTAMP_CREATE_TIME, ms


class FakeFetcher:
    """The librdkafka consumer's manual-assignment surface."""

    def __init__(self, partitions: int = 4):
        self.partitions = partitions
        self.assigned: list[tuple[str, int, int]] | None = None
        self.batches: list[list[FakeMessage]] = []
        self.closed = False

    def assign(self, tps) -> None:
        self.assigned = [(t.topic, t.partition, t.offset) for t in tps]

    def unassign(self) -> None:
        self.assigned = []

    def consume(self, num_messages: int, timeout: float):
        return self.batches.pop(0) if self.batches else []

    def list_topics(self, topic: str, timeout: float):
        meta = SimpleNamespace(error=None, partitions=dict.fromkeys(range(self.partitions)))
        return SimpleNamespace(topics={topic: meta})

    def close(self) -> None:
        self.closed = True


def spec(tmp_path, protocol: str, coordinators: dict[str, str], **overrides) -> MemberSpec:
    fields = dict(
        member="consumer-1",
        incarnation=1,
        history=str(tmp_path / "history.jsonl"),
        bootstrap_servers="127.0.0.1:1",
        group="g",
        topics=[TOPIC],
        **protocol_fields(GENERATIONS[protocol]),
        assignor="range",
        commit="sync",
        processing_ms=0,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        max_poll_interval_ms=300_000,
        settings=CoordinatedSettings(coordinators=coordinators),
    )
    return MemberSpec(**{**fields, **overrides})


def design(protocol: str):
    """The coordinator variant a generation names (coordinator.group.variant)."""
    return variant(GENERATIONS[protocol].coordinator_variant)


def history(tmp_path) -> list[dict]:
    path = tmp_path / "history.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def names(tmp_path, *only: str) -> list[str]:
    return [e["name"] for e in history(tmp_path) if not only or e["name"] in only]


@pytest.fixture
def coordinators():
    made: list[FakeCoordinator] = []

    def make(*instance_names: str) -> list[FakeCoordinator]:
        fakes = [FakeCoordinator(n) for n in instance_names]
        made.extend(fakes)
        return fakes

    yield make
    for fake in made:
        fake.close()


def link_to(fakes, events, **lanes) -> CoordinatorLink:
    return CoordinatorLink(
        "g", {**{f.name: f.address for f in fakes}, **lanes}, events, backoff_s=0.01, find_timeout_s=0.5
    )


# --------------------------------------------------------------------- finding the coordinator


def test_discovery_skips_dead_instances_and_dials_the_leader_through_its_own_lane(coordinators):
    c2, c3 = coordinators("c2", "c3")
    c2.on("FindCoordinator", leader_is("c3"))
    recording = Recording()
    link = link_to([c2, c3], recording.events, c1=unused_address())
    link.instances = dict(sorted(link.instances.items()))  # c1 (refusing connections) is asked first

    link.request("heartbeat", "Heartbeat", 1.0, member_id="m", generation_id=1)

    assert [r["group"] for r in c3.received("Heartbeat")] == ["g"]
    assert c2.received("Heartbeat") == []
    assert recording.of("coordinator_found") == [{"instance": "c3", "address": c3.address, "answered_by": "c2"}]


def test_not_coordinator_forgets_the_leader_and_the_next_request_finds_the_new_one(coordinators):
    c1, c2 = coordinators("c1", "c2")
    c1.on("FindCoordinator", leader_is("c1"), leader_is("c2"))  # c1 is asked first, then last
    c2.on("FindCoordinator", leader_is("c2"))
    c1.on("OffsetCommit", refused(NOT_COORDINATOR))
    recording = Recording()
    link = link_to([c1, c2], recording.events)

    with pytest.raises(CoordinatorUnavailable) as lost:
        link.request("group", "OffsetCommit", 1.0, member_id="m", generation_id=3, offsets=[])
    assert (lost.value.name, lost.value.code, lost.value.sent) == ("NOT_COORDINATOR", NOT_COORDINATOR, True)
    link.request("group", "OffsetCommit", 1.0, member_id="m", generation_id=3, offsets=[])

    assert len(c2.received("OffsetCommit")) == 1
    assert len(c1.received("FindCoordinator")) == 1  # the instance just lost is asked last
    assert recording.names() == ["coordinator_found", "coordinator_lost", "coordinator_found"]
    assert recording.of("coordinator_lost")[0]["instance"] == "c1"
    assert [e["instance"] for e in recording.of("coordinator_found")] == ["c1", "c2"]


def test_no_elected_leader_means_no_request_sent(coordinators):
    c1, c2 = coordinators("c1", "c2")
    for c in (c1, c2):
        c.on("FindCoordinator", refused(COORDINATOR_NOT_AVAILABLE))
    link = link_to([c1, c2], Recording().events)

    with pytest.raises(CoordinatorUnavailable) as e:
        link.request("heartbeat", "Heartbeat", 1.0, member_id="m", generation_id=1)

    assert (e.value.code, e.value.sent) == (COORDINATOR_NOT_AVAILABLE, False)
    assert [r["api"] for r in c1.requests + c2.requests] == ["FindCoordinator", "FindCoordinator"]


# --------------------------------------------------------------------- the group protocol per variant


def joined(member_id: str, generation: int = 1, leader: str | None = None, **extra) -> dict:
    return {
        "generation_id": generation,
        "member_id": member_id,
        "leader_id": leader or member_id,
        "protocol_name": "range",
        "members": [],
        **extra,
    }


def membership(tmp_path, fakes, protocol: str, recording: Recording, counts=None) -> GroupMembership:
    s = spec(tmp_path, protocol, {f.name: f.address for f in fakes})
    return GroupMembership(
        link_to(fakes, recording.events),
        design(protocol),
        s,
        recording.events,
        lambda topics: counts or {},
        threading.Event(),
    )


def test_v1_takes_the_assignment_from_the_join_response_without_syncgroup(tmp_path, coordinators):
    [c1] = coordinators("c1")
    c1.on("FindCoordinator", leader_is("c1"))
    c1.on(
        "JoinGroup", joined("m-1", 4, assignment=[{"topic": TOPIC, "partition": 2}, {"topic": TOPIC, "partition": 0}])
    )
    recording = Recording()
    group = membership(tmp_path, [c1], "coordinator-v1", recording)

    assert group.join() == [(TOPIC, 0), (TOPIC, 2)]

    [join] = c1.received("JoinGroup")
    assert join["member_id"] == "" and join["rebalance_timeout_ms"] == join["session_timeout_ms"] == 6000
    assert join["protocols"] == [{"name": "range", "topics": [TOPIC]}]
    assert c1.received("SyncGroup") == []
    assert recording.names() == ["group_join_sent", "coordinator_found", "group_joined", "group_synced"]
    assert (group.member_id, group.generation) == ("m-1", 4)


def test_v2_leader_assigns_with_the_groups_assignor_and_syncgroup_carries_it(tmp_path, coordinators):
    [c1] = coordinators("c1")
    c1.on("FindCoordinator", leader_is("c1"))
    members = [{"member_id": "b", "topics": [TOPIC]}, {"member_id": "a", "topics": [TOPIC]}]
    c1.on("JoinGroup", joined("a", 7, members=members))
    c1.on("SyncGroup", lambda r: {"assignment": r["assignments"]["a"]})
    recording = Recording()
    group = membership(tmp_path, [c1], "coordinator-v2", recording, counts={TOPIC: 5})

    assert group.join() == [(TOPIC, 0), (TOPIC, 1), (TOPIC, 2)]  # seed 001: range gives 0,1,2 and 3,4

    [sync] = c1.received("SyncGroup")
    assert sync["generation_id"] == 7
    assert sync["assignments"]["b"] == [{"topic": TOPIC, "partition": 3}, {"topic": TOPIC, "partition": 4}]
    [event] = recording.of("group_joined")
    assert event["is_leader"] and sorted(event["members"]) == ["a", "b"]


def test_v3_follower_syncs_without_an_assignment_and_asks_for_its_own_rebalance_timeout(tmp_path, coordinators):
    [c1] = coordinators("c1")
    c1.on("FindCoordinator", leader_is("c1"))
    c1.on("JoinGroup", joined("b", 2, leader="a"))
    c1.on("SyncGroup", {"assignment": [{"topic": TOPIC, "partition": 3}]})
    group = membership(tmp_path, [c1], "coordinator-v3", Recording())

    assert group.join() == [(TOPIC, 3)]

    assert "assignments" not in c1.received("SyncGroup")[0]
    assert c1.received("JoinGroup")[0]["rebalance_timeout_ms"] == 300_000  # max.poll.interval.ms


def test_join_refused_as_unknown_member_rejoins_as_a_new_one(tmp_path, coordinators):
    [c1] = coordinators("c1")
    c1.on("FindCoordinator", leader_is("c1"))
    c1.on("JoinGroup", refused(UNKNOWN_MEMBER_ID), joined("m-2", 5, assignment=[]))
    recording = Recording()
    group = membership(tmp_path, [c1], "coordinator-v1", recording)
    group.member_id = "m-1"

    assert group.join() == []

    assert [r["member_id"] for r in c1.received("JoinGroup")] == ["m-1", ""]
    assert recording.of("group_join_failed")[0]["error"] == "UNKNOWN_MEMBER_ID"


def test_join_follows_the_coordinator_when_it_moves_keeping_the_member_id(tmp_path, coordinators):
    c1, c2 = coordinators("c1", "c2")
    c1.on("FindCoordinator", leader_is("c1"), leader_is("c2"))
    c2.on("FindCoordinator", leader_is("c2"))
    c1.on("JoinGroup", refused(NOT_COORDINATOR))
    c2.on("JoinGroup", joined("m-1", 9, leader="other"))
    c2.on("SyncGroup", {"assignment": []})
    recording = Recording()
    group = membership(tmp_path, [c1, c2], "coordinator-v2", recording)
    group.member_id = "m-1"

    assert group.join() == []

    assert [r["member_id"] for r in c2.received("JoinGroup")] == ["m-1"]
    assert recording.names().count("group_join_sent") == 2


@pytest.mark.parametrize(
    "protocol, code, expected",
    [
        ("coordinator-v1", ILLEGAL_GENERATION, Signal.REBALANCE),  # seed 001: a rebalance began
        ("coordinator-v2", ILLEGAL_GENERATION, Signal.FENCED),
        ("coordinator-v3", ILLEGAL_GENERATION, Signal.FENCED),
        ("coordinator-v2", REBALANCE_IN_PROGRESS, Signal.REBALANCE),
        ("coordinator-v3", REBALANCE_IN_PROGRESS, Signal.REBALANCE),
        ("coordinator-v1", UNKNOWN_MEMBER_ID, Signal.EVICTED),
        ("coordinator-v3", UNKNOWN_MEMBER_ID, Signal.EVICTED),
    ],
)
def test_what_a_refused_heartbeat_means_per_variant(protocol, code, expected):
    assert heartbeat_signal(design(protocol), code) is expected


def test_a_commit_refused_for_its_generation_is_fenced_in_every_variant():
    assert commit_signal(ILLEGAL_GENERATION) is Signal.FENCED
    assert commit_signal(REBALANCE_IN_PROGRESS) is Signal.REBALANCE
    assert commit_signal(NOT_COORDINATOR) is None


# --------------------------------------------------------------------- the member: rebalances and partitions


def member_of(tmp_path, fake: FakeCoordinator, protocol: str, **overrides) -> CoordinatedMember:
    """A member alone in its group at `fake`: generation 1 with every partition, nothing committed."""
    fake.on("FindCoordinator", leader_is(fake.name))
    fake.on(
        "JoinGroup",
        lambda r: joined(
            "m-1",
            1,
            members=[{"member_id": "m-1", "topics": [TOPIC]}],
            assignment=[{"topic": TOPIC, "partition": p} for p in range(2)],
        ),
    )
    fake.on("SyncGroup", lambda r: {"assignment": r["assignments"]["m-1"]})
    fake.on("OffsetFetch", lambda r: {"offsets": [{**p, "offset": -1} for p in r["partitions"]]})
    member = CoordinatedMember(
        spec(tmp_path, protocol, {fake.name: fake.address}, **overrides),
        threading.Event(),
        fetcher=FakeFetcher(partitions=2),
    )
    member.link.backoff_s = 0.01
    return member


def consume(member: CoordinatedMember, *offsets_by_partition: tuple[int, int]) -> None:
    member.fetcher.batches.append([FakeMessage(p, o) for p, o in offsets_by_partition])
    member.poll_once()


def test_member_joins_fetches_from_the_beginning_processes_and_commits_with_its_generation(tmp_path, coordinators):
    [c1] = coordinators("c1")
    member = member_of(tmp_path, c1, "coordinator-v2")

    member.poll_once()  # joins
    consume(member, (0, 0), (0, 1), (1, 0))

    assert member.fetcher.assigned == [(TOPIC, 0, -2), (TOPIC, 1, -2)]  # OFFSET_BEGINNING
    [commit] = c1.received("OffsetCommit")
    assert (commit["member_id"], commit["generation_id"]) == ("m-1", 1)
    assert commit["offsets"] == [
        {"topic": TOPIC, "partition": 0, "offset": 2},
        {"topic": TOPIC, "partition": 1, "offset": 1},
    ]
    assert names(
        tmp_path,
        "group_join_sent",
        "group_joined",
        "group_synced",
        "partitions_assigned",
        "records_consumed",
        "offsets_committed",
    ) == [
        "group_join_sent",
        "group_joined",
        "group_synced",
        "partitions_assigned",
        "records_consumed",
        "offsets_committed",
    ]
    committed = [e for e in history(tmp_path) if e["name"] == "offsets_committed"][0]
    assert committed["success"] and committed["trigger"] == "after-processing" and committed["generation"] == 1


def heartbeat_refused_with_progress_in_hand(tmp_path, c1, protocol: str, code: int, records: tuple[int, int]):
    """A joined member with processed records not committed yet (auto commit not due) whose
    next heartbeat is refused with ``code``; two polls: the refusal, then what it leads to."""
    member = member_of(tmp_path, c1, protocol, commit="auto", auto_commit_interval_ms=60_000)
    member.poll_once()
    member.next_auto_commit = time.monotonic() + 60
    consume(member, records)
    c1.on("Heartbeat", refused(code))
    member.next_heartbeat = 0
    member.poll_once()  # the heartbeat is refused
    member.poll_once()  # revoke (with a commit) or lose, then rejoin
    return member


@pytest.mark.parametrize(
    "protocol, signal_code", [("coordinator-v1", ILLEGAL_GENERATION), ("coordinator-v2", REBALANCE_IN_PROGRESS)]
)
def test_rebalance_signal_commits_then_revokes_everything_then_rejoins(tmp_path, coordinators, protocol, signal_code):
    [c1] = coordinators("c1")
    heartbeat_refused_with_progress_in_hand(tmp_path, c1, protocol, signal_code, (0, 5))

    events = [
        e
        for e in history(tmp_path)
        if e["name"]
        in (
            "heartbeat_failed",
            "rebalance_started",
            "offsets_committed",
            "partitions_revoked",
            "group_join_sent",
            "group_joined",
            "partitions_assigned",
        )
    ]
    assert [e["name"] for e in events][-7:] == [
        "heartbeat_failed",
        "rebalance_started",
        "offsets_committed",
        "partitions_revoked",
        "group_join_sent",
        "group_joined",
        "partitions_assigned",
    ]
    revoke_commit = events[-5]
    assert revoke_commit["trigger"] == "revoke" and revoke_commit["success"] and revoke_commit["generation"] == 1
    assert revoke_commit["offsets"] == [{"topic": TOPIC, "partition": 0, "offset": 6}]
    assert [r["member_id"] for r in c1.received("JoinGroup")] == ["", "m-1"]


@pytest.mark.parametrize(
    "protocol, code", [("coordinator-v1", UNKNOWN_MEMBER_ID), ("coordinator-v2", ILLEGAL_GENERATION)]
)
def test_a_member_out_of_its_generation_loses_its_partitions_without_committing(tmp_path, coordinators, protocol, code):
    [c1] = coordinators("c1")
    heartbeat_refused_with_progress_in_hand(tmp_path, c1, protocol, code, (1, 3))

    assert "partitions_revoked" not in names(tmp_path)
    assert c1.received("OffsetCommit") == []
    lost = [e for e in history(tmp_path) if e["name"] == "partitions_lost"]
    assert lost[0]["partitions"] == [{"topic": TOPIC, "partition": 0}, {"topic": TOPIC, "partition": 1}]
    expected_id = "" if code == UNKNOWN_MEMBER_ID else "m-1"  # evicted: a new member; fenced: the same one
    assert [r["member_id"] for r in c1.received("JoinGroup")] == ["", expected_id]


def test_a_commit_refused_with_a_stale_generation_keeps_the_progress_uncommitted_and_rejoins(tmp_path, coordinators):
    [c1] = coordinators("c1")
    member = member_of(tmp_path, c1, "coordinator-v2")
    member.poll_once()
    c1.on("OffsetCommit", refused(ILLEGAL_GENERATION))

    consume(member, (0, 0))

    [commit] = [e for e in history(tmp_path) if e["name"] == "offsets_committed"]
    assert (commit["success"], commit["error"], commit["error_code"]) == (False, "ILLEGAL_GENERATION", 22)
    assert names(tmp_path)[-1] == "partitions_lost"
    assert member.uncommitted == {} and member.rejoin_reason == "commit: ILLEGAL_GENERATION"
    member.poll_once()
    assert names(tmp_path, "rebalance_started", "group_join_sent")[-2:] == ["rebalance_started", "group_join_sent"]


def test_member_keeps_its_assignment_when_the_coordinator_moves(tmp_path, coordinators):
    c1, c2 = coordinators("c1", "c2")
    member = member_of(tmp_path, c1, "coordinator-v2")
    member.link = member.group.link = link_to([c1, c2], member.events)
    c2.on("FindCoordinator", leader_is("c1"))
    member.poll_once()
    c1.on("Heartbeat", refused(NOT_COORDINATOR))
    c1.on("FindCoordinator", leader_is("c2"))
    c2.on("FindCoordinator", leader_is("c2"))

    for _ in range(2):
        member.next_heartbeat = 0
        member.poll_once()

    assert len(c2.received("Heartbeat")) == 1
    assert names(tmp_path, "coordinator_lost", "coordinator_found")[-2:] == ["coordinator_lost", "coordinator_found"]
    assert not {"partitions_revoked", "partitions_lost", "rebalance_started"} & set(names(tmp_path))
    assert len(c1.received("JoinGroup")) == 1 and c2.received("JoinGroup") == []


def test_v3_member_that_stops_polling_leaves_from_its_heartbeat_thread_then_rejoins_as_new(tmp_path, coordinators):
    [c1] = coordinators("c1")
    member = member_of(tmp_path, c1, "coordinator-v3", max_poll_interval_ms=300, heartbeat_interval_ms=100)
    member.poll_once()
    heartbeats = threading.Thread(target=member._heartbeat_thread, daemon=True)
    heartbeats.start()

    deadline = time.monotonic() + 2
    while "partitions_lost" not in names(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.02)  # the poll loop stalls: no poll_once
    member.stop.set()
    heartbeats.join(1)

    assert len(c1.received("Heartbeat")) >= 1  # heartbeats went on while the poll loop stalled
    assert [r["member_id"] for r in c1.received("LeaveGroup")] == ["m-1"]
    assert names(tmp_path, "consumer_error", "partitions_lost") == ["consumer_error", "partitions_lost"]
    assert [e for e in history(tmp_path) if e["name"] == "consumer_error"][0]["error"] == "_MAX_POLL_EXCEEDED"
    member.stop.clear()
    member.poll_once()
    assert [r["member_id"] for r in c1.received("JoinGroup")] == ["", ""]


def test_sigterm_commits_revokes_and_leaves(tmp_path, coordinators):
    [c1] = coordinators("c1")
    member = member_of(tmp_path, c1, "coordinator-v1", commit="auto", auto_commit_interval_ms=60_000)
    member.poll_once()
    member.next_auto_commit = time.monotonic() + 60
    consume(member, (1, 0))
    member.stop.set()

    assert member.run() == 0

    tail = names(tmp_path, "offsets_committed", "partitions_revoked", "consumer_stopped")[-3:]
    assert tail == ["offsets_committed", "partitions_revoked", "consumer_stopped"]
    assert [r["member_id"] for r in c1.received("LeaveGroup")] == ["m-1"]
    assert member.fetcher.closed


def test_a_pattern_subscription_is_refused_clearly(tmp_path, coordinators):
    [c1] = coordinators("c1")
    member = member_of(tmp_path, c1, "coordinator-v2", topics=["^events.*"])

    assert member.run() == 1

    error_event = [e for e in history(tmp_path) if e["name"] == "consumer_error"][0]
    assert error_event["error"] == "UNSUPPORTED" and error_event["fatal"]
    assert names(tmp_path)[-1] == "consumer_stopped" and c1.requests == []


def test_records_below_the_committed_position_are_dropped_not_processed_again(tmp_path, coordinators):
    """The stale-fetch guard zk-eager has (workloads/fetching.py): the fetcher is assigned at the
    committed offset; records from below it, delivered anyway, are dropped and noted."""
    [c1] = coordinators("c1")
    member = member_of(tmp_path, c1, "coordinator-v2")
    c1.on("OffsetFetch", lambda r: {"offsets": [{**p, "offset": 5} for p in r["partitions"]]})
    member.poll_once()  # joins; fetches from the committed 5
    consume(member, (0, 3), (0, 4), (0, 5), (1, 5))

    assert member.fetcher.assigned == [(TOPIC, 0, 5), (TOPIC, 1, 5)]
    consumed = [
        (r["partition"], r["min_offset"], r["max_offset"])
        for e in history(tmp_path)
        if e["name"] == "records_consumed"
        for r in e["ranges"]
    ]
    assert consumed == [(0, 5, 5), (1, 5, 5)]
    [note] = [e["message"] for e in history(tmp_path) if e["name"] == "client_log"]
    assert (
        note == "dropped 2 records of events-0 (offsets 3..4) below its fetch position 5 (a stale fetch after assign)"
    )
