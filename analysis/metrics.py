"""Per-run metrics, all computed in Spark from the events table.

`per_run_metrics` returns named DataFrames, one row per …

- `rebalances`: … rebalance (generation) of the run itself: status, start, end, duration
  (= assigned) and stabilized endpoints, detect / join / sync phases, coordinator clock and
  the members' clocks against it, partitions moved, stop-the-world map, and the fault it is
  attributed to (the latest fault that started before it and had not been over for more
  than `DETECTION_GRACE_MS`). The harness's own teardown rebalances (after `phase: done`)
  are in no table but as a count in `runs`, like the oracle's verdict;
- `stop_the_world`: … partition handed out in a generation of the run: how long it had no owner;
- `ownership`: … ownership session (the timeline's bars);
- `faults`: … injected fault: its window and the time from its start to the start of
  the first rebalance it caused (null when the group never noticed);
- `lag`: … partition per `lag_sampled` event (the observer's view, every second);
- `commit_failures`: … (run, error code, error) with the number of failed
  partition commits (one per partition entry, as the oracle counts them);
- `duplicates`, `records`: … partition: re-deliveries (explained or not) and
  acked / consumed / unconsumed records;
- `runs`: … run: everything above summed up, plus peak and final lag, throughput.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from oracle import vocabulary as ev

from .ownership import assignments_of, sessions_of, slot_label, tp_label
from .rebalances import COMPLETED, ms, rebalances_of, run_info, stop_the_world
from .records import duplicates_by_partition, lost_records
from .tables import EventTables, split

DETECTION_GRACE_MS = 30_000.0
NO_FAULT = "none"


@dataclass
class RunMetrics:
    runs: DataFrame
    rebalances: DataFrame
    stop_the_world: DataFrame
    ownership: DataFrame
    faults: DataFrame
    lag: DataFrame
    commit_failures: DataFrame
    duplicates: DataFrame
    records: DataFrame

    def tables(self) -> dict[str, DataFrame]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _clock(control: DataFrame, totals: DataFrame) -> DataFrame:
    """run_key, t0 (the run's start: run_started, else its first event), t_end (its last event), events,
    outcome, done, workload_start, recovery_start."""
    span = control.groupBy("run_key").agg(
        F.min(F.when(F.col("name") == ev.RUN_STARTED, F.struct("ord", "mono_ms"))).alias("_rs"),
        F.max(F.when(F.col("name") == ev.RUN_FINISHED, F.struct("ord", "outcome"))).alias("_fin"),
        F.max((F.col("name") == ev.PHASE) & (F.col("phase") == "done")).alias("done"),
        # the producer runs from the warm-up on
        F.min(F.when((F.col("name") == ev.PHASE) & F.col("phase").isin("warmup", "workload"), F.col("mono_ms")))
         .alias("workload_start"),
        F.min(F.when((F.col("name") == ev.PHASE) & (F.col("phase") == "recovery"), F.col("mono_ms"))).alias("recovery_start"),
        F.min(F.when((F.col("name") == ev.PHASE) & (F.col("phase") == "done"), F.col("mono_ms"))).alias("done_at"))
    return (totals.join(span, "run_key", "left")
            .select("run_key", F.coalesce("_rs.mono_ms", "t_first").alias("t0"), "t_end", "events",
                    F.col("_fin.outcome").alias("outcome"), F.coalesce("done", F.lit(False)).alias("done"),
                    "workload_start", "recovery_start", "done_at"))


def fault_windows(events: DataFrame, clock: DataFrame) -> DataFrame:
    """run_key, fault_id, kind, target, start_mono, end_mono (healed / failed / the end of the run), healed_how."""
    started = (events.where(F.col("name") == ev.FAULT_STARTED)
               .select("run_key", "fault_id", "kind", "target", "params", "details",
                       F.col("mono_ms").alias("start_mono"), F.col("ord").alias("start_ord")))
    ended = (events.where(F.col("name").isin(ev.FAULT_HEALED, ev.FAULT_FAILED))
             .select("run_key", "fault_id", F.col("mono_ms").alias("e_mono"), F.col("ord").alias("e_ord"),
                     F.coalesce("how", F.lit("failed")).alias("how")))
    j = started.join(ended, ["run_key", "fault_id"], "left").where(
        F.col("e_ord").isNull() | (F.col("e_ord") > F.col("start_ord")))
    first_end = (j.groupBy("run_key", "fault_id", "kind", "target", "params", "details", "start_mono", "start_ord")
                 .agg(F.min(F.struct("e_ord", "e_mono", "how")).alias("_e")))
    return (first_end.join(clock.select("run_key", "t_end"), "run_key")
            .select("run_key", "fault_id", "kind", "target", "params", "details", "start_mono", "start_ord",
                    F.coalesce("_e.e_mono", "t_end").alias("end_mono"), F.col("_e.how").alias("healed_how")))


def _attribute_rebalances(rebalances: DataFrame, faults: DataFrame) -> DataFrame:
    """+ fault_id, fault_kind: the latest fault started at or before the rebalance started that
    was still on (or over for less than the grace period)."""
    f = faults.select(F.col("run_key").alias("_rk"), F.col("fault_id").alias("_fid"), F.col("kind").alias("_kind"),
                      F.col("start_mono").alias("_fs"), F.col("end_mono").alias("_fe"), F.col("start_ord").alias("_fo"))
    j = rebalances.join(f, (F.col("run_key") == F.col("_rk")) & (F.col("_fs") <= F.col("start_mono"))
                        & (F.col("start_mono") <= F.col("_fe") + DETECTION_GRACE_MS), "left").drop("_rk")
    w = Window.partitionBy("run_key", "generation").orderBy(F.col("_fs").desc_nulls_last(), F.col("_fo").desc_nulls_last())
    return (j.withColumn("_rn", F.row_number().over(w)).where(F.col("_rn") == 1)
            .withColumn("fault_id", F.col("_fid")).withColumn("fault_kind", F.coalesce("_kind", F.lit(NO_FAULT)))
            .drop("_fid", "_kind", "_fs", "_fe", "_fo", "_rn"))


def _detections(faults: DataFrame, rebalances: DataFrame) -> DataFrame:
    """+ detected_generation, detection_ms: the first rebalance that started within the fault's window
    (start .. end + grace)."""
    r = rebalances.where(F.col("start_mono").isNotNull()).select(
        F.col("run_key").alias("_rk"), F.col("generation").alias("_g"), F.col("start_mono").alias("_rs"))
    j = faults.join(r, (F.col("run_key") == F.col("_rk")) & (F.col("_rs") >= F.col("start_mono"))
                    & (F.col("_rs") <= F.col("end_mono") + DETECTION_GRACE_MS), "left")
    first = j.groupBy(*faults.columns).agg(F.min(F.struct("_rs", "_g")).alias("_d"))
    return first.select(*faults.columns, F.col("_d._g").alias("detected_generation"),
                        ms(F.col("_d._rs") - F.col("start_mono")).alias("detection_ms"))


def _lag(t: EventTables, info: DataFrame) -> DataFrame:
    """run_key, ord, mono_ms, ts, topic, partition, partition_label, lag, committed, high_watermark
    (samples of our group only: a shared observer could describe others)."""
    return (t.lag.join(info.select("run_key", F.col("group").alias("_g")), "run_key")
            .where(F.col("_g").isNull() | F.col("group").isNull() | (F.col("group") == F.col("_g")))
            .drop("_g", "group").withColumn("partition_label", tp_label()))


def _commit_failures(t: EventTables) -> DataFrame:
    """Failed commits per error, one per partition entry (as the oracle counts them)."""
    return (t.commits.where(~F.col("success"))
            .groupBy("run_key", F.coalesce("error_code", F.lit("none")).alias("error_code"),
                     F.coalesce("error", F.lit("unknown")).alias("error"))
            .agg(F.count("*").alias("failed")))


def materialize(df: DataFrame) -> DataFrame:
    """Compute now and cut the lineage: later steps plan against a small leaf, not the whole
    derivation again (plans of joined derivations otherwise grow past what the driver can optimise)."""
    return df.localCheckpoint(eager=True)


def per_run_metrics(spark: SparkSession, events: DataFrame, runs_meta: DataFrame, threads: int = 6) -> RunMetrics:
    """runs_meta: run_key, run (label), path, kafka.

    Each step below is a string of small Spark jobs whose driver-side planning and single-task
    stages leave the cores idle part of the time, so every step starts as soon as the tables it
    reads are there, concurrently with the others (the longest string, ownership → rebalances →
    faults, sets the pace). A step is submitted after the steps it reads and waits for them on its
    own thread: the pool starts steps in order, so any number of threads is safe."""
    pool = ThreadPoolExecutor(max(1, threads))
    try:
        lazy = split(events)
        t = EventTables(*pool.map(materialize, (getattr(lazy, f.name) for f in fields(lazy))))
        control = t.control

        def step(fn, *inputs):
            return pool.submit(lambda: materialize(fn(*(i.result() for i in inputs))))

        info_f = step(lambda: run_info(control))
        clock_f = step(lambda: _clock(control, t.clock))
        sessions_f = step(lambda: sessions_of(control, materialize))
        unowned_f = step(stop_the_world, sessions_f)
        records_f = step(lambda: lost_records(t))
        lag_f = step(lambda i: _lag(t, i), info_f)
        duplicates_f = step(lambda s: duplicates_by_partition(t, s), sessions_f)
        windows_f = step(lambda c: fault_windows(control, c), clock_f)
        assignments_f = step(lambda s: assignments_of(control, s), sessions_f)
        every_f = step(lambda s, a, i, u: rebalances_of(control, s, a, i, u, materialize),
                       sessions_f, assignments_f, info_f, unowned_f)
        every = every_f.result()
        teardown = every.where(F.col("teardown")).select("run_key", "generation")
        rebalances = every.where(~F.col("teardown")).drop("teardown")  # the harness's own: no statistic
        windows = windows_f.result()
        rebalances = materialize(_attribute_rebalances(rebalances, windows))
        faults_f = pool.submit(lambda: materialize(_detections(windows, rebalances)))
        stw = materialize(unowned_f.result().join(teardown, ["run_key", "generation"], "left_anti").join(
            rebalances.select("run_key", "generation", "status", "fault_kind"), ["run_key", "generation"], "left"))
        teardowns = teardown.groupBy("run_key").agg(F.count("*").alias("teardown_rebalances"))
        info, clock, sessions, records, lag, duplicates, faults = (
            f.result() for f in (info_f, clock_f, sessions_f, records_f, lag_f, duplicates_f, faults_f))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)  # a failed step: say so now, not after the others
        raise
    pool.shutdown()
    commit_failures = _commit_failures(t)

    # -- one row per run -----------------------------------------------------------------------
    delivered = t.consumed.groupBy("run_key").agg(F.sum(F.col("hi") - F.col("lo") + 1).alias("deliveries"),
                                            F.min("mono_ms").alias("_c0"), F.max("mono_ms").alias("_c1"))
    rec = records.groupBy("run_key").agg(F.sum("acked").alias("acked"), F.sum("consumed").alias("consumed"),
                                         F.sum("unconsumed").alias("unconsumed"))
    dup = duplicates.groupBy("run_key").agg(F.sum("duplicates").alias("duplicates"),
                                            F.sum("explained").alias("duplicates_explained"))
    reb = rebalances.groupBy("run_key").agg(
        F.count("*").alias("rebalances"),
        F.sum((F.col("status") == COMPLETED).cast("int")).alias("rebalances_completed"),
        ms(F.sum("duration_ms")).alias("rebalance_total_ms"), F.max("duration_ms").alias("rebalance_max_ms"),
        F.max("max_unowned_ms").alias("stw_max_ms"))
    stw_total = stw.groupBy("run_key").agg(ms(F.sum("unowned_ms")).alias("stw_total_ms"))
    totals = lag.groupBy("run_key", "ord", "mono_ms").agg(F.sum(F.coalesce("lag", F.lit(0))).alias("total"))
    lag_run = totals.groupBy("run_key").agg(F.max("total").alias("peak_lag"),
                                            F.max(F.struct("ord", "total")).alias("_last"))
    commits = t.commits.groupBy("run_key").agg(F.sum(F.col("success").cast("int")).alias("commits_ok"),
                                               F.sum((~F.col("success")).cast("int")).alias("commits_failed"))
    fault_run = faults.groupBy("run_key").agg(
        F.count("*").alias("faults_injected"), F.count("detected_generation").alias("faults_detected"),
        F.array_sort(F.collect_set("kind")).alias("fault_kinds"))

    runs = (runs_meta.join(info, "run_key", "left").join(clock, "run_key", "left")
            .join(delivered, "run_key", "left").join(rec, "run_key", "left").join(dup, "run_key", "left")
            .join(reb, "run_key", "left").join(teardowns, "run_key", "left").join(stw_total, "run_key", "left")
            .join(lag_run, "run_key", "left")
            .join(commits, "run_key", "left").join(fault_run, "run_key", "left"))
    zero = F.lit(0).cast("long")
    workload_s = (F.coalesce("recovery_start", "t_end") - F.coalesce("workload_start", "t0")) / 1000.0
    consume_s = (F.col("_c1") - F.col("_c0")) / 1000.0
    kinds = F.coalesce("fault_kinds", F.array().cast("array<string>"))
    runs = runs.select(
        "run_key", "run", "path", F.coalesce("scenario", F.lit("unknown")).alias("scenario"),
        F.coalesce("protocol", F.lit("unknown")).alias("protocol"),
        F.coalesce("assignor", F.lit("unknown")).alias("assignor"), "kafka", "seed", "group",
        F.when(F.size(kinds) == 0, F.lit(NO_FAULT)).otherwise(F.array_join(kinds, "+")).alias("faults"),
        F.when(F.size(kinds) == 0, F.array(F.lit(NO_FAULT))).otherwise(kinds).alias("fault_kinds"),
        "outcome", "done", "events", F.round((F.col("t_end") - F.col("t0")) / 1000.0, 3).alias("duration_s"),
        F.coalesce("acked", zero).alias("acked"), F.coalesce("consumed", zero).alias("consumed"),
        F.coalesce("deliveries", zero).alias("deliveries"),
        F.coalesce("duplicates", zero).alias("duplicates"),
        F.coalesce("duplicates_explained", zero).alias("duplicates_explained"),
        F.when(F.col("done"), F.coalesce("unconsumed", zero)).alias("lost_records"),
        F.coalesce("unconsumed", zero).alias("unconsumed"),
        F.coalesce("rebalances", zero).alias("rebalances"),
        F.coalesce("rebalances_completed", zero).alias("rebalances_completed"),
        F.coalesce("teardown_rebalances", zero).alias("teardown_rebalances"),
        F.coalesce("rebalance_total_ms", F.lit(0.0)).alias("rebalance_total_ms"), "rebalance_max_ms",
        F.coalesce("stw_total_ms", F.lit(0.0)).alias("stw_total_ms"), "stw_max_ms",
        "peak_lag", F.col("_last.total").alias("final_lag"),
        # from the workload's end (the producer stopped) until the group was stable and the lag drained
        F.round((F.col("done_at") - F.col("recovery_start")) / 1000.0, 3).alias("drain_s"),
        F.round(F.when(workload_s > 0, F.coalesce("acked", zero) / workload_s), 3).alias("produce_rps"),
        F.round(F.when(consume_s > 0, F.col("deliveries") / consume_s), 3).alias("consume_rps"),
        F.coalesce("commits_ok", zero).alias("commits_ok"), F.coalesce("commits_failed", zero).alias("commits_failed"),
        F.coalesce("faults_injected", zero).alias("faults_injected"),
        F.coalesce("faults_detected", zero).alias("faults_detected"), "t0")

    # every table carries the run's label, and times in seconds since the run started
    keys = F.broadcast(materialize(runs_meta.select("run_key", "run").join(clock.select("run_key", "t0"), "run_key")))
    secs = lambda col: F.round((F.col(col) - F.col("t0")) / 1000.0, 6)  # noqa: E731

    def labelled(df: DataFrame, **seconds: str) -> DataFrame:
        df = df.join(keys, "run_key")
        for name, col in seconds.items():
            df = df.withColumn(name, secs(col))
        return df.drop("t0")

    ownership = labelled(sessions.select(
        "run_key", "topic", "partition", tp_label().alias("partition_label"), "member", "inc",
        slot_label().alias("slot"), "session_no", "generation", "member_id", "start_mono", "end_mono", "start_ts",
        "end_ts"), start_s="start_mono", end_s="end_mono")
    return RunMetrics(
        runs=materialize(runs.drop("t0")),
        rebalances=labelled(rebalances, start_s="start_mono", end_s="end_mono"),
        stop_the_world=labelled(stw), ownership=ownership,
        faults=labelled(faults.drop("start_ord"), start_s="start_mono", end_s="end_mono"),
        lag=labelled(lag, t_s="mono_ms"), commit_failures=labelled(commit_failures),
        duplicates=labelled(duplicates), records=labelled(records))
