"""The analysis job: run directories in; Parquet, CSV, PNG and HTML out.

    from analysis.job import analyze
    result = analyze(["runs/*"], out=Path("analysis-out"), master="local[2]")

Layout of `out`:

    report.html                 the analysis: comparison table, distributions, links to runs
    plots/*.png                 the distributions, also inlined in report.html
    runs/<run>/report.html      a page per run (timeline, lag, rebalances), PNGs beside it; which
                                runs get one: `run_reports` (analysis.pages)
    parquet/<table>/            every table below, written by Spark
    csv/<table>.csv             the same tables as CSV
    summary.json                runs analysed, runs skipped (with the reason), timings
    cache/                      parsed histories (Parquet) unless --cache says elsewhere

Tables: runs, rebalances, stop_the_world, ownership, faults, lag, commit_failures,
duplicates, records (per run, see analysis.metrics), metrics (the long table),
by_group and by_dimension (cross-run, see analysis.aggregate).
"""
from __future__ import annotations

import csv
import json
import shutil
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from runtime.errors import EXIT_BAD_INPUT, LabError

from .ingest import EXPLAINED_SCHEMA, RunDir, Skipped, explanations, failed_runs, find_runs, load_events
from .pages import RunPages, runs_with_pages

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
    "metrics": ["run", "metric", "fault_kinds", "value"],
    "by_group": ["protocol", "assignor", "kafka", "faults", "scenario", "metric"],
    "by_dimension": ["dimension", "group", "metric"],
}
PER_RUN = ("ownership", "faults", "rebalances", "lag", "commit_failures", "duplicates")


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


def _collect(df, order: list[str]) -> list[dict]:
    rows = [r.asDict(recursive=True) for r in df.collect()]
    rows.sort(key=lambda r: tuple(_sortable(r.get(c)) for c in order))
    return rows


def analyze(patterns: list[str], out: Path, master: str | None = None, *, spark=None,
            cache_dir: Path | None = None, run_reports: str = "auto", workers: int = 2,
            progress: Callable[[str], None] = lambda msg: None) -> AnalysisResult:
    """Analyse run directories (paths or globs); see the module docstring for what is written."""
    from pyspark.sql import functions as F

    from .aggregate import by_dimension, by_group, metric_rows
    from .metrics import materialize, per_run_metrics
    from .report import analysis_report
    from .session import SHUFFLE_PARTITIONS, spark_session, tasks_per_stage

    timings: dict[str, float] = {}
    t = time.monotonic()
    runs, skipped = find_runs(patterns)
    if not runs:
        raise NoRuns(skipped)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pages = RunPages(out, workers)
    # collects, summaries and table writes are small jobs each: run concurrently, they overlap one
    # another's driver-side time
    pool = ThreadPoolExecutor(4)
    try:
        # its own SQL settings on the shared SparkContext: the partitions below are this analysis's only
        spark = (spark or spark_session(master)).newSession()
        timings["spark start"] = time.monotonic() - t
        tasks = tasks_per_stage(spark, sum(r.fingerprint["size"] for r in runs))
        spark.conf.set(SHUFFLE_PARTITIONS, str(tasks))

        t = time.monotonic()
        progress(f"reading {len(runs)} run directories")
        loaded = load_events(spark, runs, Path(cache_dir) if cache_dir else out / "cache", tasks)
        skipped += loaded.skipped
        for s in loaded.skipped:
            progress(f"skipped {s.path}: {s.reason}")
        good: list[RunDir] = loaded.runs
        if not good:
            raise NoRuns(skipped)
        # the driver's own rows: as few partitions as the events (a local list is spread over every core)
        meta = spark.createDataFrame([(r.key, r.run, str(r.path), r.kafka) for r in good],
                                     "run_key string, run string, path string, kafka string").coalesce(tasks)
        timings["ingest"] = time.monotonic() - t

        t = time.monotonic()
        progress("computing per-run metrics")
        m = per_run_metrics(spark, loaded.events, meta)
        tables = dict(m.tables())
        explained = spark.createDataFrame(explanations(good), EXPLAINED_SCHEMA).coalesce(tasks)
        tables["rebalances"] = tables["rebalances"].join(F.broadcast(explained), ["run_key", "generation"], "left")
        names = ("runs", *PER_RUN)

        def keep(name: str) -> list[dict]:
            # a per-run table is still a join (labels, explanations): computed once, for this collect
            # and for the write below (`runs` already is)
            if name in PER_RUN:
                tables[name] = materialize(tables[name])
            return _collect(tables[name], ORDER[name])

        collected: dict[str, list[dict]] = dict(zip(names, pool.map(keep, names)))
        timings["per-run"] = time.monotonic() - t
        paged = runs_with_pages(collected["runs"], run_reports, failed_runs(good))
        if paged:
            per_run: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
            for name in PER_RUN:
                for r in collected[name]:
                    per_run[r["run"]][name].append(r)
            pages.submit(paged, per_run)

        t = time.monotonic()
        progress("comparing runs")
        rows = metric_rows(m).localCheckpoint(eager=True)
        tables["metrics"] = rows
        tables["by_group"], tables["by_dimension"] = pool.map(
            lambda summary: summary(rows).localCheckpoint(eager=True), (by_group, by_dimension))
        timings["cross-run"] = time.monotonic() - t

        t = time.monotonic()
        progress("writing tables")

        def write(name: str) -> list[dict]:
            df, order = tables[name], ORDER[name]
            target = out / "parquet" / name
            if target.exists():
                shutil.rmtree(target)
            # one sorted file per table: coalesce, then sort within it (no range-partitioning pass)
            df.coalesce(1).sortWithinPartitions(*order).write.parquet(str(target))
            table = collected[name] if name in collected else _collect(df, order)
            write_csv(out / "csv" / f"{name}.csv", table, df.columns)
            return table

        written = list(pool.map(write, list(tables)))
        collected.update(zip(tables, written))
        timings["write"] = time.monotonic() - t

        t = time.monotonic()
        progress("drawing reports")
        run_pages = pages.results()
        report = analysis_report(out, collected["runs"], [s.to_dict() for s in skipped], collected["by_group"],
                                 collected["by_dimension"], collected["metrics"], run_pages, timings)
        timings["reports"] = time.monotonic() - t
    finally:
        pool.shutdown(cancel_futures=True)
        pages.close()
    (out / "summary.json").write_text(json.dumps({
        "runs": [{"run": r.run, "path": str(r.path), "run_key": r.key} for r in good],
        "skipped": [s.to_dict() for s in skipped],
        "parsed": loaded.parsed, "cached": loaded.cached,
        "timings_s": {k: round(v, 3) for k, v in timings.items()},
        "report": str(report),
    }, indent=2))
    return AnalysisResult(out, report, collected["runs"], skipped, collected["by_group"], collected["by_dimension"],
                          run_pages, loaded.parsed, loaded.cached, timings, collected)
