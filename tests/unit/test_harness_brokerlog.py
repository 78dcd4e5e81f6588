"""harness/run/brokerlog.py: GroupCoordinator log lines of Kafka 3.9 (Scala) and 4.x (Java) become events."""

from __future__ import annotations

import pytest

from harness.run.brokerlog import CoordinatorLog, coordinator_events, parse_line

TS = "[2026-11-21T19:42:28.052+0000] INFO "
TS_MS = 1_795_290_148_052.0  # 2026-11-21T19:42:28.052Z
SCALA = "[GroupCoordinator 1]: "
SCALA_LOGGER = " (kafka.coordinator.group.GroupCoordinator)"
JAVA = "[GroupCoordinator id=1 topic=__consumer_offsets partition=2] "
JAVA_LOGGER = " (org.apache.kafka.coordinator.group.GroupMetadataManager)"


def parsed(msg: str, prefix: str = SCALA, logger: str = SCALA_LOGGER):
    return parse_line(TS + prefix + msg + logger)


@pytest.mark.parametrize("prefix, logger", [(SCALA, SCALA_LOGGER), (JAVA, JAVA_LOGGER)], ids=["3.9", "4.x"])
def test_join_rebalance_stabilize_assignment(prefix, logger):
    scala = prefix == SCALA
    prep = (
        "Preparing to rebalance group g1 in state PreparingRebalance with old generation 0 "
        + ("(__consumer_offsets-2) " if scala else "")
        + "(reason: Adding new member consumer-1-60ef with group instance id None; client reason: not provided)"
        + ("" if scala else ".")
    )
    assert parsed(prep, prefix, logger) == (
        TS_MS,
        "coordinator_preparing_rebalance",
        {"group": "g1", "old_generation": 0, "reason": "Adding new member consumer-1-60ef with group instance id None"},
    )

    stab = "Stabilized group g1 generation 1 " + (
        "(__consumer_offsets-2) with 1 members" if scala else "with 1 members."
    )
    assert parsed(stab, prefix, logger) == (
        TS_MS,
        "coordinator_stabilized",
        {"group": "g1", "generation": 1, "members": 1},
    )

    assigned = (
        "Assignment received from leader consumer-1-60ef for group g1 for generation 1. "
        "The group has 1 members, 0 of which are static."
    )
    assert parsed(assigned, prefix, logger) == (
        TS_MS,
        "coordinator_assignment_received",
        {"leader_id": "consumer-1-60ef", "group": "g1", "generation": 1},
    )


@pytest.mark.parametrize("prefix, logger", [(SCALA, SCALA_LOGGER), (JAVA, JAVA_LOGGER)], ids=["3.9", "4.x"])
def test_member_failed(prefix, logger):
    msg = "Member consumer-2-abc in group g1 has failed, removing it from the group" + ("" if prefix == SCALA else ".")
    assert parsed(msg, prefix, logger) == (
        TS_MS,
        "coordinator_member_removed",
        {"member_id": "consumer-2-abc", "group": "g1", "reason": "failed"},
    )


def test_member_left_scala():
    msg = (
        "Member MemberMetadata(memberId=consumer-1-60ef, groupInstanceId=None, clientId=consumer-1, "
        "clientHost=/127.0.0.1, sessionTimeoutMs=6000, rebalanceTimeoutMs=300000, supportedProtocols=List(range)) "
        "has left group g1 through explicit `LeaveGroup`; client reason: the consumer is being closed"
    )
    assert parsed(msg) == (
        TS_MS,
        "coordinator_member_removed",
        {"member_id": "consumer-1-60ef", "group": "g1", "reason": "left"},
    )


@pytest.mark.parametrize(
    "who, member_id",
    [
        ("Member consumer-1-60ef", "consumer-1-60ef"),
        ("Dynamic Member consumer-1-60ef", "consumer-1-60ef"),
        ("Static Member consumer-3-9d1 with instance id static-3", "consumer-3-9d1"),
    ],
)
def test_member_left_java(who, member_id):
    # GroupMetadataManager (4.x): "[Group {}] Member {} has left group through explicit `LeaveGroup` request; …"
    msg = f"[Group g1] {who} has left group through explicit `LeaveGroup` request; client reason: the consumer is being closed"
    assert parsed(msg, JAVA, JAVA_LOGGER) == (
        TS_MS,
        "coordinator_member_removed",
        {"group": "g1", "member_id": member_id, "reason": "left"},
    )


def test_rebalance_reason_with_parentheses_is_kept_whole():
    msg = (
        "Preparing to rebalance group g1 in state PreparingRebalance with old generation 3 "
        "(reason: explicit `LeaveGroup` request for (consumer-1-60ef, consumer-2-abc) members.)."
    )
    _, name, fields = parsed(msg, JAVA, JAVA_LOGGER)
    assert name == "coordinator_preparing_rebalance"
    assert fields == {
        "group": "g1",
        "old_generation": 3,
        "reason": "explicit `LeaveGroup` request for (consumer-1-60ef, consumer-2-abc) members.",
    }


def test_group_empty():
    assert parsed("Group g1 with generation 4 is now empty (__consumer_offsets-2)") == (
        TS_MS,
        "coordinator_group_empty",
        {"group": "g1", "generation": 4},
    )


@pytest.mark.parametrize(
    "stamp, ms",
    [
        ("2026-11-21T19:42:28.052+0000", TS_MS),
        ("2026-11-21T20:42:28.052+0100", TS_MS),  # same instant, an hour east
        ("2026-11-21T14:12:28.999-0530", TS_MS + 947),
        ("1970-01-01T00:00:00.001+0000", 1.0),
    ],
)
def test_timestamp_converts_to_epoch_ms_with_zone_offset(stamp, ms):
    line = f"[{stamp}] INFO {SCALA}Stabilized group g1 generation 1 (__consumer_offsets-2) with 1 members{SCALA_LOGGER}"
    assert parse_line(line)[0] == pytest.approx(ms, abs=0.01)


@pytest.mark.parametrize(
    "line",
    [
        "[2026-11-21T19:42:28.052+0000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)",
        "[2026-11-21T19:42:28.052+0000] INFO [GroupCoordinator 1]: Startup complete. (kafka.coordinator.group.GroupCoordinator)",
        "[2026-11-21T19:42:28.052+0000] INFO [GroupMetadataManager brokerId=1] Finished loading offsets and group metadata "
        "from __consumer_offsets-2 in 5 milliseconds (kafka.coordinator.group.GroupMetadataManager)",
        "Stabilized group g1 generation 1 with 1 members",  # no timestamp: not a log line
        "\tat kafka.coordinator.group.GroupCoordinator.handleJoinGroup(GroupCoordinator.scala:200)",
        "",
    ],
)
def test_other_lines_are_ignored(line):
    assert parse_line(line) is None


def test_coordinator_events_filters_by_group_and_tags_broker(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(
        "\n".join(
            [
                TS + SCALA + "Stabilized group g1 generation 1 (__consumer_offsets-2) with 1 members" + SCALA_LOGGER,
                TS + SCALA + "Stabilized group other generation 7 (__consumer_offsets-9) with 2 members" + SCALA_LOGGER,
                "[2026-11-21T19:42:28.052+0000] INFO unrelated (kafka.server.KafkaServer)",
            ]
        )
        + "\n"
    )
    assert list(coordinator_events(log, "broker-1", "g1")) == [
        (TS_MS, "coordinator_stabilized", {"broker": "broker-1", "group": "g1", "generation": 1, "members": 1})
    ]
    assert len(list(coordinator_events(log, "broker-1"))) == 2
    assert list(coordinator_events(tmp_path / "missing.log", "broker-1")) == []


def test_a_live_log_is_read_line_by_line_as_it_grows_and_anew_when_the_broker_begins_it_again(tmp_path):
    log = tmp_path / "server.log"
    line = lambda g: (
        TS + SCALA + f"Stabilized group g1 generation {g} (__consumer_offsets-2) with 1 members" + SCALA_LOGGER
    )
    tail = CoordinatorLog(log, "broker-1", "g1")
    assert list(tail.new_events()) == []  # not written yet
    log.write_text(line(1) + "\n" + line(2)[:30])  # the second line is half written
    assert [f["generation"] for _, _, f in tail.new_events()] == [1]
    with log.open("a") as f:
        f.write(line(2)[30:] + "\n")
    assert [f["generation"] for _, _, f in tail.new_events()] == [2]
    assert list(tail.new_events()) == []
    log.write_text(line(3) + "\n")  # shorter than what was read: a new file
    assert [f["generation"] for _, _, f in tail.new_events()] == [3]


# KIP-848 groups on Kafka 4.x: epoch bumps and target assignments instead of join/sync.
KIP848 = (
    "[2026-11-21T20:43:50.022+0000] INFO [GroupCoordinator id=1 topic=__consumer_offsets partition=1] [GroupId k848] "
)


def test_kip848_epoch_bump_is_the_start_of_a_rebalance():
    _, name, fields = parse_line(
        KIP848 + "Bumped group epoch to 4 with metadata hash -821843. "
        "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
    )
    assert name == "coordinator_preparing_rebalance"
    assert fields == {"group": "k848", "old_generation": 3, "reason": "group epoch bumped"}


def test_kip848_target_assignment_and_member_lines():
    _, name, fields = parse_line(
        KIP848 + "Computed a new target assignment for epoch 4 with 'uniform' assignor in 1ms. "
        "(org.apache.kafka.coordinator.group.GroupMetadataManager)"
    )
    assert (name, fields) == (
        "coordinator_target_assignment",
        {"group": "k848", "generation": 4, "assignor": "uniform"},
    )
    _, name, fields = parse_line(
        KIP848 + "Member daysD/WiQiWeO5UtcyqX5A fenced from the group because the member "
        "session expired. (org.apache.kafka.coordinator.group.GroupMetadataManager)"
    )
    assert name == "coordinator_member_removed"
    assert fields == {
        "group": "k848",
        "member_id": "daysD/WiQiWeO5UtcyqX5A",
        "reason": "failed",
        "detail": "the member session expired",
    }
    _, name, fields = parse_line(
        KIP848 + "Member sS+YwkXhQF+nsNW2bFBOcw joins the consumer group using the consumer "
        "protocol. (org.apache.kafka.coordinator.group.GroupMetadataManager)"
    )
    assert (name, fields["member_id"]) == ("coordinator_member_joined", "sS+YwkXhQF+nsNW2bFBOcw")
