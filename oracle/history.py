"""Reading a run history and indexing it the way the checks ask questions.

The history (docs/history.md) is the oracle's only input. `History` is an
immutable view over the sorted events: topic-partitions, who consumed which
offsets, which commits happened, what the producer got acknowledged. Derived
views (ownership sessions, rebalances) are memoised on it so every check sees
the same interpretation of the same events.
"""
from __future__ import annotations

import json
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple, TypeVar

from .offsets import OffsetSet

Event = dict[str, Any]
T = TypeVar("T")

# Protocols whose rebalance callbacks carry deltas (KIP-429 / KIP-848).
INCREMENTAL_PROTOCOLS = frozenset({"classic-cooperative", "consumer"})


def sort_key(event: Event) -> tuple:
    """Lines are appended by many processes; CLOCK_MONOTONIC is the shared order."""
    return (event["mono_ms"], event.get("source", ""), event.get("seq", 0))


def load_history(path: str | Path) -> list[Event]:
    """Read history.jsonl (or RUN_DIR/history.jsonl), sorted into time order.

    A process killed mid-write leaves at most a torn last line; that one is
    dropped. A malformed line anywhere else means the file is not a history.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "history.jsonl"
    lines = [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.strip()]
    events = []
    for i, (lineno, line) in enumerate(lines):
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if i == len(lines) - 1:
                break
            raise ValueError(f"{path}:{lineno}: not a JSON event ({exc})") from None
    return sorted(events, key=sort_key)


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    @classmethod
    def of(cls, d: dict) -> TopicPartition:
        return cls(d["topic"], int(d["partition"]))

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def render_partitions(tps: Iterable[TopicPartition]) -> str:
    """'events-0,1,2, audit-4' — partitions grouped by topic."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in sorted(tps):
        by_topic[tp.topic].append(tp.partition)
    return ", ".join(f"{t}-{','.join(map(str, ps))}" for t, ps in by_topic.items()) or "nothing"


class MemberSlot(NamedTuple):
    """One life of a member: its stable name plus which restart of it this is."""

    member: str
    incarnation: int = 1

    @classmethod
    def of(cls, event: Event) -> MemberSlot:
        return cls(event.get("member") or event["source"], int(event.get("incarnation") or 1))

    def __str__(self) -> str:
        return self.member if self.incarnation == 1 else f"{self.member}#{self.incarnation}"


class Instant(NamedTuple):
    ts: float | None  # wall clock, for people
    mono_ms: float  # monotonic, for arithmetic

    @classmethod
    def of(cls, event: Event) -> Instant:
        return cls(event.get("ts"), event["mono_ms"])

    def to_dict(self) -> dict:
        return {"ts": self.ts, "mono_ms": self.mono_ms}


@dataclass(frozen=True)
class Consumption:
    """One contiguous range of records whose processing a member completed."""

    slot: MemberSlot
    tp: TopicPartition
    lo: int
    hi: int
    at: Instant
    generation: int | None

    @property
    def offsets(self) -> OffsetSet:
        return OffsetSet.span(self.lo, self.hi)


@dataclass(frozen=True)
class Commit:
    """One partition's entry of an `offsets_committed` event."""

    slot: MemberSlot
    tp: TopicPartition
    offset: int  # next offset to read
    success: bool
    error: str | None
    trigger: str | None
    generation: int | None
    sent_ms: float  # started_mono_ms: ownership is judged when the request left
    at: Instant  # when the answer came


def _ranges(event: Event, key: str = "ranges") -> Iterable[tuple[TopicPartition, int, int]]:
    for r in event.get(key) or ():
        yield TopicPartition.of(r), int(r["min_offset"]), int(r["max_offset"])


class History:
    def __init__(self, events: Iterable[Event]):
        self.events: list[Event] = sorted(events, key=sort_key)
        self._by_name: dict[str, list[Event]] = defaultdict(list)
        for e in self.events:
            self._by_name[e["name"]].append(e)
        self._memo: dict[str, Any] = {}

        self.run: Event = self.first("run_started") or {}
        self.protocol: str | None = self.run.get("protocol")
        self.assignor: str | None = self.run.get("assignor")
        self.group: str | None = self.run.get("group")
        self.t0: float = (self.run or self.events[0])["mono_ms"] if self.events else 0.0
        self.end: Instant = Instant.of(self.events[-1]) if self.events else Instant(None, 0.0)

        acked, consumed = defaultdict(list), defaultdict(list)
        for e in self.named("records_acked"):
            for tp, lo, hi in _ranges(e):
                acked[tp].append((lo, hi))
        self.consumptions: list[Consumption] = []
        self._consumptions_by_tp: dict[TopicPartition, list[Consumption]] = defaultdict(list)
        for e in self.named("records_consumed"):
            for tp, lo, hi in _ranges(e):
                consumed[tp].append((lo, hi))
                c = Consumption(MemberSlot.of(e), tp, lo, hi, Instant.of(e), e.get("generation"))
                self.consumptions.append(c)
                self._consumptions_by_tp[tp].append(c)
        self.acked: dict[TopicPartition, OffsetSet] = {tp: OffsetSet(rs) for tp, rs in acked.items()}
        self.consumed: dict[TopicPartition, OffsetSet] = {tp: OffsetSet(rs) for tp, rs in consumed.items()}

        self.commits: list[Commit] = sorted(
            (
                Commit(MemberSlot.of(e), TopicPartition.of(o), int(o["offset"]), bool(e.get("success")),
                       e.get("error"), e.get("trigger"), e.get("generation"),
                       e.get("started_mono_ms", e["mono_ms"]), Instant.of(e))
                for e in self.named("offsets_committed") for o in e.get("offsets") or ()
            ),
            key=lambda c: (c.sent_ms, c.at.mono_ms),
        )
        self.partitions: list[TopicPartition] = self._partitions()  # every partition of the group, by the end
        self._added_at = self._partitions_added()

    def partitions_at(self, mono_ms: float) -> list[TopicPartition]:
        """The group's partitions at an instant. One added mid-run (more partitions, a new
        topic matching a pattern) counts once a member was first assigned it: until the
        group's metadata caught up, an assignment without it was not wrong."""
        return [tp for tp in self.partitions if self._added_at.get(tp, float("-inf")) <= mono_ms]

    def _partitions_added(self) -> dict[TopicPartition, float]:
        """Partition -> when the group first assigned it, for partitions added mid-run."""
        declared = {TopicPartition(t["topic"], p) for t in self.run.get("topics") or () for p in range(int(t["partitions"]))}
        if not declared:
            return {}
        first_assigned: dict[TopicPartition, float] = {}
        for e in self.named("partitions_assigned"):
            for p in e.get("partitions") or ():
                first_assigned.setdefault(TopicPartition.of(p), e["mono_ms"])
        return {tp: first_assigned.get(tp, float("inf")) for tp in self.partitions if tp not in declared}

    # -- lookups -----------------------------------------------------------

    def named(self, *names: str) -> list[Event]:
        if len(names) == 1:
            return self._by_name.get(names[0], [])
        return sorted((e for n in names for e in self._by_name.get(n, [])), key=sort_key)

    def first(self, name: str, **where: Any) -> Event | None:
        return next((e for e in self.named(name) if all(e.get(k) == v for k, v in where.items())), None)

    def last(self, name: str, **where: Any) -> Event | None:
        return next((e for e in reversed(self.named(name)) if all(e.get(k) == v for k, v in where.items())), None)

    def coordinator_events(self, name: str) -> list[Event]:
        """Broker-log events for our group (a shared broker logs other groups too)."""
        return [e for e in self.named(name) if self.group is None or e.get("group") in (None, self.group)]

    @property
    def done(self) -> Event | None:
        """The `phase: done` event: the run got through recovery and drain."""
        return self.first("phase", phase="done")

    @property
    def incremental(self) -> bool:
        return self.protocol in INCREMENTAL_PROTOCOLS or any(
            e.get("incremental") for e in self.named("partitions_assigned", "partitions_revoked"))

    def known_offsets(self, tp: TopicPartition) -> OffsetSet:
        """Offsets we know exist in the log: acknowledged or seen by a consumer.

        A gap in consumption only matters where records are known to exist;
        transaction markers and never-written offsets are not skips.
        """
        return self.acked.get(tp, OffsetSet()) | self.consumed.get(tp, OffsetSet())

    def consumptions_of(self, tp: TopicPartition) -> list[Consumption]:
        """One partition's consumed ranges, in time order."""
        return self._consumptions_by_tp.get(tp, [])

    def committed_at(self, tp: TopicPartition, mono_ms: float) -> Commit | None:
        """The group's committed offset for a partition at an instant: the last
        successful commit answered by then (what a new owner would fetch)."""
        def index() -> dict[TopicPartition, tuple[list[float], list[Commit]]]:
            by_tp: dict[TopicPartition, list[Commit]] = defaultdict(list)
            for c in sorted((c for c in self.commits if c.success), key=lambda c: c.at.mono_ms):
                by_tp[c.tp].append(c)
            return {tp: ([c.at.mono_ms for c in cs], cs) for tp, cs in by_tp.items()}
        times, commits = self.memo("commits_answered", index).get(tp, ([], []))
        i = bisect_right(times, mono_ms)
        return commits[i - 1] if i else None

    def commit_outcomes(self) -> tuple[int, dict[str, int]]:
        """(successful commits, failed commits by error name); one per partition entry."""
        failed: dict[str, int] = defaultdict(int)
        for c in self.commits:
            if not c.success:
                failed[c.error or "unknown"] += 1
        return sum(c.success for c in self.commits), dict(sorted(failed.items()))

    def members(self) -> list[MemberSlot]:
        return sorted({MemberSlot.of(e) for e in self.events if "member" in e})

    def clock(self, mono_ms: float) -> str:
        """Times in messages are relative to the run start: 't+12.345s'."""
        return f"t+{(mono_ms - self.t0) / 1000:.3f}s"

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """Derived views (ownership, rebalances, duplicates) are computed once per history."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def _partitions(self) -> list[TopicPartition]:
        declared = [TopicPartition(t["topic"], p)
                    for t in self.run.get("topics") or () for p in range(int(t["partitions"]))]
        if declared:
            counts = {t["topic"]: int(t["partitions"]) for t in self.run.get("topics") or ()}
            for e in self.named("partitions_added", "topic_created"):
                if e.get("subscribed", True):
                    counts[e["topic"]] = max(counts.get(e["topic"], 0), int(e["partitions"]))
            return sorted(TopicPartition(t, p) for t, n in counts.items() for p in range(n))
        # No run_started (e.g. a converted VerifiableConsumer log): the partitions anyone touched.
        seen = set(self.acked) | set(self.consumed) | {c.tp for c in self.commits}
        for e in self.named("partitions_assigned"):
            seen.update(TopicPartition.of(p) for p in e.get("partitions") or ())
        return sorted(seen)
