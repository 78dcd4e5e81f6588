"""Records in Spark: duplicates (counted and explained), lost and unconsumed records.

Offsets come as inclusive ranges, and stay ranges here: nothing is exploded per
record. For duplicates, each partition's consumed ranges are cut at every range
boundary into elementary segments; a segment lies wholly inside or outside each
consumption, so "who consumed these offsets first" is a per-segment question (the
earliest consumption covering it, in history order) and every later covering
consumption re-delivered the whole segment.

Explained (the oracle's rule, oracle/checks/duplicates.py): a re-delivery by the
same ownership session, or by a member that owned the partition before the first
delivery happened (a zombie), is not explained; otherwise the offsets at or above
the offset committed when the re-delivering session began were uncommitted
progress at revocation, and are explained.

Lost: acknowledged offsets never consumed — only meaningful once the run drained
(`phase: done`), like the oracle's no-loss check; `unconsumed` is the same figure
whatever the run's outcome.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .ownership import attribute, inc_col, member_col, tp_label

TP = ["run_key", "topic", "partition"]


def consumptions(events: DataFrame) -> DataFrame:
    """run_key, topic, partition, lo, hi, ord, pos, member, inc, mono_ms (one consumed range each)."""
    return (events.where(F.col("name") == "records_consumed")
            .select("run_key", "ord", "mono_ms", member_col().alias("member"), inc_col().alias("inc"),
                    F.posexplode(F.coalesce("ranges", F.array())).alias("pos", "r"))
            .select("run_key", F.col("r.topic").alias("topic"), F.col("r.partition").alias("partition"),
                    F.col("r.min_offset").alias("lo"), F.col("r.max_offset").alias("hi"),
                    "ord", "pos", "member", "inc", "mono_ms"))


def acked_ranges(events: DataFrame) -> DataFrame:
    return (events.where(F.col("name") == "records_acked")
            .select("run_key", F.explode(F.coalesce("ranges", F.array())).alias("r"))
            .select("run_key", F.col("r.topic").alias("topic"), F.col("r.partition").alias("partition"),
                    F.col("r.min_offset").alias("lo"), F.col("r.max_offset").alias("hi")))


def merged(ranges: DataFrame) -> DataFrame:
    """Ranges (run_key, topic, partition, lo, hi) -> disjoint, merged islands (adjacent ones joined)."""
    w = Window.partitionBy(*TP).orderBy("lo", "hi")
    r = ranges.where(F.col("lo") <= F.col("hi"))
    r = (r.withColumn("reach", F.max("hi").over(w.rowsBetween(Window.unboundedPreceding, -1)))
         .withColumn("new", F.col("reach").isNull() | (F.col("lo") > F.col("reach") + 1))
         .withColumn("island", F.sum(F.col("new").cast("int")).over(w.rowsBetween(Window.unboundedPreceding,
                                                                                    Window.currentRow))))
    return r.groupBy(*TP, "island").agg(F.min("lo").alias("lo"), F.max("hi").alias("hi")).drop("island")


def _size(df: DataFrame) -> F.Column:
    return F.col("hi") - F.col("lo") + 1


def lost_records(events: DataFrame) -> DataFrame:
    """Per partition: acked, consumed (distinct), unconsumed acknowledged offsets.
    -> run_key, topic, partition, acked, consumed, unconsumed."""
    acked = merged(acked_ranges(events))
    consumed = merged(consumptions(events).select(*TP, "lo", "hi"))
    a = acked.alias("a")
    c = consumed.alias("c")
    both = (a.join(c, [F.col("a.run_key") == F.col("c.run_key"), F.col("a.topic") == F.col("c.topic"),
                       F.col("a.partition") == F.col("c.partition"),
                       F.col("c.lo") <= F.col("a.hi"), F.col("c.hi") >= F.col("a.lo")])
            .select("a.run_key", "a.topic", "a.partition",
                    (F.least("a.hi", "c.hi") - F.greatest("a.lo", "c.lo") + 1).alias("n"))
            .groupBy(*TP).agg(F.sum("n").alias("acked_consumed")))
    acked_n = acked.groupBy(*TP).agg(F.sum(_size(acked)).alias("acked"))
    consumed_n = consumed.groupBy(*TP).agg(F.sum(_size(consumed)).alias("consumed"))
    return (acked_n.join(consumed_n, TP, "full").join(both, TP, "left")
            .select(*TP, F.coalesce("acked", F.lit(0)).alias("acked"), F.coalesce("consumed", F.lit(0)).alias("consumed"),
                    (F.coalesce("acked", F.lit(0)) - F.coalesce("acked_consumed", F.lit(0))).alias("unconsumed")))


def redeliveries(events: DataFrame, sessions: DataFrame) -> DataFrame:
    """Every re-delivered segment: run_key, topic, partition, seg_lo, seg_hi, count, explained (count),
    first_member, second_member."""
    cons = consumptions(events).where(F.col("lo") <= F.col("hi"))
    cuts = (cons.select(*TP, F.col("lo").alias("b")).unionByName(cons.select(*TP, (F.col("hi") + 1).alias("b")))
            .distinct())
    w = Window.partitionBy(*TP).orderBy("b")
    cuts = cuts.withColumn("idx", F.row_number().over(w)).withColumn("next_b", F.lead("b").over(w))
    lo_idx = cuts.select(*TP, F.col("b").alias("lo"), F.col("idx").alias("lo_idx"))
    hi_idx = cuts.select(*TP, (F.col("b") - 1).alias("hi"), F.col("idx").alias("hi_idx"))
    seg = cuts.where(F.col("next_b").isNotNull()).select(*TP, "idx", F.col("b").alias("seg_lo"),
                                                       (F.col("next_b") - 1).alias("seg_hi"))
    covering = (cons.join(lo_idx, TP + ["lo"]).join(hi_idx, TP + ["hi"])
                .withColumn("idx", F.explode(F.sequence("lo_idx", F.col("hi_idx") - 1)))
                .join(seg, TP + ["idx"]))
    first = Window.partitionBy(*TP, "idx").orderBy("ord", "pos")
    covering = covering.withColumn("rank", F.row_number().over(first))
    firsts = covering.where(F.col("rank") == 1).select(
        *TP, "idx", F.col("member").alias("f_member"), F.col("inc").alias("f_inc"), F.col("mono_ms").alias("f_mono"))
    again = (covering.where(F.col("rank") > 1).join(firsts, TP + ["idx"])
             .select(*TP, "idx", "seg_lo", "seg_hi", "ord", "pos", "member", "inc", "mono_ms",
                     "f_member", "f_inc", "f_mono"))
    qid = TP + ["idx", "ord", "pos"]
    again = attribute(again, sessions, qid, "member", "inc", "mono_ms", "now")
    again = attribute(again, sessions, qid, "f_member", "f_inc", "f_mono", "was")
    # the committed offset when the re-delivering session began (or at the re-delivery, without one)
    again = again.withColumn("ref_t", F.coalesce("now_start", "mono_ms"))
    commits = (events.where((F.col("name") == "offsets_committed") & F.coalesce("success", F.lit(False)))
               .select("run_key", "ord", "mono_ms", F.coalesce("started_mono_ms", "mono_ms").alias("sent"),
                       F.posexplode(F.coalesce("offsets", F.array())).alias("opos", "o"))
               .select(F.col("run_key").alias("_rk"), F.col("o.topic").alias("_t"), F.col("o.partition").alias("_p"),
                       F.col("o.offset").alias("committed"), F.col("mono_ms").alias("c_at"), F.col("sent").alias("c_sent"),
                       F.col("ord").alias("c_ord"), "opos"))
    j = again.join(commits, (F.col("run_key") == F.col("_rk")) & (F.col("topic") == F.col("_t"))
                   & (F.col("partition") == F.col("_p")) & (F.col("c_at") <= F.col("ref_t")), "left")
    latest = Window.partitionBy(*qid).orderBy(F.col("c_at").desc_nulls_last(), F.col("c_sent").desc_nulls_last(),
                                              F.col("c_ord").desc_nulls_last(), F.col("opos").desc_nulls_last())
    j = j.withColumn("_rn", F.row_number().over(latest)).where(F.col("_rn") == 1)
    same_session = ((F.col("member") == F.col("f_member")) & (F.col("inc") == F.col("f_inc"))
                    & ((F.col("now_session").isNull() & F.col("was_session").isNull())
                       | (F.col("now_session") == F.col("was_session"))))
    zombie = F.col("now_session").isNotNull() & (F.col("now_start") < F.col("f_mono"))
    floor = F.coalesce("committed", F.col("seg_lo"))
    explained = F.greatest(F.lit(0), F.col("seg_hi") - F.greatest("seg_lo", floor) + 1)
    return j.select(
        *TP, "seg_lo", "seg_hi", (F.col("seg_hi") - F.col("seg_lo") + 1).alias("count"),
        F.when(same_session | zombie, F.lit(0)).otherwise(explained).cast("long").alias("explained"),
        F.col("f_member").alias("first_member"), F.col("member").alias("second_member"))


def duplicates_by_partition(events: DataFrame, sessions: DataFrame) -> DataFrame:
    """run_key, topic, partition, partition_label, duplicates, explained, unexplained."""
    return (redeliveries(events, sessions).groupBy(*TP)
            .agg(F.sum("count").alias("duplicates"), F.sum("explained").alias("explained"))
            .select(*TP, tp_label().alias("partition_label"), "duplicates", "explained",
                    (F.col("duplicates") - F.col("explained")).alias("unexplained")))
