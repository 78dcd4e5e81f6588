"""The capacity table: one row per point of a sweep, built in Spark from the points' run histories.

    from analysis.capacity import capacity_report
    result = capacity_report(points, out=Path("capacity-out"))

`points` are plain rows — ``run`` (the run directory), ``protocol``, ``members``, ``partitions``,
``rate`` — given by the sweep that ran them (harness/capacity.py); the figures come from the
histories only, through the same per-run tables as `analyze` (analysis/job.py), then per point:

| column | what |
|---|---|
| rebalances | completed rebalances of the run (teardown ones excluded) |
| rebalance_p50_ms / _p95_ms / _max_ms | their durations by the members' clock (start → last assignment) |
| broker_p50_ms / _p95_ms / _max_ms | the same rebalances by the coordinator's clock ("Preparing" → "Stabilized"; KIP-848: → target assignment) |
| stw_p95_ms | stop-the-world: p95 over partitions handed over of how long nobody owned them |
| max_lag | the highest total lag the observer sampled |
| drain_s | from the workload's end (producer stopped) to a stable group with no lag |
| consumed_per_member_rps | records consumed per second, per member at the point's size |

Written: capacity.html (table and plots), capacity.csv, parquet/capacity/, and the per-run
tables of `analyze` beside them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .report import img, page, table

POINT_KEYS = ("protocol", "members", "partitions", "rate")
COLUMNS = (*POINT_KEYS, "rebalances", "rebalance_p50_ms", "rebalance_p95_ms", "rebalance_max_ms", "broker_p50_ms",
           "broker_p95_ms", "broker_max_ms", "stw_p95_ms", "max_lag", "drain_s", "consumed_per_member_rps", "run")
# (file, x, y, title): the plots people expect of a sweep, one line per protocol
PLOTS = (("rebalance_vs_members.png", "members", "rebalance_p95_ms", "Rebalance time (p95) vs group size"),
         ("lag_vs_rate.png", "rate", "max_lag", "Max lag vs produce rate"),
         ("stw_vs_partitions.png", "partitions", "stw_p95_ms", "Stop-the-world (p95) vs partitions"))


@dataclass
class CapacityResult:
    out: Path
    report: Path
    rows: list[dict]


def _percentiles(column: str, prefix: str):
    from pyspark.sql import functions as F

    p = F.expr(f"percentile({column}, array(0.5, 0.95))")
    return [F.round(p[0], 1).alias(f"{prefix}_p50_ms"), F.round(p[1], 1).alias(f"{prefix}_p95_ms"),
            F.round(F.max(column), 1).alias(f"{prefix}_max_ms")]


def capacity_table(spark, points: list[dict], parquet: Path):
    """The table as a Spark DataFrame, from `analyze`'s Parquet tables of the points' runs."""
    from pyspark.sql import functions as F

    pts = spark.createDataFrame([{k: p[k] for k in ("run", *POINT_KEYS)} for p in points],
                                "run string, protocol string, members int, partitions int, rate double")
    rebalances = spark.read.parquet(str(parquet / "rebalances")).where(F.col("status") == "completed")  # no teardown
    reb = rebalances.groupBy("run").agg(F.count("*").alias("rebalances"),
                                        *_percentiles("duration_ms", "rebalance"), *_percentiles("coordinator_ms", "broker"))
    stw = (spark.read.parquet(str(parquet / "stop_the_world")).where(F.col("status") == "completed")
           .groupBy("run").agg(F.round(F.expr("percentile(unowned_ms, 0.95)"), 1).alias("stw_p95_ms")))
    runs = spark.read.parquet(str(parquet / "runs")).select("run", F.col("peak_lag").alias("max_lag"), "drain_s",
                                                             "consume_rps")
    return (pts.join(reb, "run", "left").join(stw, "run", "left").join(runs, "run", "left")
            .withColumn("rebalances", F.coalesce("rebalances", F.lit(0)))
            .withColumn("consumed_per_member_rps", F.round(F.col("consume_rps") / F.col("members"), 2))
            .select(*COLUMNS).orderBy(*POINT_KEYS))


def capacity_report(points: list[dict], out: Path, master: str | None = None, *, spark=None, title: str = "",
                    progress=lambda _msg: None) -> CapacityResult:
    from . import plots
    from .job import analyze, write_csv
    from .session import spark_session

    out = Path(out)
    spark = spark or spark_session(master)
    analyze([p["run_dir"] for p in points], out, spark=spark, run_reports="none", progress=progress)
    df = capacity_table(spark, points, out / "parquet").localCheckpoint(eager=True)
    df.coalesce(1).write.mode("overwrite").parquet(str(out / "parquet" / "capacity"))
    rows = [r.asDict() for r in df.collect()]
    write_csv(out / "capacity.csv", rows, COLUMNS)
    figures = []
    (out / "plots").mkdir(exist_ok=True)
    for name, x, y, caption in PLOTS:
        png = plots.by_protocol(rows, x, y, caption)
        (out / "plots" / name).write_bytes(png)
        figures.append(f"<h2>{caption}</h2>{img(png, caption)}")
    body = (f"<h1>Capacity: {title}</h1><p>{len(rows)} points; per point one load run (harness/capacity.py), "
            f"its figures from the history (analysis/capacity.py). Per-run tables: <code>csv/</code>, "
            f"<code>parquet/</code>.</p>" + table(rows, COLUMNS, left=("protocol", "run")) + "".join(figures))
    report = out / "capacity.html"
    report.write_text(page(f"Capacity — {title}", body))
    return CapacityResult(out, report, rows)
