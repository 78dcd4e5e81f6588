"""Explicit Spark schemas for run histories (docs/history.md).

`LINE_SCHEMA` is what one history line is parsed with. Fields whose JSON type
differs between events are read as strings (Spark keeps an object, array or
number given for a string field as its raw JSON text) and typed per event
afterwards: `partitions` is a list of topic-partitions in ownership callbacks, a
list of lag figures in `lag_sampled` and a number in `partitions_added`;
`members` is a list, a map or a count depending on who wrote it.

`EVENT_SCHEMA` is the typed, one-row-per-event table the Parquet cache holds and
every metric is computed from.
"""
from __future__ import annotations

from pyspark.sql import types as T

S, D, L, B = T.StringType(), T.DoubleType(), T.LongType(), T.BooleanType()

TP = T.StructType([T.StructField("topic", S), T.StructField("partition", L)])
RANGE = T.StructType([T.StructField(n, t) for n, t in
                      (("topic", S), ("partition", L), ("min_offset", L), ("max_offset", L), ("count", L))])
OFFSET = T.StructType([T.StructField(n, t) for n, t in (("topic", S), ("partition", L), ("offset", L))])
LAG = T.StructType([T.StructField(n, t) for n, t in
                    (("topic", S), ("partition", L), ("committed", L), ("high_watermark", L), ("lag", L))])
TOPIC = T.StructType([T.StructField("topic", S), T.StructField("partitions", L)])

# Scalar fields kept from the history, by type (everything an analysis asks about).
_STRINGS = ("name source member member_id leader_id protocol_name error error_code trigger fault_id kind target "
            "requested_target how phase reason process role group broker run_id scenario protocol assignor "
            "topic_pattern state rebalance_protocol outcome commit_mode group_instance_id topic params details "
            "coordinator").split()
_DOUBLES = "ts mono_ms started_mono_ms clock_offset_ms rate duration_s".split()
_LONGS = ("seq incarnation generation old_generation pid returncode seed sent unacknowledged "
          "session_timeout_ms max_poll_interval_ms count").split()
_BOOLS = "success incremental is_leader subscribed covers_all fatal".split()
_RAW = ("partitions", "members")  # polymorphic: typed per event below

LINE_SCHEMA = T.StructType(
    [T.StructField(n, S) for n in _STRINGS] + [T.StructField(n, D) for n in _DOUBLES]
    + [T.StructField(n, L) for n in _LONGS] + [T.StructField(n, B) for n in _BOOLS]
    + [T.StructField(n, S) for n in _RAW]
    + [T.StructField("ranges", T.ArrayType(RANGE)), T.StructField("offsets", T.ArrayType(OFFSET)),
       T.StructField("topics", T.ArrayType(TOPIC))]
)

EVENT_SCHEMA = T.StructType(
    [T.StructField("run_key", S), T.StructField("line", L), T.StructField("ord", L), T.StructField("bad", B)]
    + [f for f in LINE_SCHEMA.fields if f.name not in _RAW]
    + [
        T.StructField("tps", T.ArrayType(TP)),  # partitions_assigned / _revoked / _lost
        T.StructField("lag", T.ArrayType(LAG)),  # lag_sampled
        T.StructField("partitions_total", L),  # partitions_added / topic_created
        T.StructField("joined_members", T.ArrayType(S)),  # group_joined (zk-eager: the membership it saw)
        T.StructField("members_count", L),  # coordinator_stabilized
    ]
)
