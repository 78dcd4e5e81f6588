"""convergence: after the last fault heals the group settles, and lag drains.

From the last `fault_healed` (or the start of the workload phase when the
scenario has no faults), the live members' current assignments must cover
every partition exactly once within `within_s` seconds and stay that way
until the run is done. The last lag sample, if any, must show zero lag: a
group that looks stable while a partition stalls has not converged.
"""
from __future__ import annotations

from ..anomalies import Anomaly, CheckResult, duration
from ..history import Event, History, Instant, TopicPartition, render_partitions
from ..ownership import ownership_of

NAME = "convergence"
OPTIONS = {"within_s": 60}


def check(history: History, options: dict) -> CheckResult:
    done = history.done
    if not done:
        return CheckResult(skipped="no `phase: done` event: the run ended before recovery finished")
    healed = history.last("fault_healed")
    anchor = healed or history.first("phase", phase="workload") or history.events[0]
    since = anchor["mono_ms"]
    since_what = f"fault {healed.get('fault_id')} healed" if healed else "the workload started"
    # Judge up to `done`, or the first end-of-run stop if the harness stopped members first.
    stops = [e["mono_ms"] for e in history.named("consumer_stopped") if e.get("reason") == "end-of-run"]
    horizon = min([done["mono_ms"], *stops])

    ownership = ownership_of(history)
    changes = sorted({t for s in ownership.sessions for t in (s.start_ms, s.end_ms) if since < t < horizon})
    converged_at: float | None = None
    for t in [since, *changes]:
        problem = _problem(history, ownership.owners_at(t))
        converged_at = None if problem else (t if converged_at is None else converged_at)
    result = CheckResult(detail={"since": since_what, "within_s": options["within_s"]})
    times = {"since": Instant.of(anchor), "horizon": Instant(None, horizon)}
    if converged_at is None:
        result.violations.append(Anomaly(
            NAME, "not-converged",
            f"the group never settled after {since_what} ({history.clock(since)}): "
            f"at {history.clock(horizon)} {problem}", times=times))
    else:
        took = converged_at - since
        result.detail["converged_after_ms"] = took
        if took > options["within_s"] * 1000:
            result.violations.append(Anomaly(
                NAME, "slow-convergence",
                f"the group settled {duration(took)} after {since_what} ({history.clock(since)}), "
                f"later than the allowed {options['within_s']} s", times=times))
    lag = _lag(history, history.last("lag_sampled"))
    if lag:
        result.violations.append(lag)
    return result


def _problem(history: History, owners: dict) -> str | None:
    """What keeps the current assignment from covering every partition exactly once."""
    unowned = [tp for tp in history.partitions if not owners.get(tp)]
    shared = [f"{tp} owned by {' and '.join(str(s.slot) for s in owners[tp])}"
              for tp in history.partitions if len(owners.get(tp, ())) > 1]
    parts = ([f"{render_partitions(unowned)} unowned"] if unowned else []) + shared
    return "; ".join(parts) or None


def _lag(history: History, sample: Event | None) -> Anomaly | None:
    if not sample:
        return None
    behind: dict[str, str] = {}
    for p in sample.get("partitions") or ():
        # No committed offset: the whole log is behind.
        lag = p.get("lag") if p.get("lag") is not None else p.get("high_watermark") or 0
        if lag:
            tp = str(TopicPartition.of(p))
            behind[tp] = f"{tp} lag {lag} (committed {p.get('committed')}, high watermark {p.get('high_watermark')})"
    if not behind:
        return None
    return Anomaly(
        NAME, "lag-not-drained",
        f"lag did not drain: at the last sample ({history.clock(sample['mono_ms'])}) " + "; ".join(behind.values()),
        partition=next(iter(behind)) if len(behind) == 1 else None, times={"sampled": Instant.of(sample)})
