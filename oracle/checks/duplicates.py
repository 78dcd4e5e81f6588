"""duplicates: records processed more than once, counted and explained.

At-least-once delivery re-delivers whatever its previous owner processed
but had not committed when the partition moved: the new owner resumes from
the committed offset. A duplicate at or above the offset committed when the
re-delivering session began is "explained by uncommitted progress at
revocation"; one below it, within a single session, or processed by a member
that did not own the partition then, is not — and its reason says which of
these the history shows. Scenarios may bound the total with `max: N`.
"""
from __future__ import annotations

from bisect import bisect_right, insort
from dataclasses import dataclass
from typing import Any

from ..anomalies import Anomaly, CheckResult, members, plural
from ..history import Consumption, History, TopicPartition
from ..offsets import OffsetSet
from ..ownership import Ownership, ownership_of

NAME = "duplicates"
OPTIONS = {"max": None}
UNCOMMITTED = "explained by uncommitted progress at a hand-over"


@dataclass
class Redelivery:
    tp: TopicPartition
    lo: int
    hi: int
    first: Consumption
    second: Consumption
    explained: bool
    reason: str

    @property
    def count(self) -> int:
        return self.hi - self.lo + 1

    def describe(self) -> str:
        return (f"{self.tp} offsets {OffsetSet.span(self.lo, self.hi).render()}: first {self.first.slot}, "
                f"again {self.second.slot}, {self.reason}")

    def to_dict(self) -> dict[str, Any]:
        return {"partition": str(self.tp), "offsets": OffsetSet.span(self.lo, self.hi).render(),
                "count": self.count, "first": str(self.first.slot), "second": str(self.second.slot),
                "explained": self.explained, "reason": self.reason}


@dataclass
class DuplicateReport:
    redeliveries: list[Redelivery]

    @property
    def count(self) -> int:
        return sum(r.count for r in self.redeliveries)

    @property
    def explained(self) -> int:
        return sum(r.count for r in self.redeliveries if r.explained)

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "explained": self.explained, "unexplained": self.count - self.explained,
                "ranges": [r.to_dict() for r in self.redeliveries]}


def redeliveries_of(history: History) -> DuplicateReport:
    return history.memo("duplicates", lambda: DuplicateReport(
        [r for tp in sorted(history.consumed) for r in _partition(history, ownership_of(history), tp)]))


def check(history: History, options: dict) -> CheckResult:
    report = redeliveries_of(history)
    result = CheckResult(detail={"count": report.count, "explained": report.explained, "max": options["max"]})
    for r in report.redeliveries:
        if not r.explained:
            result.findings.append(Anomaly(
                NAME, "duplicate", r.describe(), partition=str(r.tp),
                offsets=OffsetSet.span(r.lo, r.hi).render(), count=r.count,
                members=members(r.first.slot, r.second.slot), generation=r.second.generation,
                times={"first": r.first.at, "again": r.second.at}))
    if options["max"] is not None and report.count > options["max"]:
        worst = sorted(report.redeliveries, key=lambda r: -r.count)[:3]
        result.violations.append(Anomaly(
            NAME, "too-many-duplicates",
            f"{plural(report.count, 'record')} consumed more than once, more than the allowed {options['max']} "
            f"({report.explained} {UNCOMMITTED}); largest: " + "; ".join(r.describe() for r in worst),
            count=report.count, members=members(*(s for r in worst for s in (r.first.slot, r.second.slot)))))
    return result


def _partition(history: History, ownership: Ownership, tp: TopicPartition) -> list[Redelivery]:
    firsts: list[tuple[int, int, Consumption]] = []  # disjoint, sorted: who consumed each offset first
    out: list[Redelivery] = []
    for c in history.consumptions_of(tp):
        seen: list[tuple[int, int]] = []
        if firsts and c.lo <= firsts[-1][1]:  # not simply further along: find who had these first
            i = max(0, bisect_right(firsts, c.lo, key=lambda f: f[0]) - 1)
            while i < len(firsts) and firsts[i][0] <= c.hi:
                lo, hi, first = firsts[i]
                if hi >= c.lo:
                    seen.append((lo, hi))
                    _explain(history, ownership, out, first, c, max(lo, c.lo), min(hi, c.hi))
                i += 1
        fresh = (c.offsets - OffsetSet(seen)).ranges if seen else ((c.lo, c.hi),)
        for lo, hi in fresh:
            if not firsts or lo >= firsts[-1][0]:  # further along: where insort would put it anyway
                firsts.append((lo, hi, c))
            else:
                insort(firsts, (lo, hi, c), key=lambda f: f[0])
    return out


def _explain(history: History, ownership: Ownership, out: list[Redelivery], first: Consumption,
             second: Consumption, lo: int, hi: int) -> None:
    was = ownership.owning(first.slot, first.tp, first.at.mono_ms)
    now = ownership.owning(second.slot, second.tp, second.at.mono_ms)
    pieces: list[tuple[int, int, bool, str]]
    if was is None:  # exclusive-ownership judges the consumption itself
        pieces = [(lo, hi, False, f"first processed by {first.slot}, which did not own the partition then")]
    elif now is None:
        pieces = [(lo, hi, False, f"processed again by {second.slot}, which did not own the partition then")]
    elif was is now:
        pieces = [(lo, hi, False, "re-delivered within one ownership session")]
    elif now.start_ms < first.at.mono_ms:  # both owned it at once: a zombie, not a hand-over
        pieces = [(lo, hi, False, f"processed again by {second.slot} while both owned the partition")]
    else:
        committed = history.committed_at(first.tp, now.start_ms)
        floor = committed.offset if committed else lo
        when = f"when {second.slot} {'got it back' if first.slot == second.slot else 'took over'}"
        pieces = [(lo, min(hi, floor - 1), False, f"below the offset {floor} committed {when}"),
                  (max(lo, floor), hi, True,
                   f"{UNCOMMITTED} (committed offset {committed.offset if committed else 'none'} {when})")]
    for p_lo, p_hi, explained, reason in pieces:
        if p_lo > p_hi:
            continue
        prev = out[-1] if out else None
        same_story = prev and (prev.first.slot, prev.second.slot, prev.reason) == (first.slot, second.slot, reason)
        if same_story and prev.hi + 1 == p_lo:
            prev.hi = p_hi  # the same story continues over the next batch
        else:
            out.append(Redelivery(first.tp, p_lo, p_hi, first, second, explained, reason))
