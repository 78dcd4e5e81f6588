"""Where the lab keeps downloads, process registrations and runs."""

import contextlib
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

from runtime.home import lab_home
from runtime.output_dirs import make_dirs, refuse_output_dir, unusable_dir

__all__ = ["make_dirs", "refuse_output_dir"]  # the helpers every command that writes uses


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
    return f"{datetime.now(UTC).strftime(STAMP_FORMAT)}-{name}-99"


def new_stamped_dir(parent: Path, name: str, kind: str = "") -> Path:
    """``parent/[<kind>-]<UTC time>-<name>``, created now; one made in the same second gets ``-2``, ``-3``, …"""
    stamp = datetime.now(UTC).strftime(STAMP_FORMAT)
    base = parent / f"{kind + '-' if kind else ''}{stamp}-{name}"
    refuse_output_dir(parent)
    path, n = base, 1
    while True:
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            n += 1
            path = Path(f"{base}-{n}")
        except (OSError, ValueError) as e:
            raise unusable_dir(parent, e) from None


LATEST = "latest"  # runs/latest: the newest run directory (a relative symlink)


def point_latest(run_dir: Path) -> None:
    """``<its parent>/latest`` -> ``run_dir`` (relative: the runs directory may move), replaced
    atomically (a symlink made under a temporary name, renamed over the old one): a reader never
    finds it missing. A ``latest`` that is not a symlink is someone's own: left alone. Best effort:
    a directory that takes no symlink costs the run nothing."""
    link = run_dir.parent / LATEST
    temporary = run_dir.parent / f".{LATEST}-{os.getpid()}-{threading.get_ident()}"
    try:
        if link.exists() and not link.is_symlink():
            return
        temporary.symlink_to(run_dir.name)
        os.replace(temporary, link)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
