"""Rebalances measured in Spark: one per generation, with start, end, phases and stop-the-world.

The oracle's definitions (oracle/rebalances.py), as joins and window functions:

- a rebalance per generation seen in `group_joined`; its members are the slots that
  joined it (a static member's later incarnation in the same generation is not another
  member);
- it completed when every member has its assignment (cooperative: or its SyncGroup
  answer) and, where members name the membership they computed from (zk-eager), each of
  those took its share; otherwise it was superseded by a later generation or is
  incomplete;
- it starts at the earliest sign after the previous generation settled: a revoke or a
  lost partition up to its first join, a JoinGroup sent for it, or the coordinator's
  "Preparing to rebalance … old generation G-1". Two endpoints: stabilized, when the last
  member got its JoinGroup answer (the members' side of the broker's "Stabilized"), and
  assigned, when the last member has its assignment (`duration_ms` = `assigned_ms`);
- detect = start → first JoinGroup, join = JoinGroup → joined (slowest member),
  sync = joined → SyncGroup answered (slowest member), coordinator = the broker's own
  preparing → stabilized; like with like against the broker's clock: the members' own first
  sign (the start without the broker's "Preparing") − its "Preparing", and the members'
  stabilized end − its "Stabilized" (KIP-848: its target assignment);
- teardown: it began (its start, else its first join) at or after `phase: done` or the
  harness's `heal_checked`, whichever came first — the harness's own end-of-run LeaveGroups,
  marked so that no table or statistic counts it;
- stop-the-world per partition handed out in the generation: from the end of the last
  earlier session to the new owner's start (zero when an earlier owner still held it).
"""
from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from oracle import vocabulary as ev
from oracle.protocols import INCREMENTAL_PROTOCOLS

from .ownership import inc_col, member_col, slot_label, tp_label

COMPLETED, SUPERSEDED, INCOMPLETE = "completed", "superseded", "incomplete"
NEG_INF = float("-inf")


def ms(col: Column) -> Column:
    """Milliseconds rounded to the microsecond, as the oracle reports them."""
    return F.round(col, 3)


def run_info(events: DataFrame) -> DataFrame:
    """run_key, group, protocol, assignor, scenario, run_id, seed, incremental."""
    first = (events.where(F.col("name") == ev.RUN_STARTED).groupBy("run_key")
             .agg(F.min(F.struct("ord", "group", "protocol", "assignor", "scenario", "run_id", "seed")).alias("r")))
    inc = (events.where(F.col("name").isin(ev.PARTITIONS_ASSIGNED, ev.PARTITIONS_REVOKED)).groupBy("run_key")
           .agg(F.max(F.coalesce("incremental", F.lit(False)).cast("int")).alias("any_incremental")))
    return (events.select("run_key").distinct().join(first, "run_key", "left").join(inc, "run_key", "left")
            .select("run_key", "r.group", "r.protocol", "r.assignor", "r.scenario", "r.run_id", "r.seed",
                    (F.coalesce(F.col("r.protocol").isin(*sorted(INCREMENTAL_PROTOCOLS)), F.lit(False))
                     | (F.coalesce("any_incremental", F.lit(0)) == 1)).alias("incremental")))


def teardown_from(events: DataFrame) -> DataFrame:
    """run_key, teardown_from: when the run was over and the harness began taking the group apart
    (`phase: done`, else `heal_checked`, written before members are stopped); no row: never."""
    over = ((F.col("name") == ev.PHASE) & (F.col("phase") == "done")) | (F.col("name") == ev.HEAL_CHECKED)
    return events.where(over).groupBy("run_key").agg(F.min("mono_ms").alias("teardown_from"))


def coordinator_events(events: DataFrame, info: DataFrame, *names: str) -> DataFrame:
    """Broker-log events about our group (a shared broker logs other groups too)."""
    ev = events.where(F.col("name").isin(*names)).join(info.select("run_key", F.col("group").alias("_g")), "run_key")
    return ev.where(F.col("_g").isNull() | F.col("group").isNull() | (F.col("group") == F.col("_g"))).drop("_g")


def _first(df: DataFrame, keys: list[str]) -> DataFrame:
    w = Window.partitionBy(*keys).orderBy("ord")
    return df.withColumn("_rn", F.row_number().over(w)).where(F.col("_rn") == 1).drop("_rn")


MEMBER_EVENTS = (ev.GROUP_JOINED, ev.GROUP_SYNCED, ev.PARTITIONS_ASSIGNED)


def _member_events(events: DataFrame) -> DataFrame:
    """The first group_joined / group_synced / partitions_assigned per generation and member (one
    pass for the three): only a member's first incarnation in a generation counts (a static member
    restarted into the same generation is not another one)."""
    df = (events.where(F.col("name").isin(*MEMBER_EVENTS) & F.col("generation").isNotNull())
          .select("name", "run_key", "generation", member_col().alias("member"), inc_col().alias("inc"), "ord",
                  "mono_ms", "ts", "member_id", "is_leader", "joined_members"))
    return _first(df, ["run_key", "generation", "member", "name"])


def _joins_sent(events: DataFrame) -> DataFrame:
    """A JoinGroup belongs to the generation its member joins next, with its retries (MEMBER_ID_REQUIRED,
    a rebalance that began meanwhile): every one of them.
    -> run_key, generation, member, inc, blk, sent_ord, sent_mono, sent_ts, dict_ord."""
    df = (events.where((F.col("name") == ev.GROUP_JOIN_SENT)
                       | ((F.col("name") == ev.GROUP_JOINED) & F.col("generation").isNotNull()))
          .select("run_key", member_col().alias("member"), inc_col().alias("inc"), "ord", "mono_ms", "ts", "name",
                  "generation"))
    w = Window.partitionBy("run_key", "member", "inc").orderBy("ord")
    is_join = (F.col("name") == ev.GROUP_JOINED).cast("int")
    df = df.withColumn("blk", F.coalesce(F.sum(is_join).over(w.rowsBetween(Window.unboundedPreceding, -1)), F.lit(0)))
    sent = df.where(F.col("name") == ev.GROUP_JOIN_SENT).select(
        "run_key", "member", "inc", "blk", F.col("ord").alias("sent_ord"), F.col("mono_ms").alias("sent_mono"),
        F.col("ts").alias("sent_ts"))
    joins = df.where(F.col("name") == ev.GROUP_JOINED).select("run_key", "member", "inc", "blk", "generation",
                                                              F.col("ord").alias("dict_ord"))
    # A member joining one generation twice: its first joining of it counts (as the oracle's setdefault).
    first = Window.partitionBy("run_key", "generation", "member", "inc")
    joins = joins.withColumn("_first", F.min("blk").over(first)).where(F.col("blk") == F.col("_first")).drop("_first")
    return joins.join(sent, ["run_key", "member", "inc", "blk"])


def _join_sent(joins_sent: DataFrame) -> DataFrame:
    """A member's join phase starts at the first JoinGroup of its generation (its first join of it).
    -> run_key, generation, member, inc, sent_ord, sent_mono, sent_ts, dict_ord."""
    first = Window.partitionBy("run_key", "generation", "member", "inc").orderBy("blk", "sent_ord")
    return (joins_sent.withColumn("_rn", F.row_number().over(first)).where(F.col("_rn") == 1)
            .select("run_key", "generation", "member", "inc", "sent_ord", "sent_mono", "sent_ts", "dict_ord"))


def stop_the_world(sessions: DataFrame) -> DataFrame:
    """run_key, generation, topic, partition, partition_label, unowned_ms: per partition handed out
    in a generation, how long nobody owned it (the last such hand-over in the generation)."""
    w = Window.partitionBy("run_key", "topic", "partition").orderBy("start_ord")
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    s = (sessions.withColumn("idx", F.row_number().over(w))
         .withColumn("open_before", F.max(F.col("end_ord").isNull().cast("int")).over(before))
         .withColumn("released", F.max("end_mono").over(before)))
    gaps = (s.where((F.col("idx") > 1) & F.col("generation").isNotNull())
            .withColumn("unowned_ms", F.when(F.col("open_before") == 1, F.lit(0.0))
                        .otherwise(F.greatest(F.lit(0.0), F.col("start_mono") - F.col("released")))))
    last = Window.partitionBy("run_key", "generation", "topic", "partition").orderBy(F.col("start_ord").desc())
    return (gaps.withColumn("_rn", F.row_number().over(last)).where(F.col("_rn") == 1)
            .select("run_key", "generation", "topic", "partition", tp_label().alias("partition_label"),
                    ms(F.col("unowned_ms")).alias("unowned_ms"), "member"))


def rebalances_of(events: DataFrame, sessions: DataFrame, assignments: DataFrame, info: DataFrame, stw: DataFrame,
                  keep: Callable[[DataFrame], DataFrame] = lambda df: df) -> DataFrame:
    """`stw`: `stop_the_world(sessions)`. `keep` computes and keeps an intermediate table used several
    times below (a local checkpoint in the job; identity leaves one big plan)."""
    firsts = keep(_member_events(events))
    joined = firsts.where(F.col("name") == ev.GROUP_JOINED).drop("name")
    synced = firsts.where(F.col("name") == ev.GROUP_SYNCED).drop("name")
    assigned = firsts.where(F.col("name") == ev.PARTITIONS_ASSIGNED).drop("name")
    slot = ["run_key", "generation", "member", "inc"]
    joined_slots = joined.select(*slot)
    assigned_in = assigned.join(joined_slots, slot)
    fill = (synced.join(joined_slots, slot)
            .join(assigned_in.select("run_key", "generation", "member"), ["run_key", "generation", "member"], "left_anti")
            .join(info.where(F.col("incremental")).select("run_key"), "run_key"))
    took = assigned_in.unionByName(fill)

    gen = (joined.groupBy("run_key", "generation")
           .agg(F.count("*").alias("n_members"), F.min("mono_ms").alias("first_joined"),
                F.max("mono_ms").alias("last_joined"),
                F.sort_array(F.collect_list(F.struct("member", "inc"))).alias("_slots"),
                F.min(F.when(F.col("is_leader"), F.struct("ord", slot_label().alias("label")))).alias("_leader"),
                F.array_distinct(F.flatten(F.collect_list(F.coalesce("joined_members", F.array().cast("array<string>")))))
                .alias("_listed")))
    ends = (took.groupBy("run_key", "generation")
            .agg(F.count("*").alias("n_assigned"), F.max(F.struct("mono_ms", (-F.col("ord")).alias("o"), "ts")).alias("_end"),
                 F.collect_set("member_id").alias("_ids")))
    gen = gen.join(ends, ["run_key", "generation"], "left")
    completed = ((F.coalesce("n_assigned", F.lit(0)) == F.col("n_members"))
                 & (F.size(F.array_except("_listed", F.coalesce("_ids", F.array().cast("array<string>")))) == 0))
    order = Window.partitionBy("run_key").orderBy("generation")
    gen = (gen.withColumn("completed", completed)
           .withColumn("end_mono", F.when(F.col("completed"), F.col("_end.mono_ms")))
           .withColumn("end_ts", F.when(F.col("completed"), F.col("_end.ts")))
           .withColumn("next_generation", F.lead("generation").over(order))
           .withColumn("boundary", F.lag(F.when(F.col("completed"), F.col("end_mono"))
                                         .otherwise(F.col("last_joined"))).over(order))
           .withColumn("before_generation", F.max(F.when(F.col("completed"), F.col("generation"))).over(
               order.rowsBetween(Window.unboundedPreceding, -1))))
    gen = keep(gen)

    # -- start: the earliest sign that this generation was coming -----------------------------
    every_sent = keep(_joins_sent(events))
    sent = _join_sent(every_sent)
    bounds = gen.select("run_key", "generation", "boundary", "first_joined")
    after_boundary = lambda t: F.col("boundary").isNull() | (F.col(t) > F.col("boundary"))  # noqa: E731
    give_up = (events.where(F.col("name").isin(ev.PARTITIONS_REVOKED, ev.PARTITIONS_LOST))
               .select("run_key", "name", F.col("ord").alias("sign_ord"), F.col("mono_ms").alias("sign_mono"),
                       F.col("ts").alias("sign_ts"), member_col().alias("member"), inc_col().alias("inc"))
               .withColumn("trigger", F.concat(F.col("name"), F.lit(" by "), slot_label())))
    signs_a = (bounds.join(give_up, "run_key")
               .where(after_boundary("sign_mono") & (F.col("sign_mono") <= F.col("first_joined")))
               .select("run_key", "generation", "sign_mono", "sign_ts", F.lit(0).alias("prio"),
                       F.col("sign_ord").alias("tie"), "trigger"))
    signs_b = (every_sent.join(bounds, ["run_key", "generation"]).where(after_boundary("sent_mono"))
               .select("run_key", "generation", F.col("sent_mono").alias("sign_mono"),
                       F.col("sent_ts").alias("sign_ts"), F.lit(1).alias("prio"), F.col("dict_ord").alias("tie"),
                       F.concat(F.lit("group_join_sent by "), slot_label()).alias("trigger")))
    preparing = _first(coordinator_events(events, info, ev.COORDINATOR_PREPARING_REBALANCE)
                       .where(F.col("old_generation").isNotNull()), ["run_key", "old_generation"])
    prepared = preparing.select("run_key", (F.col("old_generation") + 1).alias("generation"),
                                F.col("mono_ms").alias("prep_mono"), F.col("ts").alias("prep_ts"),
                                F.col("reason").alias("coordinator_reason"))
    signs_c = (prepared.join(bounds.select("run_key", "generation"), ["run_key", "generation"])
               .select("run_key", "generation", F.col("prep_mono").alias("sign_mono"),
                       F.col("prep_ts").alias("sign_ts"), F.lit(2).alias("prio"), F.lit(0).cast("long").alias("tie"),
                       F.concat(F.lit("coordinator: "), F.coalesce("coordinator_reason", F.lit("None"))).alias("trigger")))
    start = (signs_a.unionByName(signs_b).unionByName(signs_c).groupBy("run_key", "generation")
             .agg(F.min(F.struct("sign_mono", "prio", "tie", "sign_ts", "trigger")).alias("st"))
             .select("run_key", "generation", F.col("st.sign_mono").alias("start_mono"),
                     F.col("st.sign_ts").alias("start_ts"), F.col("st.trigger").alias("trigger")))
    # The members' sign the broker's "Preparing" answers (oracle.rebalances._answered_by): the last one
    # sent before it — every JoinGroup of the generation counts, one the coordinator held over the
    # previous generation too — else the first one after it.
    member_signs = (signs_a.select("run_key", "generation", "sign_mono")
                    .unionByName(every_sent.select("run_key", "generation", F.col("sent_mono").alias("sign_mono")))
                    .join(prepared.select("run_key", "generation", "prep_mono"), ["run_key", "generation"], "left"))
    answered = (member_signs.groupBy("run_key", "generation")
                .agg(F.max(F.when(F.col("sign_mono") <= F.col("prep_mono"), F.col("sign_mono"))).alias("_before"),
                     F.min("sign_mono").alias("_first"))
                .select("run_key", "generation", F.coalesce("_before", "_first").alias("member_start")))
    start = start.join(answered, ["run_key", "generation"], "left")

    # -- phases ---------------------------------------------------------------------------------
    first_sent = sent.groupBy("run_key", "generation").agg(F.min("sent_mono").alias("first_sent"))
    join_phase = (joined.join(sent, slot).groupBy("run_key", "generation")
                  .agg(F.max(F.col("mono_ms") - F.col("sent_mono")).alias("join_raw")))
    sync_phase = (joined.join(synced.select(*slot, F.col("mono_ms").alias("synced_mono")), slot)
                  .groupBy("run_key", "generation")
                  .agg(F.max(F.col("synced_mono") - F.col("mono_ms")).alias("sync_raw")))
    stab = coordinator_events(events, info, ev.COORDINATOR_STABILIZED, ev.COORDINATOR_TARGET_ASSIGNMENT).where(
        F.col("generation").isNotNull())
    stab = _first(stab.withColumn("_kind", F.when(F.col("name") == ev.COORDINATOR_STABILIZED, 0).otherwise(1)),
                  ["run_key", "generation", "_kind"])
    stab = (stab.groupBy("run_key", "generation")
            .agg(F.min(F.struct("_kind", "mono_ms", "members_count")).alias("_s"))
            .select("run_key", "generation", F.col("_s.mono_ms").alias("stab_mono"),
                    F.col("_s.members_count").alias("coordinator_members")))

    # -- partitions moved ---------------------------------------------------------------------------
    after = assignments.alias("a")
    prior = assignments.select("run_key", F.col("generation").alias("before_generation"), "topic", "partition",
                               F.col("owner").alias("before_owner"))
    moves = (gen.where(F.col("completed")).select("run_key", "generation", "before_generation")
             .join(after, ["run_key", "generation"])
             .join(prior, ["run_key", "before_generation", "topic", "partition"], "left")
             .where(F.col("before_owner").isNull() | (F.col("before_owner") != F.col("owner")))
             .groupBy("run_key", "generation").agg(F.count("*").alias("moved")))

    stw_agg = (stw.groupBy("run_key", "generation")
               .agg(F.map_from_entries(F.sort_array(F.collect_list(F.struct("partition_label", "unowned_ms"))))
                    .alias("unowned_ms"), F.max("unowned_ms").alias("max_unowned_ms")))

    r = (gen.join(start, ["run_key", "generation"], "left").join(first_sent, ["run_key", "generation"], "left")
         .join(join_phase, ["run_key", "generation"], "left").join(sync_phase, ["run_key", "generation"], "left")
         .join(prepared, ["run_key", "generation"], "left").join(stab, ["run_key", "generation"], "left")
         .join(moves, ["run_key", "generation"], "left").join(stw_agg, ["run_key", "generation"], "left")
         .join(teardown_from(events), "run_key", "left"))
    began = F.coalesce("start_mono", "first_joined")
    status = (F.when(F.col("completed"), F.lit(COMPLETED))
              .when(F.col("next_generation").isNotNull(), F.lit(SUPERSEDED)).otherwise(F.lit(INCOMPLETE)))
    return r.select(
        "run_key", "generation", status.alias("status"),
        F.when(~F.col("completed"), F.col("next_generation")).alias("superseded_by"),
        F.transform("_slots", lambda s: F.when(s["inc"] == 1, s["member"])
                    .otherwise(F.concat_ws("#", s["member"], s["inc"].cast("string")))).alias("members"),
        F.col("_leader.label").alias("leader"),
        "start_mono", "start_ts", "end_mono", "end_ts",
        ms(F.col("end_mono") - F.col("start_mono")).alias("duration_ms"),
        ms(F.col("end_mono") - F.col("start_mono")).alias("assigned_ms"),
        ms(F.col("last_joined") - F.col("start_mono")).alias("stabilized_ms"),
        F.coalesce(began >= F.col("teardown_from"), F.lit(False)).alias("teardown"),
        "trigger", "coordinator_reason",
        ms(F.col("first_sent") - F.col("start_mono")).alias("detect_ms"),
        ms(F.col("join_raw")).alias("join_ms"), ms(F.col("sync_raw")).alias("sync_ms"),
        ms(F.col("stab_mono") - F.col("prep_mono")).alias("coordinator_ms"),
        "coordinator_members",
        ms(F.col("member_start") - F.col("prep_mono")).alias("start_vs_coordinator_ms"),
        ms(F.col("last_joined") - F.col("stab_mono")).alias("stabilized_vs_coordinator_ms"),
        F.when(F.col("completed"), F.coalesce("moved", F.lit(0))).otherwise(F.lit(0)).alias("partitions_moved"),
        F.coalesce("unowned_ms", F.create_map().cast("map<string,double>")).alias("unowned_ms"),
        "max_unowned_ms",
    )
