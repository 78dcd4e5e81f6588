"""Run directories in, one typed Spark table of events out, cached as Parquet.

`find_runs` expands the command line (run directories, directories of runs, globs)
and sorts out what cannot be analysed before Spark sees it: no history, an empty
one, no `verdict.json` or an INCOMPLETE one (the run never finished). `load_events` parses the histories
in Spark with an explicit schema: each file is read whole, split into lines (line
numbers kept), parsed with `from_json`. A torn last line is dropped, as the oracle
drops it; a malformed line anywhere else makes the run damaged: it is reported by
name and skipped, the others go on.

Parsed histories are written as Parquet under the cache directory, one batch per
analysis that had to parse, with a manifest of each history's size and mtime: a
second analysis of the same runs reads Parquet, not JSON; a history that changed
is parsed again (into a new batch; batches nobody points at any more are deleted).
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from oracle import vocabulary as ev

from .schema import EVENT_SCHEMA, LAG, LINE_SCHEMA, TP

HISTORY = "history.jsonl"
VERDICT = "verdict.json"
CACHE_VERSION = 3


@dataclass
class RunDir:
    path: Path
    key: str  # stable: the cache partition of this run
    run: str  # unique label in this analysis (the directory name, disambiguated)
    kafka: str = "unknown"
    fingerprint: dict = field(default_factory=dict)

    @property
    def history(self) -> Path:
        return self.path / HISTORY


@dataclass
class Skipped:
    path: str
    reason: str

    def to_dict(self) -> dict:
        return {"path": self.path, "reason": self.reason}


def run_key(path: Path) -> str:
    return hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]


def _looks_like_run(path: Path) -> bool:
    return any((path / name).exists() for name in (HISTORY, VERDICT, "run.json"))


def _expand(patterns: list[str]) -> tuple[list[Path], list[Skipped]]:
    found: list[Path] = []
    missing: list[Skipped] = []
    for pattern in patterns:
        globbed = glob.has_magic(pattern)
        matches = sorted(glob.glob(os.path.expanduser(pattern))) if globbed else [pattern]
        matches = [m for m in matches if Path(m).exists()]
        if not matches:
            missing.append(Skipped(pattern, "no such run directory"))
            continue
        for m in map(Path, matches):
            if not m.is_dir():
                if m.name == HISTORY:
                    found.append(m.parent)
                elif not globbed:  # `runs/*` also matches a compare's yaml and json files: not worth a word
                    missing.append(Skipped(str(m), "not a run directory"))
            elif _looks_like_run(m):
                found.append(m)
            else:  # a directory of runs (runs/, a compare directory)
                children = sorted(c for c in m.iterdir() if c.is_dir() and _looks_like_run(c))
                if children:
                    found.extend(children)
                else:
                    missing.append(Skipped(str(m), "not a run directory (no history.jsonl, run.json or verdict.json)"))
    unique: dict[Path, Path] = {}
    for p in found:
        unique.setdefault(p.resolve(), p)
    return list(unique.values()), missing


def _precheck(path: Path) -> str | None:
    """Why this directory cannot be analysed, or None."""
    history = path / HISTORY
    if not history.exists():
        return "no history.jsonl"
    try:
        with history.open("rb") as fh:
            if not fh.read(1):
                return "history.jsonl is empty"
    except OSError as e:
        return f"history.jsonl unreadable: {e.strerror or e}"
    if not (path / VERDICT).exists():
        return "half-written: no verdict.json (the run never finished)"
    if _verdict_status(path) == "incomplete":  # `check --write` of an interrupted or killed run
        return "unfinished: its verdict is INCOMPLETE (the run never reached `phase: done`)"
    return None


# The oracle's explanation of each rebalance (oracle/explain.py), taken from the run's verdict rather
# than worked out again in Spark: one definition of who the group waited for and why.
EXPLAINED_SCHEMA = "run_key string, generation long, cause string, waited_for string, explanation string"


def explanations(runs: list[RunDir]) -> list[tuple]:
    """(run_key, generation, cause, waited_for, explanation) per rebalance the verdicts explain."""
    rows = []
    for r in runs:
        try:
            rebalances = json.loads((r.path / VERDICT).read_text(encoding="utf-8")).get("rebalances") or []
        except (OSError, ValueError, AttributeError):
            continue
        rows += [(r.key, int(x["generation"]), x.get("cause"), x.get("waited_for"), x.get("explanation"))
                 for x in rebalances if isinstance(x, dict) and isinstance(x.get("generation"), int)]
    return rows


def failed_runs(runs: list[RunDir]) -> frozenset[str]:
    """The keys of the runs whose verdict is FAIL (a check found a violation)."""
    return frozenset(r.key for r in runs if _verdict_status(r.path) == "fail")


def _verdict_status(path: Path) -> str | None:
    try:
        return json.loads((path / VERDICT).read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        return None


def _kafka_version(path: Path) -> str:
    try:
        scenario = yaml.safe_load((path / "scenario.yaml").read_text(encoding="utf-8")) or {}
        kafka = (scenario.get("cluster") or {}).get("kafka")
        return str(kafka) if kafka is not None else "unknown"
    except (OSError, yaml.YAMLError, AttributeError):
        return "unknown"


def find_runs(patterns: list[str]) -> tuple[list[RunDir], list[Skipped]]:
    paths, skipped = _expand(patterns)
    runs: list[RunDir] = []
    labels: dict[str, int] = {}
    for path in paths:
        reason = _precheck(path)
        if reason:
            skipped.append(Skipped(str(path), reason))
            continue
        label = path.resolve().name
        labels[label] = labels.get(label, 0) + 1
        if labels[label] > 1:
            label = f"{label}~{labels[label]}"
        st = path.joinpath(HISTORY).stat()
        runs.append(RunDir(path, run_key(path), label, _kafka_version(path),
                           {"size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    return runs, skipped


# --------------------------------------------------------------------------- Spark


def _typed(parsed: DataFrame) -> DataFrame:
    """Raw polymorphic fields -> typed columns, per event name."""
    name, raw = F.col("e.name"), F.col("e.partitions")
    ownership = name.isin(ev.PARTITIONS_ASSIGNED, ev.PARTITIONS_REVOKED, ev.PARTITIONS_LOST)
    cols = [F.col("run_key"), F.col("line"), F.col("bad")]
    for f in EVENT_SCHEMA.fields:
        if f.name in ("run_key", "line", "ord", "bad"):
            continue
        if f.name == "tps":
            cols.append(F.when(ownership, F.from_json(raw, T.ArrayType(TP))).alias("tps"))
        elif f.name == "lag":
            cols.append(F.when(name == ev.LAG_SAMPLED, F.from_json(raw, T.ArrayType(LAG))).alias("lag"))
        elif f.name == "partitions_total":
            cols.append(F.when(name.isin(ev.PARTITIONS_ADDED, ev.TOPIC_CREATED), raw.cast("long"))
                        .alias("partitions_total"))
        elif f.name == "joined_members":
            cols.append(F.when(name == ev.GROUP_JOINED, F.from_json(F.col("e.members"), T.ArrayType(T.StringType())))
                        .alias("joined_members"))
        elif f.name == "members_count":
            cols.append(F.when(name == ev.COORDINATOR_STABILIZED, F.col("e.members").cast("long"))
                        .alias("members_count"))
        else:
            cols.append(F.col("e." + f.name).alias(f.name))
    return parsed.select(*cols)


def parse_lines(spark: SparkSession, runs: list[RunDir]) -> DataFrame:
    """Every non-blank line of the histories, typed (EVENT_SCHEMA), in the oracle's order (`ord`);
    a line that is not an event is kept as a row with `bad` set and no `ord`, so one pass
    both parses and tells which runs are damaged."""
    files = spark.createDataFrame([(r.history.resolve().as_uri(), r.key) for r in runs], "file string, run_key string")
    text = (spark.read.text([str(r.history.resolve()) for r in runs], wholetext=True)
            # a leading byte order mark is not content (the oracle ignores it too)
            .select(F.input_file_name().alias("file"), F.regexp_replace("value", "^\ufeff", "").alias("value"))
            .join(F.broadcast(files), "file"))
    lines = (text.select("run_key", F.posexplode(F.split("value", "\r?\n")).alias("pos", "text"))
             .where(F.trim("text") != "")
             .select("run_key", (F.col("pos") + 1).cast("long").alias("line"),
                     F.from_json("text", LINE_SCHEMA).alias("e")))
    bad = F.col("e").isNull() | F.col("e.name").isNull() | F.col("e.mono_ms").isNull()
    # numbered in spark.default.parallelism tasks, however few the analysis's later stages get
    typed = _typed(lines.withColumn("bad", bad)).repartition(spark.sparkContext.defaultParallelism, "run_key")
    # the oracle's order: mono_ms, then source, then seq; file order breaks ties (bad lines last)
    w = Window.partitionBy("run_key").orderBy(
        "bad", "mono_ms", F.coalesce("source", F.lit("")), F.coalesce("seq", F.lit(0)), "line")
    return (typed.withColumn("ord", F.when(~F.col("bad"), F.row_number().over(w).cast("long")))
            .select(*EVENT_SCHEMA.fieldNames()))


def damaged_runs(parsed: DataFrame, runs: list[RunDir]) -> dict[str, str]:
    """run key -> why the run is damaged. A line that is not an event is forgiven only as the very
    last line (a writer killed mid-line: the oracle drops it too)."""
    diag = {r.run_key: r for r in parsed.groupBy("run_key").agg(
        F.max("line").alias("last_line"), F.count(F.when(F.col("bad"), 1)).alias("bad_lines"),
        F.min(F.when(F.col("bad"), F.col("line"))).alias("first_bad"),
        F.max(F.when(F.col("bad"), F.col("line"))).alias("last_bad")).collect()}
    damaged: dict[str, str] = {}
    for r in runs:
        d = diag.get(r.key)
        if d is None:
            damaged[r.key] = "damaged: history.jsonl has no events Spark could read"
        elif d.bad_lines > 1 or (d.bad_lines == 1 and d.last_bad != d.last_line):
            damaged[r.key] = (f"damaged: history.jsonl line {d.first_bad} is not a JSON event"
                              + (f" ({d.bad_lines} bad lines)" if d.bad_lines > 1 else ""))
        elif d.bad_lines == 1 and d.last_line == 1:
            damaged[r.key] = "damaged: history.jsonl holds no complete event"
    return damaged


class EventCache:
    """Parsed histories as Parquet, with a manifest of each history's fingerprint.

    Each analysis that had to parse writes one batch (`events/<batch>/`, a flat Parquet
    dataset with a run_key column: a few files, not one directory per run); the manifest
    says which batch holds each run's current events. A batch nobody points at any more
    is deleted."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.data = self.directory / "events"
        self.manifest_path = self.directory / "manifest.json"
        try:
            manifest = json.loads(self.manifest_path.read_text())
            self.manifest: dict = manifest if manifest.get("version") == CACHE_VERSION else {"version": CACHE_VERSION}
        except (OSError, ValueError, AttributeError):
            self.manifest = {"version": CACHE_VERSION}
        self.manifest.setdefault("runs", {})

    @property
    def runs(self) -> dict:
        return self.manifest["runs"]

    def fresh(self, run: RunDir) -> bool:
        entry = self.runs.get(run.key)
        return (entry is not None and entry.get("fingerprint") == run.fingerprint
                and (self.data / entry.get("batch", "-")).is_dir())

    def new_batch(self) -> str:
        return f"{time.strftime('%Y%m%dT%H%M%S')}-{os.urandom(4).hex()}"

    def record(self, runs: list[RunDir], batch: str) -> None:
        for r in runs:
            self.runs[r.key] = {"path": str(r.path.resolve()), "fingerprint": r.fingerprint, "batch": batch}
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.manifest_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.manifest, indent=1, sort_keys=True))
        tmp.replace(self.manifest_path)
        live = {e.get("batch") for e in self.runs.values()}
        for old in self.data.iterdir() if self.data.is_dir() else ():
            if old.is_dir() and old.name not in live:
                shutil.rmtree(old, ignore_errors=True)

    def read(self, spark: SparkSession, keys: list[str], tasks: int) -> DataFrame:
        by_batch: dict[str, list[str]] = {}
        for k in keys:
            by_batch.setdefault(self.runs[k]["batch"], []).append(k)
        # a batch also holds the lines that are not events (`bad`), and damaged runs: neither is read
        frames = [spark.read.schema(EVENT_SCHEMA).parquet(str(self.data / batch))
                  .where(F.col("run_key").isin(ks) & ~F.col("bad"))
                  for batch, ks in sorted(by_batch.items())]
        out = frames[0]
        for f in frames[1:]:
            out = out.unionByName(f)
        return out.coalesce(tasks)


@dataclass
class Loaded:
    events: DataFrame
    runs: list[RunDir]
    skipped: list[Skipped]
    parsed: list[str]  # run labels parsed from JSON this time
    cached: list[str]  # run labels read from the Parquet cache


def load_events(spark: SparkSession, runs: list[RunDir], cache_dir: Path, tasks: int | None = None) -> Loaded:
    """`tasks`: how many tasks a scan of the events gets (analysis.session.tasks_per_stage; default:
    spark.default.parallelism)."""
    cache = EventCache(cache_dir)
    stale = [r for r in runs if not cache.fresh(r)]
    skipped: list[Skipped] = []
    parsed: list[RunDir] = []
    if stale:
        batch = cache.new_batch()
        target = cache.data / batch
        parse_lines(spark, stale).write.mode("overwrite").parquet(str(target))
        damaged = damaged_runs(spark.read.schema(EVENT_SCHEMA).parquet(str(target)), stale)
        for r in stale:
            if r.key in damaged:
                skipped.append(Skipped(str(r.path), damaged[r.key]))
        parsed = [r for r in stale if r.key not in damaged]
        cache.record(parsed, batch)
    good = [r for r in runs if r not in stale or r in parsed]
    tasks = tasks or spark.sparkContext.defaultParallelism
    events = cache.read(spark, [r.key for r in good], tasks) if good else spark.createDataFrame([], EVENT_SCHEMA)
    return Loaded(events, good, skipped, [r.run for r in parsed], [r.run for r in good if r not in parsed])
