"""Shared fixtures for the unit tests.

`history_builder` (oracle tests): builds run histories (docs/history.md) event
by event, stamping name / ts / mono_ms / source / seq, so a test reads like
the story it tells instead of a wall of dict literals:

    b = history_builder()
    c1 = b.consumer("consumer-1").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2, 3, 4]})
    c1.at(500).consumed(0, 0, 9)
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

TopicPartitionLike = int | tuple[str, int]


class ConsumerBuilder:
    """One incarnation of a member slot; remembers its member id, generation and assignment.

    Member id and generation are remembered with the time they were learnt, so an
    event added later at an earlier time (a test extending a shared story) still
    carries the generation the member had then.
    """

    def __init__(self, history: HistoryBuilder, name: str, incarnation: int):
        self.history, self.name, self.incarnation = history, name, incarnation
        self.memberships: list[tuple[float, str, int]] = []  # (since, member_id, generation)
        self.owned: set[tuple[str, int]] = set()
        self.pid = 1000 * incarnation + int("".join(ch for ch in name if ch.isdigit()) or 0)

    def at(self, ms: float) -> ConsumerBuilder:
        """Move the history's clock: `c1.at(100).join_sent()`."""
        self.history.at(ms)
        return self

    def membership(self) -> tuple[str | None, int | None]:
        known = [(m, g) for since, m, g in self.memberships if since <= self.history.now]
        return known[-1] if known else (None, None)

    def emit(self, name: str, **fields: Any) -> dict:
        member_id, generation = self.membership()
        return self.history.emit(
            name,
            self.name,
            member=self.name,
            incarnation=self.incarnation,
            member_id=member_id,
            generation=generation,
            **fields,
        )

    def start(
        self,
        commit_mode: str = "sync",
        group_instance_id: str | None = None,
        protocol: str | None = None,
        **more: Any,
    ) -> ConsumerBuilder:
        """Its consumer_started; ``protocol``: another generation than the run's (a migrated member);
        ``more``: its other fields (``subscription``, ``client_rack``, …)."""
        if "host" in more:  # a hosted member: its host's pid, no process of its own
            self.pid = self.history.hosts[more["host"]]
        else:
            self.history.emit("process_started", "harness", process=self.name, role="consumer", pid=self.pid)
        self.emit(
            "consumer_started",
            pid=self.pid,
            group="g",
            protocol=protocol or self.history.protocol,
            assignor=self.history.assignor,
            group_instance_id=group_instance_id,
            commit_mode=commit_mode,
            **{"session_timeout_ms": 10000, "max_poll_interval_ms": 300000, **more},
        )
        return self

    def join_sent(self) -> ConsumerBuilder:
        self.emit("group_join_sent")
        return self

    def joined(self, generation: int, leader: bool = False, member_id: str | None = None) -> ConsumerBuilder:
        member_id = member_id or self.membership()[0] or f"{self.name}-{self.incarnation}-id"
        self.memberships.append((self.history.now, member_id, generation))
        self.emit("group_joined", leader_id=None, is_leader=leader, protocol_name=self.history.assignor)
        return self

    def synced(self) -> ConsumerBuilder:
        self.emit("group_synced")
        return self

    def assigned(self, *partitions: TopicPartitionLike, incremental: bool | None = None) -> ConsumerBuilder:
        tps = {self.history.tp(p) for p in partitions}
        incremental = self.history.incremental if incremental is None else incremental
        self.owned = self.owned | tps if incremental else tps
        self.emit("partitions_assigned", partitions=_partitions(tps), incremental=incremental)
        return self

    def revoked(self, *partitions: TopicPartitionLike, incremental: bool | None = None) -> ConsumerBuilder:
        tps = {self.history.tp(p) for p in partitions} if partitions else set(self.owned)
        self.owned -= tps
        incremental = self.history.incremental if incremental is None else incremental
        self.emit("partitions_revoked", partitions=_partitions(tps), incremental=incremental)
        return self

    def lost(self, *partitions: TopicPartitionLike) -> ConsumerBuilder:
        tps = {self.history.tp(p) for p in partitions} if partitions else set(self.owned)
        self.owned -= tps
        self.emit("partitions_lost", partitions=_partitions(tps))
        return self

    def consumed(self, partition: TopicPartitionLike, lo: int, hi: int) -> ConsumerBuilder:
        self.emit("records_consumed", ranges=[_range(self.history.tp(partition), lo, hi)])
        return self

    def committed(
        self,
        partition: TopicPartitionLike,
        offset: int,
        *,
        success: bool = True,
        error: str | None = None,
        trigger: str = "after-processing",
        sent_at: float | None = None,
    ) -> ConsumerBuilder:
        topic, p = self.history.tp(partition)
        self.emit(
            "offsets_committed",
            offsets=[{"topic": topic, "partition": p, "offset": offset}],
            success=success,
            error=error,
            error_code=None if success else 22,
            trigger=trigger,
            started_mono_ms=self.history.now if sent_at is None else float(sent_at),
        )
        return self

    def stopped(self, reason: str = "end-of-run") -> ConsumerBuilder:
        self.owned = set()
        self.emit("consumer_stopped", reason=reason)
        return self

    def destroyed(self) -> ConsumerBuilder:
        """A hosted member's handle destroyed unclosed (its host's `crash` command)."""
        self.owned = set()
        self.emit("client_destroyed")
        return self

    def exited(self, returncode: int = 0) -> ConsumerBuilder:
        self.owned = set()
        self.history.emit(
            "process_exited", "harness", process=self.name, role="consumer", pid=self.pid, returncode=returncode
        )
        return self


class HistoryBuilder:
    TS0 = 1_700_000_000_000.0  # wall clock at mono 0

    def __init__(
        self,
        topics: dict[str, int] | None = None,
        protocol: str = "classic-eager",
        assignor: str = "range",
        run_started: bool = True,
    ):
        self.topics = topics or {"events": 5}
        self.protocol, self.assignor = protocol, assignor
        self.incremental = protocol in ("classic-cooperative", "consumer")
        self.events: list[dict] = []
        self.now = 0.0
        self._seq: Counter[str] = Counter()
        self._tick = 0  # events stamped at the same `at()` keep the order they were written in
        self.consumers: dict[str, ConsumerBuilder] = {}
        self.hosts: dict[str, int] = {}  # member host -> its pid
        if run_started:
            self.emit(
                "run_started",
                "harness",
                run_id="run-1",
                scenario="unit",
                seed=7,
                topics=[{"topic": t, "partitions": n} for t, n in self.topics.items()],
                group="g",
                protocol=protocol,
                assignor=assignor,
                members=[],
                checks={},
            )

    # -- clock and raw events -------------------------------------------------

    def at(self, ms: float) -> HistoryBuilder:
        if float(ms) != self.now:
            self.now, self._tick = float(ms), 0
        return self

    def emit(self, name: str, source: str, **fields: Any) -> dict:
        self._seq[source] += 1
        mono = self.now + self._tick * 0.001
        self._tick += 1
        event = {
            "name": name,
            "ts": self.TS0 + mono,
            "mono_ms": mono,
            "source": source,
            "seq": self._seq[source],
            **fields,
        }
        self.events.append(event)
        return event

    def tp(self, p: TopicPartitionLike) -> tuple[str, int]:
        return p if isinstance(p, tuple) else (next(iter(self.topics)), p)

    # -- actors ---------------------------------------------------------------

    def consumer(self, name: str, incarnation: int = 1) -> ConsumerBuilder:
        self.consumers[name] = ConsumerBuilder(self, name, incarnation)
        return self.consumers[name]

    def host(self, name: str, pid: int) -> HistoryBuilder:
        """A member host's process_started: members started with ``host=name`` run in it."""
        self.hosts[name] = pid
        self.emit("process_started", "harness", process=name, role="member-host", pid=pid)
        return self

    def host_exited(self, name: str, returncode: int = 0) -> HistoryBuilder:
        """A member host's process_exited: it ends every incarnation it ran not ended yet."""
        for c in self.consumers.values():
            if c.pid == self.hosts[name]:
                c.owned = set()
        self.emit(
            "process_exited", "harness", process=name, role="member-host", pid=self.hosts[name], returncode=returncode
        )
        return self

    def __getitem__(self, name: str) -> ConsumerBuilder:
        return self.consumers[name]

    def phase(self, phase: str) -> HistoryBuilder:
        self.emit("phase", "harness", phase=phase)
        return self

    def done(self) -> HistoryBuilder:
        return self.phase("done")

    def acked(self, partition: TopicPartitionLike, lo: int, hi: int) -> HistoryBuilder:
        self.emit("records_acked", "producer", ranges=[_range(self.tp(partition), lo, hi)])
        return self

    def fault(self, kind: str, target: str, fault_id: str = "f1") -> HistoryBuilder:
        self.emit("fault_started", "fault", fault_id=fault_id, kind=kind, target=target, params={})
        return self

    def healed(self, kind: str, target: str, fault_id: str = "f1") -> HistoryBuilder:
        self.emit("fault_healed", "fault", fault_id=fault_id, kind=kind, target=target, how="scheduled")
        return self

    def coordinator(self, name: str, **fields: Any) -> HistoryBuilder:
        self.emit(name, "broker-1", broker=1, group="g", **fields)
        return self

    def lag(self, lags: dict[TopicPartitionLike, int]) -> HistoryBuilder:
        parts = [
            {"topic": t, "partition": p, "committed": 100 - lag, "high_watermark": 100, "lag": lag}
            for (t, p), lag in ((self.tp(k), v) for k, v in lags.items())
        ]
        self.emit("lag_sampled", "harness", group="g", partitions=parts)
        return self

    # -- whole rebalances -------------------------------------------------------

    def rebalance(
        self,
        generation: int,
        assignment: dict[str, list[TopicPartitionLike]],
        *,
        at: float | None = None,
        join_ms: float = 10,
        sync_ms: float = 5,
    ) -> HistoryBuilder:
        """Everyone in `assignment` rebalances into `generation`: eager members revoke
        what they own, all send JoinGroup at `at`, join `join_ms` later (the first is
        leader), sync and get their partitions `sync_ms` after that."""
        start = self.now if at is None else at
        members = [self.consumers[name] for name in assignment]
        self.at(start)
        for c in members:
            if c.owned and not self.incremental:
                c.revoked()
        for c in members:
            c.join_sent()
        self.at(start + join_ms)
        for i, c in enumerate(members):
            c.joined(generation, leader=i == 0)
        self.at(start + join_ms + sync_ms)
        for c in members:
            c.synced()
            wanted = {self.tp(p) for p in assignment[c.name]}
            if self.incremental:
                if c.owned - wanted:
                    c.revoked(*sorted(c.owned - wanted))
                c.assigned(*sorted(wanted - c.owned))
            else:
                c.assigned(*sorted(wanted))
        return self

    def formed(self, c1, c2) -> HistoryBuilder:
        """Two started members form generation 1 (by 240 ms): c1 leads and takes 0, 1, 2, c2 takes 3, 4."""
        c1.at(100).join_sent()
        self.at(105).coordinator(
            "coordinator_preparing_rebalance", old_generation=0, reason=f"Adding new member {c1.name}"
        )
        c2.at(120).join_sent()
        self.at(200).coordinator("coordinator_stabilized", generation=1, members=2)
        c1.at(210).joined(1, leader=True)
        c2.at(220).joined(1)
        c1.at(230).synced().assigned(0, 1, 2)
        c2.at(240).synced().assigned(3, 4)
        return self

    def evicted(self, member: str, at: float, survivor: str, *partitions: TopicPartitionLike) -> HistoryBuilder:
        """The coordinator evicts `member` (incarnation 1) from generation 1 on heartbeat expiration at
        `at`, and `survivor`, alone, rebalances into generation 2 with `partitions`."""
        self.at(at).coordinator(
            "coordinator_preparing_rebalance",
            old_generation=1,
            reason=f"removing member {member}-1-id on heartbeat expiration",
        )
        c = self.consumers[survivor]
        c.at(at + 100).revoked()
        c.at(at + 110).join_sent()
        c.at(at + 120).joined(2, leader=True)
        c.at(at + 125).synced()
        c.at(at + 130).assigned(*partitions)
        self.at(at + 140).coordinator("coordinator_stabilized", generation=2, members=1)
        return self

    def build(self) -> list[dict]:
        """The events as built, each writer's `seq` counting in time order (a test may tell a
        member's story out of order; a writer numbers its events as it writes them)."""
        events = [dict(e) for e in self.events]
        seq: Counter[tuple] = Counter()
        for e in sorted(events, key=lambda e: e["mono_ms"]):  # stable: same instant, as written
            writer = (e["source"], e.get("incarnation"))
            seq[writer] += 1
            e["seq"] = seq[writer]
        return events


def _partitions(tps: set[tuple[str, int]]) -> list[dict]:
    return [{"topic": t, "partition": p} for t, p in sorted(tps)]


def _range(tp: tuple[str, int], lo: int, hi: int) -> dict:
    return {"topic": tp[0], "partition": tp[1], "min_offset": lo, "max_offset": hi, "count": hi - lo + 1}


@pytest.fixture
def history_builder():
    """Factory: history_builder(topics={"events": 5}, protocol="classic-eager", assignor="range")."""
    return HistoryBuilder


@pytest.fixture
def pause_story(history_builder):
    """(oracle tests) Two members form the group; consumer-2 is paused past its session timeout and
    evicted; it comes back, learns its partitions were lost, and rejoins."""
    b = history_builder()
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    # generation 1: empty group, initial rebalance delay ~3 s
    c1.at(100).join_sent()
    b.at(105).coordinator("coordinator_preparing_rebalance", old_generation=0, reason="Adding new member consumer-1")
    c2.at(120).join_sent()
    b.at(3130).coordinator("coordinator_stabilized", generation=1, members=2)
    c1.at(3150).joined(1, leader=True)
    c2.at(3160).joined(1)
    c1.at(3170).synced().assigned(0, 1, 2)
    c2.at(3190).synced().assigned(3, 4)
    # generation 2: consumer-2 paused, evicted by the coordinator
    b.at(5000).fault("pause", "consumer-2")
    b.evicted("consumer-2", 15000, "consumer-1", 0, 1, 2, 3, 4)
    # generation 3: consumer-2 resumes, finds its partitions lost, rejoins
    b.at(20000).healed("pause", "consumer-2")
    c2.at(20010).lost()
    c2.at(20020).join_sent()
    c1.at(20100).revoked()
    c1.at(20101).join_sent()
    c1.at(20150).joined(3, leader=True)
    c2.joined(3)
    c1.at(20160).synced().assigned(0, 1, 2)
    c2.synced().assigned(3, 4)
    return b
