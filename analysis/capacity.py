"""The capacity table: one row per point of a sweep, built in Spark from the points' run histories.

    from analysis.capacity import capacity_report
    result = capacity_report(points, out=Path("capacity-out"))

`points` are plain rows — ``run`` (the run directory), ``protocol``, ``members``, ``partitions``,
``rate`` — given by the sweep that ran them (harness/campaigns/capacity.py); the figures come from the
histories only, through the same per-run tables as `analyze` (analysis/job.py), then per point:

| column | what |
|---|---|
| rebalances | completed rebalances of the run (teardown ones excluded; superseded ones are not counted) |
| rebalance_p50_ms / _p95_ms / _max_ms | their durations by the members' clock (start → last assignment) |
| broker_p50_ms / _p95_ms / _max_ms | the same rebalances by the coordinator's clock ("Preparing" → "Stabilized"; KIP-848: → target assignment) |
| stw_p95_ms | stop-the-world: p95 over the partitions those rebalances handed over of how long nobody owned them |
| max_lag | the highest total lag the observer sampled |
| drain_s | from the workload's end (producer stopped) to a group stable for `recovery.stable_for_s` with no lag (so never less than that); empty when it never got there |
| consumed_per_member_rps | deliveries per second of consuming (re-deliveries included: work the member did), per member at the point's size |

Percentiles are by nearest rank (analysis.aggregate.nearest_rank), as the run's verdict figures
give them. A point whose run `analyze` could not read has a row of empty figures, and the page
names it with the reason.

Written: capacity.html (table and plots), capacity.csv, parquet/capacity/, and the per-run
tables of `analyze` beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .report import img, page, table

POINT_KEYS = ("protocol", "members", "partitions", "rate")
COLUMNS = (
    *POINT_KEYS,
    "rebalances",
    "rebalance_p50_ms",
    "rebalance_p95_ms",
    "rebalance_max_ms",
    "broker_p50_ms",
    "broker_p95_ms",
    "broker_max_ms",
    "stw_p95_ms",
    "max_lag",
    "drain_s",
    "consumed_per_member_rps",
    "run",
)
# (file, x, y, title): the plots people expect of a sweep, one line per protocol
PLOTS = (
    ("rebalance_vs_members.png", "members", "rebalance_p95_ms", "Rebalance time (p95) vs group size"),
    ("lag_vs_rate.png", "rate", "max_lag", "Max lag vs produce rate"),
    ("stw_vs_partitions.png", "partitions", "stw_p95_ms", "Stop-the-world (p95) vs partitions"),
)


@dataclass
class CapacityResult:
    out: Path
    report: Path
    rows: list[dict]


def _percentiles(column: str, prefix: str):
    from pyspark.sql import functions as F

    from .aggregate import nearest_rank

    return [
        F.round(nearest_rank(column, 0.5), 1).alias(f"{prefix}_p50_ms"),
        F.round(nearest_rank(column, 0.95), 1).alias(f"{prefix}_p95_ms"),
        F.round(F.max(column), 1).alias(f"{prefix}_max_ms"),
    ]


def capacity_table(spark, points: list[dict], parquet: Path):
    """The table as a Spark DataFrame, from `analyze`'s Parquet tables of the points' runs."""
    from pyspark.sql import functions as F

    from .aggregate import nearest_rank

    pts = spark.createDataFrame(
        [{k: p[k] for k in ("run", *POINT_KEYS)} for p in points],
        "run string, protocol string, members int, partitions int, rate double",
    )
    rebalances = spark.read.parquet(str(parquet / "rebalances")).where(F.col("status") == "completed")  # no teardown
    reb = rebalances.groupBy("run").agg(
        F.count("*").alias("rebalances"),
        *_percentiles("duration_ms", "rebalance"),
        *_percentiles("coordinator_ms", "broker"),
    )
    stw = (
        spark.read.parquet(str(parquet / "stop_the_world"))
        .where(F.col("status") == "completed")
        .groupBy("run")
        .agg(F.round(nearest_rank("unowned_ms", 0.95), 1).alias("stw_p95_ms"))
    )
    runs = spark.read.parquet(str(parquet / "runs")).select(
        "run", F.col("peak_lag").alias("max_lag"), "drain_s", "consume_rps", F.lit(True).alias("_analysed")
    )
    return (
        pts.join(reb, "run", "left")
        .join(stw, "run", "left")
        .join(runs, "run", "left")
        # no completed rebalance is 0 of them; a run the analysis could not read has no figures
        .withColumn("rebalances", F.when(F.col("_analysed"), F.coalesce("rebalances", F.lit(0))))
        .withColumn("consumed_per_member_rps", F.round(F.col("consume_rps") / F.col("members"), 2))
        .select(*COLUMNS)
        .orderBy(*POINT_KEYS)
    )


def capacity_report(
    points: list[dict], out: Path, master: str | None = None, *, spark=None, title: str = "", progress=lambda _msg: None
) -> CapacityResult:
    from . import plots
    from .job import analyze, write_csv
    from .session import spark_session

    out = Path(out)
    spark = spark or spark_session(master)
    analysed = analyze([p["run_dir"] for p in points], out, spark=spark, run_reports="none", progress=progress)
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
    body = (
        f"<h1>Capacity: {title}</h1><p>{len(rows)} points; per point one load run (harness/campaigns/capacity.py), "
        f"its figures from the history (analysis/capacity.py). Per-run tables: <code>csv/</code>, "
        f"<code>parquet/</code>. Percentiles by nearest rank, over completed rebalances; where points share "
        f"a plot's x (another axis varies), the plot shows their mean.</p>"
        + table(rows, COLUMNS, left=("protocol", "run"))
        + (
            (
                "<h2>Points without figures</h2>"
                + table([s.to_dict() for s in analysed.skipped], ["path", "reason"], left=("path", "reason"))
            )
            if analysed.skipped
            else ""
        )
        + "".join(figures)
    )
    report = out / "capacity.html"
    report.write_text(page(f"Capacity — {title}", body))
    return CapacityResult(out, report, rows)
