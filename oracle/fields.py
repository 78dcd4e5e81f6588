"""Which fields exist: every top-level field each event of the history format may carry.

docs/history.md is the prose (what each field means; tests/unit/test_history_fields.py
holds its tables to this one); oracle/vocabulary.py spells the names; oracle/events.py
types the fields the oracle reads, a subset of these. This table is the whole of the
format, read or not, so a loader can count the fields it does not know: a field written
by some other tool or a newer rebalance-lab, or a writer of ours gone astray (the
project's own runs write none).

`ENVELOPE` holds the fields any event may carry: the five every event has, `clock`, and
what a writer stamps on all its events (a member's `member`, `incarnation`, `member_id`,
`generation`; the java driver's `driver`; a coordinator instance's `instance`). `FIELDS`
maps each event name to the fields it may carry beyond the envelope (the doc's field
column, less the envelope). "May": a field listed is not promised on every line.
`unknown_fields` is the per-line test, cheap enough for every line of a million-line
history.

Pure data and one function; it imports only the vocabulary.
"""

from __future__ import annotations

from . import vocabulary as ev

ENVELOPE: frozenset[str] = frozenset(
    {
        ev.NAME,
        ev.TS,
        ev.MONO_MS,
        ev.SOURCE,
        ev.SEQ,
        ev.CLOCK,
        ev.MEMBER,
        ev.INCARNATION,
        ev.MEMBER_ID,
        ev.GENERATION,  # a member's events (HistoryWriter's context, the driver)
        ev.DRIVER,  # the java driver's events
        ev.INSTANCE,  # the project's coordinator's events: its instance
    }
)

# The process role (process_started / process_exited `role`) of a member host: it runs many members.
MEMBER_HOST_ROLE = "member-host"

_FAULT = ("fault_id", "kind", "target")
_FIRED = ("trigger", "trigger_latency_ms")  # a fault fired `on:` a trigger
_CLIENT_ERROR = ("error", "error_code", "message")  # the coordinator driver's refusals carry the code and words
_PARTITIONS = ("partitions", "incremental")
_BROKER = ("broker", "group")  # coordinator events parsed from a broker's log
_INSTANCE = ("coordinator", "group")  # the same events written by the project's coordinator

_FIELDS: dict[str, tuple[str, ...]] = {
    # harness
    ev.RUN_STARTED: (
        "format_version",
        "run_id",
        "scenario",
        "seed",
        "topics",
        "topic_pattern",
        "group",
        "protocol",
        "assignor",
        "members",
        "checks",
        "faults",
        "clock_offset_ms",
        "backend",
        "kafka",
        "metadata",
        "group_settings",
        "plugins",
        "subscriptions",
        "broker_racks",
        "client",
    ),
    ev.PHASE: ("phase", "members", "reason"),
    ev.PROCESS_STARTED: ("process", "role", "pid", "kafka"),
    ev.PROCESS_EXITED: ("process", "role", "pid", "returncode", ev.ESCALATED_AFTER_MS),
    ev.PARTITIONS_ADDED: (ev.TOPIC, "partitions", "subscribed"),
    ev.TOPIC_CREATED: (ev.TOPIC, "partitions", "subscribed"),
    ev.HEAL_CHECKED: ("stopped_processes", "proxies", "proxies_with_toxics", "proxies_disabled", "message_rules"),
    ev.RUN_FINISHED: ("outcome", "error"),
    ev.GROUP_RESIZED: ("members", "started", "stopped"),
    ev.NODE_RESTARTED: ("process", "role", "kafka", "settings", "stop_ms", "ready_ms", "problems"),
    ev.CLUSTER_FINALIZED: ("kafka", "metadata", "feature", "previous", "level", "features", "started_mono_ms"),
    ev.CLOCK_ALIGNED: ("host", "machine", "offset_ms", "wall_offset_ms", "error_ms", "samples"),
    # observer
    ev.LAG_SAMPLED: ("group", "partitions"),
    ev.GROUP_DESCRIBED: ("group", "state", "coordinator", "members", "covers_all"),
    # producer
    ev.PRODUCER_STARTED: ("pid", ev.TOPIC, "rate", "linger_ms"),
    ev.PRODUCER_STOPPED: ("sent", "unacknowledged"),
    ev.RECORDS_ACKED: (ev.RANGES, "latency_ms", "unplaced"),
    ev.PRODUCE_FAILED: (ev.TOPIC, ev.PARTITION, "error", ev.COUNT),
    # consumers (every driver: librdkafka, zk-eager, the coordinator's, java)
    ev.CONSUMER_STARTED: (
        "pid",
        "group",
        "protocol",
        "assignor",
        "group_instance_id",
        "commit_mode",
        "session_timeout_ms",
        "max_poll_interval_ms",
        "processing",  # librdkafka
        "consumer_id",
        "rebalance_max_retries",
        "rebalance_backoff_ms",  # zk-eager
        "jvm_pid",
        "kafka_client",  # java, histories before client_version
        "processing_ms_ignored",  # java
        "client_library",
        "client_version",
        "subscription",
        "client_rack",
        "host",  # a hosted member: its member host's process name (pid: the host's)
    ),
    ev.SUBSCRIPTION_CHANGED: ("topics",),
    ev.GROUP_JOIN_SENT: (),
    ev.GROUP_JOINED: ("leader_id", "is_leader", "protocol_name", "members"),
    ev.GROUP_JOIN_FAILED: _CLIENT_ERROR,
    ev.GROUP_SYNCED: (),
    ev.GROUP_SYNC_FAILED: (*_CLIENT_ERROR, "attempt"),
    ev.HEARTBEAT_FAILED: ("error", "error_code"),
    ev.REBALANCE_STARTED: ("reason", "rebalance_protocol"),
    ev.PARTITIONS_ASSIGNED: _PARTITIONS,
    ev.REVOKE_STARTED: ("partitions", "in_flight"),
    ev.PARTITIONS_REVOKED: _PARTITIONS,
    ev.PARTITIONS_LOST: _PARTITIONS,
    ev.RECORDS_CONSUMED: (ev.RANGES, "e2e_ms"),
    ev.OFFSETS_COMMITTED: (
        ev.OFFSETS,
        "success",
        "error",
        "error_code",
        "trigger",
        "started_mono_ms",
        "error_message",
    ),  # java
    ev.CONSUMER_ERROR: ("error", "error_code", "fatal", "message"),
    ev.POLL_STALL_STARTED: ("fault_id", "duration_s"),
    ev.POLL_STALL_ENDED: ("fault_id",),
    ev.CLIENT_LOG: ("level", "message"),
    ev.LOG_UNRECOGNISED: ("log", "missing", "client_version"),
    ev.REBALANCE_FAILED: ("attempts", "reason", "trigger"),
    ev.CONSUMER_STOPPED: ("reason",),
    ev.CLIENT_DESTROYED: (),
    ev.TEST_HOOK_ARMED: ("hook", "params"),
    ev.TEST_HOOK_FIRED: ("hook", "join"),
    ev.COORDINATOR_FOUND: ("address", "answered_by"),
    ev.COORDINATOR_LOST: ("error", "error_code", "message"),
    # faults
    ev.FAULT_STARTED: (*_FAULT, "requested_target", "params", ev.EFFECTS, "details", *_FIRED),
    ev.FAULT_HEALED: (*_FAULT, "how", "started_mono_ms"),
    ev.MESSAGE_FAULTED: (
        "fault_id",
        "broker",
        "api",
        "api_version",
        "correlation_id",
        "action",
        "delay_ms",
        "close_after_ms",
        "error",
        "replaced_error",
    ),
    ev.FAULT_FAILED: (*_FAULT, "error", *_FIRED),
    ev.FAULT_HEAL_FAILED: (*_FAULT, "error"),
    # coordinators: a broker's log, or the project's coordinator
    ev.COORDINATOR_PREPARING_REBALANCE: (*_BROKER, *_INSTANCE, "old_generation", "reason"),
    ev.COORDINATOR_STABILIZED: (*_BROKER, *_INSTANCE, "members"),
    ev.COORDINATOR_TARGET_ASSIGNMENT: (*_BROKER, "assignor"),
    ev.COORDINATOR_ASSIGNMENT_RECEIVED: (*_BROKER, *_INSTANCE, "leader_id"),
    ev.COORDINATOR_MEMBER_JOINED: (*_BROKER, *_INSTANCE, "client_id"),
    ev.COORDINATOR_MEMBER_REMOVED: (*_BROKER, *_INSTANCE, "reason", "detail", "cause"),
    ev.COORDINATOR_GROUP_EMPTY: (*_BROKER, *_INSTANCE),
    ev.COORDINATOR_STARTED: ("pid", "variant", "address"),
    ev.COORDINATOR_STOPPED: ("reason",),
    ev.COORDINATOR_ZOOKEEPER_STATE: ("state",),
    ev.COORDINATOR_ELECTED: ("epoch", "groups"),
    ev.COORDINATOR_RESIGNED: ("reason",),
    ev.COORDINATOR_STATE_CHANGED: (*_INSTANCE, "from", "to", "reason"),
}

FIELDS: dict[str, frozenset[str]] = {name: frozenset(fields) for name, fields in _FIELDS.items()}

# Per event name, everything it may carry: one set lookup per line.
_ALLOWED: dict[str, frozenset[str]] = {name: fields | ENVELOPE for name, fields in FIELDS.items()}
_get_allowed = _ALLOWED.get


def unknown_fields(event: dict) -> tuple[str, ...]:
    """The event's top-level fields the format does not name for it, in the line's order; () when
    there are none, and for an event whose name the format does not know (another matter) or
    anything that is no event."""
    try:
        allowed = _get_allowed(event[ev.NAME])
    except (KeyError, TypeError):  # no name, an unhashable one, not an object
        return ()
    if allowed is None or allowed.issuperset(event):
        return ()
    return tuple(key for key in event if key not in allowed)
