"""The Kafka APIs a message fault may name: their keys, and the errors a broker answers them with.

The one table of them. ``errors`` are what the ``error`` action may put in an answer: codes a
real broker returns for that API (Kafka's group coordinator, ``GroupCoordinatorService``
and ``KafkaApis``, and the error lists of Kafka's message schemas,
``clients/src/main/resources/common/message/*Response.json``), in Kafka's own spelling
(librdkafka and the Java client print the same names). ``request_fields`` are what a
fault's ``match`` may compare: the fields of the API's requests at any version kio knows.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property

from kio.index import load_request_schema
from kio.schema.index import schema_name_map

_COORDINATOR_GONE = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS")


@dataclass(frozen=True)
class Api:
    name: str  # as Kafka's schemas name it: JoinGroupRequest.json -> JoinGroup
    key: int
    errors: tuple[str, ...]
    # The answer to a group-level error as a broker writes it: the error at the group's level and
    # its per-partition lists empty (OffsetFetch); else every error code the answer has is set.
    group_level: bool = False

    @cached_property
    def schema_name(self) -> str:
        """kio's name of it: join_group."""
        return "".join(f"_{c.lower()}" if c.isupper() else c for c in self.name).lstrip("_")

    @cached_property
    def versions(self) -> tuple[int, ...]:
        """The versions kio has a schema of."""
        return tuple(sorted(schema_name_map[self.schema_name]))

    @cached_property
    def request_fields(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for version in self.versions:
            seen.update(dict.fromkeys(f.name for f in fields(load_request_schema(self.key, version))))
        return tuple(seen)


APIS: dict[str, Api] = {
    a.name: a
    for a in (
        Api(
            "JoinGroup",
            11,
            (
                *_COORDINATOR_GONE,
                "UNKNOWN_MEMBER_ID",
                "MEMBER_ID_REQUIRED",
                "FENCED_INSTANCE_ID",
                "GROUP_MAX_SIZE_REACHED",
                "INCONSISTENT_GROUP_PROTOCOL",
            ),
        ),
        Api(
            "SyncGroup",
            14,
            (
                *_COORDINATOR_GONE,
                "REBALANCE_IN_PROGRESS",
                "ILLEGAL_GENERATION",
                "UNKNOWN_MEMBER_ID",
                "FENCED_INSTANCE_ID",
                "INCONSISTENT_GROUP_PROTOCOL",
            ),
        ),
        Api(
            "Heartbeat",
            12,
            (
                *_COORDINATOR_GONE,
                "REBALANCE_IN_PROGRESS",
                "ILLEGAL_GENERATION",
                "UNKNOWN_MEMBER_ID",
                "FENCED_INSTANCE_ID",
            ),
        ),
        Api("LeaveGroup", 13, (*_COORDINATOR_GONE, "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID")),
        Api(
            "ConsumerGroupHeartbeat",
            68,
            (
                *_COORDINATOR_GONE,
                "UNKNOWN_MEMBER_ID",
                "FENCED_MEMBER_EPOCH",
                "UNRELEASED_INSTANCE_ID",
                "FENCED_INSTANCE_ID",
                "GROUP_MAX_SIZE_REACHED",
                "UNSUPPORTED_ASSIGNOR",
            ),
        ),
        Api(
            "OffsetCommit",
            8,
            (
                *_COORDINATOR_GONE,
                "REBALANCE_IN_PROGRESS",
                "ILLEGAL_GENERATION",
                "UNKNOWN_MEMBER_ID",
                "FENCED_INSTANCE_ID",
                "STALE_MEMBER_EPOCH",
                "REQUEST_TIMED_OUT",
                "UNKNOWN_TOPIC_OR_PARTITION",
                "OFFSET_METADATA_TOO_LARGE",
            ),
        ),
        Api(
            "OffsetFetch",
            9,
            (*_COORDINATOR_GONE, "UNSTABLE_OFFSET_COMMIT", "STALE_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"),
            group_level=True,
        ),
        Api("FindCoordinator", 10, ("COORDINATOR_NOT_AVAILABLE",)),
        Api(
            "Fetch",
            1,
            (
                "NOT_LEADER_OR_FOLLOWER",
                "UNKNOWN_TOPIC_OR_PARTITION",
                "FENCED_LEADER_EPOCH",
                "UNKNOWN_LEADER_EPOCH",
                "OFFSET_NOT_AVAILABLE",
                "KAFKA_STORAGE_ERROR",
            ),
        ),
    )
}
BY_KEY: dict[int, Api] = {a.key: a for a in APIS.values()}
