"""Records in Spark: duplicates (counted and explained), lost and unconsumed records.

Offsets come as inclusive ranges, and stay ranges here: nothing is exploded per
record. A consumed range re-delivers something only if it starts at or below the
highest offset consumed before it in that partition (a running maximum); only those
"late" ranges are looked at closely. Each is cut, at the bounds of the earlier ranges
overlapping it, into segments that lie wholly inside or outside each of them; a
segment's first consumer is the earliest of those covering it (history order), and
the late range re-delivered it.

Explained (the oracle's rule, oracle/checks/duplicates.py): each delivery belongs to
the ownership session of its consumer covering its instant, and to nothing else (no
"latest earlier" session: oracle/ownership.py `attribute`). A re-delivery where either
consumer owned nothing then, by the same ownership session, or by a member that owned
the partition before the first delivery happened (a zombie), is not explained;
otherwise the offsets at or above the offset committed when the re-delivering session
began were uncommitted progress at a hand-over, and are explained.

Lost: acknowledged offsets never consumed — only meaningful once the run drained
(`phase: done`), like the oracle's no-loss check; `unconsumed` is the same figure
whatever the run's outcome.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .ownership import tp_label
from .tables import EventTables

TP = ["run_key", "topic", "partition"]


def _covered(ranges) -> F.Column:
    """How many distinct offsets a sorted array of (lo, hi) ranges covers: one pass merging
    overlapping or touching ranges (state: the open island and the total of the closed ones)."""
    start = F.struct(F.lit(0).cast("long").alias("total"), F.lit(None).cast("long").alias("lo"),
                     F.lit(None).cast("long").alias("hi"))

    def step(acc, r):
        joins = acc["hi"].isNotNull() & (r["lo"] <= acc["hi"] + 1)
        return F.when(joins, F.struct(acc["total"].alias("total"), acc["lo"].alias("lo"),
                                      F.greatest(acc["hi"], r["hi"]).alias("hi"))) \
            .otherwise(F.struct((acc["total"] + F.coalesce(acc["hi"] - acc["lo"] + 1, F.lit(0))).alias("total"),
                                r["lo"].alias("lo"), r["hi"].alias("hi")))

    return F.aggregate(ranges, start, step, lambda acc: acc["total"] + F.coalesce(acc["hi"] - acc["lo"] + 1, F.lit(0)))


def lost_records(t: EventTables) -> DataFrame:
    """Per partition: acked, consumed (distinct) and unconsumed acknowledged offsets, with
    |acked − consumed| = |acked ∪ consumed| − |consumed|. Each partition's ranges are gathered,
    sorted and merged in one pass (no window over every range).
    -> run_key, topic, partition, acked, consumed, unconsumed."""
    def valid(df: DataFrame, kind: str) -> DataFrame:
        return df.where(F.col("lo") <= F.col("hi")).select(*TP, F.lit(kind).alias("set"), F.struct("lo", "hi").alias("r"))

    both = valid(t.acked, "a").unionByName(valid(t.consumed, "c"))
    per_tp = both.groupBy(*TP).agg(
        F.array_sort(F.collect_list(F.when(F.col("set") == "a", F.col("r")))).alias("a"),
        F.array_sort(F.collect_list(F.when(F.col("set") == "c", F.col("r")))).alias("c"))
    sizes = per_tp.select(*TP, _covered("a").alias("acked"), _covered("c").alias("consumed"),
                          _covered(F.array_sort(F.concat("a", "c"))).alias("union"))
    return sizes.select(*TP, "acked", "consumed",
                        F.when(F.col("acked") > 0, F.col("union") - F.col("consumed")).otherwise(F.lit(0))
                        .alias("unconsumed"))


def redeliveries(t: EventTables, sessions: DataFrame) -> DataFrame:
    """Every re-delivered segment: run_key, topic, partition, seg_lo, seg_hi, count, explained (count),
    first_member, second_member."""
    w = Window.partitionBy(*TP).orderBy("ord", "pos")
    cons = (t.consumed.where(F.col("lo") <= F.col("hi"))
            .withColumn("seen_max", F.max("hi").over(w.rowsBetween(Window.unboundedPreceding, -1))))
    late = cons.where(F.col("lo") <= F.col("seen_max")).select(
        *TP, "lo", "hi", "ord", "pos", "member", "inc", "mono_ms")
    earlier = cons.select(*TP, F.col("lo").alias("p_lo"), F.col("hi").alias("p_hi"), F.col("ord").alias("p_ord"),
                          F.col("pos").alias("p_pos"), F.col("member").alias("p_member"),
                          F.col("inc").alias("p_inc"), F.col("mono_ms").alias("p_mono"))
    pairs = late.join(earlier, TP).where(
        (F.struct("p_ord", "p_pos") < F.struct("ord", "pos")) & (F.col("p_lo") <= F.col("hi"))
        & (F.col("p_hi") >= F.col("lo")))
    late_keys = TP + ["lo", "hi", "ord", "pos", "member", "inc", "mono_ms"]
    grouped = pairs.groupBy(*late_keys).agg(
        F.collect_list(F.struct("p_ord", "p_pos", F.greatest("p_lo", "lo").alias("a"),
                                F.least("p_hi", "hi").alias("b"), "p_member", "p_inc", "p_mono")).alias("ps"))
    # cut the late range at every bound of the earlier ranges overlapping it
    cuts = F.array_sort(F.array_distinct(F.flatten(F.array(
        F.transform("ps", lambda p: p["a"]), F.transform("ps", lambda p: p["b"] + 1)))))
    grouped = grouped.withColumn("cuts", cuts)
    segments = F.transform(F.sequence(F.lit(0), F.size("cuts") - 2), lambda i: F.struct(
        F.element_at("cuts", i + 1).alias("seg_lo"), (F.element_at("cuts", i + 2) - 1).alias("seg_hi")))
    segs = (grouped.select(*late_keys, "ps", F.explode(segments).alias("s"))
            .select(*late_keys, "s.seg_lo", "s.seg_hi", F.array_min(F.filter(
                "ps", lambda p: (p["a"] <= F.col("s.seg_lo")) & (p["b"] >= F.col("s.seg_hi")))).alias("first"))
            .where(F.col("first").isNotNull())
            .select(*late_keys, "seg_lo", "seg_hi", F.col("first.p_member").alias("f_member"),
                    F.col("first.p_inc").alias("f_inc"), F.col("first.p_mono").alias("f_mono")))
    # the sessions the first delivery ("was", its consumer's) and the re-delivery ("now") belong
    # to: one join with the partition's sessions of either slot
    s = sessions.select(F.col("run_key").alias("_rk"), F.col("member").alias("_m"), F.col("inc").alias("_i"),
                        F.col("topic").alias("_t"), F.col("partition").alias("_p"), "session_no",
                        "start_ord", "start_mono", "end_mono")
    slot_of = lambda member, inc: (F.col("_m") == F.col(member)) & (F.col("_i") == F.col(inc))  # noqa: E731
    j = segs.join(s, (F.col("run_key") == F.col("_rk")) & (F.col("topic") == F.col("_t"))
                  & (F.col("partition") == F.col("_p")) & (slot_of("member", "inc") | slot_of("f_member", "f_inc")),
                  "left")

    def covering(member: str, inc: str, at: str) -> F.Column:
        """The slot's session covering the instant (the first one, should two touch), else null."""
        covers = (slot_of(member, inc) & (F.col("start_mono") <= F.col(at))
                  & (F.col("end_mono").isNull() | (F.col("end_mono") >= F.col(at))))
        return F.min(F.when(covers, F.struct("start_ord", "session_no", "start_mono")))

    att = (j.groupBy(*segs.columns)
           .agg(covering("member", "inc", "mono_ms").alias("now"), covering("f_member", "f_inc", "f_mono").alias("was"))
           .select(*segs.columns, F.col("now.session_no").alias("now_session"),
                   F.col("now.start_mono").alias("now_start"), F.col("was.session_no").alias("was_session")))
    # the committed offset when the re-delivering session began
    commits = t.commits.where(F.col("success")).select(
        F.col("run_key").alias("_rk"), F.col("topic").alias("_t"), F.col("partition").alias("_p"),
        F.struct(F.col("mono_ms").alias("at"), F.col("sent_ms").alias("sent"), F.col("ord").alias("o"), "opos",
                 F.col("offset").alias("committed")).alias("c"))
    withc = (att.join(commits, (F.col("run_key") == F.col("_rk")) & (F.col("topic") == F.col("_t"))
                      & (F.col("partition") == F.col("_p")) & (F.col("c.at") <= F.col("now_start")), "left")
             .groupBy(*att.columns).agg(F.max("c").alias("c")))
    unowned = F.col("was_session").isNull() | F.col("now_session").isNull()  # exclusive-ownership's case
    same_session = ((F.col("member") == F.col("f_member")) & (F.col("inc") == F.col("f_inc"))
                    & (F.col("now_session") == F.col("was_session")))
    zombie = F.col("now_start") < F.col("f_mono")  # both owned it at once: not a hand-over
    floor = F.coalesce("c.committed", F.col("seg_lo"))
    explained = F.greatest(F.lit(0), F.col("seg_hi") - F.greatest("seg_lo", floor) + 1)
    return withc.select(
        *TP, "seg_lo", "seg_hi", (F.col("seg_hi") - F.col("seg_lo") + 1).alias("count"),
        F.when(unowned | same_session | zombie, F.lit(0)).otherwise(explained).cast("long").alias("explained"),
        F.col("f_member").alias("first_member"), F.col("member").alias("second_member"))


def duplicates_by_partition(t: EventTables, sessions: DataFrame) -> DataFrame:
    """run_key, topic, partition, partition_label, duplicates, explained, unexplained."""
    return (redeliveries(t, sessions).groupBy(*TP)
            .agg(F.sum("count").alias("duplicates"), F.sum("explained").alias("explained"))
            .select(*TP, tp_label().alias("partition_label"), "duplicates", "explained",
                    (F.col("duplicates") - F.col("explained")).alias("unexplained")))
