"""Sets of Kafka offsets, kept as sorted, disjoint, inclusive ranges.

Offsets in a history come in ranges (a poll batch, an ack batch), and every
question the oracle asks — what was lost, what was skipped, what came twice —
is set algebra over them. Storing ranges keeps a million-record run cheap.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Iterable
from operator import itemgetter

Range = tuple[int, int]  # inclusive: (120, 134) is 15 offsets


def _normalize(ranges: Iterable[Range]) -> tuple[Range, ...]:
    merged: list[list[int]] = []
    for lo, hi in sorted((int(lo), int(hi)) for lo, hi in ranges if lo <= hi):
        if merged and lo <= merged[-1][1] + 1:  # overlapping or adjacent
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return tuple((lo, hi) for lo, hi in merged)


class OffsetSet:
    """An immutable set of offsets with range-wise union, intersection and difference."""

    __slots__ = ("ranges",)

    def __init__(self, ranges: Iterable[Range] = ()):
        self.ranges: tuple[Range, ...] = _normalize(ranges)

    @classmethod
    def span(cls, lo: int, hi: int) -> OffsetSet:
        return _of(((int(lo), int(hi)),) if lo <= hi else ())

    def __len__(self) -> int:
        return sum(hi - lo + 1 for lo, hi in self.ranges)

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OffsetSet) and self.ranges == other.ranges

    def __hash__(self) -> int:
        return hash(self.ranges)

    def __repr__(self) -> str:
        return f"OffsetSet({self.render()!r})"

    def __contains__(self, offset: int) -> bool:
        i = bisect_right(self.ranges, offset, key=itemgetter(0))  # ranges are sorted and disjoint
        return i > 0 and offset <= self.ranges[i - 1][1]

    @property
    def min(self) -> int:
        return self.ranges[0][0]

    @property
    def max(self) -> int:
        return self.ranges[-1][1]

    def __or__(self, other: OffsetSet) -> OffsetSet:
        a, b = self.ranges, other.ranges
        if not a or not b:
            return self if b == () else other
        if a[-1][1] + 1 < b[0][0]:  # the common case: more offsets further along
            return _of(a + b)
        if len(b) == 1 and a[-1][0] <= b[0][0]:  # the next offsets right after (or within) the last range
            return _of(a[:-1] + ((a[-1][0], max(a[-1][1], b[0][1])),))
        # Both sorted already: one pass, no sort. When b begins within or after a's last
        # range (the next batch of a partition), only that range can merge with b.
        keep, a = (a[:-1], a[-1:]) if a[-1][0] <= b[0][0] else ((), a)
        merged: list[list[int]] = []
        for lo, hi in heapq.merge(a, b):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        return _of(keep + tuple((lo, hi) for lo, hi in merged))

    def __and__(self, other: OffsetSet) -> OffsetSet:
        out, a, b, i, j = [], self.ranges, other.ranges, 0, 0
        while i < len(a) and j < len(b):
            lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
            if lo <= hi:
                out.append((lo, hi))
            if a[i][1] < b[j][1]:
                i += 1
            else:
                j += 1
        return OffsetSet(out)

    def __sub__(self, other: OffsetSet) -> OffsetSet:
        out, holes, j = [], other.ranges, 0
        for lo, hi in self.ranges:
            while j < len(holes) and holes[j][1] < lo:
                j += 1
            k = j
            while k < len(holes) and holes[k][0] <= hi:
                if holes[k][0] > lo:
                    out.append((lo, holes[k][0] - 1))
                lo = max(lo, holes[k][1] + 1)
                k += 1
            if lo <= hi:
                out.append((lo, hi))
        return OffsetSet(out)

    def render(self, limit: int = 8) -> str:
        """'120-134, 140' — the way an engineer would write it in a ticket."""
        parts = [str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in self.ranges[:limit]]
        if len(self.ranges) > limit:
            parts.append(f"… {len(self.ranges) - limit} more ranges")
        return ", ".join(parts)


def _of(ranges: tuple[Range, ...]) -> OffsetSet:
    """An OffsetSet of ranges already sorted, disjoint and apart: nothing to normalize."""
    offsets = OffsetSet.__new__(OffsetSet)
    offsets.ranges = ranges
    return offsets
