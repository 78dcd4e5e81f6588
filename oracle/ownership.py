"""Ownership sessions: who owned which partition, from when to when, and why it ended.

A session is one member slot (member + incarnation) owning one partition
without interruption. It starts at `partitions_assigned` and ends at the first
of: revoke, lost, a full (eager) assignment without it, `consumer_stopped`,
the process exiting, or the slot being restarted. Eager callbacks carry the
whole assignment, cooperative (incremental) ones carry deltas; both reduce to
the same sessions, so no check has to care which protocol ran.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right, insort
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from . import vocabulary as ev
from .history import Commit, Event, History, Instant, MemberProcesses, MemberSlot, TopicPartition, effects_of
from .protocols import GENERATIONS

REVOKED = "revoked"
LOST = "lost"
STOPPED = "stopped"  # consumer_stopped: closed the consumer itself
PROCESS_EXITED = "process-exited"
CRASHED = "crashed"  # killed by a signal, or a crash fault targeted it
OWNED_AT_END = "owned-at-end"

# How long after its revoke a member's revoke-callback commit that carries no generation
# still counts as the owner's (drivers commit inside the callback; one that records the
# revoke first, or stamps with another clock, may send the commit a little later). A commit
# that carries a generation is judged by it instead (Ownership.commit_session).
REVOKE_COMMIT_GRACE_MS = 1000.0


class _Owners(Mapping):
    """Partition -> its open sessions, read from a sweep's state (``Ownership.owners_over``)."""

    def __init__(self, sessions: list[Session], held: dict[TopicPartition, list[int]]):
        self._sessions, self._held = sessions, held

    def __getitem__(self, tp: TopicPartition) -> list[Session]:
        if not self._held.get(tp):
            raise KeyError(tp)
        return [self._sessions[i] for i in self._held[tp]]

    def __iter__(self) -> Iterator[TopicPartition]:
        return (tp for tp, held in self._held.items() if held)

    def __len__(self) -> int:
        return sum(1 for held in self._held.values() if held)


@dataclass(eq=False)
class Session:
    slot: MemberSlot
    tp: TopicPartition
    generation: int | None  # the generation whose assignment gave it
    member_id: str | None
    start: Instant
    end: Instant | None = None
    ended_by: str = OWNED_AT_END
    # Every generation the member joined while owning it: cooperative members
    # keep partitions across rebalances, so one session can span several.
    generations: list[int] = field(default_factory=list)

    @property
    def start_ms(self) -> float:
        return self.start.mono_ms

    @property
    def end_ms(self) -> float:
        return self.end.mono_ms if self.end else math.inf

    def covers(self, mono_ms: float) -> bool:
        return self.start_ms <= mono_ms <= self.end_ms

    def overlap(self, other: Session) -> tuple[Instant, Instant | None] | None:
        """When both owned the partition (end None: both still did at the end of the
        history). A hand-over within the same millisecond is not an overlap."""
        start = max(self.start, other.start, key=lambda i: i.mono_ms)
        end = min((s.end for s in (self, other) if s.end), key=lambda i: i.mono_ms, default=None)
        if end is not None and end.mono_ms <= start.mono_ms:
            return None
        return start, end

    def describe(self, history: History) -> str:
        gen = f"generation {self.generation}" if self.generation is not None else "no generation"
        until = history.clock(self.end_ms) if self.end else "the end"
        return f"{self.slot} ({gen}, {history.clock(self.start_ms)}..{until}, {self.ended_by})"


@dataclass
class Ownership:
    sessions: list[Session]
    # generation -> member slot -> partitions it owned once it had that generation's assignment
    assignments: dict[int, dict[MemberSlot, frozenset[TopicPartition]]]
    # generations in which some member gave partitions up incrementally (cooperative
    # first phase): their assignment is deliberately partial, the next one completes it
    incremental_revokes: dict[int, set[MemberSlot]]
    # every group_joined, in time order: (mono_ms, generation, slot) — when the group (classic) or
    # a member (KIP-848 epochs) moved on to a generation
    joins: list[tuple[float, int, MemberSlot]] = field(default_factory=list)
    member_epochs: bool = False  # KIP-848: a generation is one member's epoch, not the group's
    # In a migrated group (History.mixed) that depends on the instant: whether the group was a
    # consumer group then (History.consumer_group_at). None: ``member_epochs`` all along.
    epochs_at: Callable[[float], bool] | None = None

    def __post_init__(self) -> None:
        self._by_tp: dict[TopicPartition, list[Session]] = defaultdict(list)
        self._by_owner: dict[tuple[MemberSlot, TopicPartition], list[Session]] = defaultdict(list)
        for s in sorted(self.sessions, key=lambda s: s.start_ms):
            self._by_tp[s.tp].append(s)
            self._by_owner[s.slot, s.tp].append(s)
        self._starts = {key: [s.start_ms for s in sessions] for key, sessions in self._by_owner.items()}
        # owning() runs for every consumption and commit of the run: each (slot, partition)'s
        # starts, ends and sessions side by side, so a lookup is a bisect and a comparison.
        self._spans = {
            key: (self._starts[key], [s.end_ms for s in sessions], sessions) for key, sessions in self._by_owner.items()
        }

    def of_partition(self, tp: TopicPartition) -> list[Session]:
        """Sessions of one partition, oldest first."""
        return self._by_tp.get(tp, [])

    def partitions(self) -> list[TopicPartition]:
        return sorted(self._by_tp)

    def owning(self, slot: MemberSlot, tp: TopicPartition, mono_ms: float) -> Session | None:
        """The slot's session of the partition covering the instant (the earlier one where a
        session ends at the very instant the next begins)."""
        spans = self._spans.get((slot, tp))
        if spans is None:
            return None
        starts, ends, sessions = spans
        i = bisect_right(starts, mono_ms) - 1  # this one and every earlier one started by then
        found = None
        while i >= 0 and mono_ms <= ends[i]:  # a slot's sessions of one partition never overlap
            found, i = sessions[i], i - 1
        return found

    def _started_by(self, slot: MemberSlot, tp: TopicPartition, mono_ms: float) -> int:
        """Index of the slot's last session of the partition that started by `mono_ms` (-1: none)."""
        starts = self._starts.get((slot, tp))
        return bisect_right(starts, mono_ms) - 1 if starts else -1

    def owned_before(self, slot: MemberSlot, tp: TopicPartition, mono_ms: float) -> Session | None:
        """The slot's latest session of the partition that started by `mono_ms`: did this
        incarnation ever own it? (A former owner is not a member that never owned it.)"""
        i = self._started_by(slot, tp, mono_ms)
        return self._by_owner[slot, tp][i] if i >= 0 else None

    def commit_session(self, commit: Commit) -> Session | None:
        """The ownership session a commit was made in, judged when its request left.

        A member may commit what it processed after giving the partition up, until the group
        moves on: librdkafka's auto commit of a revoked partition leaves as it unassigns it,
        after the revoke callback (at a rebalance and at close). The coordinator fences by
        generation, not by partition, so such a commit is the revoked session's when it carries
        the generation the member gave the partition up in, and no newer generation was joined
        before it left: by any member (classic: the group's generation), by this member (KIP-848:
        its own epoch). Whether another member took the partition over meanwhile is the caller's
        to judge. A revoke-callback commit without a generation gets REVOKE_COMMIT_GRACE_MS.

        The generation a commit event carries is the member's latest when its callback ran, which
        for a commit answered after the member joined the next generation is that one's: such a
        commit is judged a commit without ownership (docs/history.md, offsets_committed)."""
        session = self.owning(commit.slot, commit.tp, commit.sent_ms)
        if session is not None:
            return session
        ended = self.owned_before(commit.slot, commit.tp, commit.sent_ms)
        if ended is None or ended.ended_by != REVOKED:
            return None
        if commit.generation is None:
            return (
                ended
                if commit.trigger == "revoke" and commit.sent_ms - ended.end_ms <= REVOKE_COMMIT_GRACE_MS
                else None
            )
        if commit.generation != self._revoked_in(ended) or self._moved_on(
            commit.slot, commit.generation, commit.sent_ms
        ):
            return None
        return ended

    def _revoked_in(self, session: Session) -> int | None:
        """The generation a revoked session was given up in: the last it was owned in, or a newer
        one the member had joined by then (a KIP-848 member revokes for the epoch it was told of)."""
        joined = [
            g
            for t, g, slot in self.joins[: bisect_right(self.joins, (session.end_ms, math.inf))]
            if slot == session.slot
        ]
        return max(session.generations[-1:] + joined[-1:], default=session.generation)

    def _moved_on(self, slot: MemberSlot, generation: int, mono_ms: float) -> bool:
        """A generation newer than ``generation`` was joined by ``mono_ms``: by anyone (classic), by ``slot`` (KIP-848)."""
        return any(
            g > generation and (s == slot or not self._epochs(t))
            for t, g, s in self.joins[: bisect_right(self.joins, (mono_ms, math.inf))]
        )

    def _epochs(self, mono_ms: float) -> bool:
        """Generations were each member's own epoch at the instant (a consumer group), not the group's."""
        return self.epochs_at(mono_ms) if self.epochs_at is not None else self.member_epochs

    def owners_at(self, mono_ms: float) -> dict[TopicPartition, list[Session]]:
        """Sessions open at an instant (half-open: an ending session no longer counts)."""
        owners: dict[TopicPartition, list[Session]] = defaultdict(list)
        for s in self.sessions:
            if s.start_ms <= mono_ms < s.end_ms:
                owners[s.tp].append(s)
        return owners

    def owners_over(
        self, instants: Iterable[float], partitions: Iterable[TopicPartition] = ()
    ) -> Iterator[tuple[Mapping[TopicPartition, list[Session]], set[TopicPartition]]]:
        """`owners_at` each of a rising series of instants, in one sweep over the sessions, with the
        partitions (of ``partitions``, and any ever owned) not owned by exactly one session then.
        Both are the sweep's own, changed as it goes on: read them before taking the next. Each
        instant costs what changed since the last, not the group's size (a 1,000-member group's
        history has a thousand instants and thousands of partitions)."""
        by_start = sorted(range(len(self.sessions)), key=lambda i: self.sessions[i].start_ms)
        ends: list[tuple[float, int]] = []  # heap of the open sessions' ends
        held: dict[TopicPartition, list[int]] = defaultdict(list)  # open sessions by partition, in index order
        off = set(partitions)  # owned by none or by several
        started = 0

        def recount(tp: TopicPartition) -> None:
            (off.discard if len(held[tp]) == 1 else off.add)(tp)

        for mono_ms in instants:
            while started < len(by_start) and self.sessions[by_start[started]].start_ms <= mono_ms:
                i = by_start[started]
                insort(held[self.sessions[i].tp], i)  # in the order owners_at lists them
                recount(self.sessions[i].tp)
                heapq.heappush(ends, (self.sessions[i].end_ms, i))
                started += 1
            while ends and ends[0][0] <= mono_ms:
                i = heapq.heappop(ends)[1]
                held[self.sessions[i].tp].remove(i)
                recount(self.sessions[i].tp)
            yield _Owners(self.sessions, held), off


def ownership_of(history: History) -> Ownership:
    return history.memo("ownership", lambda: _Derivation(history).run())


def _partitions(event: Event) -> set[TopicPartition] | None:
    listed = event.get("partitions")
    return None if listed is None else {TopicPartition.of(p) for p in listed}


class _Derivation:
    def __init__(self, history: History):
        self.history = history
        self.sessions: list[Session] = []
        self.open: dict[MemberSlot, dict[TopicPartition, Session]] = defaultdict(dict)
        self.current: dict[str, MemberSlot] = {}  # member name -> its live incarnation
        self.processes = MemberProcesses()
        self.doomed: set[str] = set()  # processes a fault is about to kill
        self.assignments: dict[int, dict[MemberSlot, frozenset[TopicPartition]]] = defaultdict(dict)
        self.assigned_slot: dict[int, dict[str, MemberSlot]] = defaultdict(
            dict
        )  # generation -> member -> its slot there
        self.incremental_revokes: dict[int, set[MemberSlot]] = defaultdict(set)
        self.joins: list[tuple[float, int, MemberSlot]] = []
        # slot -> generation of its latest incremental revoke, until it shows it stayed in the group
        self.revoke_pending: dict[MemberSlot, int] = {}
        # KIP-848: a member told of a new epoch that must give partitions up stays at its previous
        # epoch on the broker until it has revoked them (only then are they handed on). What it
        # revokes before its next assignment it held at the old epoch: slot -> the epoch it learnt.
        # Which of these a member does is its incarnation's generation's (a migrated group has both).
        generation = GENERATIONS.get(history.protocol) if isinstance(history.protocol, str) else None
        self.member_epochs = bool(generation and generation.member_epochs)
        self.epoch_pending: dict[MemberSlot, int] = {}
        self.own_epochs: dict[MemberSlot, bool] = {}  # slot -> its generation has member epochs

    def run(self) -> Ownership:
        for e in self.history.events:
            handler = getattr(self, "on_" + e["name"], None)
            if handler:
                handler(e)
        for slot in list(self.epoch_pending):  # an epoch learnt and kept to the end (no callback followed)
            self.enter_epoch(slot)
        return Ownership(
            self.sessions,
            dict(self.assignments),
            dict(self.incremental_revokes),
            self.joins,
            self.member_epochs,
            self.history.consumer_group_at if self.history.mixed else None,
        )

    def epochs_of(self, slot: MemberSlot) -> bool:
        """KIP-848's member epochs for this incarnation: it reaches an epoch on its own heartbeat and
        keeps its old one until it has revoked what it must give up. A classic member, even in a
        consumer group, joins with its partitions already given up (its JoinGroup is the rejoin)."""
        if slot not in self.own_epochs:
            generation = self.history.generation_of(slot)
            self.own_epochs[slot] = bool(generation.member_epochs) if generation else self.member_epochs
        return self.own_epochs[slot]

    def slot(self, e: Event) -> MemberSlot:
        slot = MemberSlot.of(e)
        self.current.setdefault(slot.member, slot)
        return slot

    def end(self, slot: MemberSlot, tps: set[TopicPartition] | None, e: Event, why: str) -> None:
        if why != REVOKED:
            self.enter_epoch(slot)
        owned = self.open[slot]
        for tp in sorted(owned.keys() if tps is None else owned.keys() & tps):
            session = owned.pop(tp)
            session.end, session.ended_by = Instant.of(e), why

    def died(self, slot: MemberSlot, e: Event, returncode: int | None = None, crashed: bool = False) -> None:
        crashed = crashed or slot.member in self.doomed or (returncode is not None and returncode < 0)
        self.end(slot, None, e, CRASHED if crashed else PROCESS_EXITED)
        self.doomed.discard(slot.member)

    # -- process lifecycle -------------------------------------------------

    def on_consumer_started(self, e: Event) -> None:
        slot = MemberSlot.of(e)
        previous = self.current.get(slot.member)
        if previous and previous != slot:
            # The harness restarts a slot only once the old process is gone,
            # even if its process_exited line never made it into the history.
            self.died(previous, e)
        self.current[slot.member] = slot
        self.doomed.discard(slot.member)
        self.processes.started(e)

    def on_fault_started(self, e: Event) -> None:
        if effects_of(e).get(ev.DOWN) == ev.KILLED:  # its exit is the fault's doing: a crash, however clean
            self.doomed.add(e.get("target"))

    def on_process_exited(self, e: Event) -> None:
        slots = self.processes.exited(e)
        if slots is None:  # no member ran in its pid, as far as the history says: the member it names
            slots = [self.current[e["process"]]] if e.get("process") in self.current else []
        for slot in slots:
            self.died(slot, e, e.get("returncode"))

    def on_client_destroyed(self, e: Event) -> None:
        """A hosted member's handle destroyed unclosed: what it owned is lost, as in a crash."""
        self.died(self.slot(e), e, crashed=True)

    def on_consumer_stopped(self, e: Event) -> None:
        slot = self.slot(e)
        self.end(slot, None, e, STOPPED)
        # Its last incremental revoke was the close giving everything up before LeaveGroup,
        # not KIP-429's first phase: that generation's assignment was whole.
        generation = self.revoke_pending.pop(slot, None)
        if generation is not None:
            self.incremental_revokes[generation].discard(slot)
            if not self.incremental_revokes[generation]:
                del self.incremental_revokes[generation]

    # -- group membership --------------------------------------------------

    def on_group_join_sent(self, e: Event) -> None:
        self.revoke_pending.pop(self.slot(e), None)  # it stays in the group: a first phase after all

    def on_group_joined(self, e: Event) -> None:
        slot = self.slot(e)
        if e.get("generation") is not None:
            self.joins.append((e["mono_ms"], e["generation"], slot))
        self.revoke_pending.pop(slot, None)
        self.enter_epoch(slot)
        self.epoch_pending[slot] = e["generation"]
        if not self.epochs_of(slot):
            self.enter_epoch(slot)

    def enter_epoch(self, slot: MemberSlot) -> None:
        """The sessions the slot still has are owned in the generation it last joined."""
        generation = self.epoch_pending.pop(slot, None)
        if generation is not None:
            for session in self.open[slot].values():
                if generation not in session.generations:
                    session.generations.append(generation)

    def on_partitions_assigned(self, e: Event) -> None:
        slot, generation, tps = self.slot(e), e.get("generation"), _partitions(e) or set()
        self.enter_epoch(slot)
        owned = self.open[slot]
        if not e.get("incremental"):
            self.end(slot, owned.keys() - tps, e, REVOKED)  # eager: the list is the whole assignment
        for tp in sorted(tps):
            if tp in owned:
                if generation is not None and generation not in owned[tp].generations:
                    owned[tp].generations.append(generation)
                continue
            session = Session(
                slot,
                tp,
                generation,
                e.get("member_id"),
                Instant.of(e),
                generations=[generation] if generation is not None else [],
            )
            owned[tp] = session
            self.sessions.append(session)
        if generation is not None:
            # A static member restarted into the same generation replaces its old incarnation.
            other = self.assigned_slot[generation].get(slot.member)
            if other is not None and other != slot:
                del self.assignments[generation][other]
            self.assigned_slot[generation][slot.member] = slot
            self.assignments[generation][slot] = frozenset(owned)

    def on_partitions_revoked(self, e: Event) -> None:
        slot = self.slot(e)
        self.end(slot, _partitions(e), e, REVOKED)
        if e.get("incremental") and e.get("generation") is not None:
            self.incremental_revokes[e["generation"]].add(slot)
            self.revoke_pending[slot] = e["generation"]

    def on_partitions_lost(self, e: Event) -> None:
        self.end(self.slot(e), _partitions(e), e, LOST)
