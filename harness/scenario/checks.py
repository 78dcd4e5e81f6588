"""The ``checks:`` section: which of the oracle's checks judge the run, with which options.

The oracle owns the checks and their options (oracle/verdict.py, ``resolve_checks``); a
scenario's are validated by the same code when it is loaded, so a bad option is refused
before anything runs rather than after the run, by the verdict.
"""

from __future__ import annotations

from oracle import CHECK_NAMES
from oracle.verdict import CheckOptionError, resolve_checks


def check_problems(checks: dict[str, dict | None] | None) -> list[str]:
    """``checks.<name>: reason`` for each unknown check or bad option (None: every check, defaults)."""
    problems = []
    for name, options in (checks or {}).items():
        if name not in CHECK_NAMES:
            problems.append(f"checks.{name}: unknown check (known: {', '.join(CHECK_NAMES)})")
            continue
        try:
            resolve_checks({name: options})
        except CheckOptionError as e:
            problems.append(f"checks.{name}: {e.reason}")
    return problems
