"""Each run's tables, kept between analyses: a second analysis of the same runs reads them
instead of reading the histories again.

One JSON file per run (`<run key>.json`) holds its tables with what they were computed
from: the history's size and mtime, and a digest of the code that computed them (the
oracle and analysis.run_tables). A run whose history changed, or an analysis by other
code, computes them again. The run's label is not kept: it is this analysis's.
"""
from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

import orjson

import oracle

from . import run_tables
from .run_tables import Row
from .runs import RunDir


@lru_cache(maxsize=1)
def code_digest() -> str:
    """What computed the tables: every source file of the oracle, and analysis.run_tables."""
    digest = hashlib.sha1()
    for path in sorted(Path(oracle.__file__).parent.rglob("*.py")) + [Path(run_tables.__file__)]:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


class TableCache:
    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def _path(self, run: RunDir) -> Path:
        return self.directory / f"{run.key}.json"

    def get(self, run: RunDir) -> dict[str, list[Row]] | None:
        """The run's tables, labelled for this analysis; None: not kept, or kept from another
        history or other code."""
        try:
            kept = orjson.loads(self._path(run).read_bytes())
        except (OSError, ValueError):
            return None
        if not isinstance(kept, dict) or kept.get("fingerprint") != run.fingerprint or kept.get("code") != code_digest():
            return None
        tables = kept.get("tables")
        if not isinstance(tables, dict):
            return None
        for rows in tables.values():
            for row in rows:
                row["run"] = run.run
        return tables

    def put(self, run: RunDir, tables: dict[str, list[Row]]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self._path(run)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"fingerprint": run.fingerprint, "code": code_digest(), "tables": tables}))
        tmp.replace(target)
