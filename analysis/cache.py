"""Each run's tables, kept between analyses: a second analysis of the same runs reads them
instead of reading the histories again.

One JSON file per run (`<run key>.json`) holds its tables with what they were computed
from: the history's size, mtime and ctime, and a digest of the code that computed them (the
oracle, analysis.run_tables and analysis.schema). A run whose history changed, or an analysis by other
code, computes them again. What belongs to this analysis rather than to the history —
the run's label, its path as given, its Kafka line (scenario.yaml) — is set again on
reading. The cache is a convenience: a file that cannot be read or written is a miss.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from functools import lru_cache
from pathlib import Path

import orjson

import oracle

from . import run_tables, schema
from .run_tables import Row
from .runs import RunDir
from .schema import PER_RUN, typed

# what an older analysis kept here (parsed histories as Parquet): nothing reads it any more
_LEGACY = ("events", "manifest.json")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """What computed the tables: every source file of the oracle, analysis.run_tables and .schema."""
    digest = hashlib.sha1()
    for path in sorted(Path(oracle.__file__).parent.rglob("*.py")) + [Path(run_tables.__file__), Path(schema.__file__)]:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _well_formed(tables: object) -> dict[str, list[Row]] | None:
    """The kept tables, typed, if they are what `tables_of` returns (a hand-edited file may not be)."""
    if not (
        isinstance(tables, dict)
        and set(tables) == set(PER_RUN)
        and isinstance(tables["runs"], list)
        and len(tables["runs"]) == 1
    ):
        return None
    try:
        return {name: typed(name, rows) for name, rows in tables.items()}
    except (TypeError, ValueError, AttributeError):
        return None


class TableCache:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._swept = False

    def _path(self, run: RunDir) -> Path:
        return self.directory / f"{run.key}.json"

    def get(self, run: RunDir) -> dict[str, list[Row]] | None:
        """The run's tables, labelled for this analysis; None: not kept, kept from another history
        or other code, or unreadable."""
        try:
            kept = orjson.loads(self._path(run).read_bytes())
        except (OSError, ValueError):
            return None
        if (
            not isinstance(kept, dict)
            or kept.get("fingerprint") != run.fingerprint
            or kept.get("code") != code_digest()
        ):
            return None
        tables = _well_formed(kept.get("tables"))
        return run.own(tables) if tables is not None else None

    def put(self, run: RunDir, tables: dict[str, list[Row]]) -> None:
        """Keep the run's tables; a cache that cannot be written is only a cache (nothing is lost)."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if not self._swept:
                self._swept = True
                for name in _LEGACY:
                    legacy = self.directory / name
                    shutil.rmtree(legacy, ignore_errors=True) if legacy.is_dir() else legacy.unlink(missing_ok=True)
            target = self._path(run)
            tmp = target.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")
            tmp.write_bytes(orjson.dumps({"fingerprint": run.fingerprint, "code": code_digest(), "tables": tables}))
            tmp.replace(target)
        except OSError:
            pass
