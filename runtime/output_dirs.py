"""Output directories given on the command line (--runs-dir, --out, -o, …): one answer for a
path that cannot be one, whichever command writes there — exit code 2 naming the option, the
path and the reason, before anything starts; never an OSError's traceback. In runtime/ so the
harness and the analysis (which may not import the harness) share it."""

import os
from pathlib import Path

import click

from runtime.errors import SetupError


def make_dirs(path: Path, option: str = "") -> Path:
    """``mkdir -p``; a path that cannot be a directory is bad input (SetupError), not a traceback."""
    refuse_output_dir(path, option)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as e:
        raise unusable_dir(path, e, option) from None
    return path


# Linux's NAME_MAX and PATH_MAX: past them every call fails with ENAMETOOLONG (a long name only
# after `mkdir -p` made its parents).
NAME_MAX, PATH_MAX = 255, 4096


def output_dir_problem(path: Path) -> str | None:
    """Why ``path`` cannot be (made) a directory to write into, as far as can be told without
    writing; None when nothing is in the way. Asked before anything starts, so a bad output path
    costs no cluster, no Spark session and no half-made tree; what only a write can tell (a
    read-only mount, /proc) the write reports through the same SetupError."""
    text = str(path)
    if "\0" in text:
        return "contains a NUL byte"
    if too_long := next((part for part in path.parts if len(os.fsencode(part)) > NAME_MAX), None):
        return f"a name longer than {NAME_MAX} bytes ({too_long[:40]}…)"
    if len(os.fsencode(os.path.abspath(text))) >= PATH_MAX:
        return f"longer than {PATH_MAX - 1} bytes"
    blocker = next((p for p in (path, *path.parents) if _a_file(p)), None)
    if blocker is not None:
        return "a file, not a directory" if blocker == path else f"cannot be made a directory: {blocker} is a file"
    return None


def _a_file(path: Path) -> bool:
    """Something other than a directory is there. A path stat cannot reach (too long, no
    permission) is left for the write to report."""
    try:
        return path.exists() and not path.is_dir()
    except OSError:
        return False


def refuse_output_dir(path: Path, option: str = "") -> None:
    """SetupError (exit 2) naming ``path`` (and the option that gave it) when output_dir_problem finds one."""
    if why := output_dir_problem(path):
        raise SetupError(f"{_named(path, option)}: {why}")


def _named(path: Path, option: str) -> str:
    shown = repr(str(path)) if "\0" in str(path) else str(path)  # a NUL would vanish from the terminal
    return f"{option} {shown}" if option else shown


def unusable_dir(path: Path, e: OSError | ValueError, option: str = "") -> SetupError:
    """What a failed mkdir says, in the user's words: the path, and the reason without errno noise."""
    if isinstance(e, (NotADirectoryError, FileExistsError)) and (why := output_dir_problem(path)):
        return SetupError(f"{_named(path, option)}: {why}")
    reason = getattr(e, "strerror", None) or str(e)
    return SetupError(f"{_named(path, option)}: cannot be made a directory: {reason}")


class SafePath(click.Path):
    """click.Path, refusing a NUL as a usage error: click's own stat() raises ValueError on one
    (no argv can hold a NUL; a caller in-process, a test, a wrapper script can)."""

    def convert(self, value, param, ctx):
        if "\0" in str(value):
            self.fail(f"{str(value)!r}: contains a NUL byte", param, ctx)
        return super().convert(value, param, ctx)
