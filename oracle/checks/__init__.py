"""The invariant catalogue: one module per check.

Each module has NAME, OPTIONS (the defaults of every option it accepts) and
`check(history, options) -> CheckResult`, a pure function of the history.
A check that rests on a protocol generation's fact names it as PREMISE
(the fact, and what losing it means for this check).
"""
from __future__ import annotations

from types import ModuleType

from ..protocols import GENERATIONS, LACKING
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


def not_applicable(protocol: str | None) -> dict[str, str]:
    """Check -> why its premise does not hold for this protocol generation (Jepsen's allowed
    error types): what the check would flag there is the generation's finding, not its failure.
    `compare` leaves these checks out; a scenario that selects them still has them judged."""
    generation = GENERATIONS.get(protocol)  # type: ignore[arg-type]
    reasons = {}
    for name, module in CHECKS.items():
        fact, consequence = getattr(module, "PREMISE", (None, ""))
        if generation is not None and fact is not None and not getattr(generation, fact):
            reasons[name] = ", ".join(filter(None, (f"{generation.about} {LACKING[fact]}", consequence)))
    return reasons
