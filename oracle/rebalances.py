"""Rebalances measured, not just counted.

One rebalance per generation seen in `group_joined`. It starts at the earliest
sign that the previous generation was over: a revoke, a lost partition, a
member sending JoinGroup for this generation, or the coordinator logging
"Preparing to rebalance … old generation G-1". Two endpoints, named for what
they are:

- **stabilized**: the last member of the generation got its JoinGroup answer —
  the members' side of the coordinator's "Stabilized group … generation G";
- **assigned**: the last member has its assignment (`partitions_assigned`) —
  the group can work again. `duration_ms` is start → assigned.

The phases follow the protocol: detect (start → first JoinGroup), join
(JoinGroup → joined, slowest member), sync (joined → SyncGroup answered,
slowest member). Stop-the-world is per partition: from its old owner's session
end to its new owner's session start. The coordinator's own log lines, when
present, are an independent clock, compared like with like: its "Preparing"
against the members' first sign (`start_vs_coordinator_ms`), its "Stabilized"
against the members' stabilized end (`stabilized_vs_coordinator_ms`).

A rebalance that began once the run was over (`phase: done`, or the harness's
teardown) is the harness's own doing — its members leaving — and is marked
`teardown`: it is kept out of every verdict and statistic.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import vocabulary as ev
from .history import Event, History, Instant, MemberSlot, TopicPartition
from .ownership import Ownership, Session, ownership_of

COMPLETED = "completed"
SUPERSEDED = "superseded"  # a newer generation started before every member had its assignment
INCOMPLETE = "incomplete"  # the run ended mid-rebalance


@dataclass
class Rebalance:
    generation: int
    status: str
    members: list[str]
    start: Instant | None = None
    end: Instant | None = None
    trigger: str | None = None
    coordinator_reason: str | None = None
    leader: str | None = None
    detect_ms: float | None = None
    join_ms: float | None = None
    sync_ms: float | None = None
    coordinator_ms: float | None = None
    moves: list[str] = field(default_factory=list)
    unowned_ms: dict[str, float] = field(default_factory=dict)  # stop-the-world per partition
    superseded_by: int | None = None
    stabilized: Instant | None = None  # the last member's JoinGroup answer
    member_start: Instant | None = None  # the members' sign the coordinator's Preparing answers (_answered_by)
    coordinator_preparing: Instant | None = None
    coordinator_stabilized: Instant | None = None
    coordinator_members: int | None = None  # how many members the coordinator stabilized the generation with
    teardown: bool = False

    @property
    def duration_ms(self) -> float | None:
        """Start → assigned: until the whole group could work again."""
        return _span(self.start, self.end)

    @property
    def stabilized_ms(self) -> float | None:
        return _span(self.start, self.stabilized)

    def to_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "status": self.status,
            "duration_ms": _ms(self.duration_ms),
            "assigned_ms": _ms(self.duration_ms),
            "stabilized_ms": _ms(self.stabilized_ms),
            "teardown": self.teardown,
            "start_ts": self.start.ts if self.start else None,
            "start_mono_ms": self.start.mono_ms if self.start else None,
            "end_ts": self.end.ts if self.end else None,
            "end_mono_ms": self.end.mono_ms if self.end else None,
            "trigger": self.trigger,
            "coordinator_reason": self.coordinator_reason,
            "members": self.members,
            "leader": self.leader,
            "detect_ms": _ms(self.detect_ms),
            "join_ms": _ms(self.join_ms),
            "sync_ms": _ms(self.sync_ms),
            "coordinator_ms": _ms(self.coordinator_ms),
            "coordinator_members": self.coordinator_members,
            "start_vs_coordinator_ms": _ms(_span(self.coordinator_preparing, self.member_start)),
            "stabilized_vs_coordinator_ms": _ms(_span(self.coordinator_stabilized, self.stabilized)),
            "partitions_moved": len(self.moves),
            "moves": self.moves,
            "unowned_ms": {tp: _ms(gap) for tp, gap in self.unowned_ms.items()},
            "max_unowned_ms": _ms(max(self.unowned_ms.values(), default=None)),
            "superseded_by": self.superseded_by,
        }


def _ms(span: float | None) -> float | None:
    return None if span is None else round(span, 3)  # monotonic clocks: µs is all the precision there is


def _span(a: Instant | None, b: Instant | None) -> float | None:
    return b.mono_ms - a.mono_ms if a and b else None


def rebalances_of(history: History) -> list[Rebalance]:
    """Every generation's rebalance, the harness's own teardown ones included (marked)."""
    return history.memo("rebalances", lambda: _Measurement(history).run())


def run_rebalances(history: History) -> list[Rebalance]:
    """The rebalances of the run itself: what verdicts, tables and statistics report."""
    return [r for r in rebalances_of(history) if not r.teardown]


def teardown_from(history: History) -> float:
    """When the run was over and the harness began taking the group apart: `phase: done`,
    else its teardown (`heal_checked`, written before members are stopped), else never."""
    marks = [e["mono_ms"] for e in (history.done, history.first(ev.HEAL_CHECKED)) if e]
    return min(marks, default=math.inf)


def join_sent_by_generation(history: History) -> dict[int, dict[MemberSlot, list[Event]]]:
    """A JoinGroup belongs to the generation the member joins next, with its retries
    (MEMBER_ID_REQUIRED, a rebalance that began meanwhile): every one of them, in order."""

    def compute() -> dict[int, dict[MemberSlot, list[Event]]]:
        pending: dict[MemberSlot, list[Event]] = defaultdict(list)
        out: dict[int, dict[MemberSlot, list[Event]]] = defaultdict(dict)
        for e in history.named(ev.GROUP_JOIN_SENT, ev.GROUP_JOINED):
            slot = MemberSlot.of(e)
            if e["name"] == ev.GROUP_JOIN_SENT:
                pending[slot].append(e)
            elif slot in pending and e.get("generation") is not None:
                out[e["generation"]].setdefault(slot, pending.pop(slot))
        return out

    return history.memo("join_sent", compute)


def _first_per_slot(events: list[Event]) -> dict[int, dict[MemberSlot, Event]]:
    """generation -> member slot -> that slot's first such event for the generation.

    A static member restarted within its session timeout rejoins the *same* generation
    under its group.instance.id. That is not another member of the generation, nor a
    rebalance: only a member's first incarnation in a generation counts.
    """
    out: dict[int, dict[MemberSlot, Event]] = defaultdict(dict)
    members: dict[int, set[str]] = defaultdict(set)  # per generation: its members, any incarnation
    for e in events:
        generation, slot = e.get("generation"), MemberSlot.of(e)
        if generation is None or slot in out[generation]:
            continue
        if slot.member not in members[generation]:
            out[generation][slot] = e
            members[generation].add(slot.member)
    return out


def _first_per_generation(events: list[Event], key: str) -> dict[int, Event]:
    """The first broker log line per generation (after a failover another broker logs too)."""
    out: dict[int, Event] = {}
    for e in events:
        if e.get(key) is not None:
            out.setdefault(e[key], e)
    return out


def _answered_by(signs: list[Event], prepared: Event | None) -> Event:
    """The members' sign that the coordinator's "Preparing to rebalance" answers: it acts on the first
    request that changes the group, so that is the last sign sent before it (a newcomer's JoinGroup
    retried with its member id, not the first one answered MEMBER_ID_REQUIRED; a LeaveGroup, not the
    revoke that preceded it). With none before it, the members learnt of it afterwards (an eviction
    told by a heartbeat): the first sign after. Without the coordinator's line, the first sign."""
    by_time = sorted(signs, key=lambda e: e["mono_ms"])
    if prepared is None:
        return by_time[0]
    before = [e for e in by_time if e["mono_ms"] <= prepared["mono_ms"]]
    return before[-1] if before else by_time[0]


def _slowest(pairs: list[tuple[Event | None, Event | None]]) -> float | None:
    spans = [b["mono_ms"] - a["mono_ms"] for a, b in pairs if a and b]
    return max(spans, default=None)


class _Measurement:
    def __init__(self, history: History):
        self.history = history
        self.ownership: Ownership = ownership_of(history)
        self.joined = _first_per_slot(history.named(ev.GROUP_JOINED))
        self.synced = _first_per_slot(history.named(ev.GROUP_SYNCED))
        self.assigned = _first_per_slot(history.named(ev.PARTITIONS_ASSIGNED))
        self.join_sent = join_sent_by_generation(history)
        self.preparing = _first_per_generation(
            history.of_our_group(ev.COORDINATOR_PREPARING_REBALANCE), "old_generation"
        )
        # The broker's end of a rebalance: "Stabilized group" (classic), or for KIP-848 groups
        # the target assignment it computed (members reconcile towards it afterwards).
        self.stabilized = _first_per_generation(
            history.of_our_group(ev.COORDINATOR_STABILIZED) + history.of_our_group(ev.COORDINATOR_TARGET_ASSIGNMENT),
            "generation",
        )
        self.teardown_from = teardown_from(history)
        releases = history.named(ev.PARTITIONS_REVOKED, ev.PARTITIONS_LOST)  # in time order
        self.releases = ([e["mono_ms"] for e in releases], releases)
        self.handovers = handovers(history)

    def run(self) -> list[Rebalance]:
        generations = sorted(self.joined)
        rebalances: list[Rebalance] = []
        boundary, before = -math.inf, {}
        for i, generation in enumerate(generations):
            later = generations[i + 1] if i + 1 < len(generations) else None
            r = self.measure(generation, later, boundary, before)
            rebalances.append(r)
            if r.status == COMPLETED:
                boundary, before = r.end.mono_ms, self.owners(generation)
            else:  # its members learnt of it once joined; what follows belongs to the next one
                boundary = max(e["mono_ms"] for e in self.joined[generation].values())
        return rebalances

    def owners(self, generation: int) -> dict[TopicPartition, str]:
        return {tp: slot.member for slot, tps in self.ownership.assignments.get(generation, {}).items() for tp in tps}

    def measure(
        self, generation: int, later: int | None, boundary: float, before: dict[TopicPartition, str]
    ) -> Rebalance:
        joined, synced = self.joined[generation], self.synced.get(generation, {})
        members = sorted(joined)
        assigned = {s: e for s, e in self.assigned.get(generation, {}).items() if s in joined}
        # An empty cooperative delta may come without a callback: each member's own generation says
        # whether its callbacks are deltas (a migrated group has eager and incremental members).
        assigned.update(
            {s: e for s, e in synced.items() if s in joined and s not in assigned and self.history.incremental_of(s)}
        )
        completed = len(assigned) == len(members) and self.whole_membership(generation, assigned)
        r = Rebalance(
            generation,
            COMPLETED if completed else SUPERSEDED if later is not None else INCOMPLETE,
            [str(s) for s in members],
            superseded_by=None if completed else later,
            leader=next((str(s) for s, e in joined.items() if e.get("is_leader")), None),
        )
        joins = self.join_sent.get(generation, {})
        self.find_start(r, boundary, [e for sent in joins.values() for e in sent])
        sent = {s: sent[0] for s, sent in joins.items()}  # a member's join phase starts at its first JoinGroup
        if sent and r.start:
            r.detect_ms = min(e["mono_ms"] for e in sent.values()) - r.start.mono_ms
        r.join_ms = _slowest([(sent.get(s), joined[s]) for s in members])
        r.sync_ms = _slowest([(joined[s], synced.get(s)) for s in members])
        r.stabilized = Instant.of(max(joined.values(), key=lambda e: e["mono_ms"]))
        prepared, stable = self.preparing.get(generation - 1), self.stabilized.get(generation)
        if prepared:
            r.coordinator_reason = prepared.get("reason")
            r.coordinator_preparing = Instant.of(prepared)
        if stable:
            r.coordinator_stabilized = Instant.of(stable)
            if isinstance(stable.get("members"), int):
                r.coordinator_members = stable["members"]
        if prepared and stable:
            r.coordinator_ms = stable["mono_ms"] - prepared["mono_ms"]
        began = r.start.mono_ms if r.start else min(e["mono_ms"] for e in joined.values())
        r.teardown = began >= self.teardown_from
        if completed:
            r.end = Instant.of(max(assigned.values(), key=lambda e: e["mono_ms"]))
            after = self.owners(generation)
            r.moves = [
                f"{tp}: {before.get(tp, '-')} -> {after[tp]}" for tp in sorted(after) if before.get(tp) != after[tp]
            ]
        r.unowned_ms = self.stop_the_world(generation)
        return r

    def whole_membership(self, generation: int, assigned: dict[MemberSlot, Event]) -> bool:
        """Where members say which membership they computed their assignment from (`members` in
        `group_joined`: zk-eager's consumers registered in ZooKeeper), the generation completes only
        when every one of them took its share; one that never acted on it left its share unclaimed."""
        listed = {m for e in self.joined[generation].values() for m in e.get("members") or ()}
        return listed <= {e.get("member_id") for e in assigned.values()}

    def find_start(self, r: Rebalance, boundary: float, joins: list[Event]) -> None:
        """The earliest sign, after the previous generation settled, that this one was coming. A member
        whose first JoinGroup came while the previous one was still settling (a newcomer answered
        MEMBER_ID_REQUIRED meanwhile) signals this one with the retry that follows it."""
        first_joined = min(e["mono_ms"] for e in self.joined[r.generation].values())
        times, releases = self.releases
        signs = releases[bisect_right(times, boundary) : bisect_right(times, first_joined)]
        prepared = self.preparing.get(r.generation - 1)
        if signs or joins:  # a JoinGroup the coordinator held until the previous generation settled is this one's
            r.member_start = Instant.of(_answered_by(signs + joins, prepared))
        signs += [e for e in joins if e["mono_ms"] > boundary]
        signs += [prepared] if prepared else []
        if not signs:
            return
        first = min(signs, key=lambda e: e["mono_ms"])
        r.start = Instant.of(first)
        r.trigger = (
            f"coordinator: {first.get('reason')}" if first is prepared else f"{first['name']} by {MemberSlot.of(first)}"
        )

    def stop_the_world(self, generation: int) -> dict[str, float]:
        """Per partition handed out in this generation: how long nobody owned it."""
        return {str(tp): h.unowned_ms for tp, h in self.handovers.get(generation, {}).items()}


class Handover(NamedTuple):
    tp: TopicPartition
    unowned_ms: float  # from the latest end of any earlier session of the partition to this one's start
    session: Session  # the new owner's


def handovers(history: History) -> dict[int, dict[TopicPartition, Handover]]:
    """generation -> partition -> its hand-over in that generation (the last one, should it change
    hands twice): from the latest end of any earlier session of the partition (none still open)
    to the new session's start. One pass."""

    def compute() -> dict[int, dict[TopicPartition, Handover]]:
        ownership = ownership_of(history)
        out: dict[int, dict[TopicPartition, Handover]] = defaultdict(dict)
        for tp in ownership.partitions():
            released = -math.inf  # running maximum of earlier sessions' ends
            for i, s in enumerate(ownership.of_partition(tp)):
                if i and s.generation is not None:
                    gap = max(0.0, s.start_ms - released) if released != math.inf else 0.0
                    out[s.generation][tp] = Handover(tp, gap, s)
                released = max(released, s.end_ms)
        return out

    return history.memo("handovers", compute)
