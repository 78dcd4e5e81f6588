"""exclusive-ownership: one owner per partition at a time.

Within a generation two owners at once is a protocol bug (violation). Across
generations an overlap is what a paused "zombie" does: it still believes it
owns a partition the group already gave away, until it learns it was lost.
That is expected under a pause (a finding) unless both owners actually
processed records of the partition in the overlap: split brain, which the
scenario can declare fatal with `split_brain: fail`.

Outside every session — a member processing records of a partition it was never
assigned in this incarnation (`consumed-without-ownership`), or after it had
itself recorded losing it (`consumed-after-ownership`) — is a violation: only
a zombie that has not yet learnt of its loss is excusable, and its session is
still open.
"""

from __future__ import annotations

from ..anomalies import Anomaly, CheckResult, duration, members, plural
from ..history import Consumption, History, Instant
from ..offsets import OffsetSet
from ..ownership import Ownership, Session, ownership_of

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
            for newer in sessions[i + 1 :]:
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
    result.violations.extend(_outside_sessions(history))
    result.detail = {"sessions": len(ownership.sessions), "overlapping_sessions": overlaps}
    return result


def _two_owners(history: History, a: Session, b: Session, generation: int, start: Instant, end: Instant) -> Anomaly:
    return Anomaly(
        NAME,
        "two-owners-in-generation",
        f"{a.tp} had two owners in generation {generation}: {a.describe(history)} and {b.describe(history)}, "
        f"both from {history.clock(start.mono_ms)} to {history.clock(end.mono_ms)}",
        partition=str(a.tp),
        members=members(a.slot, b.slot),
        generation=generation,
        times={"overlap_start": start, "overlap_end": end},
    )


def _processed(history: History, session: Session, start: Instant, end: Instant) -> OffsetSet:
    return OffsetSet(
        (c.lo, c.hi)
        for c in history.consumptions_between(session.tp, start.mono_ms, end.mono_ms)
        if c.slot == session.slot
    )


def _zombie(history: History, older: Session, newer: Session, start: Instant, end: Instant) -> Anomaly:
    span = f"{history.clock(start.mono_ms)}..{history.clock(end.mono_ms)}"
    message = (
        f"{older.tp}: {older.describe(history)} still owned it for {duration(end.mono_ms - start.mono_ms)} "
        f"after {newer.describe(history)} took it over ({span})"
    )
    by_older, by_newer = _processed(history, older, start, end), _processed(history, newer, start, end)
    kind, offsets = "zombie-overlap", None
    if by_older and by_newer:
        kind, offsets = "split-brain", by_older | by_newer
        message += (
            f"; both processed records in that window: {older.slot} offsets {by_older.render()}, "
            f"{newer.slot} offsets {by_newer.render()}"
        )
    return Anomaly(
        NAME,
        kind,
        message,
        partition=str(older.tp),
        offsets=offsets.render() if offsets else None,
        count=len(offsets) if offsets else None,
        members=members(older.slot, newer.slot),
        generation=newer.generation,
        times={"overlap_start": start, "overlap_end": end},
    )


def _outside_sessions(history: History) -> list[Anomaly]:
    """Records a member processed while it owned no session of the partition.

    Only a zombie is excusable: a former owner that has not yet learnt it lost the partition
    still has its session open (an overlap, above). Outside every session a member either had
    not owned the partition in this incarnation by then, or had itself recorded losing it (its revoke, its
    loss, an assignment without it) before it went on processing: both break exclusive ownership.
    """
    ownership = ownership_of(history)
    stray: dict[tuple, list[Consumption]] = {}
    for c in history.consumptions:
        if not ownership.owning(c.slot, c.tp, c.at.mono_ms):
            former = ownership.owned_before(c.slot, c.tp, c.at.mono_ms)
            stray.setdefault((c.tp, c.slot, former), []).append(c)
    violations = []
    for (tp, slot, former), batch in stray.items():
        offsets = OffsetSet((c.lo, c.hi) for c in batch)
        first, last = batch[0], batch[-1]
        span = f"{history.clock(first.at.mono_ms)}..{history.clock(last.at.mono_ms)}"
        what = f"{tp}: {slot} processed {plural(len(offsets), 'record')} (offsets {offsets.render()}, {span})"
        if former is None:
            kind = "consumed-without-ownership"
            message = (
                f"{what} without owning the partition: it had not been assigned {tp} in this incarnation "
                f"by then (its generation then: {_generation(first)})"
            )
            times = {"first": first.at, "last": last.at}
        else:
            kind = "consumed-after-ownership"
            message = (
                f"{what} after its own ownership of the partition had ended: {former.describe(history)} "
                f"(its generation then: {_generation(first)})"
            )
            times = {"ownership_ended": former.end or history.end, "first": first.at, "last": last.at}
        owners = _owners_during(history, ownership, tp, first.at.mono_ms, last.at.mono_ms, slot)
        if owners:
            message += "; " + "; ".join(owners)
        violations.append(
            Anomaly(
                NAME,
                kind,
                message,
                partition=str(tp),
                offsets=offsets.render(),
                count=len(offsets),
                members=members(slot),
                generation=first.generation,
                times=times,
            )
        )
    return violations


def _generation(c: Consumption) -> str:
    return f"generation {c.generation}" if c.generation is not None else "no generation"


def _owners_during(history: History, ownership: Ownership, tp, lo_ms: float, hi_ms: float, intruder) -> list[str]:
    """Who did own the partition meanwhile, and which of the intruder's records they processed too."""
    theirs = OffsetSet(
        (c.lo, c.hi)
        for c in history.consumptions_of(tp)
        if c.slot == intruder and not ownership.owning(c.slot, tp, c.at.mono_ms) and lo_ms <= c.at.mono_ms <= hi_ms
    )
    out = []
    for s in ownership.of_partition(tp):
        if s.slot == intruder or s.end_ms < lo_ms or s.start_ms > hi_ms:
            continue
        both = theirs & OffsetSet(
            (c.lo, c.hi) for c in history.consumptions_of(tp) if c.slot == s.slot and s.covers(c.at.mono_ms)
        )
        out.append(
            f"the owner was {s.describe(history)}"
            + (f", which processed the same offsets {both.render()}" if both else "")
        )
    return out
