"""Where the lab keeps downloads, process registrations and runs."""

import os
from datetime import datetime, timezone
from pathlib import Path

from runtime.errors import SetupError
from runtime.home import lab_home


def components_dir() -> Path:
    return lab_home() / "components"


def registry_dir() -> Path:
    return lab_home() / "processes"


def ports_dir() -> Path:
    """The ports each harness on this machine has claimed (harness.cluster.ports)."""
    return lab_home() / "ports"


def default_runs_dir() -> Path:
    return Path(os.environ.get("REBALANCE_LAB_RUNS", "runs"))


STAMP_FORMAT = "%Y%m%dT%H%M%SZ"


def longest_stamped_name(name: str) -> str:
    """The longest a run directory new_stamped_dir makes for ``name`` may be called (up to the 99th in a second)."""
    return f"{datetime.now(timezone.utc).strftime(STAMP_FORMAT)}-{name}-99"


def new_stamped_dir(parent: Path, name: str, kind: str = "") -> Path:
    """``parent/[<kind>-]<UTC time>-<name>``, created now; one made in the same second gets ``-2``, ``-3``, …"""
    stamp = datetime.now(timezone.utc).strftime(STAMP_FORMAT)
    base = parent / f"{kind + '-' if kind else ''}{stamp}-{name}"
    path, n = base, 1
    while True:
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            n += 1
            path = Path(f"{base}-{n}")
        except NotADirectoryError:
            raise _in_the_way(parent) from None


def make_dirs(path: Path) -> Path:
    """``mkdir -p``; a file in the way is bad input (SetupError), not a traceback."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (NotADirectoryError, FileExistsError):
        raise _in_the_way(path) from None
    return path


def _in_the_way(path: Path) -> SetupError:
    blocker = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), path)
    return SetupError(f"{path}: a file, not a directory" if blocker == path
                      else f"{path}: cannot be made a directory: {blocker} is a file")
