"""duplicates: records processed more than once, counted and explained.

Each re-delivery gets one cause (CAUSES), and whether it is *explained* follows
from its cause alone — the one definition the summary counts, the findings
report and verdict.json carries. Explained: what at-least-once delivery lets a
consumer group do — re-deliver what the previous owner processed but had not
committed when the partition moved (`hand-over`: at or above the offset
committed when the re-delivering session began), or a zombie (an owner that had
not yet learnt of its loss, its session still open) process what its successor
processes too (`zombie`; exclusive-ownership reports the overlap itself, as a
zombie-overlap or split-brain finding). Unexplained, each a `duplicate` finding:
below that committed offset (`below-commit`), within one ownership session
(`same-session`), or by a member that did not own the partition then
(`non-owner`; exclusive-ownership's violation). Scenarios may bound the total
with `max: N`.
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

# cause -> (explained, what the summary calls it): the one definition of an explained re-delivery.
CAUSES: dict[str, tuple[bool, str]] = {
    "hand-over": (True, "uncommitted progress at a hand-over"),
    "zombie": (True, "processed by a zombie alongside the new owner"),
    "below-commit": (False, "below the offset committed at the hand-over"),
    "same-session": (False, "re-delivered within one ownership session"),
    "non-owner": (False, "processed by a member that did not own the partition"),
}


def is_explained(cause: str) -> bool:
    return CAUSES[cause][0]


@dataclass
class Redelivery:
    tp: TopicPartition
    lo: int
    hi: int
    first: Consumption
    second: Consumption
    cause: str  # a key of CAUSES
    reason: str

    @property
    def explained(self) -> bool:
        return is_explained(self.cause)

    @property
    def count(self) -> int:
        return self.hi - self.lo + 1

    def describe(self) -> str:
        return (
            f"{self.tp} offsets {OffsetSet.span(self.lo, self.hi).render()}: first {self.first.slot}, "
            f"again {self.second.slot}, {self.reason}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": str(self.tp),
            "offsets": OffsetSet.span(self.lo, self.hi).render(),
            "count": self.count,
            "first": str(self.first.slot),
            "second": str(self.second.slot),
            "explained": self.explained,
            "cause": self.cause,
            "reason": self.reason,
        }


@dataclass
class DuplicateReport:
    redeliveries: list[Redelivery]

    @property
    def count(self) -> int:
        return sum(r.count for r in self.redeliveries)

    @property
    def explained(self) -> int:
        return sum(r.count for r in self.redeliveries if r.explained)

    @property
    def by_cause(self) -> dict[str, int]:
        """Every cause (CAUSES' order) -> how many re-delivered records it accounts for."""
        counts = dict.fromkeys(CAUSES, 0)
        for r in self.redeliveries:
            counts[r.cause] += r.count
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "explained": self.explained,
            "unexplained": self.count - self.explained,
            "by_cause": self.by_cause,
            "ranges": [r.to_dict() for r in self.redeliveries],
        }


def breakdown(d: dict[str, Any]) -> str:
    """How many of a DuplicateReport's to_dict() (verdict.json's `duplicates`) are explained, and by
    what: '14 explained (14 processed by a zombie alongside the new owner), 0 unexplained'. The
    unexplained ones are exactly the duplicates check's findings. A verdict written before
    `by_cause` existed gives its counts only."""

    def causes(explained: bool) -> str:
        named = [
            f"{n} {label}"
            for c, n in d.get("by_cause", {}).items()
            if n and c in CAUSES
            for ok, label in [CAUSES[c]]
            if ok == explained
        ]
        return f" ({', '.join(named)})" if named else ""

    return f"{d['explained']} explained{causes(True)}, {d['unexplained']} unexplained{causes(False)}"


def summary(d: dict[str, Any]) -> str:
    """The duplicates in one line, as every report prints it (after 'duplicates: ')."""
    head = plural(d["count"], "re-delivered record")
    return f"{head}: {breakdown(d)}" if d["count"] else head


def redeliveries_of(history: History) -> DuplicateReport:
    return history.memo(
        "duplicates",
        lambda: DuplicateReport(
            [r for tp in sorted(history.consumed) for r in _partition(history, ownership_of(history), tp)]
        ),
    )


def check(history: History, options: dict) -> CheckResult:
    report = redeliveries_of(history)
    result = CheckResult(
        detail={
            "count": report.count,
            "explained": report.explained,
            "by_cause": report.by_cause,
            "max": options["max"],
        }
    )
    for r in report.redeliveries:
        if not r.explained:  # the summary's unexplained ones, exactly
            result.findings.append(
                Anomaly(
                    NAME,
                    "duplicate",
                    r.describe(),
                    partition=str(r.tp),
                    offsets=OffsetSet.span(r.lo, r.hi).render(),
                    count=r.count,
                    members=members(r.first.slot, r.second.slot),
                    generation=r.second.generation,
                    times={"first": r.first.at, "again": r.second.at},
                )
            )
    if options["max"] is not None and report.count > options["max"]:
        worst = sorted(report.redeliveries, key=lambda r: -r.count)[:3]
        result.violations.append(
            Anomaly(
                NAME,
                "too-many-duplicates",
                f"{plural(report.count, 'record')} consumed more than once, more than the allowed {options['max']} "
                f"({breakdown(report.to_dict())}); largest: " + "; ".join(r.describe() for r in worst),
                count=report.count,
                members=members(*(s for r in worst for s in (r.first.slot, r.second.slot))),
            )
        )
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


def _explain(
    history: History,
    ownership: Ownership,
    out: list[Redelivery],
    first: Consumption,
    second: Consumption,
    lo: int,
    hi: int,
) -> None:
    was = ownership.owning(first.slot, first.tp, first.at.mono_ms)
    now = ownership.owning(second.slot, second.tp, second.at.mono_ms)
    pieces: list[tuple[int, int, str, str]]
    if was is None:  # exclusive-ownership judges the consumption itself
        pieces = [(lo, hi, "non-owner", f"first processed by {first.slot}, which did not own the partition then")]
    elif now is None:
        pieces = [(lo, hi, "non-owner", f"processed again by {second.slot}, which did not own the partition then")]
    elif was is now:
        pieces = [(lo, hi, "same-session", "re-delivered within one ownership session")]
    elif now.start_ms < first.at.mono_ms:  # both owned it at once: a zombie, not a hand-over
        zombie = first.slot if was.start_ms < now.start_ms else second.slot
        pieces = [
            (
                lo,
                hi,
                "zombie",
                f"explained by a zombie: processed again by {second.slot} while both owned "
                f"the partition, {zombie} not yet aware it had lost it (exclusive-ownership)",
            )
        ]
    else:
        committed = history.committed_at(first.tp, now.start_ms)
        floor = committed.offset if committed else lo
        when = f"when {second.slot} {'got it back' if first.slot == second.slot else 'took over'}"
        pieces = [
            (lo, min(hi, floor - 1), "below-commit", f"below the offset {floor} committed {when}"),
            (
                max(lo, floor),
                hi,
                "hand-over",
                f"{UNCOMMITTED} (committed offset {committed.offset if committed else 'none'} {when})",
            ),
        ]
    for p_lo, p_hi, cause, reason in pieces:
        if p_lo > p_hi:
            continue
        prev = out[-1] if out else None
        same_story = prev and (prev.first.slot, prev.second.slot, prev.reason) == (first.slot, second.slot, reason)
        if same_story and prev.hi + 1 == p_lo:
            prev.hi = p_hi  # the same story continues over the next batch
        else:
            out.append(Redelivery(first.tp, p_lo, p_hi, first, second, cause, reason))
