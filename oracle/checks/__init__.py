"""The invariant catalogue: one module per check.

Each module has NAME, OPTIONS (the defaults of every option it accepts) and
`check(history, options) -> CheckResult`, a pure function of the history.
"""
from __future__ import annotations

from types import ModuleType

from . import (
    assignment_validity,
    commit_monotonicity,
    contiguity,
    convergence,
    duplicates,
    exclusive_ownership,
    fenced_commits,
    no_loss,
)

CHECKS: dict[str, ModuleType] = {m.NAME: m for m in (
    exclusive_ownership,
    fenced_commits,
    commit_monotonicity,
    no_loss,
    contiguity,
    duplicates,
    convergence,
    assignment_validity,
)}
CHECK_NAMES: tuple[str, ...] = tuple(CHECKS)
