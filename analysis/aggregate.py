"""Cross-run analysis: every per-run figure as a row of one long table, summarised in Spark.

Every figure becomes a row `(run, protocol, assignor, kafka, client, scenario, faults,
fault_kind, metric, value)` — kafka the exact broker release the run ran, client the members'
client requirement (analysis.run_tables; null for a history from before they were recorded):

| metric | one value per | fault_kind |
|---|---|---|
| rebalance_ms (start → assigned), stabilized_ms, detect_ms, join_ms, sync_ms, max_unowned_ms | completed rebalance of the run (no teardown one) | the fault it is attributed to |
| unowned_ms | partition handed out in a generation | its rebalance's fault |
| fault_to_detection_ms | fault the group noticed | that fault's kind |
| rebalances, duplicates, lost_records, peak_lag, final_lag, produce_rps, consume_rps, commit_failures, stw_total_ms | run | every kind the run injected |

`by_group` summarises per (protocol, assignor, kafka, client, faults, scenario, metric) —
`faults` is the run's whole fault mix, so each group is a set of runs; `by_dimension` per
single dimension (protocol, assignor, kafka, client, fault_kind, scenario). Both give count, sum,
mean, p50, p95, p99 (by nearest rank: `nearest_rank`) and max.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from oracle.rebalances import COMPLETED

from .schema import GROUP

DIMENSIONS = ("protocol", "assignor", "kafka", "client", "fault_kind", "scenario")
REBALANCE_METRICS = ("rebalance_ms", "stabilized_ms", "detect_ms", "join_ms", "sync_ms", "max_unowned_ms")
RUN_METRICS = (
    "rebalances",
    "duplicates",
    "lost_records",
    "peak_lag",
    "final_lag",
    "produce_rps",
    "consume_rps",
    "commits_failed",
    "stw_total_ms",
)
PERCENTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
RUN_KEYS = ["run_key", "run", "protocol", "assignor", "kafka", "client", "scenario", "faults"]
# metric -> the rebalances column it is read from (a rebalance's time is its duration)
REBALANCE_COLUMNS = {n: "duration_ms" if n == "rebalance_ms" else n for n in REBALANCE_METRICS}


def nearest_rank(column: str, p: float):
    """The p-th percentile of `column` by nearest rank: a value it really holds, as a run's own
    figures give it (harness.reports.run.verdict_figures, in compare, suite.json and JUnit), so a table
    and the verdict of one run agree. Interpolating would report times no rebalance took."""
    return F.expr(f"percentile_disc({p}) WITHIN GROUP (ORDER BY {column})")


def metric_rows(tables: dict[str, list[dict]]) -> list[dict]:
    """The long table, from the per-run tables (analysis.schema), by name: one row per figure
    (columns: analysis.schema.TABLES["metrics"])."""
    runs = {r["run_key"]: {k: r[k] for k in RUN_KEYS} for r in tables["runs"]}
    out = []

    def add(row: dict, metrics: dict[str, str], kinds: list[str]) -> None:
        for metric, column in metrics.items():
            if row.get(column) is not None:
                out.append(
                    {**runs[row["run_key"]], "fault_kinds": kinds, "metric": metric, "value": float(row[column])}
                )

    for r in tables["rebalances"]:
        if r["status"] == COMPLETED:
            add(r, REBALANCE_COLUMNS, [r["fault_kind"]])
    for r in tables["stop_the_world"]:
        if r["status"] == COMPLETED:
            add(r, {"unowned_ms": "unowned_ms"}, [r["fault_kind"]])
    for r in tables["faults"]:
        add(r, {"fault_to_detection_ms": "detection_ms"}, [r["kind"]])
    for r in tables["runs"]:
        add(r, {n: n for n in RUN_METRICS}, r["fault_kinds"])
    return out


def _summary(df: DataFrame, keys: list[str]) -> DataFrame:
    return (
        df.groupBy(*keys, "metric")
        .agg(
            F.count("value").alias("count"),
            F.sum("value").alias("sum"),
            F.avg("value").alias("mean"),
            *(nearest_rank("value", p).alias(name) for name, p in PERCENTILES),
            F.max("value").alias("max"),
            F.countDistinct("run_key").alias("runs"),
        )
        .select(
            *keys,
            "metric",
            "runs",
            "count",
            F.round("sum", 3).alias("sum"),
            F.round("mean", 3).alias("mean"),
            *(F.round(name, 3).alias(name) for name, _ in PERCENTILES),
            F.round("max", 3).alias("max"),
        )
    )


def by_group(rows: DataFrame) -> DataFrame:
    return _summary(rows, list(GROUP)).orderBy(*GROUP, "metric")


def by_dimension(rows: DataFrame) -> DataFrame:
    """A run injecting two kinds of fault counts once under each (only in the fault_kind dimension)."""
    pairs = F.concat(
        F.array(
            *[
                F.struct(F.lit(d).alias("dimension"), F.col(d).cast("string").alias("group"))
                for d in DIMENSIONS
                if d != "fault_kind"
            ]
        ),
        F.transform("fault_kinds", lambda k: F.struct(F.lit("fault_kind").alias("dimension"), k.alias("group"))),
    )
    exploded = rows.select("run_key", "metric", "value", F.explode(pairs).alias("_d")).select(
        "run_key", "metric", "value", "_d.dimension", "_d.group"
    )
    return _summary(exploded, ["dimension", "group"]).orderBy("dimension", "group", "metric")
