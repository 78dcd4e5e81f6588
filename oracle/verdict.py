"""Running the checks over a history and assembling the verdict.

`check_history` is the oracle's one entry point: events in, `Verdict` out.
Besides the checks it always measures rebalances and duplicates, because a
passing run's numbers are as interesting as a failing run's anomalies. A check
(or a measurement) that raises is reported as its error and the others still run:
the verdict's status says what was judged — pass, fail, incomplete or error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from . import extensions
from . import vocabulary as ev
from .anomalies import Anomaly, CheckResult
from .checks import CHECK_NAMES, CHECKS, history_integrity
from .checks.duplicates import DuplicateReport, redeliveries_of
from .checks.duplicates import summary as duplicates_summary
from .checks.exclusive_ownership import SPLIT_BRAIN_MODES
from .events import shown
from .explain import Explanation, explain_rebalances
from .history import Event, History, TopicPartition, gc_paused
from .migrations import migrations
from .rebalances import Rebalance, rebalances_of, run_rebalances

T = TypeVar("T")

STATUSES = ("pass", "fail", "incomplete", "error")  # Verdict.status


@dataclass
class Verdict:
    """What the oracle says of one history.

    ``status`` is the word to act on: **fail** — a check found a violation;
    **error** — a check (or a measurement) raised, so a violation may be hidden
    behind it; **incomplete** — a check could not judge this history (a run that
    never reached ``phase: done``); **pass** — every check judged and held.
    """

    checks: dict[str, CheckResult]
    rebalances: list[Rebalance]
    duplicates: DuplicateReport
    stats: dict[str, Any]
    # The always-on measurements ("rebalances", "duplicates", "stats") that raised, each as a check that raised.
    measurements: dict[str, CheckResult] = field(default_factory=dict)
    explanations: dict[int, Explanation] = field(default_factory=dict)  # generation -> its critical path

    @property
    def status(self) -> str:
        if self.violations:
            return "fail"
        if self.errored_checks:
            return "error"
        return "incomplete" if self.skipped_checks else "pass"

    @property
    def ok(self) -> bool:
        return self.status == "pass"

    @property
    def violations(self) -> list[Anomaly]:
        return [v for r in self.checks.values() for v in r.violations]

    @property
    def findings(self) -> list[Anomaly]:
        return [f for r in self.checks.values() for f in r.findings]

    @property
    def skipped_checks(self) -> dict[str, str]:
        """Check -> why it could not judge this history."""
        return {name: r.skipped for name, r in self.checks.items() if r.skipped}

    @property
    def errored_checks(self) -> dict[str, str]:
        """Check (or "<name> measurement") -> the exception it raised."""
        return {
            **{name: r.error for name, r in self.checks.items() if r.error},
            **{f"{name} measurement": r.error for name, r in self.measurements.items()},
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "ok": self.ok,  # status == "pass"; kept for readers of older verdicts
            "skipped_checks": self.skipped_checks,
            "errored_checks": self.errored_checks,
            "violations": [v.to_dict() for v in self.violations],
            "findings": [f.to_dict() for f in self.findings],
            "checks": {name: r.to_dict() for name, r in self.checks.items()},
            "measurements": {name: r.to_dict() for name, r in self.measurements.items()},
            "rebalances": [{**r.to_dict(), **self.explained(r)} for r in self.rebalances],
            "duplicates": self.duplicates.to_dict(),
            "stats": self.stats,
        }

    def explained(self, r: Rebalance) -> dict[str, Any]:
        x = self.explanations.get(r.generation)
        return x.to_dict() if x else {"explanation": None, "critical_path": [], "waited_for": None, "cause": None}

    def render(self) -> str:
        """A terminal-sized explanation: what failed and why, then what was noticed."""
        lines = [
            f"{self.status.upper()}: "
            + headline(len(self.violations), len(self.findings), self.skipped_checks, self.errored_checks)
        ]
        for name, r in self.checks.items():
            why = r.error or r.skipped
            lines.append(f"  {name:<22} {r.status}" + (f" ({why})" if why else ""))
        for name, r in self.measurements.items():
            lines.append(f"  {name + ' measurement':<22} {r.status} ({r.error})")
        lines.append(f"duplicates: {duplicates_summary(self.duplicates.to_dict())}")
        if self.stats:
            lines.append(clocks_line(self.stats))
            lines.extend(f"fault {line}" for line in fault_lines(self.stats))
            lines.extend(f"migration {line}" for line in migration_lines(self.stats))
        for heading, anomalies in (("violations", self.violations), ("findings", self.findings)):
            if anomalies:
                lines.append(f"{heading}:")
                lines.extend(f"  [{a.check}/{a.kind}] {a.message}" for a in anomalies)
        for r in self.rebalances:
            took = f"{r.duration_ms:.0f} ms" if r.duration_ms is not None else r.status
            x = self.explanations.get(r.generation)
            lines.append(
                f"rebalance to generation {r.generation}: {took}, trigger {r.trigger}"
                + (f"\n  {x.sentence}" if x else "")
            )
        return "\n".join(lines)


def headline(violations: int, findings: int, skipped: dict[str, str], errored: dict[str, str]) -> str:
    """The verdict line after its status word: counts, then what was not judged and why.

    "0 violations, 3 findings — no-loss, convergence skipped (no `phase: done` …)"
    """
    notes = [f"{name} raised {error}" for name, error in errored.items()]
    by_reason: dict[str, list[str]] = {}
    for name, reason in skipped.items():
        by_reason.setdefault(reason, []).append(name)
    notes += [f"{', '.join(names)} skipped ({reason})" for reason, names in by_reason.items()]
    return f"{violations} violations, {findings} findings" + (" — " + "; ".join(notes) if notes else "")


class CheckOptionError(ValueError):
    """A check, or a check's option, that a scenario or history names and the oracle cannot use."""

    def __init__(self, check: str, reason: str):
        self.check, self.reason = check, reason
        super().__init__(f"{check}: {reason}")


MAX_SECONDS = 10**9  # ~30 years: any longer is a typo, and would overflow a float in milliseconds


def _seconds(v: Any) -> bool:
    return type(v) in (int, float) and 0 <= v <= MAX_SECONDS  # not true, not NaN (it compares false)


def _count(v: Any) -> bool:
    return type(v) is int and v >= 0


# What each option accepts (a check module's OPTIONS holds its default). Validated when a
# scenario is loaded, so `max: many` is refused before a run, not after it.
OPTION_RULES: dict[tuple[str, str], tuple[Callable[[Any], bool], str]] = {
    ("commit-monotonicity", "allow_reset"): (lambda v: type(v) is bool, "true or false"),
    ("convergence", "within_s"): (_seconds, "a number of seconds, 0 to 10⁹"),
    ("convergence", "stall_s"): (
        lambda v: v is None or _seconds(v),
        "a number of seconds, 0 to 10⁹, or null (the default)",
    ),
    ("convergence", "loop_rebalances"): (
        lambda v: _count(v) and v >= 2,
        "a whole number ≥ 2 (how many unexplained rebalances in a row make a rebalance-loop)",
    ),
    ("duplicates", "max"): (lambda v: v is None or _count(v), "a whole number ≥ 0, or null (no limit)"),
    ("exclusive-ownership", "split_brain"): (
        lambda v: v in SPLIT_BRAIN_MODES,
        f"one of {', '.join(map(repr, SPLIT_BRAIN_MODES))}",
    ),
}


def _option_rule(check: str, option: str, default: Any) -> tuple[Callable[[Any], bool], str]:
    """An option without a rule above takes what its default is: a flag, a number 0 to 10⁹, a string."""
    if (check, option) in OPTION_RULES:
        return OPTION_RULES[check, option]
    if type(default) is bool:
        return (lambda v: type(v) is bool), "true or false"
    if type(default) is str:
        return (lambda v: type(v) is str), "a string"
    return (lambda v: (v is None and default is None) or _seconds(v)), "a number, 0 to 10⁹" + (
        ", or null" if default is None else ""
    )


def resolve_checks(checks: dict[str, dict | None] | None, plugins: object = None) -> dict[str, dict]:
    """Check name -> full options (defaults filled in); no names means every check installed.

    Unknown names and options, and option values a check cannot use, are errors
    (CheckOptionError): a typo in a scenario must not silently turn a check off,
    nor a bad value fail only once the run is over. ``plugins``: what the run recorded
    (run_started's), to say which plugin an unknown check came from.
    """
    if checks is not None and not isinstance(checks, dict):
        raise CheckOptionError("checks", f"expected check name -> options, got {type(checks).__name__}")
    selected = checks or {name: {} for name in CHECK_NAMES}
    resolved = {}
    for name, options in selected.items():
        if name not in CHECKS:
            raise CheckOptionError(
                str(name),
                extensions.not_installed(extensions.CHECKS, name, plugins)
                or f"unknown check {name!r}; known checks: {', '.join(CHECK_NAMES)}",
            )
        if options is not None and not isinstance(options, dict):
            raise CheckOptionError(name, f"options are a mapping of option -> value (or nothing), not {shown(options)}")
        defaults = CHECKS[name].OPTIONS
        unknown = set(options or {}) - set(defaults)
        if unknown:
            raise CheckOptionError(
                name,
                f"has no option {', '.join(sorted(map(repr, unknown)))}; it accepts: {', '.join(defaults) or 'none'}",
            )
        for option, value in (options or {}).items():
            accepts, expected = _option_rule(name, option, defaults[option])
            if not accepts(value):
                raise CheckOptionError(name, f"{option} must be {expected}, not {shown(value)}")
        resolved[name] = {**defaults, **(options or {})}
    return resolved


def check_history(events: Iterable[Event] | History, checks: dict[str, dict | None] | None = None) -> Verdict:
    """Every selected check, then the measurements. A check that raises is that check's error
    (the verdict's status says so); it never takes the other checks down with it."""
    with gc_paused():  # millions of long-lived objects, no cycles: collections would only rescan them
        history = events if isinstance(events, History) else History(events)
        # the history's own promises first, whatever the scenario selected (oracle/integrity.py)
        results = {history_integrity.NAME: _guarded(history_integrity.check, history, {})}
        unread = unrecognised(history)
        results.update(
            (name, CheckResult(skipped=unread) if unread else _guarded(CHECKS[name].check, history, options))
            for name, options in resolve_checks(checks, history.run.get("plugins")).items()
        )
        failed: dict[str, CheckResult] = {}
        rebalances = _measured(failed, "rebalances", run_rebalances, history, [])  # teardown ones are no statistic
        duplicates = _measured(failed, "duplicates", redeliveries_of, history, DuplicateReport([]))
        stats = _measured(failed, "stats", run_stats, history, {})
        explanations = _measured(failed, "explanations", explain_rebalances, history, {})
    return Verdict(results, rebalances, duplicates, stats, failed, explanations)


def unrecognised(history: History) -> str | None:
    """Why no check may judge this history, if a log the run learns protocol steps from was not
    recognised (``log_unrecognised``, whoever wrote it: a member of its client's log, the harness of a
    broker's): its events are half of what happened, and a verdict on them would be a guess. None if
    every log was read."""
    said = {
        (e.get(ev.SOURCE) or "?", e.get("log") or "?", e.get("missing") or "?", e.get("client_version"))
        for e in history.named(ev.LOG_UNRECOGNISED)
    }
    if not said:
        return None
    parts = [
        f"{source}: {missing} unreadable in its {log}" + (f" ({version})" if version else "")
        for source, log, missing, version in sorted(said, key=str)
    ]
    return "log lines not recognised, " + "; ".join(parts[:5]) + (f"; {len(parts) - 5} more" if len(parts) > 5 else "")


def _guarded(check: Callable[[History, dict], CheckResult], history: History, options: dict) -> CheckResult:
    try:
        return check(history, options)
    except Exception as e:  # a bug in one check must not hide what the others found
        return CheckResult.raised(e)


def _measured(
    failed: dict[str, CheckResult], name: str, measure: Callable[[History], T], history: History, empty: T
) -> T:
    try:
        return measure(history)
    except Exception as e:
        failed[name] = CheckResult.raised(e)
        return empty


def run_stats(history: History) -> dict[str, Any]:
    """A run's counts: what the verdict's `stats` says, and the analysis's runs table reads."""
    ok, failed = history.commit_outcomes()
    finished = history.last(ev.RUN_FINISHED) or {}
    return {
        "run_id": history.run.get("run_id"),
        "scenario": history.run.get("scenario"),
        "protocol": history.protocol,
        # every generation a member ran, the run's first: more than one after a protocol migration
        "protocols": list(history.protocols),
        "outcome": finished.get("outcome"),
        "events": len(history.events),
        "acked": sum(map(len, history.acked.values())),
        "consumed": sum(map(len, history.consumed.values())),
        "deliveries": sum(c.hi - c.lo + 1 for c in history.consumptions),
        "commits": {"ok": ok, "failed": failed},
        "members": [str(s) for s in history.members()],
        # the harness's own end-of-run LeaveGroups: counted here, in no statistic
        "teardown_rebalances": sum(r.teardown for r in rebalances_of(history)),
        "partitions_added": _added_partitions_owned(history),
        # t+ (every message's times) counts from the run's start; the faults' at_s from the workload's
        "workload_started_t_s": None
        if history.workload_started is None
        else round((history.workload_started - history.t0) / 1000, 3),
        "faults": _faults_done(history),
        # a protocol migration's hand-overs, per member moved (oracle/migrations.py): empty when none
        "migrations": migrations(history),
        # chaos the scenario asked for that did not happen (or was not undone): no check's to judge,
        # but a PASS without it is not the run the scenario describes
        "faults_failed": [
            {
                "fault_id": e.get("fault_id"),
                "kind": e.get("kind"),
                "target": e.get("target"),
                "step": "inject" if e["name"] == ev.FAULT_FAILED else "heal",
                "error": e.get("error"),
            }
            for e in history.named(ev.FAULT_FAILED, ev.FAULT_HEAL_FAILED)
        ],
    }


def _faults_done(history: History) -> list[dict]:
    """Each fault injected, on both clocks: `at_s` as scheduled (from the workload's start, None for
    one fired by a trigger) and when it started and healed (`*_t_s`, from the run's start)."""
    scheduled = {f.get("fault_id"): f for f in history.run.get("faults") or () if isinstance(f, dict)}
    healed = {e.get("fault_id"): e for e in history.named(ev.FAULT_HEALED)}
    acted: dict = {}  # fault id -> the messages the message proxy acted on for it
    for m in history.named(ev.MESSAGE_FAULTED):
        acted[m.get("fault_id")] = acted.get(m.get("fault_id"), 0) + 1
    out = []
    for e in history.named(ev.FAULT_STARTED):
        spec, heal = scheduled.get(e.get("fault_id")) or {}, healed.get(e.get("fault_id"))
        out.append(
            {
                "fault_id": e.get("fault_id"),
                "kind": e.get("kind"),
                "target": e.get("target"),
                "at_s": spec.get("at_s") if spec.get("on") is None else None,
                "started_t_s": round((e["mono_ms"] - history.t0) / 1000, 3),
                # when the heal began, as the run's live line says (a broker's restart takes seconds)
                "healed_t_s": round((heal.get("started_mono_ms", heal["mono_ms"]) - history.t0) / 1000, 3)
                if heal
                else None,
                "healed_how": heal.get("how") if heal else None,
                **({"messages": acted[e.get("fault_id")]} if e.get("fault_id") in acted else {}),
            }
        )
    return out


def fault_lines(stats: dict) -> list[str]:
    """A line per fault the run injected, its scheduled time on both clocks:
    'f1 pause consumer-2: scheduled at workload+8s (at_s 8), started t+13.614s, healed t+25.621s (scheduled)'."""
    lines = []
    for f in stats.get("faults") or ():
        when = (
            "fired by its trigger"
            if f["at_s"] is None
            else f"scheduled at workload+{f['at_s']:g}s (at_s {f['at_s']:g})"
        )
        healed = (
            f"healed t+{f['healed_t_s']:.3f}s ({f['healed_how']})" if f["healed_t_s"] is not None else "never healed"
        )
        messages = f"; the message proxy acted on {f['messages']} message(s)" if f.get("messages") else ""
        lines.append(
            f"{f['fault_id']} {f['kind']} {f['target'] or ''}: {when}, started t+{f['started_t_s']:.3f}s, {healed}"
            + messages
        )
    return lines


def migration_lines(stats: dict) -> list[str]:
    """A line per member a protocol migration moved: 'consumer-2#2 classic-eager -> consumer: left
    at t+31.512s; joined +0.41 s, owning +1.52 s, group stable +2.10 s'."""

    def after(ms: float | None) -> str:
        return "never" if ms is None else f"+{ms / 1000:.2f} s"

    return [
        f"{m['member']}#{m['incarnation']} {m['from']} -> {m['to']}: left at t+{m['left_t_s']:.3f}s; joined "
        f"{after(m['joined_ms'])}, owning {after(m['owning_ms'])}, group stable {after(m['stable_ms'])}"
        for m in stats.get("migrations") or ()
    ]


def clocks_line(stats: dict) -> str:
    """What the times in a verdict count from."""
    start = stats.get("workload_started_t_s")
    return "times: t+ counts from the run's start; workload+ (the faults' at_s) from the workload's start" + (
        f", which was t+{start:.3f}s" if start is not None else " (none recorded)"
    )


def _added_partitions_owned(history: History) -> list[dict]:
    """Per `partitions_added` (or pattern-matching `topic_created`): how long until a member was
    first assigned the last of the new partitions — the group noticing them and rebalancing to
    them (None: not every one was ever assigned)."""
    out = []
    count = {t["topic"]: int(t["partitions"]) for t in history.run.get("topics") or ()}  # as each change left it
    for e in history.named(ev.PARTITIONS_ADDED, ev.TOPIC_CREATED):
        before = 0 if e["name"] == ev.TOPIC_CREATED else count.get(e["topic"], 0)
        count[e["topic"]] = int(e["partitions"])
        if not e.get("subscribed", True):
            continue
        added = [TopicPartition(e["topic"], p) for p in range(before, int(e["partitions"]))]
        assigned = [history.first_assigned(tp) for tp in added]
        out.append(
            {
                "topic": e["topic"],
                "partitions": int(e["partitions"]),
                "added": len(added),
                "owned_after_ms": round(max(assigned) - e["mono_ms"], 3) if added and None not in assigned else None,
            }
        )
    return out
