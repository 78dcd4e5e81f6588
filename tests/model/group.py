"""A model of one consumer group that writes what it does as a run history (docs/history.md).

The Hypothesis state machine (test_group_model.py) drives it step by step: the producer
acknowledges ranges, members consume and commit, members join, leave, crash and come
back, pause past the session timeout (zombies). Each step writes the events a real run
writes for it, with the fields analysis/synthetic.py and the recorded fixtures carry
(tests/fixtures/histories), and nothing undocumented. Rebalances follow the protocol
generation's rules (oracle/protocols.py):

- classic eager (`classic-eager`, range / roundrobin): every member revokes everything,
  rejoins, and gets the assignor's closed-form layout (oracle/assignors.py) over the
  members sorted by member id;
- classic cooperative (`classic-cooperative`, cooperative-sticky): incremental deltas;
  what moves is revoked in the first generation and handed out in a second one;
- KIP-848 (`consumer`, uniform / range): no join or sync phase; the broker bumps the
  group epoch, computes a target assignment, members revoke what moves and then reach
  the new epoch (their member epoch: the events' `generation`) one by one.

The history keeps the format's promises: per writer (source + incarnation) `seq` counts
1, 2, 3 … in file order; `mono_ms` never goes back (the model's clock only moves
forward, and every event advances it, so file order is time order); every consumed
offset was acknowledged; partitions exist; a member's generation never goes back; a
range's count is max - min + 1; a commit's `started_mono_ms` <= its `mono_ms`; one
`run_started` first and one `run_finished` last.

`finish()` is the harness's recovery: every fault healed, the group stable with every
partition owned, everything acknowledged consumed and committed, a last lag sample with
committed == high watermark, `phase: done`, then the members stop and the run finishes.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faults import catalogue
from oracle import vocabulary as ev
from oracle.assignors import LAYOUTS
from oracle.fields import MEMBER_HOST_ROLE
from oracle.history import TopicPartition
from oracle.protocols import GENERATIONS, INCREMENTAL_PROTOCOLS

TOPIC = "events"
GROUP = "model"
# The generations the model knows the rules of, with their assignors.
PROTOCOLS: dict[str, tuple[str, ...]] = {
    "classic-eager": ("range", "roundrobin"),
    "classic-cooperative": ("cooperative-sticky",),
    "consumer": ("uniform", "range"),
}
STICKY = frozenset({"cooperative-sticky", "uniform"})

Event = dict[str, Any]


@dataclass
class Member:
    name: str
    pid: int
    inc: int = 0  # 0: never started
    state: str = "down"  # down (never started / left), up, paused, crashed
    member_id: str | None = None
    generation: int | None = None
    in_group: bool = False  # the coordinator counts it
    owned: set[int] = field(default_factory=set)
    position: dict[int, int] = field(default_factory=dict)  # next offset to process
    uncommitted: set[int] = field(default_factory=set)  # partitions with progress not yet committed
    last_poll: float = 0.0
    fault_id: str | None = None  # the fault it is under (paused / crashed)


class Group:
    """One consumer group's run, written as events as it goes (self.events, in file order)."""

    def __init__(
        self,
        protocol: str,
        assignor: str,
        partitions: int,
        slots: int,
        initial: int,
        session_timeout_ms: int = 6000,
        seed: int = 0,
        hosts: int = 0,
    ):
        """``hosts``: the members live in that many member hosts (docs/history.md), dealt in turn;
        0: each member its own process."""
        assert protocol in PROTOCOLS and assignor in PROTOCOLS[protocol]
        self.protocol, self.assignor, self.partitions = protocol, assignor, partitions
        self.incremental = protocol in INCREMENTAL_PROTOCOLS
        self.epochs = GENERATIONS[protocol].member_epochs
        self.session_timeout_ms = session_timeout_ms
        self.rng = random.Random(seed)
        self.acks = 0  # records_acked events written
        self.events: list[Event] = []
        self.seq: Counter[tuple[str, int]] = Counter()
        self.t = 0.0
        self.mono0 = 500_000.0 + self.rng.uniform(0, 1e5)
        self.wall0 = 1_795_000_000_000.0 + seed * 1000.0
        self.hw = dict.fromkeys(range(partitions), 0)
        self.committed: dict[int, int] = {}
        self.generation = 0  # the group's generation (KIP-848: the group epoch)
        self.members = {f"consumer-{i}": Member(f"consumer-{i}", 20_000 + 100 * i) for i in range(1, slots + 1)}
        self.hosts = {f"member-host-{j}": 30_000 + j for j in range(1, hosts + 1)}
        self.host_of = {m: f"member-host-{(i - 1) % hosts + 1}" for i, m in enumerate(self.members, 1)} if hosts else {}
        self.faults: list[dict] = []  # the schedule as it happened, for run_started
        self.finished = False
        self.stats: Counter[str] = Counter()
        self.emit(
            ev.RUN_STARTED,
            "harness",
            format_version=ev.FORMAT_VERSION,
            run_id=f"model-{seed}",
            scenario=f"model-{protocol}",
            seed=seed,
            topics=[{"topic": TOPIC, "partitions": partitions}],
            topic_pattern=None,
            group=GROUP,
            protocol=protocol,
            assignor=assignor,
            members=[f"consumer-{i}" for i in range(1, initial + 1)],
            checks={},
            faults=self.faults,
            clock_offset_ms=round(self.wall0 - self.mono0, 3),
            backend="local",
            group_settings={"initial_rebalance_delay_ms": None if self.epochs else 0},
        )
        self.emit(ev.PROCESS_STARTED, "harness", process="observer", role="observer", pid=19_000)
        self.emit(ev.PROCESS_STARTED, "harness", process="producer", role="producer", pid=19_001)
        for host, pid in self.hosts.items():
            self.emit(ev.PROCESS_STARTED, "harness", process=host, role=MEMBER_HOST_ROLE, pid=pid)
        self.emit(ev.PHASE, "harness", phase="warmup", members=[f"consumer-{i}" for i in range(1, initial + 1)])
        self.emit(ev.PRODUCER_STARTED, "producer", pid=19_001, topic=TOPIC, rate=50.0, linger_ms=5)
        starting = [self.members[f"consumer-{i}"] for i in range(1, initial + 1)]
        for m in starting:
            self._start(m)
        self.rebalance(starting, "Adding new member (initial join)", joiners=starting)
        self.emit(ev.PHASE, "harness", phase="workload")

    # -- writing ------------------------------------------------------------------------------
    def advance(self, ms: float) -> None:
        self.t += ms

    def emit(self, name: str, source: str, inc: int = 1, **fields: Any) -> Event:
        self.t += 0.25 + self.rng.random()  # every event moves the clock: file order is time order
        self.seq[source, inc] += 1
        event = {
            "name": name,
            "ts": round(self.wall0 + self.t, 3),
            "mono_ms": self.mono(),
            "source": source,
            "seq": self.seq[source, inc],
            **fields,
        }
        self.events.append(event)
        return event

    def mono(self) -> float:
        return round(self.mono0 + self.t, 3)

    def memit(self, m: Member, name: str, **fields: Any) -> Event:
        return self.emit(
            name,
            m.name,
            m.inc,
            member=m.name,
            incarnation=m.inc,
            member_id=m.member_id,
            generation=m.generation,
            **fields,
        )

    def coord(self, name: str, **fields: Any) -> Event:
        return self.emit(name, "broker-1", broker="broker-1", group=GROUP, **fields)

    @staticmethod
    def tps(parts) -> list[dict]:
        return [{"topic": TOPIC, "partition": p} for p in sorted(parts)]

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(e) + "\n" for e in self.events), encoding="utf-8")
        return path

    # -- who is where --------------------------------------------------------------------------
    def in_group(self) -> list[Member]:
        return [m for m in self.members.values() if m.in_group]

    def up(self) -> list[Member]:
        return [m for m in self.members.values() if m.state == "up"]

    def startable(self) -> list[Member]:
        return [m for m in self.members.values() if m.state == "down"]

    def of(self, state: str) -> list[Member]:
        return [m for m in self.members.values() if m.state == state]

    # -- the producer and the observer -------------------------------------------------------------
    def produce(self, counts: dict[int, int]) -> None:
        ranges = []
        for p, n in sorted(counts.items()):
            if n > 0:
                ranges.append(
                    {
                        "topic": TOPIC,
                        "partition": p,
                        "min_offset": self.hw[p],
                        "max_offset": self.hw[p] + n - 1,
                        "count": n,
                    }
                )
                self.hw[p] += n
        if ranges:
            self.acks += 1
            # now and then a record acknowledged without an offset (records_acked.unplaced): counted,
            # in no range; by a count, not a draw, so the seeds' histories stay as they were
            unplaced = {"unplaced": 1} if self.acks % 7 == 0 else {}
            self.emit(ev.RECORDS_ACKED, "producer", ranges=ranges, **unplaced)
            self.stats["acked"] += sum(r["count"] for r in ranges)
        self.keep_up()

    def sample_lag(self) -> None:
        self.emit(
            ev.LAG_SAMPLED,
            "observer",
            group=GROUP,
            partitions=[
                {
                    "topic": TOPIC,
                    "partition": p,
                    "committed": self.committed.get(p),
                    "high_watermark": self.hw[p],
                    "lag": self.hw[p] - self.committed.get(p, 0),
                }
                for p in range(self.partitions)
            ],
        )

    def keep_up(self) -> None:
        """A member polls all the time: one that has not processed anything for 3 s does now
        (convergence's stall rule wants progress within 15 s wherever the group is settled)."""
        for m in self.up():
            if m.in_group and self.t - m.last_poll > 3000:
                self.consume(m, commit=True)

    # -- a member's work -----------------------------------------------------------------------------
    def consume(self, m: Member, parts: set[int] | None = None, commit: bool = True) -> None:
        assert m.state == "up"
        m.last_poll = self.t
        ranges = []
        for p in sorted(m.owned if parts is None else parts & m.owned):
            lo, hi = m.position[p], self.hw[p] - 1
            if hi >= lo:
                ranges.append(
                    {"topic": TOPIC, "partition": p, "min_offset": lo, "max_offset": hi, "count": hi - lo + 1}
                )
                m.position[p] = hi + 1
                m.uncommitted.add(p)
        if ranges:
            self.memit(m, ev.RECORDS_CONSUMED, ranges=ranges)
            self.stats["consumed"] += sum(r["count"] for r in ranges)
            if commit:
                self.commit(m, {r["partition"] for r in ranges})

    def commit(self, m: Member, parts: set[int] | None = None, trigger: str = "after-processing") -> None:
        """Commit the member's progress on `parts` (default: all it has not committed). The group
        accepts it from a member of the current generation that owns the partitions; a zombie's
        is refused (its generation, or member epoch, is stale)."""
        parts = set(m.uncommitted if parts is None else parts & m.uncommitted)
        if not parts:
            return
        sent = self.mono()
        self.advance(1 + self.rng.random() * 10)
        ok = m.in_group and m.generation == self.generation and parts <= m.owned
        error, code = ("UNKNOWN_MEMBER_ID", 25) if self.epochs else ("ILLEGAL_GENERATION", 22)
        self.memit(
            m,
            ev.OFFSETS_COMMITTED,
            offsets=[{"topic": TOPIC, "partition": p, "offset": m.position[p]} for p in sorted(parts)],
            success=ok,
            error=None if ok else error,
            error_code=None if ok else code,
            trigger=trigger,
            started_mono_ms=sent,
        )
        self.stats["commits" if ok else "rejected_commits"] += 1
        if ok:
            for p in parts:
                self.committed[p] = max(self.committed.get(p, 0), m.position[p])
            m.uncommitted -= parts

    # -- membership ------------------------------------------------------------------------------------
    def _start(self, m: Member) -> None:
        m.inc += 1
        m.pid += 1
        m.state, m.member_id, m.generation, m.in_group = "up", None, None, False
        m.owned, m.position, m.uncommitted, m.last_poll = set(), {}, set(), self.t
        hosted = {"host": self.host_of[m.name]} if self.host_of else {}
        if hosted:
            m.pid = self.hosts[hosted["host"]]  # a handle in its host: the host's pid
        else:
            self.emit(ev.PROCESS_STARTED, "harness", process=m.name, role="consumer", pid=m.pid)
        self.memit(
            m,
            ev.CONSUMER_STARTED,
            **hosted,
            pid=m.pid,
            group=GROUP,
            protocol=self.protocol,
            assignor=self.assignor,
            group_instance_id=None,
            commit_mode="sync",
            session_timeout_ms=self.session_timeout_ms,
            max_poll_interval_ms=300_000,
            processing="inline",
        )
        self.memit(m, ev.SUBSCRIPTION_CHANGED, topics={TOPIC: self.partitions})

    def _fault(self, kind: str, target: str | None, params: dict, details: dict | None = None) -> str:
        fault_id = f"f{len(self.faults) + 1}"
        at_s = round((self.t - self._workload_t()) / 1000, 3)
        self.faults.append({"fault_id": fault_id, "at_s": at_s, "kind": kind, "target": target, **params})
        # what the kind itself declares it does to its target, as the scheduler writes it
        fault = catalogue.from_spec(
            {
                "fault_id": fault_id,
                "kind": kind,
                "at_s": max(at_s, 0.0),
                **({"target": target} if target else {}),
                **params,
            }
        )
        self.emit(
            ev.FAULT_STARTED,
            "fault",
            fault_id=fault_id,
            kind=kind,
            target=target,
            params=params,
            effects=fault.effects.to_event(),
            details=details or {},
        )
        self.stats[f"fault:{kind}"] += 1
        return fault_id

    def _healed(self, fault_id: str, kind: str, target: str | None, started: float) -> None:
        self.emit(
            ev.FAULT_HEALED,
            "fault",
            fault_id=fault_id,
            kind=kind,
            target=target,
            how="scheduled",
            started_mono_ms=started,
        )

    def _workload_t(self) -> float:
        e = next((e for e in self.events if e["name"] == ev.PHASE and e.get("phase") == "workload"), None)
        return (e["mono_ms"] - self.mono0) if e else 0.0

    def join(self, m: Member) -> None:
        """A new member (or a slot that left, its next incarnation) starts and joins: a scale-up."""
        fault_id = self._fault("scale", None, {"consumers": len(self.in_group()) + 1}, {"changed": [m.name]})
        started = self.mono()
        self._start(m)
        self._healed(fault_id, "scale", None, started)
        self.rebalance(self.in_group() + [m], f"Adding new member {m.name}", joiners=[m])

    def leave(self, m: Member) -> None:
        """A clean leave (SIGTERM, a scale-down): commit, give everything up, LeaveGroup, exit 0."""
        fault_id = self._fault("scale", None, {"consumers": len(self.in_group()) - 1}, {"changed": [m.name]})
        started = self.mono()
        self.consume(m, commit=False)
        self.commit(m, trigger="revoke")
        if m.owned:
            self.memit(m, ev.PARTITIONS_REVOKED, partitions=self.tps(m.owned), incremental=self.incremental)
            m.owned = set()
        self.memit(m, ev.CONSUMER_STOPPED, reason="signal")
        self.coord(ev.COORDINATOR_MEMBER_REMOVED, member_id=m.member_id, reason="left")
        m.state, m.in_group = "down", False
        self._exited(m)
        self._healed(fault_id, "scale", None, started)
        self.rebalance(self.in_group(), f"Removing member {m.member_id} on LeaveGroup")

    def _exited(self, m: Member) -> None:
        """A member process's exit after its clean stop (a hosted member's host goes on)."""
        if not self.host_of:
            self.emit(ev.PROCESS_EXITED, "harness", process=m.name, role="consumer", pid=m.pid, returncode=0)

    def crash(self, m: Member, processed_uncommitted: bool) -> None:
        """SIGKILL: the process is gone (its last batch processed, maybe not committed); the
        coordinator evicts it when its session times out and the others rebalance."""
        if processed_uncommitted:
            self._last_batch(m)
        m.fault_id = self._fault("crash", m.name, {"signal": "SIGKILL", "restart_after_s": 1.0})
        self.advance(2)
        m.state, m.owned, m.uncommitted = "crashed", set(), set()
        if self.host_of:  # one member of a host crashed alone: its handle destroyed unclosed
            self.memit(m, ev.CLIENT_DESTROYED)
        else:
            self.emit(ev.PROCESS_EXITED, "harness", process=m.name, role="consumer", pid=m.pid, returncode=-9)
        self.advance(self.session_timeout_ms + self.rng.uniform(0, 300))
        self._evict(m)

    def _last_batch(self, m: Member) -> None:
        """Records arrive on the member's partitions and it processes them; the commit never leaves."""
        self.produce({p: 1 + self.rng.randrange(4) for p in m.owned})
        self.consume(m, commit=False)

    def restart(self, m: Member) -> None:
        """The crashed slot comes back: its next incarnation starts and joins."""
        started = self.mono()
        self._healed(m.fault_id, "crash", m.name, started)
        m.fault_id = None
        self._start(m)
        self.rebalance(self.in_group() + [m], f"Adding new member {m.name}", joiners=[m])

    def pause(self, m: Member, processed_uncommitted: bool, past_session: bool) -> None:
        """SIGSTOP. Short of the session timeout nothing happens; past it the coordinator evicts
        the member and its partitions move, while it still believes it owns them (a zombie)."""
        if processed_uncommitted:
            self._last_batch(m)
        length = (
            self.session_timeout_ms * self.rng.uniform(1.2, 2.0)
            if past_session
            else self.session_timeout_ms * self.rng.uniform(0.1, 0.5)
        )
        m.fault_id = self._fault("pause", m.name, {"duration_s": round(length / 1000, 3)})
        m.state = "paused"
        self._pause_until = getattr(self, "_pause_until", {})
        self._pause_until[m.name] = self.t + length
        if past_session:
            self.advance(self.session_timeout_ms + self.rng.uniform(0, 200))
            self._evict(m)
        else:
            self.advance(length)
            self.resume(m)

    def delay_heartbeat_response(self, m: Member, delay_ms: int) -> None:
        """A message fault: the message proxy holds back one heartbeat response of ``m`` for less than
        a heartbeat interval's worth. The request reached the coordinator: nothing else happens."""
        api = "ConsumerGroupHeartbeat" if self.epochs else "Heartbeat"
        params = {"duration_s": 1.0, "api": api, "action": "delay", "delay_ms": delay_ms}
        started = self.mono()
        fault_id = self._fault("message", m.name, params)
        self.advance(self.rng.uniform(1, 200))
        self.emit(
            ev.MESSAGE_FAULTED,
            "message-proxy",
            fault_id=fault_id,
            member=m.name,
            broker="broker-1",
            api=api,
            api_version=4,
            correlation_id=self.rng.randrange(1, 10_000),
            action="delay",
            delay_ms=delay_ms,
        )
        self.advance(1000)
        self._healed(fault_id, "message", m.name, started)

    def resume(self, m: Member) -> None:
        """SIGCONT. An evicted member's late commit is refused; it learns its partitions were
        lost, and rejoins as a new member."""
        self.t = max(self.t, self._pause_until.pop(m.name))
        started = self.mono()
        self._healed(m.fault_id, "pause", m.name, started)
        m.fault_id, m.state, m.last_poll = None, "up", self.t
        if m.in_group:  # shorter than the session: nothing happened
            return
        self.commit(m)  # the zombie's late commit: refused
        if m.owned:
            self.memit(m, ev.PARTITIONS_LOST, partitions=self.tps(m.owned), incremental=self.incremental)
            m.owned, m.uncommitted = set(), set()
        m.member_id = None if not self.epochs else m.member_id
        self.rebalance(self.in_group() + [m], f"Adding new member {m.name}", joiners=[m])

    def _evict(self, m: Member) -> None:
        self.coord(ev.COORDINATOR_MEMBER_REMOVED, member_id=m.member_id, reason="failed")
        m.in_group = False
        rest = self.in_group()
        if rest:
            self.rebalance(rest, f"removing member {m.member_id} on heartbeat expiration")
        else:
            self.coord(ev.COORDINATOR_GROUP_EMPTY, generation=self.generation)

    # -- assignment ----------------------------------------------------------------------------------
    def target(self, members: list[Member]) -> dict[str, set[int]]:
        ordered = sorted(members, key=lambda m: m.member_id or m.name)
        if self.assignor in STICKY:  # keep what members own, balanced: floor or ceil of P / N each
            n = len(ordered)
            base, extra = divmod(self.partitions, n)
            quota = {m.name: base + (1 if i < extra else 0) for i, m in enumerate(ordered)}
            out: dict[str, set[int]] = {m.name: set() for m in ordered}
            taken: set[int] = set()
            for m in sorted(ordered, key=lambda m: -len(m.owned)):
                keep = sorted(p for p in m.owned if p not in taken)[: quota[m.name]]
                out[m.name].update(keep)
                taken.update(keep)
            # the members with the most room first, so the quotas are met exactly
            free = [p for p in range(self.partitions) if p not in taken]
            for p in free:
                m = max(ordered, key=lambda m: (quota[m.name] - len(out[m.name]), -ordered.index(m)))
                out[m.name].add(p)
            return out
        tps = [TopicPartition(TOPIC, p) for p in range(self.partitions)]
        layout = LAYOUTS[self.assignor](tps, [m.name for m in ordered], None)
        return {name: {tp.partition for tp in parts} for name, parts in layout.items()}

    def _take(self, m: Member, parts: set[int]) -> None:
        new = parts - m.owned if self.incremental else parts
        m.owned = m.owned | parts if self.incremental else set(parts)
        for p in new:
            m.position[p] = self.committed.get(p, 0)
            m.uncommitted.discard(p)
        self.memit(
            m,
            ev.PARTITIONS_ASSIGNED,
            partitions=self.tps(new if self.incremental else parts),
            incremental=self.incremental,
        )

    def _give_up(self, m: Member, parts: set[int]) -> None:
        if not parts:
            return
        self.commit(m, parts, trigger="revoke")
        m.owned -= parts
        m.uncommitted -= parts
        self.memit(m, ev.PARTITIONS_REVOKED, partitions=self.tps(parts), incremental=self.incremental)

    def rebalance(self, members: list[Member], reason: str, joiners: list[Member] = ()) -> None:
        """Every member in `members` (the group's, live) rebalances into the next generation(s)."""
        self.stats["rebalances"] += 1
        if not members:
            return
        members = sorted(members, key=lambda m: m.name)
        for m in members:
            m.in_group = True
        if self.epochs:
            return self._reconcile(members, joiners)
        self.coord(ev.COORDINATOR_PREPARING_REBALANCE, old_generation=self.generation, reason=reason)
        held = {m.name: {p for o in members if o is not m for p in o.owned} for m in members}
        for m in members:
            if m not in joiners and m.member_id is not None:
                self.memit(m, ev.HEARTBEAT_FAILED, error="Broker: Group rebalance in progress")
                self.memit(
                    m,
                    ev.REBALANCE_STARTED,
                    reason="group is rebalancing",
                    rebalance_protocol="COOPERATIVE" if self.incremental else "EAGER",
                )
            if not self.incremental and m.owned:
                self.consume(m, commit=False)
                self.commit(m, trigger="revoke")
                self.memit(m, ev.PARTITIONS_REVOKED, partitions=self.tps(m.owned), incremental=False)
                m.owned = set()
            self.memit(m, ev.GROUP_JOIN_SENT)
        self.advance(self.rng.uniform(20, 300))
        self._join_sync(members)
        target = self.target(members)  # the leader's, over the member ids the join gave out
        for m in members:
            if self.incremental:  # first phase: give up what moves, take what no member held
                self._give_up(m, m.owned - target[m.name])
                self._take(m, target[m.name] - held[m.name] - m.owned)
            else:
                self._take(m, target[m.name])
        if self.incremental and any(not target[m.name] <= m.owned for m in members):
            # second phase: what was revoked is handed out in a generation of its own
            self.advance(self.rng.uniform(20, 200))
            self.coord(
                ev.COORDINATOR_PREPARING_REBALANCE,
                old_generation=self.generation,
                reason="Updating metadata for member (cooperative rebalance)",
            )
            for m in members:
                self.memit(m, ev.GROUP_JOIN_SENT)
            self._join_sync(members)
            for m in members:
                self._take(m, target[m.name] - m.owned)
        for m in members:
            m.last_poll = self.t

    def _join_sync(self, members: list[Member]) -> None:
        self.generation += 1
        self.coord(ev.COORDINATOR_STABILIZED, generation=self.generation, members=len(members))
        for m in members:
            if m.member_id is None:
                m.member_id = f"{m.name}-{self.rng.getrandbits(64):016x}"
        leader = members[0]
        for m in members:
            m.generation = self.generation
            self.memit(
                m, ev.GROUP_JOINED, leader_id=leader.member_id, is_leader=m is leader, protocol_name=self.assignor
            )
        self.coord(ev.COORDINATOR_ASSIGNMENT_RECEIVED, generation=self.generation, leader_id=leader.member_id)
        for m in members:
            self.memit(m, ev.GROUP_SYNCED)

    def _reconcile(self, members: list[Member], joiners: list[Member]) -> None:
        """KIP-848: the epoch bump, the target assignment, revocations, then each member's epoch."""
        for m in joiners:
            self.memit(m, ev.GROUP_JOIN_SENT)  # its epoch-0 heartbeat
            if m.member_id is None:
                m.member_id = f"{self.rng.getrandbits(128):032x}"
            self.coord(ev.COORDINATOR_MEMBER_JOINED, member_id=m.member_id)
        self.generation += 1
        self.coord(ev.COORDINATOR_PREPARING_REBALANCE, old_generation=self.generation - 1, reason="group epoch bumped")
        self.coord(ev.COORDINATOR_TARGET_ASSIGNMENT, generation=self.generation, assignor=self.assignor)
        target = self.target(members)
        for m in members:
            self._give_up(m, m.owned - target[m.name])
        self.advance(self.rng.uniform(50, 500))
        for m in members:
            m.generation = self.generation
            self.memit(m, ev.GROUP_JOINED, leader_id=None, is_leader=False, protocol_name=self.assignor)
            self._take(m, target[m.name] - m.owned)
            self.memit(m, ev.GROUP_SYNCED)
            m.last_poll = self.t

    # -- the end of the run ---------------------------------------------------------------------------
    def finish(self, rounds: int = 4) -> list[Event]:
        """The harness's recovery and teardown (see the module's docstring)."""
        for m in self.of("paused"):
            self.resume(m)
        for m in self.of("crashed"):
            self.restart(m)
        if not self.in_group():  # everyone left: the harness's members must be back for recovery
            self.join(self.startable()[0])
        for _ in range(rounds):  # the workload goes on a little after the last heal
            self.advance(self.rng.uniform(100, 300))
            self.produce({p: self.rng.randint(1, 6) for p in range(self.partitions)})
            for m in self.in_group():
                self.consume(m)
        self.emit(ev.PRODUCER_STOPPED, "producer", sent=sum(self.hw.values()), unacknowledged=0)
        self.emit(ev.PROCESS_EXITED, "harness", process="producer", role="producer", pid=19_001, returncode=0)
        self.emit(ev.PHASE, "harness", phase="recovery")
        self.advance(200)
        for m in self.in_group():  # the members drain what is left and commit it
            self.consume(m)
            self.commit(m)
        self.emit(ev.PHASE, "harness", phase="drain")
        self.sample_lag()
        assert all(self.committed.get(p, 0) == self.hw[p] for p in range(self.partitions)), (self.committed, self.hw)
        self.emit(ev.PHASE, "harness", phase="done")
        self.emit(
            ev.HEAL_CHECKED, "harness", stopped_processes=[], proxies=0, proxies_with_toxics=[], proxies_disabled=[]
        )
        for m in self.in_group():
            if m.owned:
                self.memit(m, ev.PARTITIONS_REVOKED, partitions=self.tps(m.owned), incremental=self.incremental)
                m.owned = set()
            self.memit(m, ev.CONSUMER_STOPPED, reason="end-of-run")
            m.state, m.in_group = "down", False
            self._exited(m)
        for host, pid in self.hosts.items():  # each host exits once its members have stopped
            self.emit(ev.PROCESS_EXITED, "harness", process=host, role=MEMBER_HOST_ROLE, pid=pid, returncode=0)
        self.coord(ev.COORDINATOR_GROUP_EMPTY, generation=self.generation)
        self.emit(ev.PROCESS_EXITED, "harness", process="observer", role="observer", pid=19_000, returncode=0)
        self.emit(ev.RUN_FINISHED, "harness", outcome="completed")
        self.finished = True
        return self.events
