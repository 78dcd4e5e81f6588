"""The history format's vocabulary: every event's name, the fields every writer and reader
share, and the format's version (docs/history.md says what each one means).

The one place these names are spelt. Writers (the harness, the drivers, the java driver's
translator, the project's coordinator, the broker-log parser, the fault scheduler) and
readers (the oracle, the analysis) all use these constants, so a name cannot drift between
the side that writes it and the side that judges it. tests/unit/test_history_vocabulary.py
holds this list, the oracle's schema (oracle/events.py) and the doc's tables to the same
events.

Pure data, importing nothing: a consumer process loads it without loading the oracle.
"""

# Written in run_started's `format_version`; a history without it is version 1 (every run
# written before the field existed). Raise it when an older reader would misread a newer
# history — an event or field renamed, or meaning something else — so the older reader
# refuses the history instead of judging it wrongly. New events and new fields need no new
# version: readers pass over what they do not read.
FORMAT_VERSION = 3
# 2: every writer that can be started again (the observer, the producer, a coordinator instance,
# as members always did) writes its `incarnation`, so a writer's `seq` going back to 1 without a
# new incarnation is a broken history, not a restart (oracle/integrity.py: writer-sequence).
# 3: every fault_started says what its fault does to its target (`effects`, below), and readers
# decide by that alone: an older reader would decide by the kind's name, which a kind added since
# does not tell it. Older histories get their faults' effects from oracle/legacy.py.

# -- fields of every event ---------------------------------------------------------------
NAME = "name"
TS = "ts"
MONO_MS = "mono_ms"
SOURCE = "source"
SEQ = "seq"
CLOCK = "clock"

# -- fields of every consumer event --------------------------------------------------------
MEMBER = "member"
INCARNATION = "incarnation"
MEMBER_ID = "member_id"
GENERATION = "generation"
DRIVER = "driver"  # "java" on the java driver's events
INSTANCE = "instance"  # on every event of the project's coordinator: the instance that wrote it

# -- the bulk events' lists and the objects in them ------------------------------------------
RANGES = "ranges"  # records_acked, records_consumed: offset ranges
OFFSETS = "offsets"  # offsets_committed: committed offsets
TOPIC = "topic"
PARTITION = "partition"
MIN_OFFSET = "min_offset"  # a range's first offset
MAX_OFFSET = "max_offset"  # and its last, inclusive
COUNT = "count"  # max_offset - min_offset + 1
OFFSET = "offset"  # a committed offset: the next one to read

# -- harness events (source: harness) --------------------------------------------------------
RUN_STARTED = "run_started"
PHASE = "phase"
PROCESS_STARTED = "process_started"
PROCESS_EXITED = "process_exited"
# process_exited: the harness asked it to stop (SIGTERM) and killed it (SIGKILL) that many ms later
ESCALATED_AFTER_MS = "escalated_after_ms"
PARTITIONS_ADDED = "partitions_added"
TOPIC_CREATED = "topic_created"
HEAL_CHECKED = "heal_checked"
RUN_FINISHED = "run_finished"
GROUP_RESIZED = "group_resized"  # the harness started or stopped members as the load profile asked
NODE_RESTARTED = "node_restarted"  # a rolling upgrade restarted a broker or controller (another release, settings)
CLUSTER_FINALIZED = "cluster_finalized"  # a rolling upgrade finalized: the cluster's feature level raised
CLOCK_ALIGNED = (
    "clock_aligned"  # a member host on another machine: its clocks against the harness's (runtime/host_link.py)
)

# -- observer events (source: observer) ------------------------------------------------------
LAG_SAMPLED = "lag_sampled"
GROUP_DESCRIBED = "group_described"

# -- producer events (source: producer) ------------------------------------------------------
PRODUCER_STARTED = "producer_started"
PRODUCER_STOPPED = "producer_stopped"
RECORDS_ACKED = "records_acked"
PRODUCE_FAILED = "produce_failed"

# -- consumer events (source: the member) ------------------------------------------------------
CONSUMER_STARTED = "consumer_started"
SUBSCRIPTION_CHANGED = "subscription_changed"
GROUP_JOIN_SENT = "group_join_sent"
GROUP_JOINED = "group_joined"
GROUP_JOIN_FAILED = "group_join_failed"
GROUP_SYNCED = "group_synced"
GROUP_SYNC_FAILED = "group_sync_failed"
HEARTBEAT_FAILED = "heartbeat_failed"
REBALANCE_STARTED = "rebalance_started"
PARTITIONS_ASSIGNED = "partitions_assigned"
REVOKE_STARTED = "revoke_started"
PARTITIONS_REVOKED = "partitions_revoked"
PARTITIONS_LOST = "partitions_lost"
RECORDS_CONSUMED = "records_consumed"
OFFSETS_COMMITTED = "offsets_committed"
CONSUMER_ERROR = "consumer_error"
POLL_STALL_STARTED = "poll_stall_started"
POLL_STALL_ENDED = "poll_stall_ended"
CLIENT_LOG = "client_log"
# A log the run learns protocol steps from said none it could read: what is missing (no verdict without it).
LOG_UNRECOGNISED = "log_unrecognised"
REBALANCE_FAILED = "rebalance_failed"
CONSUMER_STOPPED = "consumer_stopped"
# A hosted member's handle destroyed without a close (a crash of one member of a member host).
CLIENT_DESTROYED = "client_destroyed"
TEST_HOOK_ARMED = "test_hook_armed"
TEST_HOOK_FIRED = "test_hook_fired"
# members of the project's coordinator only
COORDINATOR_FOUND = "coordinator_found"
COORDINATOR_LOST = "coordinator_lost"

# -- fault events (source: fault) --------------------------------------------------------------
FAULT_STARTED = "fault_started"
FAULT_HEALED = "fault_healed"
FAULT_FAILED = "fault_failed"
FAULT_HEAL_FAILED = "fault_heal_failed"
# The message proxy (source: message-proxy) acted on one response of a member, for a message fault:
# `action` is one of MESSAGE_ACTIONS (faults/message.py says what each does on the connection).
MESSAGE_FAULTED = "message_faulted"
MESSAGE_ACTIONS = ("delay", "withhold", "cut-after-request", "error")
# What a fault does to its target, as its kind declares it (faults/base.py: Effects): fault_started's
# `effects`, so that no reader decides by a kind's name.
EFFECTS = "effects"
SILENCES = "silences"  # which of its target's signals to the group stop, if any:
HEARTBEATS = "heartbeats"  # none reach the coordinator: evicted when session.timeout.ms runs out
POLLS = "polls"  # it heartbeats but does not poll: it leaves when max.poll.interval.ms runs out (KIP-62)
SILENCED_AS = "silenced_as"  # how an explanation says it: "paused", "crashed", "cut off", …
DOWN = "down"  # what becomes of its target's process, if anything:
PAUSED = "paused"  # stopped (SIGSTOP): it runs on when the fault heals
KILLED = "killed"  # it exits, by the fault's doing
RESTART_AFTER_S = "restart_after_s"  # a killed process is started again that long after; null: down for good

# -- coordinator events (source: broker-N from its log, or coordinator-N) --------------------------
COORDINATOR_PREPARING_REBALANCE = "coordinator_preparing_rebalance"
COORDINATOR_STABILIZED = "coordinator_stabilized"
COORDINATOR_TARGET_ASSIGNMENT = "coordinator_target_assignment"
COORDINATOR_ASSIGNMENT_RECEIVED = "coordinator_assignment_received"
COORDINATOR_MEMBER_JOINED = "coordinator_member_joined"
COORDINATOR_MEMBER_REMOVED = "coordinator_member_removed"
COORDINATOR_GROUP_EMPTY = "coordinator_group_empty"
# the project's coordinator only
COORDINATOR_STARTED = "coordinator_started"
COORDINATOR_STOPPED = "coordinator_stopped"
COORDINATOR_ZOOKEEPER_STATE = "coordinator_zookeeper_state"
COORDINATOR_ELECTED = "coordinator_elected"
COORDINATOR_RESIGNED = "coordinator_resigned"
COORDINATOR_STATE_CHANGED = "coordinator_state_changed"

# By who writes them, as docs/history.md lists them.
HARNESS_EVENTS = (
    RUN_STARTED,
    PHASE,
    PROCESS_STARTED,
    PROCESS_EXITED,
    PARTITIONS_ADDED,
    TOPIC_CREATED,
    HEAL_CHECKED,
    RUN_FINISHED,
    GROUP_RESIZED,
    NODE_RESTARTED,
    CLUSTER_FINALIZED,
    CLOCK_ALIGNED,
)
OBSERVER_EVENTS = (LAG_SAMPLED, GROUP_DESCRIBED)
PRODUCER_EVENTS = (PRODUCER_STARTED, PRODUCER_STOPPED, RECORDS_ACKED, PRODUCE_FAILED)
CONSUMER_EVENTS = (
    CONSUMER_STARTED,
    SUBSCRIPTION_CHANGED,
    GROUP_JOIN_SENT,
    GROUP_JOINED,
    GROUP_JOIN_FAILED,
    GROUP_SYNCED,
    GROUP_SYNC_FAILED,
    HEARTBEAT_FAILED,
    REBALANCE_STARTED,
    PARTITIONS_ASSIGNED,
    REVOKE_STARTED,
    PARTITIONS_REVOKED,
    PARTITIONS_LOST,
    RECORDS_CONSUMED,
    OFFSETS_COMMITTED,
    CONSUMER_ERROR,
    POLL_STALL_STARTED,
    POLL_STALL_ENDED,
    CLIENT_LOG,
    LOG_UNRECOGNISED,
    REBALANCE_FAILED,
    CONSUMER_STOPPED,
    CLIENT_DESTROYED,
    TEST_HOOK_ARMED,
    TEST_HOOK_FIRED,
    COORDINATOR_FOUND,
    COORDINATOR_LOST,
)
FAULT_EVENTS = (FAULT_STARTED, FAULT_HEALED, FAULT_FAILED, FAULT_HEAL_FAILED)
MESSAGE_PROXY_EVENTS = (MESSAGE_FAULTED,)
COORDINATOR_EVENTS = (
    COORDINATOR_PREPARING_REBALANCE,
    COORDINATOR_STABILIZED,
    COORDINATOR_TARGET_ASSIGNMENT,
    COORDINATOR_ASSIGNMENT_RECEIVED,
    COORDINATOR_MEMBER_JOINED,
    COORDINATOR_MEMBER_REMOVED,
    COORDINATOR_GROUP_EMPTY,
    COORDINATOR_STARTED,
    COORDINATOR_STOPPED,
    COORDINATOR_ZOOKEEPER_STATE,
    COORDINATOR_ELECTED,
    COORDINATOR_RESIGNED,
    COORDINATOR_STATE_CHANGED,
)

EVENT_NAMES = frozenset(
    HARNESS_EVENTS
    + OBSERVER_EVENTS
    + PRODUCER_EVENTS
    + CONSUMER_EVENTS
    + FAULT_EVENTS
    + MESSAGE_PROXY_EVENTS
    + COORDINATOR_EVENTS
)
