"""Running the checks over a history and assembling the verdict.

`check_history` is the oracle's one entry point: events in, `Verdict` out.
Besides the checks it always measures rebalances and duplicates, because a
passing run's numbers are as interesting as a failing run's anomalies.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from .anomalies import Anomaly, CheckResult
from .checks import CHECK_NAMES, CHECKS
from .checks.duplicates import DuplicateReport, redeliveries_of
from .history import Event, History
from .rebalances import Rebalance, rebalances_of


@dataclass
class Verdict:
    checks: dict[str, CheckResult]
    rebalances: list[Rebalance]
    duplicates: DuplicateReport
    stats: dict[str, Any]

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def violations(self) -> list[Anomaly]:
        return [v for r in self.checks.values() for v in r.violations]

    @property
    def findings(self) -> list[Anomaly]:
        return [f for r in self.checks.values() for f in r.findings]

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "violations": [v.to_dict() for v in self.violations],
            "findings": [f.to_dict() for f in self.findings],
            "checks": {name: r.to_dict() for name, r in self.checks.items()},
            "rebalances": [r.to_dict() for r in self.rebalances],
            "duplicates": self.duplicates.to_dict(),
            "stats": self.stats,
        }

    def render(self) -> str:
        """A terminal-sized explanation: what failed and why, then what was noticed."""
        lines = [f"{'PASS' if self.ok else 'FAIL'}: {len(self.violations)} violations, {len(self.findings)} findings"]
        for name, r in self.checks.items():
            lines.append(f"  {name:<22} {r.status}" + (f" ({r.skipped})" if r.skipped else ""))
        for heading, anomalies in (("violations", self.violations), ("findings", self.findings)):
            if anomalies:
                lines.append(f"{heading}:")
                lines.extend(f"  [{a.check}/{a.kind}] {a.message}" for a in anomalies)
        for r in self.rebalances:
            took = f"{r.duration_ms:.0f} ms" if r.duration_ms is not None else r.status
            lines.append(f"rebalance to generation {r.generation}: {took}, trigger {r.trigger}")
        return "\n".join(lines)


def resolve_checks(checks: dict[str, dict | None] | None) -> dict[str, dict]:
    """Check name -> full options (defaults filled in); no names means every check.

    Unknown names and options are errors: a typo in a scenario must not
    silently turn a check off.
    """
    selected = checks or {name: {} for name in CHECK_NAMES}
    resolved = {}
    for name, options in selected.items():
        if name not in CHECKS:
            raise ValueError(f"unknown check {name!r}; known checks: {', '.join(CHECK_NAMES)}")
        defaults = CHECKS[name].OPTIONS
        unknown = set(options or {}) - set(defaults)
        if unknown:
            raise ValueError(f"check {name!r} has no option {', '.join(map(repr, sorted(unknown)))}; "
                             f"it accepts: {', '.join(defaults) or 'none'}")
        resolved[name] = {**defaults, **(options or {})}
    return resolved


def check_history(events: Iterable[Event] | History, checks: dict[str, dict | None] | None = None) -> Verdict:
    history = events if isinstance(events, History) else History(events)
    results = {name: CHECKS[name].check(history, options) for name, options in resolve_checks(checks).items()}
    return Verdict(results, rebalances_of(history), redeliveries_of(history), _stats(history))


def _stats(history: History) -> dict[str, Any]:
    ok, failed = history.commit_outcomes()
    finished = history.last("run_finished") or {}
    return {
        "run_id": history.run.get("run_id"),
        "scenario": history.run.get("scenario"),
        "protocol": history.protocol,
        "outcome": finished.get("outcome"),
        "events": len(history.events),
        "acked": sum(map(len, history.acked.values())),
        "consumed": sum(map(len, history.consumed.values())),
        "deliveries": sum(c.hi - c.lo + 1 for c in history.consumptions),
        "commits": {"ok": ok, "failed": failed},
        "members": [str(s) for s in history.members()],
    }
