"""workloads/verifiable.py: VerifiableConsumer's stdout → history events.

The sample lines are verbatim what Kafka 3.9.2's and 4.1.1's VerifiableConsumer
printed against real brokers (JSON events on stdout, and the client's log with
our layout "<LOG_MARK><level> <logger> <message>"), ids and offsets included.
"""

from __future__ import annotations

import pytest

from workloads import verifiable
from workloads.verifiable import LOG_MARK, Translator, kafka_error


class Sink:
    """The history writer under the translator's events: collects what they write."""

    def __init__(self):
        self.events: list[dict] = []

    def emit(self, name: str, **fields) -> dict:
        self.events.append({"name": name, **fields})
        return self.events[-1]

    def named(self, *names: str) -> list[dict]:
        return [e for e in self.events if e["name"] in names]


@pytest.fixture
def clock(monkeypatch):
    ticks = iter(range(1000, 100_000, 10))
    monkeypatch.setattr(verifiable, "now", lambda: (0.0, float(next(ticks))))


def feed(translator: Translator, block: str) -> None:
    """Lines as captured: the log lines carried "@@ " where LOG_MARK is now."""
    for line in block.strip("\n").split("\n"):
        translator.line(LOG_MARK + line[3:] if line.startswith("@@ ") else line)


@pytest.fixture
def sink():
    return Sink()


@pytest.fixture
def eager(sink, clock):
    return Translator(sink, cooperative=False)


# Kafka 3.9.2, range, the first member of an empty group (it is the leader).
FIRST_JOIN_39 = """
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] (Re-)joining group
@@ DEBUG ConsumerCoordinator [Consumer clientId=c1, groupId=g] JoinGroup failed due to non-fatal error: MEMBER_ID_REQUIRED. Will set the member id as c1-48654a5d-f387-4d06-94af-a46224899ab9 and then rejoin. Sent generation was Generation{generationId=-1, memberId='', protocol='null'}
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Request joining group due to: need to re-join with the given member-id: c1-48654a5d-f387-4d06-94af-a46224899ab9
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] (Re-)joining group
@@ DEBUG ConsumerCoordinator [Consumer clientId=c1, groupId=g] Received successful JoinGroup response: JoinGroupResponseData(throttleTimeMs=0, errorCode=0, generationId=1, protocolType='consumer', protocolName='range', leader='c1-48654a5d-f387-4d06-94af-a46224899ab9', skipAssignment=false, memberId='c1-48654a5d-f387-4d06-94af-a46224899ab9', members=[JoinGroupResponseMember(memberId='c1-48654a5d-f387-4d06-94af-a46224899ab9', groupInstanceId=null, metadata=[0, 3, 0, 0, 0, 1, 0, 6, 101, 118, 101, 110, 116, 115, -1, -1, -1, -1, 0, 0, 0, 0, -1, -1, -1, -1, -1, -1])])
@@ DEBUG ConsumerCoordinator [Consumer clientId=c1, groupId=g] Enabling heartbeat thread
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Successfully joined group with generation Generation{generationId=1, memberId='c1-48654a5d-f387-4d06-94af-a46224899ab9', protocol='range'}
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Finished assignment for group at generation 1: {c1-48654a5d-f387-4d06-94af-a46224899ab9=Assignment(partitions=[events-0, events-1, events-2, events-3])}
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Successfully synced group in generation Generation{generationId=1, memberId='c1-48654a5d-f387-4d06-94af-a46224899ab9', protocol='range'}
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Notifying assignor about the new Assignment(partitions=[events-0, events-1, events-2, events-3])
{"timestamp":1795293896492,"name":"partitions_assigned","partitions":[{"topic":"events","partition":0},{"topic":"events","partition":1},{"topic":"events","partition":2},{"topic":"events","partition":3}]}
"""
MEMBER_1 = "c1-48654a5d-f387-4d06-94af-a46224899ab9"

# One poll with --verbose: a record_data line per record, then the poll's summary, then commitSync.
POLL_39 = """
{"timestamp":1795294689894,"name":"record_data","key":null,"value":"3","topic":"events","partition":3,"offset":0}
{"timestamp":1795294689900,"name":"record_data","key":null,"value":"7","topic":"events","partition":3,"offset":1}
{"timestamp":1795294689901,"name":"record_data","key":null,"value":"11","topic":"events","partition":3,"offset":2}
{"timestamp":1795294689902,"name":"records_consumed","count":3,"partitions":[{"topic":"events","partition":3,"count":3,"minOffset":0,"maxOffset":2}]}
@@ DEBUG ConsumerCoordinator [Consumer clientId=c1, groupId=g] Committed offset 3 for partition events-3
{"timestamp":1795294689910,"name":"offsets_committed","offsets":[{"topic":"events","partition":3,"offset":3}],"success":true}
"""


def test_a_join_becomes_join_sent_failed_joined_synced_then_an_assignment_stamped_with_it(eager, sink):
    feed(eager, FIRST_JOIN_39)
    assert [e["name"] for e in sink.events] == [
        "group_join_sent",
        "group_join_failed",
        "rebalance_started",
        "group_join_sent",
        "group_joined",
        "group_synced",
        "partitions_assigned",
    ]
    failed, rebalance, joined, synced, assigned = (sink.events[i] for i in (1, 2, 4, 5, 6))
    assert failed["error"] == "MEMBER_ID_REQUIRED" and failed["generation"] is None
    assert rebalance["rebalance_protocol"] == "EAGER" and rebalance["reason"].startswith("need to re-join")
    assert joined == {
        "name": "group_joined",
        "member_id": MEMBER_1,
        "generation": 1,
        "leader_id": MEMBER_1,
        "is_leader": True,
        "protocol_name": "range",
    }
    assert synced["generation"] == 1 and synced["member_id"] == MEMBER_1
    assert assigned == {
        "name": "partitions_assigned",
        "member_id": MEMBER_1,
        "generation": 1,
        "incremental": False,
        "partitions": [{"topic": "events", "partition": p} for p in range(4)],
    }


def test_a_follower_knows_the_leader_from_the_join_response(eager, sink):
    feed(
        eager,
        """
@@ DEBUG ConsumerCoordinator [Consumer clientId=c2, groupId=g] Received successful JoinGroup response: JoinGroupResponseData(throttleTimeMs=0, errorCode=0, generationId=2, protocolType='consumer', protocolName='range', leader='c1-48654a5d-f387-4d06-94af-a46224899ab9', skipAssignment=false, memberId='c2-162a2ef6-fccf-4098-a79f-b85ae42ddcb7', members=[])
@@ DEBUG ConsumerCoordinator [Consumer clientId=c2, groupId=g] Enabling heartbeat thread
@@ INFO ConsumerCoordinator [Consumer clientId=c2, groupId=g] Successfully joined group with generation Generation{generationId=2, memberId='c2-162a2ef6-fccf-4098-a79f-b85ae42ddcb7', protocol='range'}
""",
    )
    [joined] = sink.events
    assert joined["leader_id"] == MEMBER_1 and joined["is_leader"] is False
    assert joined["member_id"] == "c2-162a2ef6-fccf-4098-a79f-b85ae42ddcb7" and joined["generation"] == 2


def test_a_poll_becomes_exact_ranges_and_its_commit_is_judged_at_the_poll(eager, sink):
    feed(eager, FIRST_JOIN_39 + POLL_39)
    [consumed] = sink.named("records_consumed")
    [commit] = sink.named("offsets_committed")
    assert consumed["ranges"] == [{"topic": "events", "partition": 3, "min_offset": 0, "max_offset": 2, "count": 3}]
    assert consumed["generation"] == 1 and consumed["member_id"] == MEMBER_1
    assert commit == {
        "name": "offsets_committed",
        "member_id": MEMBER_1,
        "generation": 1,
        "offsets": [{"topic": "events", "partition": 3, "offset": 3}],
        "success": True,
        "error": None,
        "error_code": None,
        "error_message": None,
        "trigger": "after-processing",
        "started_mono_ms": commit["started_mono_ms"],
    }
    assert commit["started_mono_ms"] is not None  # the clock read at the summary, before the commit went out


def test_a_gap_in_a_poll_is_two_ranges(eager, sink):
    feed(
        eager,
        """
{"timestamp":1,"name":"record_data","key":null,"value":"3","topic":"events","partition":3,"offset":10}
{"timestamp":1,"name":"record_data","key":null,"value":"7","topic":"events","partition":3,"offset":12}
{"timestamp":1,"name":"records_consumed","count":2,"partitions":[{"topic":"events","partition":3,"count":2,"minOffset":10,"maxOffset":12}]}
""",
    )
    [consumed] = sink.named("records_consumed")
    assert [(r["min_offset"], r["max_offset"]) for r in consumed["ranges"]] == [(10, 10), (12, 12)]
    assert not sink.named("client_log")


def test_a_summary_without_record_lines_is_used_only_when_contiguous(eager, sink):
    feed(
        eager,
        """
{"timestamp":1795293911542,"name":"records_consumed","count":25,"partitions":[{"topic":"events","partition":2,"count":25,"minOffset":500,"maxOffset":524}]}
{"timestamp":1795293911543,"name":"records_consumed","count":2,"partitions":[{"topic":"events","partition":2,"count":2,"minOffset":525,"maxOffset":530}]}
""",
    )
    [consumed] = sink.named("records_consumed")
    assert consumed["ranges"][0]["min_offset"] == 500 and consumed["ranges"][0]["count"] == 25
    [warning] = sink.named("client_log")
    assert "does not match" in warning["message"]


# Kafka 3.9.2: the member paused past its session timeout resumes. Its heartbeat is
# answered UNKNOWN_MEMBER_ID, the commit of its last poll too, and the client gives
# its partitions away as lost — through onPartitionsRevoked (VerifiableConsumer does
# not override onPartitionsLost).
ZOMBIE_39 = """
@@ INFO ConsumerCoordinator [Consumer clientId=c2, groupId=g] Attempt to heartbeat with Generation{generationId=2, memberId='c2-162a2ef6-fccf-4098-a79f-b85ae42ddcb7', protocol='range'} and group instance id Optional.empty failed due to UNKNOWN_MEMBER_ID, resetting generation
@@ INFO ConsumerCoordinator [Consumer clientId=c2, groupId=g] Resetting generation and member id due to: encountered UNKNOWN_MEMBER_ID from HEARTBEAT response
@@ INFO ConsumerCoordinator [Consumer clientId=c2, groupId=g] Request joining group due to: encountered UNKNOWN_MEMBER_ID from HEARTBEAT response
@@ ERROR ConsumerCoordinator [Consumer clientId=c2, groupId=g] Offset commit failed on partition events-2 at offset 183: The coordinator is not aware of this member.
@@ INFO ConsumerCoordinator [Consumer clientId=c2, groupId=g] OffsetCommit failed with Generation{generationId=2, memberId='c2-162a2ef6-fccf-4098-a79f-b85ae42ddcb7', protocol='range'}: The coordinator is not aware of this member.
{"timestamp":1795294146079,"name":"offsets_committed","offsets":[{"topic":"events","partition":2,"offset":183}],"error":"Commit cannot be completed since the group has already rebalanced and assigned the partitions to another member. This means that the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time message processing. You can address this either by increasing max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with max.poll.records.","success":false}
@@ INFO ConsumerCoordinator [Consumer clientId=c2, groupId=g] Giving away all assigned partitions as lost since generation/memberID has been reset,indicating that consumer is in old state or no longer part of the group
@@ INFO ConsumerRebalanceListenerInvoker [Consumer clientId=c2, groupId=g] Lost previously assigned partitions events-2, events-3
{"timestamp":1795293925811,"name":"partitions_revoked","partitions":[{"topic":"events","partition":2},{"topic":"events","partition":3}]}
@@ INFO ConsumerCoordinator [Consumer clientId=c2, groupId=g] (Re-)joining group
@@ INFO ConsumerCoordinator [Consumer clientId=c2, groupId=g] Attempt to heartbeat with stale Generation{generationId=2, memberId='c2-162a2ef6-fccf-4098-a79f-b85ae42ddcb7', protocol='range'} and group instance id Optional.empty failed due to UNKNOWN_MEMBER_ID, ignoring the error
"""


def test_the_zombie_hears_unknown_member_its_commit_fails_by_name_and_its_partitions_are_lost(eager, sink):
    eager.generation, eager.member_id = 2, "c2-162a2ef6-fccf-4098-a79f-b85ae42ddcb7"
    feed(eager, ZOMBIE_39)
    assert [e["name"] for e in sink.events] == [
        "heartbeat_failed",
        "rebalance_started",
        "offsets_committed",
        "partitions_lost",
        "group_join_sent",
    ]
    heartbeat, _, commit, lost, _ = sink.events
    assert heartbeat["error"] == "UNKNOWN_MEMBER_ID"
    assert commit["success"] is False and (commit["error"], commit["error_code"]) == ("UNKNOWN_MEMBER_ID", 25)
    assert commit["error_message"].startswith("Commit cannot be completed since the group has already rebalanced")
    assert lost["partitions"] == [{"topic": "events", "partition": 2}, {"topic": "events", "partition": 3}]
    # Stamped with the generation it lost them in: the one it last joined.
    assert all(e["generation"] == 2 for e in sink.events)


def test_a_revocation_that_is_not_a_loss_stays_a_revocation(eager, sink):
    feed(
        eager,
        """
@@ INFO ConsumerRebalanceListenerInvoker [Consumer clientId=c1, groupId=g] Revoke previously assigned partitions events-0, events-1
{"timestamp":1795294712833,"name":"partitions_revoked","partitions":[{"topic":"events","partition":0},{"topic":"events","partition":1}]}
""",
    )
    assert [e["name"] for e in sink.events] == ["partitions_revoked"]


@pytest.mark.parametrize(
    "message, error",
    [
        (
            "Offset commit cannot be completed since the consumer is undergoing a rebalance for auto partition assignment. "
            "You can try completing the rebalance by calling poll() and then retry the operation.",
            "RebalanceInProgressException",
        ),
        (
            "Offset commit cannot be completed since the consumer is not part of an active group for auto partition "
            "assignment; it is likely that the consumer was kicked out of the group.",
            "CommitFailedException",
        ),
        ("The coordinator is not available.", "COORDINATOR_NOT_AVAILABLE"),
    ],
)
def test_a_commit_refused_by_the_client_itself_is_named_by_its_exception(eager, sink, message, error):
    feed(
        eager,
        '{"timestamp":1,"name":"offsets_committed","offsets":[{"topic":"events","partition":0,"offset":5}],'
        f'"error":"{message}","success":false}}',
    )
    [commit] = sink.events
    assert commit["error"] == error and commit["error_message"] == message
    assert commit["error_code"] == (15 if error == "COORDINATOR_NOT_AVAILABLE" else None)


def test_heartbeat_rebalance_in_progress_and_leaving_the_group(eager, sink):
    feed(
        eager,
        """
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Request joining group due to: group is already rebalancing
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Member c1-48654a5d-f387-4d06-94af-a46224899ab9 sending LeaveGroup request to coordinator 127.0.0.1:11573 (id: 2147483646 rack: null) due to the consumer is being closed
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Resetting generation and member id due to: consumer pro-actively leaving the group
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Request joining group due to: consumer pro-actively leaving the group
{"timestamp":1795293934071,"name":"shutdown_complete"}
""",
    )
    assert [(e["name"], e.get("error") or e.get("reason")) for e in sink.events] == [
        ("heartbeat_failed", "REBALANCE_IN_PROGRESS"),
        ("rebalance_started", "group is already rebalancing"),
    ]
    assert eager.shutdown_complete


def test_warnings_become_client_log_and_a_fatal_error_names_its_exception(eager, sink):
    echoed = []
    eager.echo = echoed.append
    feed(
        eager,
        """
@@ WARN ConsumerCoordinator [Consumer clientId=c1, groupId=g] consumer poll timeout has expired. This means the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms
@@ DEBUG ConsumerCoordinator [Consumer clientId=c1, groupId=g] Sending Heartbeat request with generation 4 and member id c1-48654a5d-f387-4d06-94af-a46224899ab9 to coordinator 127.0.0.1:11573 (id: 2147483646 rack: null)
@@ ERROR VerifiableConsumer Error during processing, terminating consumer process:
org.apache.kafka.common.errors.FencedInstanceIdException: The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.
	at org.apache.kafka.clients.consumer.internals.ConsumerCoordinator$OffsetCommitResponseHandler.handle(ConsumerCoordinator.java:1360)
""",
    )
    warning, fatal = sink.events
    assert warning["name"] == "client_log" and warning["level"] == "WARN"
    assert warning["message"].startswith("consumer poll timeout has expired")
    assert fatal["name"] == "consumer_error" and fatal["fatal"] is True
    assert (fatal["error"], fatal["error_code"]) == ("FencedInstanceIdException", 82)
    # What was not turned into an event stays readable in the member's log; DEBUG noise does not.
    assert any("poll timeout" in line for line in echoed) and not any("Heartbeat request" in line for line in echoed)
    assert any(line.startswith("\tat org.apache.kafka") for line in echoed)


# Kafka 4.1.1, cooperative-sticky: the callbacks carry deltas, an empty one included.
COOPERATIVE_41 = """
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Successfully synced group in generation Generation{generationId=2, memberId='c1-dece13ec-cdf8-4282-b536-92f28b3e7570', protocol='cooperative-sticky'}
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Updating assignment with
	Assigned partitions:                       [events-0, events-1]
	Current owned partitions:                  [events-0, events-1, events-2, events-3]
	Added partitions (assigned - owned):       []
	Revoked partitions (owned - assigned):     [events-2, events-3]

@@ INFO ConsumerRebalanceListenerInvoker [Consumer clientId=c1, groupId=g] Revoke previously assigned partitions [events-2, events-3]
{"timestamp":1795294655564,"name":"partitions_revoked","partitions":[{"topic":"events","partition":2},{"topic":"events","partition":3}]}
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Request joining group due to: need to revoke partitions [events-2, events-3] as indicated by the current assignment and re-join
@@ INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] Notifying assignor about the new Assignment(partitions=[events-0, events-1])
@@ INFO ConsumerRebalanceListenerInvoker [Consumer clientId=c1, groupId=g] Adding newly assigned partitions: []
{"timestamp":1795294655595,"name":"partitions_assigned","partitions":[]}
"""


def test_cooperative_callbacks_are_incremental_deltas(sink, clock):
    cooperative = Translator(sink, cooperative=True)
    cooperative.generation = 2
    feed(cooperative, COOPERATIVE_41)
    assert [e["name"] for e in sink.events] == [
        "group_synced",
        "partitions_revoked",
        "rebalance_started",
        "partitions_assigned",
    ]
    _, revoked, rebalance, assigned = sink.events
    assert revoked["incremental"] and revoked["partitions"] == [
        {"topic": "events", "partition": 2},
        {"topic": "events", "partition": 3},
    ]
    assert rebalance["rebalance_protocol"] == "COOPERATIVE"
    assert assigned["incremental"] and assigned["partitions"] == []


# Kafka 4.1.1 with --enable-autocommit: VerifiableConsumer prints no commit events; the
# coordinator's DEBUG/WARN lines tell each auto-commit, sent and answered.
AUTO_41 = """
@@ DEBUG ConsumerCoordinator [Consumer clientId=c2, groupId=g] Sending asynchronous auto-commit of offsets {}
@@ DEBUG ConsumerCoordinator [Consumer clientId=c2, groupId=g] Completed asynchronous auto-commit of offsets {}
@@ DEBUG ConsumerCoordinator [Consumer clientId=c2, groupId=g] Sending asynchronous auto-commit of offsets {events-3=OffsetAndMetadata{offset=525, leaderEpoch=0, metadata=''}, events-2=OffsetAndMetadata{offset=525, leaderEpoch=0, metadata=''}}
@@ DEBUG ConsumerCoordinator [Consumer clientId=c2, groupId=g] Committed offset 525 for partition events-3
@@ DEBUG ConsumerCoordinator [Consumer clientId=c2, groupId=g] Committed offset 525 for partition events-2
@@ DEBUG ConsumerCoordinator [Consumer clientId=c2, groupId=g] Completed asynchronous auto-commit of offsets {events-3=OffsetAndMetadata{offset=525, leaderEpoch=0, metadata=''}, events-2=OffsetAndMetadata{offset=525, leaderEpoch=0, metadata=''}}
@@ DEBUG ConsumerCoordinator [Consumer clientId=c2, groupId=g] Sending asynchronous auto-commit of offsets {events-3=OffsetAndMetadata{offset=525, leaderEpoch=0, metadata=''}, events-2=OffsetAndMetadata{offset=525, leaderEpoch=0, metadata=''}}
@@ ERROR ConsumerCoordinator [Consumer clientId=c2, groupId=g] Offset commit failed on partition events-3 at offset 525: The coordinator is not aware of this member.
@@ INFO ConsumerCoordinator [Consumer clientId=c2, groupId=g] OffsetCommit failed with Generation{generationId=3, memberId='c2-702eea4c-e902-465c-bdc4-ef66c24da997', protocol='cooperative-sticky'}: The coordinator is not aware of this member.
@@ INFO ConsumerCoordinator [Consumer clientId=c2, groupId=g] Resetting generation and member id due to: encountered UNKNOWN_MEMBER_ID from OFFSET_COMMIT response
@@ WARN ConsumerCoordinator [Consumer clientId=c2, groupId=g] Asynchronous auto-commit of offsets {events-3=OffsetAndMetadata{offset=525, leaderEpoch=0, metadata=''}, events-2=OffsetAndMetadata{offset=525, leaderEpoch=0, metadata=''}} failed: Commit cannot be completed since the group has already rebalanced and assigned the partitions to another member. This means that the time between subsequent calls to poll() was longer than the configured max.poll.interval.ms, which typically implies that the poll loop is spending too much time message processing. You can address this either by increasing max.poll.interval.ms or by reducing the maximum size of batches returned in poll() with max.poll.records.
@@ ERROR ConsumerCoordinator [Consumer clientId=c2, groupId=g] Asynchronous auto-commit of offsets failed: Offset commit cannot be completed since the consumer is not part of an active group for auto partition assignment; it is likely that the consumer was kicked out of the group.. Will continue to join group.
@@ DEBUG ConsumerCoordinator [Consumer clientId=c2, groupId=g] Sending synchronous auto-commit of offsets {events-3=OffsetAndMetadata{offset=525, leaderEpoch=0, metadata=''}, events-2=OffsetAndMetadata{offset=525, leaderEpoch=0, metadata=''}}
@@ DEBUG ConsumerCoordinator [Consumer clientId=c2, groupId=g] Committed offset 525 for partition events-2
@@ DEBUG ConsumerCoordinator [Consumer clientId=c2, groupId=g] Committed offset 525 for partition events-3
"""


def test_auto_commits_are_read_from_the_coordinator_log(sink, clock):
    auto = Translator(sink, cooperative=True)
    feed(auto, AUTO_41)
    commits = sink.named("offsets_committed")
    offsets = [{"topic": "events", "partition": 2, "offset": 525}, {"topic": "events", "partition": 3, "offset": 525}]
    assert [(c["success"], c["error"], c["error_code"]) for c in commits] == [
        (True, None, None),
        (False, "UNKNOWN_MEMBER_ID", 25),
        (True, None, None),
    ]
    assert all(c["offsets"] == offsets and c["trigger"] == "auto" for c in commits)
    # Each judged at the moment it was sent, not when its answer was logged.
    sent_at = [c["started_mono_ms"] for c in commits]
    assert None not in sent_at and sent_at == sorted(sent_at)
    # The auto-commit the client refused before sending anything is a warning in the log.
    [error] = sink.named("client_log")
    assert error["level"] == "ERROR" and "not part of an active group" in error["message"]


def test_kafka_error_names_what_a_log_line_names_or_quotes():
    assert kafka_error(
        "JoinGroup failed due to non-fatal error: MEMBER_ID_REQUIRED. Will set the member id as "
        "c1-48654a5d and then rejoin."
    ) == ("MEMBER_ID_REQUIRED", 79)
    assert kafka_error(
        "SyncGroup failed: The group is rebalancing, so a rejoin is needed. Need to re-join the group."
    ) == ("REBALANCE_IN_PROGRESS", 27)
    assert kafka_error("Specified group generation id is not valid.") == ("ILLEGAL_GENERATION", 22)
    # how kafka-clients 3.3 – 4.x log a SyncGroup answered REBALANCE_IN_PROGRESS
    assert kafka_error(
        "SyncGroup failed: The group began another rebalance. Need to re-join the group. Sent generation was "
        "Generation{generationId=5, memberId='consumer-2-cf86', protocol='cooperative-sticky'}"
    ) == ("REBALANCE_IN_PROGRESS", 27)
    assert kafka_error("coordinator unavailable") == (None, None)


def test_events_carry_the_jvms_time_of_writing_not_the_time_we_read_them(sink, clock):
    """A busy wrapper reads late; the JVM's own stamps keep members' events in true order."""
    t = Translator(sink, cooperative=False, jvm_clock=True)
    t.line(
        LOG_MARK + "2026-11-21T23:00:00.100+0000 INFO ConsumerCoordinator [Consumer clientId=c1, groupId=g] "
        "Successfully joined group with generation Generation{generationId=3, memberId='c1-x', protocol='range'}"
    )
    t.line('{"timestamp":1795302000250,"name":"partitions_assigned","partitions":[{"topic":"events","partition":0}]}')
    [assigned] = sink.named("partitions_assigned")
    assert assigned["ts"] == 1795302000250.0
    assert assigned["mono_ms"] == 1795302000250.0 - t.clock_offset_ms
    assert assigned["generation"] == 3  # the dated log line was still understood
    assert assigned["clock"] == "jvm"  # the history says which clock stamped it
