"""contiguity: within an ownership session, consumption advances without gaps.

Within one session a gap is a `poll-skip` and going back a `nonmonotonic-poll`
(Jepsen's names). Jepsen excuses skips across rebalances; we do not: a new
owner's first record must not lie beyond (highest offset anyone consumed
before) + 1, or the records in between were handed over to nobody
(`skip-at-handover`, e.g. a commit made before processing). Gaps only count
where records are known to exist (acknowledged or consumed by someone), so
transaction markers are not skips. Records processed outside any ownership
session belong to no session: exclusive-ownership judges those.
"""

from __future__ import annotations

from ..anomalies import Anomaly, CheckResult, members, plural
from ..history import Consumption, History
from ..offsets import OffsetSet
from ..ownership import Session, ownership_of

NAME = "contiguity"
OPTIONS: dict = {}


def check(history: History, options: dict) -> CheckResult:
    ownership = ownership_of(history)
    result = CheckResult()
    sessions = outside = 0
    for tp in sorted(history.consumed):
        known = history.known_offsets(tp)
        # next offset, and the ranges seen in the session (an OffsetSet only when a gap needs one:
        # rebuilding it on every batch would go quadratic in a session with gaps)
        position: dict[Session, tuple[int, list[tuple[int, int]]]] = {}
        highest: Consumption | None = None  # consumed the highest offset so far, by an owner
        for c in history.consumptions_of(tp):
            session = ownership.owning(c.slot, tp, c.at.mono_ms)
            if session is None:
                outside += 1  # no session to judge it within: exclusive-ownership reports it
                continue
            if session not in position:
                sessions += 1
                if highest and c.lo > highest.hi + 1:
                    skipped = OffsetSet.span(highest.hi + 1, c.lo - 1) & known
                    if skipped:
                        result.violations.append(_handover_skip(history, c, session, highest, skipped))
            else:
                expected, seen = position[session]
                if c.lo > expected:
                    skipped = (OffsetSet.span(expected, c.lo - 1) & known) - OffsetSet(seen)
                    if skipped:
                        result.violations.append(
                            _within(
                                history,
                                c,
                                session,
                                "poll-skip",
                                skipped,
                                f"skipped {plural(len(skipped), 'record')} (offsets {skipped.render()}) within one "
                                f"ownership session: after offset {expected - 1} it went on at {c.lo}",
                            )
                        )
                elif c.lo < expected:
                    result.violations.append(
                        _within(
                            history,
                            c,
                            session,
                            "nonmonotonic-poll",
                            OffsetSet.span(c.lo, min(c.hi, expected - 1)),
                            f"went back from offset {expected - 1} to {c.lo} within one ownership session",
                        )
                    )
            seen = position[session][1] if session in position else []
            seen.append((c.lo, c.hi))
            position[session] = (c.hi + 1, seen)
            if highest is None or c.hi > highest.hi:
                highest = c
    result.detail = {"sessions_checked": sessions, "consumptions_outside_sessions": outside}
    return result


def _within(history: History, c: Consumption, session: Session, kind: str, offsets: OffsetSet, what: str) -> Anomaly:
    return Anomaly(
        NAME,
        kind,
        f"{c.tp}: {c.slot} {what} at {history.clock(c.at.mono_ms)}; session {session.describe(history)}",
        partition=str(c.tp),
        offsets=offsets.render(),
        count=len(offsets),
        members=members(c.slot),
        generation=session.generation,
        times={"consumed": c.at},
    )


def _handover_skip(
    history: History, c: Consumption, session: Session, before: Consumption, skipped: OffsetSet
) -> Anomaly:
    generation = session.generation
    return Anomaly(
        NAME,
        "skip-at-handover",
        f"{c.tp}: {c.slot} started at offset {c.lo} when it took the partition over (generation {generation}, "
        f"{history.clock(c.at.mono_ms)}), but the highest offset consumed before was {before.hi} (by {before.slot}): "
        f"{plural(len(skipped), 'record')} skipped, offsets {skipped.render()}",
        partition=str(c.tp),
        offsets=skipped.render(),
        count=len(skipped),
        members=members(before.slot, c.slot),
        generation=generation,
        times={"previous": before.at, "first_after_handover": c.at},
    )
