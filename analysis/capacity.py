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
| stw_p50_ms / _p95_ms / _max_ms | stop-the-world: over the partitions those rebalances handed over, how long nobody owned them |
| first_partition_p50_ms / _p95_ms / _max_ms | a joining member's time to work: over the run's member incarnations, from its `consumer_started` to its first non-empty `partitions_assigned` (one that never owned a partition is left out) |
| restart_rebalances / restart_rebalance_ms / restart_partitions_moved | a single member's restart (the sweep's restart in the hold phase: the first time one member alone left and came back), from its stop until the group next changed size, read from ownership alike for every protocol: the rebalances (generations, epochs) that started, completed or not; the time from the stop until the last partition handed out had its owner; the partitions that changed member (a static member's partitions back to it are no move); empty when the run had none |
| max_lag | the highest total lag the observer sampled |
| drain_s | from the workload's end (producer stopped) to a group stable for `recovery.stable_for_s` with no lag (so never less than that); empty when it never got there |
| consumed_per_member_rps | deliveries per second of consuming (re-deliveries included: work the member did), per member at the point's size |

Percentiles are by nearest rank (analysis.aggregate.nearest_rank), as the run's verdict figures
give them. A point whose run `analyze` could not read has a row of empty figures, and the page
names it with the reason.

Written: capacity.html (table and plots), capacity.csv, parquet/capacity/, plots/ (the plots
across protocols, and per protocol `<protocol>.png`: its figures against group size), and the
per-run tables of `analyze` beside them.
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
    "stw_p50_ms",
    "stw_p95_ms",
    "stw_max_ms",
    "first_partition_p50_ms",
    "first_partition_p95_ms",
    "first_partition_max_ms",
    "restart_rebalances",
    "restart_rebalance_ms",
    "restart_partitions_moved",
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
    (
        "first_partition_vs_members.png",
        "members",
        "first_partition_p95_ms",
        "A joining member's first partition (p95) vs group size",
    ),
    ("restart_vs_members.png", "members", "restart_rebalance_ms", "One member's restart: rebalance time vs group size"),
)
# per protocol, its figures against group size (plots/<protocol>.png): how each grows
PROTOCOL_SERIES = (
    ("rebalance_p50_ms", "rebalance p50 (members' clock)"),
    ("rebalance_p95_ms", "rebalance p95 (members' clock)"),
    ("rebalance_max_ms", "rebalance max (members' clock)"),
    ("broker_p95_ms", "rebalance p95 (coordinator's clock)"),
    ("stw_p95_ms", "stop-the-world p95"),
    ("first_partition_p95_ms", "first partition p95"),
    ("restart_rebalance_ms", "one member's restart"),
)


@dataclass
class CapacityResult:
    out: Path
    report: Path
    rows: list[dict]


def _percentiles(column: str, prefix: str):
    """p50, p95 (nearest rank) and max of ``column``, as ``<prefix>_p50_ms`` … ``_max_ms``."""
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
        .agg(*_percentiles("unowned_ms", "stw"))
    )
    joins = (
        spark.read.parquet(str(parquet / "joins"))
        .where(F.col("first_partition_ms").isNotNull())
        .groupBy("run")
        .agg(*_percentiles("first_partition_ms", "first_partition"))
    )
    runs = spark.read.parquet(str(parquet / "runs")).select(
        "run",
        F.col("peak_lag").alias("max_lag"),
        "drain_s",
        "consume_rps",
        "restart_rebalances",
        F.round("restart_rebalance_ms", 1).alias("restart_rebalance_ms"),
        "restart_partitions_moved",
        F.lit(True).alias("_analysed"),
    )
    return (
        pts.join(reb, "run", "left")
        .join(stw, "run", "left")
        .join(joins, "run", "left")
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
    for protocol in sorted({r["protocol"] for r in rows}):
        caption = f"{protocol}: how its figures grow with the group"
        png = plots.one_protocol(rows, protocol, "members", list(PROTOCOL_SERIES), caption)
        (out / "plots" / f"{protocol}.png").write_bytes(png)
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
