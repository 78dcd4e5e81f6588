"""Cross-run analysis: the per-run metrics as one long table, grouped and summarised in Spark.

Every figure becomes a row `(run, protocol, assignor, kafka, scenario, faults,
fault_kind, metric, value)`:

| metric | one value per | fault_kind |
|---|---|---|
| rebalance_ms (start → assigned), stabilized_ms, detect_ms, join_ms, sync_ms, max_unowned_ms | completed rebalance of the run (no teardown one) | the fault it is attributed to |
| unowned_ms | partition handed out in a generation | its rebalance's fault |
| fault_to_detection_ms | fault the group noticed | that fault's kind |
| rebalances, duplicates, lost_records, peak_lag, final_lag, produce_rps, consume_rps, commit_failures, stw_total_ms | run | every kind the run injected |

`by_group` summarises per (protocol, assignor, kafka, faults, scenario, metric) — `faults`
is the run's whole fault mix, so each group is a set of runs; `by_dimension` per single
dimension (protocol, assignor, kafka, fault_kind, scenario). Both give count, sum,
mean, p50, p95, p99 (exact percentiles, linear interpolation) and max.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .metrics import RunMetrics
from .rebalances import COMPLETED

DIMENSIONS = ("protocol", "assignor", "kafka", "fault_kind", "scenario")
GROUP = ("protocol", "assignor", "kafka", "faults", "scenario")
REBALANCE_METRICS = ("rebalance_ms", "stabilized_ms", "detect_ms", "join_ms", "sync_ms", "max_unowned_ms")
RUN_METRICS = ("rebalances", "duplicates", "lost_records", "peak_lag", "final_lag", "produce_rps", "consume_rps",
               "commits_failed", "stw_total_ms")
RUN_KEYS = ["run_key", "run", "protocol", "assignor", "kafka", "scenario", "faults"]


def _long(df: DataFrame, metrics: dict[str, str], kinds) -> DataFrame:
    stacked = F.explode(F.array(*[F.struct(F.lit(name).alias("metric"), F.col(col).cast("double").alias("value"))
                                   for name, col in metrics.items()])).alias("m")
    return (df.select(*RUN_KEYS, kinds.alias("fault_kinds"), stacked)
            .select(*RUN_KEYS, "fault_kinds", "m.metric", "m.value").where(F.col("value").isNotNull()))


def metric_rows(m: RunMetrics) -> DataFrame:
    runs = m.runs.select(*RUN_KEYS, "fault_kinds", *RUN_METRICS)
    keys = runs.select(*RUN_KEYS)
    on = ["run_key", "run"]
    rebalances = m.rebalances.where(F.col("status") == COMPLETED).join(keys, on).withColumnRenamed(
        "duration_ms", "rebalance_ms")
    stw = m.stop_the_world.where(F.col("status") == COMPLETED).join(keys, on)
    faults = m.faults.where(F.col("detection_ms").isNotNull()).join(keys, on)
    return (_long(rebalances, {n: n for n in REBALANCE_METRICS}, F.array("fault_kind"))
            .unionByName(_long(stw, {"unowned_ms": "unowned_ms"}, F.array("fault_kind")))
            .unionByName(_long(faults, {"fault_to_detection_ms": "detection_ms"}, F.array("kind")))
            .unionByName(_long(runs, {n: n for n in RUN_METRICS}, F.col("fault_kinds"))))


def _summary(df: DataFrame, keys: list[str]) -> DataFrame:
    return (df.groupBy(*keys, "metric")
            .agg(F.count("value").alias("count"), F.sum("value").alias("sum"), F.avg("value").alias("mean"),
                 F.expr("percentile(value, array(0.5, 0.95, 0.99))").alias("_p"), F.max("value").alias("max"),
                 F.countDistinct("run_key").alias("runs"))
            .select(*keys, "metric", "runs", "count", F.round("sum", 3).alias("sum"), F.round("mean", 3).alias("mean"),
                    F.round(F.col("_p")[0], 3).alias("p50"), F.round(F.col("_p")[1], 3).alias("p95"),
                    F.round(F.col("_p")[2], 3).alias("p99"), F.round("max", 3).alias("max")))


def by_group(rows: DataFrame) -> DataFrame:
    return _summary(rows, list(GROUP)).orderBy(*GROUP, "metric")


def by_dimension(rows: DataFrame) -> DataFrame:
    """A run injecting two kinds of fault counts once under each (only in the fault_kind dimension)."""
    exploded = rows.withColumn("fault_kind", F.explode("fault_kinds"))
    parts = [_summary((exploded if d == "fault_kind" else rows).withColumn("dimension", F.lit(d))
                      .withColumn("value_of", F.col(d).cast("string")), ["dimension", "value_of"])
             for d in DIMENSIONS]
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out.withColumnRenamed("value_of", "group").orderBy("dimension", "group", "metric")
