"""Synthetic-but-realistic run histories, for benchmarks, tests and the analysis JVM's class archive.

A small discrete-time simulation of one consumer group, written in the history
format (docs/history.md) with the shapes real runs have: a producer acknowledging
batches every 100 ms, members consuming and committing what they own, the
observer sampling lag every second, the brokers' coordinator log lines, and one
fault that makes the group rebalance (a pause or network cut past the session
timeout: eviction, then the member learns its partitions were lost and rejoins; a
crash with a restart; a poll stall past max.poll.interval.ms). A paused member's
last batch was processed but not committed, so its successor re-delivers it
(duplicates, explained), and the zombie's late commit is rejected
(ILLEGAL_GENERATION). Protocols: classic-eager / classic-static (eager
callbacks), classic-cooperative (incremental, two-phase) and consumer (KIP-848:
incremental, member epochs).

Stories the fault matrix does not tell, on request: `staggered_stop` stops the
members one at a time after `phase: done`, the rest rebalancing each time (the
harness's teardown: those rebalances are no statistic of the run); `stray_at_s`
makes a member process records of a partition it does not own, some already
processed by the owner and some the owner processes again afterwards;
`restart_at_s` is a load run's single member's restart (`group_resized`: the last
member leaves cleanly, its next incarnation joins `restart_down_s` later).

    write_run(dir, SynthSpec(seed=3, protocol="classic-cooperative", fault="crash"))

The numbers are whatever the oracle says they are: tests compare Spark with the
oracle on these histories, not with the simulation's intentions.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from oracle import vocabulary as ev
from oracle.legacy import LEGACY_FAULT_EFFECTS
from oracle.protocols import GENERATIONS, INCREMENTAL_PROTOCOLS

from .runs import HISTORY, VERDICT

PROTOCOLS = ("classic-eager", "classic-cooperative", "classic-static", "consumer")
FAULTS = ("pause", "crash", "poll-stall", "network", "none")
TOPIC = "events"


def _effects(fault: str, params: dict) -> dict:
    """What the simulated fault does to its victim, as fault_started says it (docs/history.md:
    `effects`): the built-in kinds' own declarations, as the oracle's table of them has them
    (faults/ is not for the analysis to import). The simulation follows the effects, never the
    kind's name."""
    return LEGACY_FAULT_EFFECTS[fault](params)


@dataclass
class SynthSpec:
    seed: int
    protocol: str = "classic-eager"
    fault: str = "pause"
    consumers: int = 3
    partitions: int = 6
    rate: float = 200.0
    duration_s: float = 40.0
    session_timeout_ms: int = 6000
    max_poll_interval_ms: int = 10000
    fault_at_s: float | None = None
    fault_duration_s: float | None = None
    kafka: str | None = None  # the scenario's cluster.kafka (scenario.yaml)
    # the versions run_started and consumer_started record (None: a history from before they were)
    kafka_release: str | None = None
    client: str | None = None
    client_version: str | None = None
    assignor: str | None = None
    scenario: str | None = None
    staggered_stop: bool = False
    stray_at_s: float | None = None
    # opt-in fields and events (None / False: the histories written before them, byte for byte)
    metadata: str | None = None  # run_started.metadata: zookeeper | kraft
    racks: bool = False  # run_started.broker_racks and each member's consumer_started.client_rack
    upgrade_to: str | None = None  # a rolling-broker-upgrade of broker-1 to this release, then finalized
    log_unrecognised: bool = False  # a member could not read a step from its library's log
    close_hang: bool = False  # the last member's close hangs at the end: the harness kills it (client-health)
    # a load run's single member's restart (group_resized): the last member leaves cleanly at this
    # second and its next incarnation joins restart_down_s later, the group rebalancing each time
    restart_at_s: float | None = None
    restart_down_s: float = 3.0

    @property
    def incremental(self) -> bool:
        return self.protocol in INCREMENTAL_PROTOCOLS

    def name(self) -> str:
        return self.scenario or f"synth-{self.protocol}-{self.fault}"


@dataclass
class _Member:
    name: str
    pid: int
    inc: int = 1
    member_id: str | None = None
    generation: int | None = None
    owned: set[int] = field(default_factory=set)
    position: dict[int, int] = field(default_factory=dict)  # next offset to process
    alive: bool = True
    stopped: bool = False  # paused / cut off / stalled: not processing
    uncommitted: dict[int, int] = field(default_factory=dict)


class _Sim:
    def __init__(self, spec: SynthSpec):
        self.s = spec
        self.rng = random.Random(spec.seed)
        self.events: list[dict] = []
        self.mono0 = 1_000_000.0 + self.rng.uniform(0, 1e6)
        self.wall0 = 1_795_000_000_000.0 + spec.seed * 3_600_000.0
        self.hw = dict.fromkeys(range(spec.partitions), 0)  # next offset the producer will get acked
        self.committed: dict[int, int] = {}
        self.members = {
            f"consumer-{i}": _Member(f"consumer-{i}", 5000 + 10 * spec.seed + i) for i in range(1, spec.consumers + 1)
        }
        self.generation = 0
        self.group = "synth"
        self.assignor = spec.assignor or GENERATIONS[spec.protocol].assignors[0]
        self.fault_params: dict = {}  # the fault's options, as the schedule gives them
        self.fault_effects: dict = {}  # what it does to its victim (fault_started's effects)
        self.generation_row = GENERATIONS[spec.protocol]  # what the protocol generation can do

    # -- events ---------------------------------------------------------------------------
    def emit(self, t: float, name: str, source: str, **fields) -> None:
        mono = round(self.mono0 + t, 3)
        self.events.append(
            {"name": name, "ts": round(self.wall0 + t, 3), "mono_ms": mono, "source": source, "seq": 0, **fields}
        )  # numbered as written: `_as_written`

    def memit(self, t: float, m: _Member, name: str, **fields) -> None:
        self.emit(
            t, name, m.name, member=m.name, incarnation=m.inc, member_id=m.member_id, generation=m.generation, **fields
        )

    def coord(self, t: float, name: str, **fields) -> None:
        self.emit(t, name, "broker-1", broker="broker-1", group=self.group, **fields)

    @staticmethod
    def tps(parts) -> list[dict]:
        return [{"topic": TOPIC, "partition": p} for p in sorted(parts)]

    # -- assignment -----------------------------------------------------------------------
    def layout(self, names: list[str]) -> dict[str, set[int]]:
        names = sorted(names)
        out = {n: set() for n in names}
        parts = list(range(self.s.partitions))
        if self.assignor == "range":
            n, extra = divmod(len(parts), len(names))
            for i, name in enumerate(names):
                out[name] = set(parts[i * n + min(i, extra) : (i + 1) * n + min(i + 1, extra)])
        else:
            for i, p in enumerate(parts):
                out[names[i % len(names)]].add(p)
        return out

    def commit(self, t: float, m: _Member, parts, trigger: str = "after-processing") -> None:
        offsets = {p: m.position[p] for p in parts if p in m.position and m.uncommitted.get(p)}
        if not offsets:
            return
        ok = m.generation == self.generation and all(p in m.owned for p in offsets)
        error, code = ("UNKNOWN_MEMBER_ID", 25) if self.generation_row.member_epochs else ("ILLEGAL_GENERATION", 22)
        self.memit(
            t,
            m,
            ev.OFFSETS_COMMITTED,
            offsets=[{"topic": TOPIC, "partition": p, "offset": o} for p, o in sorted(offsets.items())],
            success=ok,
            error=None if ok else error,
            error_code=None if ok else code,
            trigger=trigger,
            started_mono_ms=round(self.mono0 + t - self.rng.uniform(2, 15), 3),
        )
        if ok:
            for p, o in offsets.items():
                self.committed[p] = max(self.committed.get(p, 0), o)
                m.uncommitted[p] = 0

    def take(self, t: float, m: _Member, parts: set[int], incremental: bool) -> None:
        new = parts - m.owned if incremental else parts
        if incremental:
            m.owned |= parts
        else:
            m.owned = set(parts)
        for p in new:
            m.position[p] = self.committed.get(p, 0)
            m.uncommitted[p] = 0
        self.memit(
            t,
            m,
            ev.PARTITIONS_ASSIGNED,
            partitions=self.tps(parts if not incremental else new),
            incremental=incremental,
        )

    def rebalance(self, t: float, names: list[str], reason: str, joiner: str | None = None) -> float:
        """Every live member in `names` rebalances into the next generation(s); returns when it ended."""
        members = [self.members[n] for n in names]
        target = self.layout(names)
        old = self.generation
        self.coord(t, ev.COORDINATOR_PREPARING_REBALANCE, old_generation=old, reason=reason)
        t += self.rng.uniform(20, 300)
        if self.generation_row.member_epochs:  # KIP-848: each member reconciles on its own heartbeat
            return self._reconcile(t, members, target)
        eager = not self.s.incremental
        # what another member of the group holds when the rebalance begins (and must give up first)
        held = {m.name: {p for o in members if o is not m for p in o.owned} for m in members}
        for m in members:
            if m.name != joiner and m.member_id is not None:
                self.memit(t, m, ev.HEARTBEAT_FAILED, error="Broker: Group rebalance in progress")
                self.memit(
                    t + 0.2,
                    m,
                    ev.REBALANCE_STARTED,
                    reason="group is rebalancing",
                    rebalance_protocol="EAGER" if eager else "COOPERATIVE",
                )
            if eager and m.owned:
                self.commit(t + 0.5, m, m.owned, "revoke")
                self.memit(t + 1, m, ev.PARTITIONS_REVOKED, partitions=self.tps(m.owned), incremental=False)
                m.owned = set()
            self.memit(t + 2, m, ev.GROUP_JOIN_SENT)
            t += self.rng.uniform(1, 8)
        join_t = t + self.rng.uniform(30, 600)
        self.generation = old + 1
        self._join(join_t, members)
        sync_t = join_t + self.rng.uniform(20, 200)
        self.coord(
            sync_t - 5, ev.COORDINATOR_ASSIGNMENT_RECEIVED, generation=self.generation, leader_id=members[0].member_id
        )
        end = sync_t
        for m in members:
            self.memit(sync_t, m, ev.GROUP_SYNCED)
            if eager:
                self.take(sync_t + 0.3, m, target[m.name], incremental=False)
            else:  # cooperative first phase: give up what moves, take what nobody in the group holds
                gone = m.owned - target[m.name]
                if gone:
                    self.commit(sync_t + 0.2, m, gone, "revoke")
                    m.owned -= gone
                    self.memit(sync_t + 0.3, m, ev.PARTITIONS_REVOKED, partitions=self.tps(gone), incremental=True)
                self.take(sync_t + 0.4, m, target[m.name] - held[m.name], incremental=True)
            sync_t += self.rng.uniform(0.5, 5)
            end = sync_t
        if eager or all(target[m.name] <= m.owned for m in members):
            return end
        # cooperative second phase: the revoked partitions are handed out in a new generation
        t = end + self.rng.uniform(50, 400)
        self.coord(
            t,
            ev.COORDINATOR_PREPARING_REBALANCE,
            old_generation=self.generation,
            reason="Updating metadata for member (cooperative rebalance)",
        )
        for m in members:
            self.memit(t + 1, m, ev.GROUP_JOIN_SENT)
        self.generation += 1
        join_t = t + self.rng.uniform(20, 200)
        self._join(join_t, members)
        sync_t = join_t + self.rng.uniform(10, 100)
        for m in members:
            self.memit(sync_t, m, ev.GROUP_SYNCED)
            self.take(sync_t + 0.3, m, target[m.name] - m.owned, incremental=True)
            sync_t += self.rng.uniform(0.5, 5)
        return sync_t

    def _join(self, t: float, members: list[_Member]) -> None:
        self.coord(t - 3, ev.COORDINATOR_STABILIZED, generation=self.generation, members=len(members))
        leader = members[0]
        for m in members:
            if m.member_id is None:
                m.member_id = f"{m.name}-{self.rng.getrandbits(48):012x}"
        for m in members:
            m.generation = self.generation
            self.memit(
                t, m, ev.GROUP_JOINED, leader_id=leader.member_id, is_leader=m is leader, protocol_name=self.assignor
            )
            t += self.rng.uniform(0.2, 3)

    def _reconcile(self, t: float, members: list[_Member], target: dict[str, set[int]]) -> float:
        """KIP-848: the broker bumps the group epoch and computes a target assignment; members
        revoke what moves, then receive what is theirs in the new epoch."""
        self.generation += 1
        self.coord(t, ev.COORDINATOR_TARGET_ASSIGNMENT, generation=self.generation, assignor=self.assignor)
        for m in members:
            if m.member_id is None:
                m.member_id = f"{self.rng.getrandbits(64):016x}"
                self.memit(t - 5, m, ev.GROUP_JOIN_SENT)
            gone = m.owned - target[m.name]
            if gone:
                self.commit(t + 1, m, gone, "revoke")
                m.owned -= gone
                self.memit(t + 2, m, ev.PARTITIONS_REVOKED, partitions=self.tps(gone), incremental=True)
        t += self.rng.uniform(200, 700)
        for m in members:
            m.generation = self.generation
            self.memit(t, m, ev.GROUP_JOINED, leader_id=None, is_leader=False, protocol_name=self.assignor)
            self.take(t + 0.5, m, target[m.name] - m.owned, incremental=True)
            self.memit(t + 1, m, ev.GROUP_SYNCED)
            t += self.rng.uniform(1, 20)
        return t

    # -- the run ----------------------------------------------------------------------------
    def produce(self, t: float) -> None:
        ranges = []
        for p in range(self.s.partitions):
            n = max(0, int(self.rng.gauss(self.s.rate / self.s.partitions / 10, 2)))
            if n:
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
            self.emit(t, ev.RECORDS_ACKED, "producer", ranges=ranges)

    def consume(self, t: float, m: _Member, commit: bool = True) -> None:
        ranges = []
        for p in sorted(m.owned):
            lo, hi = m.position[p], self.hw[p] - 1
            if hi >= lo:
                ranges.append(
                    {"topic": TOPIC, "partition": p, "min_offset": lo, "max_offset": hi, "count": hi - lo + 1}
                )
                m.position[p] = hi + 1
                m.uncommitted[p] = 1
        if ranges:
            self.memit(t, m, ev.RECORDS_CONSUMED, ranges=ranges)
            if commit:
                self.commit(t + self.rng.uniform(5, 40), m, [r["partition"] for r in ranges])

    def sample_lag(self, t: float) -> None:
        parts = [
            {
                "topic": TOPIC,
                "partition": p,
                "committed": self.committed.get(p),
                "high_watermark": self.hw[p],
                "lag": self.hw[p] - self.committed.get(p, 0),
            }
            for p in range(self.s.partitions)
        ]
        self.emit(t, ev.LAG_SAMPLED, "observer", group=self.group, partitions=parts)

    def run(self) -> list[dict]:
        s, rng = self.s, self.rng
        faults = []
        fault_at = (s.fault_at_s if s.fault_at_s is not None else rng.uniform(8, max(9, s.duration_s / 3))) * 1000
        victim = f"consumer-{rng.randint(1, s.consumers)}"
        length = (
            s.fault_duration_s
            if s.fault_duration_s is not None
            else rng.uniform(2.0, 3.0) * s.session_timeout_ms / 1000
        ) * 1000
        if s.fault != "none":
            kills = _effects(s.fault, {})[ev.DOWN] == ev.KILLED  # a killed member's fault lasts until its restart
            self.fault_params = (
                {"duration_s": round(length / 1000, 3)}
                if not kills
                else {"restart_after_s": round(length / 1000, 3), "signal": "SIGKILL"}
            )
            self.fault_effects = _effects(s.fault, self.fault_params)
            faults.append(
                {
                    "fault_id": "f1",
                    "kind": s.fault,
                    "target": victim,
                    "at_s": round(fault_at / 1000, 3),
                    **self.fault_params,
                }
            )
        self.emit(
            0,
            ev.RUN_STARTED,
            "harness",
            format_version=ev.FORMAT_VERSION,
            run_id=f"synth-{s.seed}",
            scenario=s.name(),
            seed=s.seed,
            topics=[{"topic": TOPIC, "partitions": s.partitions}],
            topic_pattern=None,
            group=self.group,
            protocol=s.protocol,
            assignor=self.assignor,
            members=list(self.members),
            checks={},
            faults=faults,
            clock_offset_ms=round(self.wall0 - self.mono0, 3),
            **{
                k: v
                for k, v in (
                    ("kafka", s.kafka_release),
                    ("client", s.client),
                    ("metadata", s.metadata),
                    ("broker_racks", {"broker-1": "rack-a"} if s.racks else None),
                )
                if v is not None
            },
        )
        start = 3000.0
        self.emit(start - 10, ev.PHASE, "harness", phase="workload")
        self.emit(start, ev.PRODUCER_STARTED, "producer", pid=4000 + s.seed, topic=TOPIC, rate=s.rate)
        for m in self.members.values():
            self.emit(start, ev.PROCESS_STARTED, "harness", process=m.name, role="consumer", pid=m.pid)
            self._started(start + rng.uniform(50, 400), m)
        for m in self.members.values():
            self.memit(start + 1000 + rng.uniform(0, 50), m, ev.GROUP_JOIN_SENT)
        busy_until = self.rebalance(start + 1100, sorted(self.members), "Adding new member (initial join)")
        end = start + s.duration_s * 1000
        t = start
        pending: list[tuple[float, str]] = []
        if s.fault != "none":
            pending.append((start + fault_at, "inject"))
        if s.restart_at_s is not None:
            pending += [
                (start + s.restart_at_s * 1000, "leave"),
                (start + (s.restart_at_s + s.restart_down_s) * 1000, "rejoin"),
            ]
        while t < end:
            t += 100
            self.produce(t)
            if t % 1000 < 100:
                self.sample_lag(t + rng.uniform(0, 50))
            for when, what in sorted(pending):
                if when <= t:  # acted on at this tick: nothing already written may come after it
                    pending.remove((when, what))
                    restarted = what in ("leave", "rejoin")
                    busy_until = max(
                        busy_until, self.restart(t, what) if restarted else self.fault(t, what, victim, length, pending)
                    )
            if t < busy_until:
                continue
            if s.stray_at_s is not None and t >= start + s.stray_at_s * 1000 and self.stray(t):
                s.stray_at_s = None  # once
            for m in self.members.values():
                if m.alive and not m.stopped and m.owned:
                    self.consume(t + rng.uniform(1, 60), m)
        if s.upgrade_to:
            self.upgrade(end - 500)
        for when, what in sorted(pending):  # whatever was still due heals now
            busy_until = max(busy_until, self.fault(max(when, end), what, victim, length, []))
        self.emit(end + 5, ev.PRODUCER_STOPPED, "producer", sent=sum(self.hw.values()), unacknowledged=0)
        self.emit(end + 20, ev.PHASE, "harness", phase="recovery")
        t = max(end + 100, busy_until + 100)
        for m in self.members.values():
            if m.alive and not m.stopped:
                self.consume(t, m)
        self.sample_lag(t + 500)
        self.emit(t + 1000, ev.PHASE, "harness", phase="drain")
        self.emit(t + 1001, ev.PHASE, "harness", phase="done")
        self.emit(
            t + 1002,
            ev.HEAL_CHECKED,
            "harness",
            stopped_processes=[],
            proxies=[],
            proxies_with_toxics=[],
            proxies_disabled=[],
        )
        t += 1100
        live = [m for m in self.members.values() if m.alive]
        if s.staggered_stop:  # one at a time: the members left behind rebalance each time
            while len(live) > 1:
                m = live.pop(0)
                self.stop(t, m)
                t = self.rebalance(t + 20, [x.name for x in live], f"removing member {m.member_id} on LeaveGroup")
                t += rng.uniform(50, 200)
        for m in live:
            self.stop(t, m)
        self.coord(t + 200, ev.COORDINATOR_GROUP_EMPTY, generation=self.generation)
        self.emit(t + 400, ev.RUN_FINISHED, "harness", outcome="completed")
        return _as_written(self.events)

    def upgrade(self, t: float) -> None:
        """The rolling-broker-upgrade of the one broker, as the harness writes it: the node's exit,
        its start on the new release, node_restarted, then cluster_finalized."""
        kraft = (self.s.metadata or "kraft") == "kraft"
        self.emit(t, ev.PROCESS_EXITED, "harness", process="broker-1", role="broker", pid=3000, returncode=0)
        self.emit(t + 50, ev.PROCESS_STARTED, "harness", process="broker-1", role="broker", pid=3001)
        self.emit(
            t + 60,
            ev.NODE_RESTARTED,
            "harness",
            process="broker-1",
            role="broker",
            kafka=self.s.upgrade_to,
            settings={},
            stop_ms=40.0,
            ready_ms=5.0,
            problems=[],
        )
        line = ".".join(self.s.upgrade_to.split(".")[:2])
        self.emit(
            t + 80,
            ev.CLUSTER_FINALIZED,
            "harness",
            kafka=self.s.upgrade_to,
            metadata="kraft" if kraft else "zookeeper",
            feature="metadata.version" if kraft else "inter.broker.protocol.version",
            previous="4.3-IV0" if kraft else "3.8",
            level=f"{line}-IV0" if kraft else line,
            **({"features": {"metadata.version": f"{line}-IV0"}} if kraft else {}),
            started_mono_ms=round(self.mono0 + t + 70, 3),
        )

    def restart(self, t: float, what: str) -> float:
        """The harness's single member's restart of a load run (group_resized): the last member
        leaves cleanly, then its slot's next incarnation joins; the group rebalances each time."""
        m = self.members[f"consumer-{self.s.consumers}"]
        live = [n for n, x in self.members.items() if x.alive and n != m.name]
        if what == "leave":
            self.emit(t, ev.GROUP_RESIZED, "harness", members=len(live), started=[], stopped=[m.name])
            self.stop(t + 1, m, reason="signal")
            return self.rebalance(t + 120, live, f"Removing member {m.member_id} on LeaveGroup")
        self.emit(t, ev.GROUP_RESIZED, "harness", members=len(live) + 1, started=[m.name], stopped=[])
        m.inc += 1
        m.pid += 1000
        m.alive, m.member_id, m.generation, m.owned = True, None, None, set()
        self.emit(t + 5, ev.PROCESS_STARTED, "harness", process=m.name, role="consumer", pid=m.pid)
        self._started(t + 300, m)
        self.memit(t + 1300, m, ev.GROUP_JOIN_SENT)
        return self.rebalance(t + 1310, sorted([*live, m.name]), f"Adding new member {m.name}", joiner=m.name)

    def stop(self, t: float, m: _Member, reason: str = "end-of-run") -> None:
        """A member closes: gives its partitions up, leaves the group and exits."""
        if m.owned:
            self.memit(t, m, ev.PARTITIONS_REVOKED, partitions=self.tps(m.owned), incremental=self.s.incremental)
            m.owned = set()
        if (
            self.s.close_hang and m.name == f"consumer-{self.s.consumers}"
        ):  # asked to stop at t, killed once its timeout ran out
            self.emit(
                t + 100,
                ev.PROCESS_EXITED,
                "harness",
                process=m.name,
                role="consumer",
                pid=m.pid,
                returncode=-9,
                **{ev.ESCALATED_AFTER_MS: 100},
            )
        else:
            self.memit(t + 10, m, ev.CONSUMER_STOPPED, reason=reason)
            self.emit(t + 100, ev.PROCESS_EXITED, "harness", process=m.name, role="consumer", pid=m.pid, returncode=0)
        m.alive = False

    def stray(self, t: float) -> bool:
        """A member processes a partition it does not own (a former owner, if there is one): the
        owner's last records and the next ones, which the owner then processes again. False:
        nobody to do it this tick."""
        live = [m for m in self.members.values() if m.alive and not m.stopped]
        candidates = [
            (p not in m.position, owner.name, p, m.name)
            for owner in live
            for p in sorted(owner.owned)
            for m in live
            if p not in m.owned and 0 < owner.position[p] < self.hw[p]
        ]
        if not candidates:
            return False
        _, owner, p, stray = min(candidates)
        lo, hi = max(0, self.members[owner].position[p] - 10), self.hw[p] - 1
        self.memit(
            t + 0.5,
            self.members[stray],
            ev.RECORDS_CONSUMED,
            ranges=[{"topic": TOPIC, "partition": p, "min_offset": lo, "max_offset": hi, "count": hi - lo + 1}],
        )
        return True

    def _started(self, t: float, m: _Member) -> None:
        self.memit(
            t,
            m,
            ev.CONSUMER_STARTED,
            pid=m.pid,
            group=self.group,
            protocol=self.s.protocol,
            assignor=self.assignor,
            group_instance_id=m.name if self.generation_row.static_membership else None,
            commit_mode="sync",
            session_timeout_ms=self.s.session_timeout_ms,
            max_poll_interval_ms=self.s.max_poll_interval_ms,
            **(
                {"client_library": "librdkafka", "client_version": self.s.client_version}
                if self.s.client_version
                else {}
            ),
            **({"client_rack": "rack-a"} if self.s.racks else {}),
        )
        if self.s.log_unrecognised:
            self.memit(
                t + 1,
                m,
                ev.LOG_UNRECOGNISED,
                log="librdkafka cgrp log",
                missing="the SyncGroup step (no SyncGroup response line read)",
                client_version=self.s.client_version,
            )

    def fault(self, t: float, what: str, victim: str, length: float, pending: list) -> float:
        s, m = self.s, self.members[victim]
        others = [n for n, x in self.members.items() if n != victim and x.alive]
        if what == "inject":
            self.emit(
                t,
                ev.FAULT_STARTED,
                "fault",
                fault_id="f1",
                kind=s.fault,
                target=victim,
                params=self.fault_params,
                effects=self.fault_effects,
                details={},
            )
            if self.fault_effects[ev.SILENCES] == ev.HEARTBEATS and self.fault_effects[ev.DOWN] != ev.KILLED:
                # its last batch is processed but the commit never leaves: a successor re-delivers it
                self.consume(t - 1, m, commit=False)
                m.stopped = True
                pending.append((t + length, "heal"))
                if length > s.session_timeout_ms:
                    evict = t + s.session_timeout_ms + self.rng.uniform(0, 300)
                    return self.rebalance(evict, others, f"removing member {m.member_id} on heartbeat expiration")
            elif self.fault_effects[ev.DOWN] == ev.KILLED:
                self.consume(t - 1, m, commit=False)
                m.alive = False
                self.emit(
                    t + 3, ev.PROCESS_EXITED, "harness", process=victim, role="consumer", pid=m.pid, returncode=-9
                )
                pending.append((t + length, "heal"))
                evict = t + s.session_timeout_ms + self.rng.uniform(0, 300)
                m.owned = set()
                return self.rebalance(evict, others, f"removing member {m.member_id} on heartbeat expiration")
            elif self.fault_effects[ev.SILENCES] == ev.POLLS:
                self.memit(t + 1, m, ev.POLL_STALL_STARTED, fault_id="f1", duration_s=round(length / 1000, 3))
                m.stopped = True
                pending.append((t + length, "heal"))
                if length > s.max_poll_interval_ms:
                    leave = t + s.max_poll_interval_ms
                    self.memit(
                        leave,
                        m,
                        ev.CONSUMER_ERROR,
                        error="Application maximum poll interval exceeded",
                        error_code="_MAX_POLL_EXCEEDED",
                        fatal=False,
                    )
                    if m.owned:
                        self.memit(
                            leave + 1, m, ev.PARTITIONS_LOST, partitions=self.tps(m.owned), incremental=s.incremental
                        )
                        m.owned = set()
                    self.coord(leave + 2, ev.COORDINATOR_MEMBER_REMOVED, member_id=m.member_id, reason="left")
                    return self.rebalance(leave + 3, others, f"Removing member {m.member_id} on LeaveGroup")
            return t
        # heal
        self.emit(t, ev.FAULT_HEALED, "fault", fault_id="f1", kind=s.fault, target=victim, how="scheduled")
        if self.fault_effects[ev.DOWN] == ev.KILLED:
            m.inc += 1
            m.pid += 1000
            m.alive, m.member_id, m.generation, m.owned = True, None, None, set()
            self.emit(t + 5, ev.PROCESS_STARTED, "harness", process=victim, role="consumer", pid=m.pid)
            self._started(t + 300, m)
            self.memit(t + 1300, m, ev.GROUP_JOIN_SENT)
            return self.rebalance(t + 1310, sorted(self.members), f"Adding new member {victim}", joiner=victim)
        m.stopped = False
        if self.fault_effects[ev.SILENCES] == ev.POLLS:
            self.memit(t, m, ev.POLL_STALL_ENDED, fault_id="f1")
            if m.owned:  # never left: no rebalance
                return t
        else:
            if m.generation != self.generation and m.owned:
                self.commit(t + 2, m, m.owned)  # the zombie's late commit: rejected
                self.memit(t + 5, m, ev.PARTITIONS_LOST, partitions=self.tps(m.owned), incremental=s.incremental)
                m.owned = set()
            elif m.owned:  # shorter than the session timeout: nothing happened
                return t
        self.memit(t + 8, m, ev.GROUP_JOIN_SENT)
        return self.rebalance(t + 10, sorted(self.members), f"Adding new member {m.member_id}", joiner=victim)


def _as_written(events: list[dict]) -> list[dict]:
    """The events in time order, each writer (source, incarnation) numbering its own 1, 2, 3, …
    as it wrote them (docs/history.md, Promises); the simulation tells them out of order."""
    events = sorted(events, key=lambda e: e["mono_ms"])  # stable: one instant keeps its order
    seq: Counter[tuple] = Counter()
    for e in events:
        writer = (e["source"], e.get("incarnation"))
        seq[writer] += 1
        e["seq"] = seq[writer]
    return events


def synthetic_history(spec: SynthSpec) -> list[dict]:
    return _Sim(spec).run()


def write_run(directory: Path, spec: SynthSpec, verdict: bool = True) -> Path:
    """A run directory as the harness leaves it: history.jsonl (lines shuffled a little, as
    concurrent appends do), scenario.yaml, run.json and verdict.json (the oracle's, when asked)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    events = synthetic_history(spec)
    rng = random.Random(spec.seed + 17)
    lines = [json.dumps(e) for e in events]
    for i in range(
        0, len(lines) - 2, 7
    ):  # neighbouring writers interleave (one writer's lines never; run_finished is last)
        if rng.random() < 0.3 and (events[i]["source"], events[i].get("incarnation")) != (
            events[i + 1]["source"],
            events[i + 1].get("incarnation"),
        ):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
    (directory / HISTORY).write_text("\n".join(lines) + "\n", encoding="utf-8")
    # A release that gives the generation what it needs (the harness's catalogue is out of reach here).
    kafka = spec.kafka or ("4.4" if GENERATIONS[spec.protocol].needs == "consumer-protocol" else "3.9")
    (directory / "scenario.yaml").write_text(
        f"name: {spec.name()}\nseed: {spec.seed}\nduration_s: {spec.duration_s}\ncluster:\n  kafka: '{kafka}'\n"
        f"workload:\n  protocol: {spec.protocol}\n  consumers: {spec.consumers}\n",
        encoding="utf-8",
    )
    (directory / "run.json").write_text(json.dumps({"state": "completed", "scenario": spec.name(), "seed": spec.seed}))
    if verdict:
        from oracle import check_history

        (directory / VERDICT).write_text(json.dumps(check_history(events).to_dict(), default=str))
    return directory


def crowded_page(
    faults: int = 14, rebalances: int = 18, partitions: int = 8, members: int = 6, span_s: float = 12.0
) -> tuple[dict, dict[str, list[dict]]]:
    """A run's page data (the runs row and its tables, as analysis.run_tables makes them) crowded
    on purpose, for the report's figures and page: long names, and the faults and rebalances
    close together (all inside ``span_s`` of a 60 s run), so that any two labels would collide
    unless laid out apart. -> (run, tables) for analysis.report.run_report."""
    rng = random.Random(44)
    kinds = ("pause", "crash", "network", "poll-stall", "protocol-migration", "broker-restart")
    names = [f"consumer-with-a-rather-long-name-{i}" for i in range(1, members + 1)]
    topic = "an-events-topic-with-a-long-name"
    run = {
        "run": "20261128T173008Z-a-scenario-with-a-long-name-for-the-labels-s1234567",
        "path": "/runs/20261128T173008Z-a-scenario-with-a-long-name-for-the-labels-s1234567",
        "scenario": "a-scenario-with-a-long-name-for-the-labels",
        "protocol": "classic-cooperative",
        "assignor": "cooperative-sticky",
        "outcome": "completed",
        "duration_s": 60.123456,
        "rebalance_total_ms": 123456.789012,
        "rebalance_max_ms": 9876.54321,
        "stw_max_ms": 812.3456,
        "produce_rps": 199.8765,
        "consume_rps": 12.34567,
    }
    fault_rows = [
        {
            "fault_id": f"f{i}",
            "kind": kinds[i % len(kinds)],
            "target": names[i % members],
            "start_s": 20 + span_s * i / faults,
            "end_s": 20 + span_s * i / faults + rng.uniform(2, 8),
            "healed_how": "scheduled",
            "detection_ms": rng.uniform(50, 12000),
            "detected_generation": i + 2,
        }
        for i in range(faults)
    ]
    rebalance_rows = []
    for g in range(1, rebalances + 1):
        start = 18 + span_s * g / rebalances
        phases = {k: rng.uniform(1, 4000) for k in ("detect_ms", "join_ms", "sync_ms", "max_unowned_ms")}
        rebalance_rows.append(
            {
                "generation": g,
                "status": "completed" if g % 5 else "abandoned",
                "start_s": start,
                "end_s": start + rng.uniform(0.05, 0.6),
                "stabilized_ms": rng.uniform(1, 20000),
                "duration_ms": sum(phases.values()),
                "coordinator_ms": rng.uniform(1, 20000),
                "partitions_moved": rng.randrange(partitions),
                "fault_kind": kinds[g % len(kinds)],
                "members": names,
                "trigger": f"group_join_sent by {names[g % members]}",
                "explanation": f"the join phase waited {rng.uniform(1, 9):.1f} s for {names[g % members]}",
                **phases,
            }
        )
    ownership, lag = [], []
    for p in range(partitions):
        t = 0.0
        while t < 60:
            stop = min(60.0, t + rng.uniform(3, 15))
            ownership.append(
                {"partition_label": f"{topic}-{p}", "member": rng.choice(names), "start_s": t, "end_s": stop}
            )
            t = stop + rng.uniform(0, 0.8)
        lag += [{"partition_label": f"{topic}-{p}", "t_s": float(s), "lag": rng.randrange(5000)} for s in range(61)]
    return run, {"faults": fault_rows, "rebalances": rebalance_rows, "ownership": ownership, "lag": lag}
