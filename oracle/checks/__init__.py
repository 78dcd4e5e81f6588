"""The invariant catalogue: one module per check, and the checks installed plugins add.

Each check has NAME, OPTIONS (the defaults of every option it accepts) and
`check(history, options) -> CheckResult`, a pure function of the history.
A check that rests on a protocol generation's fact names it as PREMISE
(the fact, and what losing it means for this check).

A check of one's own is a module (or any object) with the same three names, registered
under the entry point group ``rebalance_lab.checks`` by its name (oracle/extensions.py,
docs/extending.md). CHECKS holds the built-in ones, then the plugins', loaded on first use.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from .. import extensions
from ..protocols import GENERATIONS, LACKING
from . import (
    assignment_validity,
    client_health,
    commit_monotonicity,
    contiguity,
    convergence,
    duplicates,
    exclusive_ownership,
    fenced_commits,
    history_integrity,
    no_loss,
)

BUILT_IN: dict[str, ModuleType] = {
    m.NAME: m
    for m in (
        exclusive_ownership,
        fenced_commits,
        commit_monotonicity,
        no_loss,
        contiguity,
        duplicates,
        convergence,
        assignment_validity,
        client_health,
    )
}

CHECKS: dict[str, Any]  # name -> the check (a module of ours, a plugin's module or object)
CHECK_NAMES: tuple[str, ...]


def _not_a_check(obj: object, plugin: extensions.Plugin) -> str | None:
    if getattr(obj, "NAME", None) != plugin.name:
        return (
            f"its NAME is {getattr(obj, 'NAME', None)!r}, its entry point's name {plugin.name!r}: one name, said twice"
        )
    if not isinstance(getattr(obj, "OPTIONS", None), dict):
        return "it has no OPTIONS dict (each option it accepts, with its default; {} for none)"
    if not callable(getattr(obj, "check", None)):
        return "it has no check(history, options) function"
    return None


def _registry() -> dict[str, Any]:
    """CHECKS, the plugins' checks loaded the first time it is asked for."""
    if "CHECKS" not in globals():
        checks = {**BUILT_IN, **extensions.load(extensions.CHECKS, _TAKEN, _not_a_check)}
        globals().update(CHECKS=checks, CHECK_NAMES=tuple(checks))
    return globals()["CHECKS"]


# history-integrity judges every history, whatever the scenario selected (oracle.verdict): no plugin may take its name.
_TAKEN = (*BUILT_IN, history_integrity.NAME)


def __getattr__(name: str):
    if name not in ("CHECKS", "CHECK_NAMES"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _registry()
    return globals()[name]


def missing_checks(recorded: object) -> list[dict]:
    """The checks a run's plugins added (run_started's ``plugins``) that are not installed here."""
    return (
        [
            p
            for p in recorded
            if isinstance(p, dict) and p.get("group") == extensions.CHECKS and p.get("name") not in _registry()
        ]
        if isinstance(recorded, list)
        else []
    )


def not_applicable(protocol: str | None) -> dict[str, str]:
    """Check -> why its premise does not hold for this protocol generation (Jepsen's allowed
    error types): what the check would flag there is the generation's finding, not its failure.
    `compare` leaves these checks out; a scenario that selects them still has them judged."""
    generation = GENERATIONS.get(protocol)  # type: ignore[arg-type]
    reasons = {}
    for name, module in _registry().items():
        fact, consequence = getattr(module, "PREMISE", (None, ""))
        if generation is not None and fact is not None and not getattr(generation, fact):
            lacking = LACKING.get(fact, f"lacks {fact}")  # a plugin's premise may be a fact no built-in check rests on
            reasons[name] = ", ".join(filter(None, (f"{generation.about} {lacking}", consequence)))
    return reasons
