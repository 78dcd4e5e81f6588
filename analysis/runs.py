"""Run directories: what the command line names, and which of them can be analysed.

`find_runs` expands the command line (run directories, directories of runs, globs)
and sorts out what cannot be analysed before Spark sees it: no history, an empty
one, no `verdict.json` or an INCOMPLETE one (the run never finished). A history the
oracle cannot read is found damaged later, by the task that reads it
(analysis.run_tables), and skipped the same way, by name and with the reason.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .run_tables import RunRef

HISTORY = "history.jsonl"
VERDICT = "verdict.json"


@dataclass
class RunDir:
    path: Path
    key: str  # stable: the cache partition of this run
    run: str  # unique label in this analysis (the directory name, disambiguated)
    kafka: str | None = None  # the scenario's cluster.kafka, for a history that does not name its release
    fingerprint: dict = field(default_factory=dict)

    @property
    def history(self) -> Path:
        return self.path / HISTORY

    def own(self, tables: dict[str, list[dict]]) -> dict[str, list[dict]]:
        """A run's tables, labelled for this analysis: its label on every row, and on its `runs` row
        the path as given and, where the history does not name the release it ran (a run recorded
        before releases were), the Kafka its scenario asked for (both this analysis's, not the
        history's)."""
        for rows in tables.values():
            for row in rows:
                row["run"] = self.run
        for row in tables["runs"]:
            row.update(path=str(self.path), kafka=row.get("kafka") or self.kafka)
        return tables

    @property
    def ref(self) -> RunRef:
        """What a Spark task needs to know of it (plain values: an executor imports no more than the oracle)."""
        return RunRef(self.key, self.run, str(self.path.resolve()))  # an executor's cwd is not ours


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
        try:
            _expand_one(pattern, found, missing)
        except (OSError, ValueError) as e:  # an overlong name, a NUL, a directory that cannot be listed
            missing.append(Skipped(pattern, f"cannot be read: {getattr(e, 'strerror', None) or e}"))
    unique: dict[Path, Path] = {}
    for p in found:
        unique.setdefault(p.resolve(), p)
    return list(unique.values()), missing


def _expand_one(pattern: str, found: list[Path], missing: list[Skipped]) -> None:
    """The run directories ``pattern`` names, into ``found``; what it names that is none, into ``missing``."""
    globbed = glob.has_magic(pattern)
    matches = sorted(glob.glob(os.path.expanduser(pattern))) if globbed else [pattern]
    matches = [m for m in matches if Path(m).exists()]
    if not matches:
        missing.append(Skipped(pattern, "no such run directory"))
        return
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


def failed_runs(runs: list[RunDir]) -> frozenset[str]:
    """The keys of the runs whose verdict is FAIL (a check found a violation)."""
    return frozenset(r.key for r in runs if _verdict_status(r.path) == "fail")


def _verdict_status(path: Path) -> str | None:
    try:
        return json.loads((path / VERDICT).read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        return None


def _kafka_version(path: Path) -> str | None:
    try:
        scenario = yaml.safe_load((path / "scenario.yaml").read_text(encoding="utf-8")) or {}
        kafka = (scenario.get("cluster") or {}).get("kafka")
        return str(kafka) if kafka is not None else None
    except (OSError, yaml.YAMLError, AttributeError):
        return None


def find_runs(patterns: list[str]) -> tuple[list[RunDir], list[Skipped]]:
    paths, skipped = _expand(patterns)
    runs: list[RunDir] = []
    labels: set[str] = set()
    for path in paths:
        reason = _precheck(path)
        if reason:
            skipped.append(Skipped(str(path), reason))
            continue
        name = label = path.resolve().name
        n = 1
        while label in labels:  # two runs of one name (in different directories): name~2, name~3, …
            n += 1
            label = f"{name}~{n}"
        labels.add(label)
        st = path.joinpath(HISTORY).stat()
        # an edit that keeps the size and puts the mtime back still moves the ctime
        runs.append(
            RunDir(
                path,
                run_key(path),
                label,
                _kafka_version(path),
                {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns},
            )
        )
    return runs, skipped
