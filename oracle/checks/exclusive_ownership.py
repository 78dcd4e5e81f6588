"""exclusive-ownership: one owner per partition at a time.

Within a generation two owners at once is a protocol bug (violation). Across
generations an overlap is what a paused "zombie" does: it still believes it
owns a partition the group already gave away, until it learns it was lost.
That is expected under a pause (a finding) unless both owners actually
processed records of the partition in the overlap: split brain, which the
scenario can declare fatal with `split_brain: fail`.
"""
from __future__ import annotations

from ..anomalies import Anomaly, CheckResult, duration, members, plural
from ..history import History, Instant
from ..offsets import OffsetSet
from ..ownership import Session, ownership_of

NAME = "exclusive-ownership"
OPTIONS = {"split_brain": "finding"}  # or "fail"
SPLIT_BRAIN_MODES = ("finding", "fail")


def check(history: History, options: dict) -> CheckResult:
    if options["split_brain"] not in SPLIT_BRAIN_MODES:
        raise ValueError(f"{NAME}: split_brain must be one of {SPLIT_BRAIN_MODES}, not {options['split_brain']!r}")
    ownership = ownership_of(history)
    result = CheckResult()
    overlaps = 0
    for tp in ownership.partitions():
        sessions = ownership.of_partition(tp)
        for i, older in enumerate(sessions):
            for newer in sessions[i + 1:]:
                if newer.start_ms >= older.end_ms:
                    break  # sorted by start: nothing later overlaps `older` either
                window = older.overlap(newer) if older.slot != newer.slot else None
                if window is None:
                    continue
                overlaps += 1
                start, end = window[0], window[1] or history.end
                shared = sorted(set(older.generations) & set(newer.generations))
                if shared:
                    result.violations.append(_two_owners(history, older, newer, shared[0], start, end))
                    continue
                anomaly = _zombie(history, older, newer, start, end)
                split = anomaly.kind == "split-brain" and options["split_brain"] == "fail"
                (result.violations if split else result.findings).append(anomaly)
    result.findings.extend(_unowned_consumption(history))
    result.detail = {"sessions": len(ownership.sessions), "overlapping_sessions": overlaps}
    return result


def _two_owners(history: History, a: Session, b: Session, generation: int, start: Instant, end: Instant) -> Anomaly:
    return Anomaly(
        NAME, "two-owners-in-generation",
        f"{a.tp} had two owners in generation {generation}: {a.describe(history)} and {b.describe(history)}, "
        f"both from {history.clock(start.mono_ms)} to {history.clock(end.mono_ms)}",
        partition=str(a.tp), members=members(a.slot, b.slot), generation=generation,
        times={"overlap_start": start, "overlap_end": end},
    )


def _processed(history: History, session: Session, start: Instant, end: Instant) -> OffsetSet:
    return OffsetSet((c.lo, c.hi) for c in history.consumptions_of(session.tp)
                     if c.slot == session.slot and start.mono_ms <= c.at.mono_ms <= end.mono_ms)


def _zombie(history: History, older: Session, newer: Session, start: Instant, end: Instant) -> Anomaly:
    span = f"{history.clock(start.mono_ms)}..{history.clock(end.mono_ms)}"
    message = (f"{older.tp}: {older.describe(history)} still owned it for {duration(end.mono_ms - start.mono_ms)} "
               f"after {newer.describe(history)} took it over ({span})")
    by_older, by_newer = _processed(history, older, start, end), _processed(history, newer, start, end)
    kind, offsets = "zombie-overlap", None
    if by_older and by_newer:
        kind, offsets = "split-brain", by_older | by_newer
        message += (f"; both processed records in that window: {older.slot} offsets {by_older.render()}, "
                    f"{newer.slot} offsets {by_newer.render()}")
    return Anomaly(
        NAME, kind, message, partition=str(older.tp), offsets=offsets.render() if offsets else None,
        count=len(offsets) if offsets else None, members=members(older.slot, newer.slot),
        generation=newer.generation, times={"overlap_start": start, "overlap_end": end},
    )


def _unowned_consumption(history: History) -> list[Anomaly]:
    """Records processed outside any session of the member: nothing fenced them."""
    ownership = ownership_of(history)
    stray: dict[tuple, list] = {}
    for c in history.consumptions:
        if not ownership.owning(c.slot, c.tp, c.at.mono_ms):
            stray.setdefault((c.tp, c.slot), []).append(c)
    findings = []
    for (tp, slot), batch in stray.items():
        offsets = OffsetSet((c.lo, c.hi) for c in batch)
        findings.append(Anomaly(
            NAME, "consumed-while-unowned",
            f"{tp}: {slot} processed {plural(len(offsets), 'record')} (offsets {offsets.render()}) while it did not "
            f"own the partition, first at {history.clock(batch[0].at.mono_ms)}",
            partition=str(tp), offsets=offsets.render(), count=len(offsets), members=members(slot),
            times={"first": batch[0].at, "last": batch[-1].at},
        ))
    return findings
