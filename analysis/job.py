"""The analysis job: run directories in; Parquet, CSV, PNG and HTML out.

    from analysis.job import analyze
    result = analyze(["runs/*"], out=Path("analysis-out"), master="local[2]")

Layout of `out`:

    report.html                 the analysis: comparison table, distributions, links to runs
    plots/*.png                 the distributions, also inlined in report.html
    runs/<run>/report.html      a page per run (timeline, lag, rebalances), PNGs beside it; which
                                runs get one: `run_reports` (analysis.pages); the pages an earlier
                                analysis drew here go first
    parquet/<table>/            every table below, written by Spark
    csv/<table>.csv             the same tables as CSV
    summary.json                runs analysed, runs skipped (with the reason), timings
    cache/                      each run's tables (analysis.cache) unless --cache says elsewhere

Tables: runs, rebalances, stop_the_world, ownership, faults, lag, commit_failures,
duplicates, records (per run: analysis.run_tables, by the oracle's definitions), metrics
(the long table), by_group and by_dimension (across runs: analysis.aggregate).

Two Spark stages of work: one job whose tasks each read a share of the histories and work
out their runs' tables (a few hundred rows a run, back to the driver), then the cross-run
summaries and the writes over those small tables. A run's tables are the oracle's reading
of its history, so Spark's part per run is to spread the runs over the executors.
"""

from __future__ import annotations

import csv
import json
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.errors import EXIT_BAD_INPUT, LabError
from runtime.output_dirs import make_dirs

from .cache import TableCache
from .pages import RunPages, remove_old_pages, runs_with_pages
from .run_tables import Row, tables_of
from .runs import RunDir, Skipped, failed_runs, find_runs
from .schema import GROUP, PER_RUN, TABLES, as_tuples, typed

ORDER = {  # deterministic row order for every output (identical results on any master)
    "runs": ["run"],
    "rebalances": ["run", "generation"],
    "stop_the_world": ["run", "generation", "topic", "partition"],
    "ownership": ["run", "topic", "partition", "start_mono", "member", "inc"],
    "faults": ["run", "start_mono", "fault_id"],
    "lag": ["run", "ord", "topic", "partition"],
    "commit_failures": ["run", "error_code", "error"],
    "duplicates": ["run", "topic", "partition"],
    "records": ["run", "topic", "partition"],
    "joins": ["run", "started_mono", "member", "inc"],
    "metrics": ["run", "metric", "fault_kinds", "value"],
    "by_group": [*GROUP, "metric"],
    "by_dimension": ["dimension", "group", "metric"],
}


class NoRuns(LabError):
    """Nothing to analyse: every directory given was missing, unfinished or damaged (each named)."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, skipped: list[Skipped]):
        self.skipped = skipped
        super().__init__("no run directory to analyse" + "".join(f"\n  {s.path}: {s.reason}" for s in skipped))


@dataclass
class AnalysisResult:
    out: Path
    report: Path
    runs: list[dict]
    skipped: list[Skipped]
    by_group: list[dict]
    by_dimension: list[dict]
    run_reports: dict[str, Path]
    parsed: list[str]
    cached: list[str]
    timings: dict[str, float] = field(default_factory=dict)
    tables: dict[str, list[dict]] = field(default_factory=dict)


def _sortable(v: Any) -> tuple:
    if isinstance(v, (list, tuple)):
        v = tuple(map(str, v))
    return (v is None, v if v is not None else 0)


def _csv_value(v: Any) -> Any:
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, sort_keys=True)
    return v


def write_csv(path: Path, rows: list[dict], columns: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for r in rows:
            w.writerow([_csv_value(r.get(c)) for c in columns])


def _in_order(rows: Iterable[dict], order: list[str]) -> list[dict]:
    return sorted(rows, key=lambda r: tuple(_sortable(r.get(c)) for c in order))


def _collect(df, order: list[str]) -> list[dict]:
    return _in_order((r.asDict(recursive=True) for r in df.collect()), order)


def _computed(
    spark, runs: list[RunDir], cache: TableCache
) -> tuple[dict[str, dict[str, list[Row]]], list[Skipped], list[RunDir]]:
    """run key -> its tables, for every run the cache did not have: one Spark job, its tasks each
    reading a share of the histories. -> (tables, damaged runs skipped, runs computed)."""
    from .session import ship_code

    sc = spark.sparkContext
    ship_code(sc)
    by_key = {r.key: r for r in runs}
    # a few runs a task: a long history does not hold up a core while the other sits idle
    slices = max(1, min(len(runs), 4 * sc.defaultParallelism))
    tables, skipped, computed = {}, [], []
    for key, result in sc.parallelize([r.ref for r in runs], slices).map(tables_of).collect():
        run = by_key[key]
        if isinstance(result, str):
            skipped.append(Skipped(str(run.path), result))
        else:
            tables[key] = run.own(result)
            computed.append(run)
            cache.put(run, result)
    return tables, skipped, computed


def analyze(
    patterns: list[str],
    out: Path,
    master: str | None = None,
    *,
    spark=None,
    cache_dir: Path | None = None,
    run_reports: str = "auto",
    workers: int = 2,
    progress: Callable[[str], None] = lambda msg: None,
    found: tuple[list[RunDir], list[Skipped]] | None = None,
) -> AnalysisResult:
    """Analyse run directories (paths or globs); see the module docstring for what is written.
    ``found``: find_runs(patterns) when the caller has it already."""
    from .aggregate import by_dimension, by_group, metric_rows
    from .report import analysis_report
    from .session import SHUFFLE_PARTITIONS, spark_session

    timings: dict[str, float] = {}
    t = time.monotonic()
    runs, skipped = found or find_runs(patterns)
    if not runs:
        raise NoRuns(skipped)
    out = make_dirs(Path(out), "--out")  # /proc, a read-only mount: bad input, not Spark's failure
    # what says an analysis here is finished goes first and comes back last: an interrupted one
    # does not look like a complete one (the earlier analysis's page would describe other runs)
    for marker in (out / "summary.json", out / "report.html"):
        marker.unlink(missing_ok=True)
    remove_old_pages(out)
    pages = RunPages(out, workers)
    # the summaries and table writes are small jobs each: run concurrently, they overlap one
    # another's driver-side time
    pool = ThreadPoolExecutor(4)
    try:
        # its own SQL settings on the shared SparkContext: the partitions below are this analysis's only
        spark = (spark or spark_session(master)).newSession()
        # every cross-run table is a few rows a run: one task each, on any master
        spark.conf.set(SHUFFLE_PARTITIONS, "1")
        timings["spark start"] = time.monotonic() - t

        t = time.monotonic()
        progress(f"reading {len(runs)} run directories")
        cache = TableCache(Path(cache_dir) if cache_dir else out / "cache")
        per_run = {r.key: kept for r in runs if (kept := cache.get(r)) is not None}
        computed: list[RunDir] = []
        stale = [r for r in runs if r.key not in per_run]
        if stale:
            fresh, damaged, computed = _computed(spark, stale, cache)
            per_run.update(fresh)
            skipped += damaged
            for s in damaged:
                progress(f"skipped {s.path}: {s.reason}")
        good: list[RunDir] = [r for r in runs if r.key in per_run]
        if not good:
            raise NoRuns(skipped)
        collected: dict[str, list[dict]] = {
            name: _in_order((row for r in good for row in per_run[r.key][name]), ORDER[name]) for name in PER_RUN
        }
        timings["per-run"] = time.monotonic() - t
        paged = runs_with_pages(collected["runs"], run_reports, failed_runs(good))
        if paged:
            by_label: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
            for name in PER_RUN:
                for r in collected[name]:
                    by_label[r["run"]][name].append(r)
            pages.submit(paged, by_label)

        t = time.monotonic()
        progress("comparing runs")
        collected["metrics"] = typed("metrics", _in_order(metric_rows(collected), ORDER["metrics"]))
        rows = spark.createDataFrame(as_tuples("metrics", collected["metrics"]), TABLES["metrics"])
        summaries = dict(
            zip(
                ("by_group", "by_dimension"),
                pool.map(lambda summary: summary(rows).localCheckpoint(eager=True), (by_group, by_dimension)),
                strict=False,
            )
        )
        timings["cross-run"] = time.monotonic() - t

        t = time.monotonic()
        progress("writing tables")

        def write(name: str) -> list[dict]:
            order = ORDER[name]
            df = (
                summaries[name]
                if name in summaries
                else spark.createDataFrame(as_tuples(name, collected[name]), TABLES[name])
            )
            target = out / "parquet" / name
            if target.exists():
                shutil.rmtree(target)
            # one file per table, its rows in order already (a local list keeps its order, and so do
            # the summaries' checkpoints)
            df.coalesce(1).write.parquet(str(target))
            table = collected[name] if name in collected else _collect(df, order)
            write_csv(out / "csv" / f"{name}.csv", table, df.columns)
            return table

        names = [*TABLES, *summaries]
        collected.update(zip(names, pool.map(write, names), strict=False))
        timings["write"] = time.monotonic() - t

        t = time.monotonic()
        progress("drawing reports")
        run_pages = pages.results()
        report = analysis_report(
            out,
            collected["runs"],
            [s.to_dict() for s in skipped],
            collected["by_group"],
            collected["by_dimension"],
            collected["metrics"],
            run_pages,
            timings,
        )
        timings["reports"] = time.monotonic() - t
    finally:
        pool.shutdown(cancel_futures=True)
        pages.close()
    parsed = [r.run for r in computed]
    cached = [r.run for r in good if r not in computed]
    (out / "summary.json").write_text(
        json.dumps(
            {
                "runs": [{"run": r.run, "path": str(r.path), "run_key": r.key} for r in good],
                "skipped": [s.to_dict() for s in skipped],
                "parsed": parsed,
                "cached": cached,
                "timings_s": {k: round(v, 3) for k, v in timings.items()},
                "report": str(report),
            },
            indent=2,
        )
    )
    return AnalysisResult(
        out,
        report,
        collected["runs"],
        skipped,
        collected["by_group"],
        collected["by_dimension"],
        run_pages,
        parsed,
        cached,
        timings,
        collected,
    )
