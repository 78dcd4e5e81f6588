"""Ownership sessions in Spark: who owned which partition, from when to when.

The same interpretation as the oracle (oracle/ownership.py), expressed as
set operations instead of a replay. A member slot (member + incarnation)
gets a stream of operations per partition: `start` when an assignment lists the
partition, `end` on a revoke or loss listing it (or listing nothing: all of
them), an eager assignment without it, `consumer_stopped`, the process exiting,
or the slot being restarted. An operation only changes anything when it flips the
state (a start while owning is a no-op, as is an end while not owning), so a
session is a start whose previous operation was not a start (gaps and islands),
and it ends at the first end after it.

Every table here is keyed by `run_key`; time order within a run is `ord`.
"""
from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from oracle import vocabulary as ev

SLOT_EVENTS = (ev.CONSUMER_STARTED, ev.CONSUMER_STOPPED, ev.GROUP_JOINED, ev.PARTITIONS_ASSIGNED,
               ev.PARTITIONS_REVOKED, ev.PARTITIONS_LOST)
TP_KEYS = ["run_key", "member", "inc", "topic", "partition"]


def member_col() -> Column:
    return F.coalesce(F.col("member"), F.col("source"))


def inc_col() -> Column:
    return F.coalesce(F.when(F.col("incarnation") != 0, F.col("incarnation")), F.lit(1)).cast("long")


def slot_label(member: str = "member", inc: str = "inc") -> Column:
    """'consumer-2', or 'consumer-2#2' for a restarted slot (MemberSlot.__str__)."""
    return F.when(F.col(inc) == 1, F.col(member)).otherwise(F.concat_ws("#", F.col(member), F.col(inc).cast("string")))


def tp_label(topic: str = "topic", partition: str = "partition") -> Column:
    return F.concat_ws("-", F.col(topic), F.col(partition).cast("string"))


def consumer_events(events: DataFrame) -> DataFrame:
    return (events.where(F.col("name").isin(*SLOT_EVENTS, ev.PROCESS_EXITED))
            .select("run_key", "ord", "name", "mono_ms", "ts", member_col().alias("member"), inc_col().alias("inc"),
                    "member_id", "generation", "tps", "incremental", "pid", "process"))


def _current_slot(queries: DataFrame, marks: DataFrame, who: str) -> DataFrame:
    """queries(run_key, q_ord, <who>, …) -> + cur_inc: the member's live incarnation just before q_ord
    (the latest one started, else the first one seen: the oracle's `current`)."""
    m = marks.select(F.col("run_key").alias("_rk"), F.col("member").alias("_member"), F.col("ord").alias("m_ord"),
                     F.col("inc").alias("m_inc"), (F.col("name") == ev.CONSUMER_STARTED).alias("started"))
    joined = queries.join(m, (F.col("run_key") == F.col("_rk")) & (F.col(who) == F.col("_member"))
                          & (F.col("m_ord") < F.col("q_ord")), "left")
    return (joined.groupBy(*queries.columns)
            .agg(F.max(F.when(F.col("started"), F.struct("m_ord", "m_inc"))).alias("last_started"),
                 F.min(F.when(F.col("m_ord").isNotNull(), F.struct("m_ord", "m_inc"))).alias("first_seen"))
            .withColumn("cur_inc", F.coalesce(F.col("last_started.m_inc"), F.col("first_seen.m_inc")))
            .drop("last_started", "first_seen"))


def sessions_of(events: DataFrame, keep: Callable[[DataFrame], DataFrame] = lambda df: df) -> DataFrame:
    """One row per ownership session: run_key, member, inc, topic, partition, session_no, generation,
    member_id, start_ord, start_mono, start_ts, end_ord, end_mono, end_ts (end_* null: owned at the end).
    `keep` computes and keeps an intermediate table used several times (identity: one big plan)."""
    ce = keep(consumer_events(events))
    assigned = ce.where(F.col("name") == ev.PARTITIONS_ASSIGNED)
    starts = (assigned.select("run_key", "member", "inc", "ord", "mono_ms", "ts", "generation", "member_id",
                              F.explode(F.coalesce("tps", F.array())).alias("tp"))
              .select("run_key", "member", "inc", "ord", "mono_ms", "ts", "generation", "member_id",
                      F.col("tp.topic").alias("topic"), F.col("tp.partition").alias("partition"))
              .withColumn("op", F.lit(1)))
    # every partition a slot ever owned: an `end` for anything else is a no-op anyway
    ever = keep(starts.select("run_key", "member", "inc", "topic", "partition").distinct())

    def end_all(df: DataFrame) -> DataFrame:
        return df.select("run_key", "member", "inc", "ord", "mono_ms", "ts").join(ever, ["run_key", "member", "inc"])

    # eager assignment: the list is the whole assignment, anything else owned ends
    eager = end_all(assigned.where(~F.coalesce(F.col("incremental"), F.lit(False))))
    eager = eager.join(starts.select("run_key", "member", "inc", "ord", "topic", "partition"),
                       ["run_key", "member", "inc", "ord", "topic", "partition"], "left_anti")
    give_up = ce.where(F.col("name").isin(ev.PARTITIONS_REVOKED, ev.PARTITIONS_LOST))
    listed = (give_up.where(F.col("tps").isNotNull())
              .select("run_key", "member", "inc", "ord", "mono_ms", "ts", F.explode("tps").alias("tp"))
              .select("run_key", "member", "inc", "ord", "mono_ms", "ts",
                      F.col("tp.topic").alias("topic"), F.col("tp.partition").alias("partition")))
    unlisted = end_all(give_up.where(F.col("tps").isNull()))
    stopped = end_all(ce.where(F.col("name") == ev.CONSUMER_STOPPED))

    marks = ce.where(F.col("name").isin(*SLOT_EVENTS))
    started = marks.where(F.col("name") == ev.CONSUMER_STARTED)
    # a restarted slot: the previous incarnation is gone
    restart_q = started.select("run_key", F.col("ord").alias("q_ord"), "member", F.col("inc").alias("new_inc"),
                               "mono_ms", "ts")
    restarted = (_current_slot(restart_q, marks, "member")
                 .where(F.col("cur_inc").isNotNull() & (F.col("cur_inc") != F.col("new_inc")))
                 .select("run_key", "member", F.col("cur_inc").alias("inc"), F.col("q_ord").alias("ord"),
                         "mono_ms", "ts"))
    restarted = end_all(restarted)
    # a process exit ends the slot that pid belongs to (else the member's live incarnation)
    exits = (ce.where(F.col("name") == ev.PROCESS_EXITED)
             .select("run_key", F.col("ord").alias("q_ord"), F.col("process").alias("member"), "pid", "mono_ms", "ts"))
    starts_by_pid = started.select(F.col("run_key").alias("s_rk"), F.col("pid").alias("s_pid"),
                                   F.col("ord").alias("s_ord"), F.col("member").alias("s_member"),
                                   F.col("inc").alias("s_inc"))
    by_pid = (exits.join(starts_by_pid, (F.col("run_key") == F.col("s_rk")) & (F.col("pid") == F.col("s_pid"))
                         & (F.col("s_ord") < F.col("q_ord")), "left")
              .groupBy("run_key", "q_ord", "member", "pid", "mono_ms", "ts")
              .agg(F.max(F.when(F.col("s_ord").isNotNull(), F.struct("s_ord", "s_member", "s_inc"))).alias("p")))
    pid_known = (by_pid.where(F.col("p").isNotNull() & (F.col("p.s_member") == F.col("member")))
                 .select("run_key", "member", F.col("p.s_inc").alias("inc"), F.col("q_ord").alias("ord"),
                         "mono_ms", "ts"))
    pid_unknown = _current_slot(by_pid.where(F.col("p").isNull()).drop("p", "pid"), marks, "member")
    pid_unknown = (pid_unknown.where(F.col("cur_inc").isNotNull())
                   .select("run_key", "member", F.col("cur_inc").alias("inc"), F.col("q_ord").alias("ord"),
                           "mono_ms", "ts"))
    exited = end_all(pid_known.unionByName(pid_unknown))

    cols = ["run_key", "member", "inc", "topic", "partition", "ord", "mono_ms", "ts"]
    ends = (eager.select(*cols).unionByName(listed.select(*cols)).unionByName(unlisted.select(*cols))
            .unionByName(stopped.select(*cols)).unionByName(restarted.select(*cols))
            .unionByName(exited.select(*cols))
            .withColumn("op", F.lit(0)).withColumn("generation", F.lit(None).cast("long"))
            .withColumn("member_id", F.lit(None).cast("string")))
    ops = starts.unionByName(ends)
    w = Window.partitionBy(*TP_KEYS).orderBy("ord", "op")
    ops = (ops.withColumn("prev_op", F.lag("op").over(w))
           .withColumn("new", (F.col("op") == 1) & (F.col("prev_op").isNull() | (F.col("prev_op") == 0)))
           .withColumn("session_no", F.sum(F.col("new").cast("int")).over(
               w.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
           .where(F.col("session_no") > 0))
    return (ops.groupBy(*TP_KEYS, "session_no")
            .agg(F.min(F.when(F.col("new"), F.struct("ord", "mono_ms", "ts", "generation", "member_id"))).alias("s"),
                 F.min(F.when(F.col("op") == 0, F.struct("ord", "mono_ms", "ts"))).alias("e"))
            .select(*TP_KEYS, "session_no", F.col("s.generation").alias("generation"),
                    F.col("s.member_id").alias("member_id"),
                    F.col("s.ord").alias("start_ord"), F.col("s.mono_ms").alias("start_mono"),
                    F.col("s.ts").alias("start_ts"), F.col("e.ord").alias("end_ord"),
                    F.col("e.mono_ms").alias("end_mono"), F.col("e.ts").alias("end_ts")))


def assignments_of(events: DataFrame, sessions: DataFrame) -> DataFrame:
    """Per completed assignment callback: what each member owned in each generation.
    -> run_key, generation, topic, partition, owner (member name). One owner per partition:
    where two slots claim one, the one that joined the generation's assignments last wins."""
    ce = consumer_events(events).where((F.col("name") == ev.PARTITIONS_ASSIGNED) & F.col("generation").isNotNull())
    per_member = Window.partitionBy("run_key", "generation", "member")
    last = (ce.withColumn("last_ord", F.max("ord").over(per_member))
            .where(F.col("ord") == F.col("last_ord")).select("run_key", "generation", "member", "inc", "ord"))
    first_of_slot = (ce.groupBy("run_key", "generation", "member", "inc").agg(F.min("ord").alias("inserted")))
    last = last.join(first_of_slot, ["run_key", "generation", "member", "inc"])
    s = sessions.select("run_key", "member", "inc", "topic", "partition", "start_ord", "end_ord")
    owned = (last.join(s, ["run_key", "member", "inc"])
             .where((F.col("start_ord") <= F.col("ord")) & (F.col("end_ord").isNull() | (F.col("end_ord") > F.col("ord")))))
    w = Window.partitionBy("run_key", "generation", "topic", "partition").orderBy(F.col("inserted").desc())
    return (owned.withColumn("rn", F.row_number().over(w)).where(F.col("rn") == 1)
            .select("run_key", "generation", "topic", "partition", F.col("member").alias("owner")))

