"""The events table split once into narrow tables, which the caller computes and keeps (local checkpoints).

Most of a history is records: `records_consumed`, `offsets_committed` and
`records_acked` lines are nine events in ten. Ownership and rebalances need the
rest (`control`), offsets need the ranges exploded into rows. Splitting once keeps
every later step from scanning, filtering and exploding the whole history again.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from oracle import vocabulary as ev

BULK = (ev.RECORDS_CONSUMED, ev.RECORDS_ACKED, ev.OFFSETS_COMMITTED, ev.LAG_SAMPLED, ev.CLIENT_LOG)


def _member():
    return F.coalesce(F.col("member"), F.col("source")).alias("member")


def _inc():
    return F.coalesce(F.when(F.col("incarnation") != 0, F.col("incarnation")), F.lit(1)).cast("long").alias("inc")


@dataclass
class EventTables:
    control: DataFrame  # every event but the bulk ones, all columns
    clock: DataFrame  # run_key, events, t_first, t_end (over the whole history)
    consumed: DataFrame  # run_key, topic, partition, lo, hi, ord, pos, member, inc, mono_ms
    acked: DataFrame  # run_key, topic, partition, lo, hi
    commits: DataFrame  # run_key, topic, partition, offset, ord, opos, mono_ms, sent_ms, member, inc, generation, success, error, error_code, trigger
    lag: DataFrame  # run_key, ord, mono_ms, ts, group, topic, partition, lag, committed, high_watermark


def split(events: DataFrame) -> EventTables:
    """The narrow tables, not yet computed: the caller computes them (concurrently) and keeps them."""
    control = events.where(~F.col("name").isin(*BULK)).drop("ranges", "offsets", "lag")
    clock = events.groupBy("run_key").agg(F.count("*").alias("events"), F.min("mono_ms").alias("t_first"),
                                          F.max("mono_ms").alias("t_end"))
    consumed = (
        events.where(F.col("name") == ev.RECORDS_CONSUMED)
        .select("run_key", "ord", "mono_ms", _member(), _inc(), F.posexplode(F.coalesce("ranges", F.array())).alias("pos", "r"))
        .select("run_key", F.col("r.topic").alias("topic"), F.col("r.partition").alias("partition"),
                F.col("r.min_offset").alias("lo"), F.col("r.max_offset").alias("hi"), "ord", "pos", "member", "inc",
                "mono_ms"))
    acked = (
        events.where(F.col("name") == ev.RECORDS_ACKED)
        .select("run_key", F.explode(F.coalesce("ranges", F.array())).alias("r"))
        .select("run_key", F.col("r.topic").alias("topic"), F.col("r.partition").alias("partition"),
                F.col("r.min_offset").alias("lo"), F.col("r.max_offset").alias("hi")))
    commits = (
        events.where(F.col("name") == ev.OFFSETS_COMMITTED)
        .select("run_key", "ord", "mono_ms", F.coalesce("started_mono_ms", "mono_ms").alias("sent_ms"), _member(),
                _inc(), "generation", F.coalesce("success", F.lit(False)).alias("success"), "error", "error_code",
                "trigger", F.posexplode(F.coalesce("offsets", F.array())).alias("opos", "o"))
        .select("run_key", F.col("o.topic").alias("topic"), F.col("o.partition").alias("partition"),
                F.col("o.offset").alias("offset"), "ord", "opos", "mono_ms", "sent_ms", "member", "inc", "generation",
                "success", "error", "error_code", "trigger"))
    lag = (
        events.where(F.col("name") == ev.LAG_SAMPLED)
        .select("run_key", "ord", "mono_ms", "ts", "group", F.explode(F.coalesce("lag", F.array())).alias("l"))
        .select("run_key", "ord", "mono_ms", "ts", "group", F.col("l.topic").alias("topic"),
                F.col("l.partition").alias("partition"), F.col("l.lag").alias("lag"),
                F.col("l.committed").alias("committed"), F.col("l.high_watermark").alias("high_watermark")))
    return EventTables(control, clock, consumed, acked, commits, lag)
