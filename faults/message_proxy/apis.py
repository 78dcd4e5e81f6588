"""The group-protocol APIs a message fault may name, and the errors its `error` action may put in.

The one table of them: the fault kind's validation, the proxy's rule parser and the docs read it.
Names are Kafka's own: the API as its JSON schema names it (clients/src/main/resources/common/
message/<Api>Request.json), the error as Kafka's `Errors` enum spells it (kio.schema.errors.ErrorCode
in upper case).

Each API's errors are those a real broker answers it with, from Kafka's own sources (apache/kafka):
the "Possible error codes" of the response classes (clients/src/main/java/org/apache/kafka/common/
requests/<Api>Response.java) and of the JSON schemas that list them (ConsumerGroupHeartbeatResponse.json),
checked against the group coordinator (group-coordinator/src/main/java/org/apache/kafka/coordinator/
group/GroupMetadataManager.java, OffsetMetadataManager.java) and, for Fetch, the replica manager
(core/src/main/scala/kafka/server/ReplicaManager.scala). Errors only an operator's setting causes
(authorization, quotas, invalid session timeouts) are left out: a fault stands in for what the
cluster does on its own. ``request_fields`` are what a fault's ``match`` may compare: the
fields of the API's requests at any version kio knows.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property

from kio.index import load_request_schema
from kio.schema.index import schema_name_map

# Every group API can meet these: the group's coordinator is elsewhere, has no leader, or is loading
# its partition (the group coordinator runtime fails any operation on a partition it is still loading).
COORDINATOR_ERRORS = ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS")


@dataclass(frozen=True)
class Error:
    """Whom a broker answers an error to on its own: what a random draw of an ``error`` action reads
    (a written fault may put in any error its API allows)."""

    drawn: bool = True  # False: only a member's own misconfiguration or an operator's setting causes it
    static_only: bool = False  # only a static member (KIP-345: a group.instance.id) is answered it
    # True: only members with epochs (KIP-848) are answered it; False: only members with generations
    # (the classic protocol); None: either.
    epochs: bool | None = None

    def plausible(self, static_membership: bool, member_epochs: bool) -> bool:
        return self.drawn and (static_membership or not self.static_only) and self.epochs in (None, member_epochs)


PLAUSIBLE = Error()
# The errors not every member may be answered with (the others: PLAUSIBLE), and why.
ERRORS: dict[str, Error] = {
    # An instance id fenced by another member with it, or not yet released: static members only.
    "FENCED_INSTANCE_ID": Error(static_only=True),
    "UNRELEASED_INSTANCE_ID": Error(static_only=True),
    # The members' protocol type or name differs from the group's: a misconfigured member, never the
    # project's, whose members all speak one protocol.
    "INCONSISTENT_GROUP_PROTOCOL": Error(drawn=False),
    # Only with group.max.size (group.consumer.max.size) set below the group's size: an operator's setting.
    "GROUP_MAX_SIZE_REACHED": Error(drawn=False),
    # Offsets a transaction has pending: no run commits offsets in a transaction.
    "UNSTABLE_OFFSET_COMMIT": Error(drawn=False),
    # A classic group refuses a commit by generation, and while it rebalances; a consumer group
    # (KIP-848) by the member's epoch (OffsetMetadataManager.validateOffsetCommit).
    "ILLEGAL_GENERATION": Error(epochs=False),
    "REBALANCE_IN_PROGRESS": Error(epochs=False),
    "STALE_MEMBER_EPOCH": Error(epochs=True),
    "FENCED_MEMBER_EPOCH": Error(epochs=True),
}


@dataclass(frozen=True)
class Api:
    name: str  # as Kafka's schemas name it: JoinGroupRequest.json -> JoinGroup
    key: int
    errors: tuple[str, ...]
    # The answer to a group-level error as a broker writes it: the error at the group's level and
    # its per-partition lists empty (OffsetFetch); else every error code the answer has is set.
    group_level: bool = False
    # The member's heartbeat (the classic Heartbeat, KIP-848's ConsumerGroupHeartbeat).
    heartbeat: bool = False

    def drawn_errors(self, *, static_membership: bool, member_epochs: bool) -> tuple[str, ...]:
        """The errors a random draw may put in its answers for members of a generation with these
        capabilities: those a broker could answer them with on its own (ERRORS)."""
        return tuple(e for e in self.errors if ERRORS.get(e, PLAUSIBLE).plausible(static_membership, member_epochs))

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
    api.name: api
    for api in (
        # JoinGroupResponse.java; GroupMetadataManager.classicGroupJoin*: a static member's instance id
        # fenced, a member id required on the first join, a rebalance under way for a static rejoin.
        Api(
            "JoinGroup",
            11,
            COORDINATOR_ERRORS
            + (
                "UNKNOWN_MEMBER_ID",
                "MEMBER_ID_REQUIRED",
                "FENCED_INSTANCE_ID",
                "REBALANCE_IN_PROGRESS",
                "GROUP_MAX_SIZE_REACHED",
                "INCONSISTENT_GROUP_PROTOCOL",
            ),
        ),
        # SyncGroupResponse.java's "Possible error codes" (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
        # ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS); FENCED_INSTANCE_ID since KIP-345,
        # INCONSISTENT_GROUP_PROTOCOL since v5 (protocol type/name checked); GroupMetadataManager.classicGroupSync.
        Api(
            "SyncGroup",
            14,
            COORDINATOR_ERRORS
            + (
                "ILLEGAL_GENERATION",
                "UNKNOWN_MEMBER_ID",
                "REBALANCE_IN_PROGRESS",
                "FENCED_INSTANCE_ID",
                "INCONSISTENT_GROUP_PROTOCOL",
            ),
        ),
        # HeartbeatResponse.java; GroupMetadataManager.classicGroupHeartbeat.
        Api(
            "Heartbeat",
            12,
            COORDINATOR_ERRORS
            + ("ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS", "FENCED_INSTANCE_ID"),
            heartbeat=True,
        ),
        # LeaveGroupResponse.java (top level and per member); GroupMetadataManager.classicGroupLeave.
        Api("LeaveGroup", 13, COORDINATOR_ERRORS + ("UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID")),
        # ConsumerGroupHeartbeatResponse.json's "Supported errors" (apache/kafka @12fc8e2b), less
        # authorization, INVALID_REQUEST, UNSUPPORTED_ASSIGNOR and INVALID_REGULAR_EXPRESSION (the member's
        # own bad request): FENCED_MEMBER_EPOCH for a member whose epoch is behind, UNRELEASED_INSTANCE_ID
        # for an instance id another member still holds.
        Api(
            "ConsumerGroupHeartbeat",
            68,
            COORDINATOR_ERRORS
            + (
                "UNKNOWN_MEMBER_ID",
                "FENCED_MEMBER_EPOCH",
                "UNRELEASED_INSTANCE_ID",
                "FENCED_INSTANCE_ID",
                "GROUP_MAX_SIZE_REACHED",
            ),
            heartbeat=True,
        ),
        # OffsetCommitResponse.java's "Possible error codes" (per partition: UNKNOWN_TOPIC_OR_PARTITION,
        # the coordinator's three, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS), less
        # authorization and sizes; OffsetMetadataManager.validateOffsetCommit adds a static member fenced and
        # a consumer member's epoch (STALE_MEMBER_EPOCH); a commit whose append times out: REQUEST_TIMED_OUT.
        Api(
            "OffsetCommit",
            8,
            COORDINATOR_ERRORS
            + (
                "ILLEGAL_GENERATION",
                "UNKNOWN_MEMBER_ID",
                "REBALANCE_IN_PROGRESS",
                "FENCED_INSTANCE_ID",
                "STALE_MEMBER_EPOCH",
                "UNKNOWN_TOPIC_OR_PARTITION",
                "REQUEST_TIMED_OUT",
            ),
        ),
        # OffsetFetchResponse.java (top level, per group, per partition); OffsetMetadataManager.fetchOffsets:
        # offsets of a pending transaction (UNSTABLE_OFFSET_COMMIT), a consumer member's epoch.
        Api(
            "OffsetFetch",
            9,
            COORDINATOR_ERRORS + ("UNSTABLE_OFFSET_COMMIT", "UNKNOWN_MEMBER_ID", "STALE_MEMBER_EPOCH"),
            group_level=True,
        ),
        # FindCoordinatorResponse.java: the coordinator's partition without a leader, or still loading.
        Api("FindCoordinator", 10, ("COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS")),
        # FetchResponse.java (per partition); ReplicaManager.readFromLog: leadership moved, epochs.
        Api(
            "Fetch",
            1,
            (
                "NOT_LEADER_OR_FOLLOWER",
                "UNKNOWN_TOPIC_OR_PARTITION",
                "FENCED_LEADER_EPOCH",
                "UNKNOWN_LEADER_EPOCH",
                "OFFSET_NOT_AVAILABLE",
                "LEADER_NOT_AVAILABLE",
            ),
        ),
    )
}
BY_KEY: dict[int, Api] = {a.key: a for a in APIS.values()}
