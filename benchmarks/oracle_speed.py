"""How long `rebalance-lab check` takes on long histories, how much memory it needs,
and how both grow with the history.

    python3 benchmarks/oracle_speed.py [--sizes 1M,3M,10M] [--keep DIR] [--timeout 300]
                                 [--oracle-root DIR]

Per size it writes a synthetic-but-realistic history.jsonl (below), then judges it in a
fresh Python process exactly as `rebalance-lab check` does: `load_history`, then
`check_history` with every check, then the verdict as JSON. It prints records, lines,
MB, seconds, the child's peak RSS, and the time ratio to the previous size (so with
`--sizes 1M,10M` that column is the 1 M -> 10 M ratio); with several sizes a last line
gives the ratio of the largest to the smallest, records and time.
Goal on the 2-core reference machine: 10 M consumed records (about 1.1 M lines) in
30 s and 1.5 GB at most, and linear: twice the records, at most 2.2 times the time
(1 M -> 10 M: at most about 11).

The history is a long run of an eager group (classic-eager, range) written at the
granularity real runs write: 4 members on 8 partitions at 800 records/s; the producer
reports its acknowledgements every 200 ms; each member processes what it owns every
100 ms (about 10 records per partition and range), commits synchronously after each
batch, and the observer samples lag every second. Every minute a fault hits one member,
in turn: a pause past the session timeout (eviction, a rebalance, the successor
re-delivers the zombie's uncommitted last batch, the zombie's late commit is fenced and
it learns its partitions were lost when it resumes, then rejoins), or a crash with a
restart (a new incarnation joins). The brokers' coordinator lines come with every
rebalance. The oracle should pass every such history with findings (zombies, explained
duplicates) and no violation; the table says if it did not.

`--members N --partitions P --members-per-host M --rolling R --fault-every-s S` write a bigger
group's history instead (e.g. 1,000 members in 20 member hosts: hosted members' consumer_started
carry `host` and the host's pid, a crash destroys one handle (`client_destroyed`), the hosts
exit at the end; R members restarted one by one first); each row then also gives the goal scaled
to its records (3 us and 150 bytes a record) and how far the judging was from it.

`--oracle-root DIR` judges with the `oracle` package found in DIR (e.g. a copy of an
older version) instead of this checkout's, to compare before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOPIC, GROUP = "events", "bench"
PARTITIONS, MEMBERS = 8, 4
TICK_MS = 100.0  # members poll, process and commit every tick
ACK_EVERY_MS = 200.0  # the producer's FLUSH_EVERY_S
PER_PARTITION_PER_TICK = 10  # records produced to each partition per tick (800 records/s)
SESSION_TIMEOUT_MS = 10_000
FAULT_EVERY_MS = 60_000.0
GOAL_RECORDS, GOAL_S, GOAL_MB = 10_000_000, 30.0, 1500.0  # the goal: 10 M records in 30 s and 1.5 GB
FAULT_MS = 15_000.0  # pause length / time until a crashed member restarts: past the session timeout


# --------------------------------------------------------------------------- the history


@dataclass
class _Member:
    name: str
    pid: int
    incarnation: int = 1
    member_id: str | None = None
    generation: int | None = None
    owned: list[int] = field(default_factory=list)
    position: dict[int, int] = field(default_factory=dict)  # next offset to process
    uncommitted: dict[int, int] = field(default_factory=dict)  # processed, not committed: next offset
    alive: bool = True
    paused: bool = False


class LongRun:
    """Writes one long run's history, line by line, into `out` (never all in memory)."""

    def __init__(
        self,
        out,
        records: int,
        seed: int = 1,
        members: int = MEMBERS,
        partitions: int = PARTITIONS,
        per_host: int = 1,
        rolling: int = 0,
        fault_every_ms: float = FAULT_EVERY_MS,
    ):
        self.out, self.target, self.rng = out, records, random.Random(seed)
        self.n_members, self.partitions, self.rolling, self.fault_every_ms = (
            members,
            partitions,
            rolling,
            fault_every_ms,
        )
        self.seq: dict[str, int] = {}
        self.last_t: dict[str, float] = {}
        self.mono0, self.wall0 = 5_000_000.0, 1_790_000_000_000.0
        self.lines = 0
        self.consumed = 0  # deliveries written so far
        self.log_end = [0] * partitions  # produced (and soon acknowledged) up to here
        self.acked = [0] * partitions  # acknowledged in a records_acked event up to here
        self.committed: dict[int, int] = {}
        self.generation = 0
        self.members = {f"consumer-{i}": _Member(f"consumer-{i}", 7000 + i) for i in range(1, members + 1)}
        # Member hosts (workload.members_per_host): member k in member-host-ceil(k / per_host), its pid
        self.host_of: dict[str, str] = {}
        self.hosts: dict[str, int] = {}
        if per_host > 1:
            for k, m in enumerate(self.members.values()):
                host = f"member-host-{k // per_host + 1}"
                m.pid = self.hosts.setdefault(host, 8000 + k // per_host + 1)
                self.host_of[m.name] = host
        self.faults = 0

    # -- writing ------------------------------------------------------------------------

    def emit(self, t: float, name: str, source: str, **fields) -> None:
        # One writer (source, incarnation) numbers its events 1, 2, 3, … and never stamps one earlier
        # than the one before (docs/history.md, Promises); the story is told writer by writer.
        writer = f"{source}#{fields.get('incarnation') or 1}"
        t = max(t, self.last_t.get(writer, t))
        self.seq[writer] = self.seq.get(writer, 0) + 1
        self.last_t[writer] = t
        event = {
            "name": name,
            "ts": round(self.wall0 + t, 3),
            "mono_ms": round(self.mono0 + t, 3),
            "source": source,
            "seq": self.seq[writer],
            **fields,
        }
        self.out.write(json.dumps(event, separators=(",", ":")) + "\n")
        self.lines += 1

    def memit(self, t: float, m: _Member, name: str, **fields) -> None:
        self.emit(
            t,
            name,
            m.name,
            member=m.name,
            incarnation=m.incarnation,
            member_id=m.member_id,
            generation=m.generation,
            **fields,
        )

    def coord(self, t: float, name: str, **fields) -> None:
        self.emit(t, name, "broker-1", broker=1, group=GROUP, **fields)

    @staticmethod
    def tps(parts) -> list[dict]:
        return [{"topic": TOPIC, "partition": p} for p in sorted(parts)]

    @staticmethod
    def range_(p: int, lo: int, hi: int) -> dict:
        return {"topic": TOPIC, "partition": p, "min_offset": lo, "max_offset": hi, "count": hi - lo + 1}

    # -- the producer, the members, the observer ------------------------------------------

    def produce(self, t: float) -> None:
        for p in range(self.partitions):
            self.log_end[p] += max(1, int(self.rng.gauss(PER_PARTITION_PER_TICK, 2)))

    def ack(self, t: float) -> None:
        ranges = [
            self.range_(p, self.acked[p], self.log_end[p] - 1)
            for p in range(self.partitions)
            if self.log_end[p] > self.acked[p]
        ]
        self.acked = list(self.log_end)
        if ranges:
            self.emit(t, "records_acked", "producer", ranges=ranges)

    def consume(self, t: float, m: _Member, commit: bool = True) -> None:
        ranges = []
        for p in m.owned:
            lo, hi = m.position[p], self.log_end[p] - 1
            if hi >= lo:
                ranges.append(self.range_(p, lo, hi))
                m.position[p] = m.uncommitted[p] = hi + 1
                self.consumed += hi - lo + 1
        if not ranges:
            return
        self.memit(t, m, "records_consumed", ranges=ranges)
        if commit:
            self.commit(t + self.rng.uniform(0.1, 1), m, "after-processing")

    def commit(self, sent: float, m: _Member, trigger: str) -> None:
        offsets = dict(m.uncommitted)
        if not offsets:
            return
        ok = m.generation == self.generation and not m.paused and set(offsets) <= set(m.owned)
        self.memit(
            sent + self.rng.uniform(1, 6),
            m,
            "offsets_committed",
            offsets=[{"topic": TOPIC, "partition": p, "offset": o} for p, o in sorted(offsets.items())],
            success=ok,
            error=None if ok else "ILLEGAL_GENERATION",
            error_code=None if ok else 22,
            trigger=trigger,
            started_mono_ms=round(self.mono0 + sent, 3),
        )
        if ok:
            for p, o in offsets.items():
                self.committed[p] = max(self.committed.get(p, 0), o)
        m.uncommitted.clear()

    def sample_lag(self, t: float) -> None:
        parts = [
            {
                "topic": TOPIC,
                "partition": p,
                "committed": self.committed.get(p),
                "high_watermark": self.acked[p],
                "lag": self.acked[p] - self.committed.get(p, 0),
            }
            for p in range(self.partitions)
        ]
        self.emit(t, "lag_sampled", "observer", group=GROUP, partitions=parts)

    def describe_group(self, t: float) -> None:
        live = [m for m in self.members.values() if m.alive and m.generation == self.generation]
        self.emit(
            t,
            "group_described",
            "observer",
            group=GROUP,
            state="STABLE",
            coordinator=1,
            members={f"{m.name}/{m.member_id}": [[TOPIC, p] for p in m.owned] for m in live},
            covers_all=sorted(p for m in live for p in m.owned) == list(range(self.partitions)),
        )

    def start_member(self, t: float, m: _Member) -> None:
        hosted = {"host": self.host_of[m.name]} if m.name in self.host_of else {}
        if not hosted:  # a hosted member runs in its host's process, started once
            self.emit(t, "process_started", "harness", process=m.name, role="consumer", pid=m.pid)
        self.memit(
            t + self.rng.uniform(30, 80),
            m,
            "consumer_started",
            pid=m.pid,
            group=GROUP,
            protocol="classic-eager",
            assignor="range",
            group_instance_id=None,
            commit_mode="sync",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            max_poll_interval_ms=300_000,
            **hosted,
        )

    # -- rebalances ------------------------------------------------------------------------

    def rebalance(self, t: float, reason: str, joiners: tuple[_Member, ...] = ()) -> float:
        """Every live, unpaused member moves to the next generation (eager: revoke all, join,
        sync, range over the member ids); returns when the last one had its assignment."""
        members = [m for m in self.members.values() if m.alive and not m.paused]
        self.coord(t, "coordinator_preparing_rebalance", old_generation=self.generation, reason=reason)
        t += self.rng.uniform(5, 50)
        for m in members:
            if m not in joiners:
                self.memit(t, m, "heartbeat_failed", error="Broker: Group rebalance in progress")
                self.memit(t + 0.2, m, "rebalance_started", reason="group is rebalancing", rebalance_protocol="EAGER")
                self.commit(t + 0.4, m, "revoke")
                self.memit(t + 8, m, "partitions_revoked", partitions=self.tps(m.owned), incremental=False)
                m.owned = []
                self.memit(t + 9, m, "group_join_sent")
            t += self.rng.uniform(1, 5)
        t += self.rng.uniform(20, 200)
        self.generation += 1
        self.coord(t - 2, "coordinator_stabilized", generation=self.generation, members=len(members))
        for m in members:
            m.member_id = m.member_id or f"{m.name}-{self.rng.getrandbits(64):016x}"
        ordered = sorted(members, key=lambda m: m.member_id)
        leader = ordered[0]
        for m in members:
            m.generation = self.generation
            self.memit(t, m, "group_joined", leader_id=leader.member_id, is_leader=m is leader, protocol_name="range")
            t += self.rng.uniform(0.2, 2)
        t += self.rng.uniform(5, 40)
        self.coord(t - 1, "coordinator_assignment_received", generation=self.generation, leader_id=leader.member_id)
        n, extra = divmod(self.partitions, len(ordered))
        for i, m in enumerate(ordered):
            m.owned = list(range(i * n + min(i, extra), (i + 1) * n + min(i + 1, extra)))
            for p in m.owned:  # a new owner fetches from the committed offset
                m.position[p] = self.committed.get(p, 0)
            m.uncommitted.clear()
            self.memit(t, m, "group_synced")
            self.memit(t + 0.3, m, "partitions_assigned", partitions=self.tps(m.owned), incremental=False)
            t += self.rng.uniform(0.5, 3)
        self.describe_group(t + self.rng.uniform(100, 900))
        return t

    def fault(self, t: float) -> float:
        """One fault on one member, healed FAULT_MS later; returns when the group is whole again."""
        self.faults += 1
        fid, victim = f"f{self.faults}", self.members[f"consumer-{(self.faults - 1) % self.n_members + 1}"]
        kind = "pause" if self.faults % 2 else "crash"
        params = (
            {"duration_s": FAULT_MS / 1000}
            if kind == "pause"
            else {"restart_after_s": FAULT_MS / 1000, "signal": "SIGKILL"}
        )
        self.produce(t)
        self.consume(t - 1, victim, commit=False)  # its last batch is processed, its commit never leaves
        self.emit(t, "fault_started", "fault", fault_id=fid, kind=kind, target=victim.name, params=params, details={})
        if kind == "pause":
            victim.paused = True
        elif victim.name in self.host_of:  # one handle of a member host destroyed: its host goes on
            victim.alive = False
            self.memit(t + 2, victim, "client_destroyed")
        else:
            victim.alive = False
            self.emit(
                t + 2, "process_exited", "harness", process=victim.name, role="consumer", pid=victim.pid, returncode=-9
            )
        evicted = t + SESSION_TIMEOUT_MS + self.rng.uniform(0, 300)
        self.ticks(t + TICK_MS, evicted)  # the others go on meanwhile
        self.coord(evicted, "coordinator_member_removed", member_id=victim.member_id, reason="failed")
        settled = self.rebalance(evicted + 1, f"removing member {victim.member_id} on heartbeat expiration")
        end = t + FAULT_MS
        self.ticks(settled, end)
        self.emit(end, "fault_healed", "fault", fault_id=fid, kind=kind, target=victim.name, how="scheduled")
        if kind == "pause":  # it resumes: its late commit is fenced, then it learns it was evicted
            victim.paused = False
            victim.uncommitted = {p: victim.position[p] for p in victim.owned}
            self.commit(end + 1, victim, "after-processing")
            self.memit(end + 20, victim, "heartbeat_failed", error="Broker: Unknown member")
            self.memit(end + 21, victim, "partitions_lost", partitions=self.tps(victim.owned), incremental=False)
            victim.owned, victim.member_id, victim.generation = [], None, None
            self.memit(end + 25, victim, "group_join_sent")
        else:  # a new incarnation
            victim.alive, victim.incarnation = True, victim.incarnation + 1
            victim.pid += 0 if victim.name in self.host_of else 100
            victim.owned, victim.member_id, victim.generation = [], None, None
            self.start_member(end + 2, victim)
            self.memit(end + 300, victim, "group_join_sent")
        return self.rebalance(
            end + 330, f"Adding new member {victim.name} with group instance id None", joiners=(victim,)
        )

    def rolling_restart(self, t: float) -> float:
        """The first `rolling` members stopped cleanly and started again, one by one: each leaves
        (a rebalance), then its next incarnation joins (another); returns when the last is in."""
        for m in list(self.members.values())[: self.rolling]:
            self.produce(t)
            self.consume(t, m)
            self.memit(t + 5, m, "partitions_revoked", partitions=self.tps(m.owned), incremental=False)
            m.owned = []
            self.memit(t + 10, m, "consumer_stopped", reason="restart")
            if m.name not in self.host_of:
                self.emit(t + 60, "process_exited", "harness", process=m.name, role="consumer", pid=m.pid, returncode=0)
                m.pid += 100
            self.coord(t + 20, "coordinator_member_removed", member_id=m.member_id, reason="left")
            m.alive = False
            t = self.rebalance(t + 21, f"removing member {m.member_id} on LeaveGroup")
            self.ticks(t, t + 5 * TICK_MS)
            m.alive, m.incarnation, m.member_id, m.generation = True, m.incarnation + 1, None, None
            self.start_member(t + 5 * TICK_MS, m)
            self.memit(t + 5 * TICK_MS + 300, m, "group_join_sent")
            t = self.rebalance(
                t + 5 * TICK_MS + 330, f"Adding new member {m.name} with group instance id None", joiners=(m,)
            )
            self.ticks(t, t + 5 * TICK_MS)
            t += 5 * TICK_MS
        return t

    def ticks(self, start: float, end: float) -> None:
        """Every tick after start whose work is done before end."""
        t = (start // TICK_MS + 1) * TICK_MS
        while t + TICK_MS <= end:
            self.run_tick(t)
            t += TICK_MS

    def run_tick(self, t: float) -> None:
        self.produce(t)
        if t % ACK_EVERY_MS < TICK_MS:
            self.ack(t + self.rng.uniform(1, 20))
        if t % 1000 < TICK_MS:
            self.sample_lag(t + self.rng.uniform(0, 50))
        for m in self.members.values():
            if m.alive and not m.paused and m.owned:
                self.consume(t + self.rng.uniform(1, 60), m)

    def run(self) -> None:
        self.emit(
            0,
            "run_started",
            "harness",
            run_id="bench-oracle",
            scenario="bench-oracle",
            seed=1,
            topics=[{"topic": TOPIC, "partitions": self.partitions}],
            topic_pattern=None,
            group=GROUP,
            protocol="classic-eager",
            assignor="range",
            members=list(self.members),
            checks={},
            faults=[],
            clock_offset_ms=self.wall0 - self.mono0,
        )
        self.emit(10, "phase", "harness", phase="warmup", members=list(self.members))
        self.emit(
            20,
            "producer_started",
            "producer",
            pid=6999,
            topic=TOPIC,
            rate=self.partitions * 1000 / TICK_MS * PER_PARTITION_PER_TICK,
        )
        for host, pid in self.hosts.items():
            self.emit(25, "process_started", "harness", process=host, role="member-host", pid=pid)
        for i, m in enumerate(self.members.values()):
            self.start_member(30 + i, m)
            self.memit(500 + i, m, "group_join_sent")
        t = self.rebalance(3500, "Adding new member consumer-1 with group instance id None (initial join)")
        self.emit(t + 10, "phase", "harness", phase="workload")
        t = (t // TICK_MS + 1) * TICK_MS
        if self.rolling:
            t = (self.rolling_restart(t + TICK_MS) // TICK_MS + 1) * TICK_MS
        next_fault = t + self.fault_every_ms
        while self.consumed < self.target:
            if t >= next_fault:
                t = (self.fault(t) // TICK_MS + 1) * TICK_MS
                next_fault = t + self.fault_every_ms
            self.run_tick(t)
            t += TICK_MS
        self.ack(t)
        self.emit(t + 5, "producer_stopped", "producer", sent=sum(self.log_end), unacknowledged=0)
        self.emit(t + 10, "phase", "harness", phase="recovery")
        for m in self.members.values():
            self.consume(t + 50, m)
        self.sample_lag(t + 900)
        self.emit(t + 1000, "phase", "harness", phase="drain")
        self.emit(t + 1001, "phase", "harness", phase="done")
        for m in self.members.values():
            self.memit(t + 1100, m, "partitions_revoked", partitions=self.tps(m.owned), incremental=False)
            m.owned = []
            self.memit(t + 1110, m, "consumer_stopped", reason="end-of-run")
            if m.name not in self.host_of:
                self.emit(
                    t + 1200, "process_exited", "harness", process=m.name, role="consumer", pid=m.pid, returncode=0
                )
            self.coord(t + 1150, "coordinator_member_removed", member_id=m.member_id, reason="left")
        for host, pid in self.hosts.items():  # a host exits once every member it ran has stopped
            self.emit(t + 1200, "process_exited", "harness", process=host, role="member-host", pid=pid, returncode=0)
        self.coord(t + 1300, "coordinator_group_empty", generation=self.generation)
        self.emit(t + 1500, "run_finished", "harness", outcome="completed")


def write_history(path: Path, records: int, **group) -> tuple[int, int]:
    """(lines, consumed records) of a history of about `records` consumed records; `group`: LongRun's
    sizes (members, partitions, per_host, rolling, fault_every_ms)."""
    with open(path, "w", buffering=1 << 20) as out:
        run = LongRun(out, records, **group)
        run.run()
    return run.lines, run.consumed


# --------------------------------------------------------------------------- judging it

CHILD = """
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
from oracle import check_history, load_history
t0 = time.monotonic()
try:
    events = load_history(sys.argv[2], compact_events=True)
except TypeError:  # an --oracle-root from before the lean form
    events = load_history(sys.argv[2])
loaded = time.monotonic() - t0
started = next((e for e in events if e["name"] == "run_started"), {})
verdict = check_history(events, started.get("checks") or {}).to_dict()
judged = time.monotonic() - t0 - loaded
json.dumps(verdict)
gc.freeze()  # as `rebalance-lab check` ends
print(json.dumps({"load_s": loaded, "check_s": judged, "ok": verdict["ok"],
                  "violations": [v["check"] + "/" + v["kind"] for v in verdict["violations"]],
                  "findings": len(verdict["findings"])}))
"""


def parse_size(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("KM")) * scale)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1M,3M,10M", help="consumed records per history (default 1M,3M,10M)")
    parser.add_argument("--keep", type=Path, help="write (and reuse) the histories here instead of a temp dir")
    parser.add_argument("--timeout", type=float, default=300.0, help="stop judging one history after this long")
    parser.add_argument("--oracle-root", type=Path, default=REPO, help="directory holding the oracle package")
    group = parser.add_argument_group(
        "the group",
        "a bigger group than 4 members on 8 partitions, e.g. the 1,000-member one of docs/scale.md: "
        "--members 1000 --partitions 2000 --members-per-host 50 --rolling 10 --sizes 2M",
    )
    group.add_argument("--members", type=int, default=MEMBERS, help=f"members (default {MEMBERS})")
    group.add_argument("--partitions", type=int, default=PARTITIONS, help=f"partitions (default {PARTITIONS})")
    group.add_argument(
        "--members-per-host", type=int, default=1, help="members in one process (workload.members_per_host)"
    )
    group.add_argument("--rolling", type=int, default=0, help="members restarted one by one once the group is up")
    group.add_argument(
        "--fault-every-s", type=float, default=FAULT_EVERY_MS / 1000, help="a fault on one member this often"
    )
    args = parser.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    sizing = {
        "members": args.members,
        "partitions": args.partitions,
        "per_host": args.members_per_host,
        "rolling": args.rolling,
        "fault_every_ms": args.fault_every_s * 1000,
    }
    tag = (
        ""
        if args.members == MEMBERS and args.members_per_host == 1 and not args.rolling
        else (f"-{args.members}m{args.partitions}p{args.members_per_host}h{args.rolling}r{args.fault_every_s:g}f")
    )

    with tempfile.TemporaryDirectory(prefix="rl-bench-oracle-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        print(f"oracle: {args.oracle_root}/oracle; histories in {root}")
        print(
            f"machine load average {os.getloadavg()[0]:.1f}; seconds are wall-clock (load_history, "
            f"check_history, the whole child), CPU s the child's own"
        )
        print(
            f"{'records':>11} {'lines':>10} {'MB':>7} {'load s':>7} {'check s':>8} {'total s':>8} {'CPU s':>6} "
            f"{'peak RSS MB':>12} {'time ratio':>11}  verdict  (time ratio: to the size above)"
        )
        previous: tuple[int, float, float] | None = None  # records, seconds, CPU seconds
        first: tuple[int, float, float] | None = None  # the smallest size judged, for the overall ratio
        for size in sizes:
            path = root / f"history-{size}{tag}.jsonl"
            meta = path.with_suffix(".meta.json")
            if not (path.exists() and meta.exists()):
                lines, consumed = write_history(path, size, **sizing)
                meta.write_text(json.dumps({"lines": lines, "consumed": consumed}))
            info = json.loads(meta.read_text())
            row = run_child(path, args.oracle_root, args.timeout)
            mb = path.stat().st_size / 1e6
            head = f"{info['consumed']:>11,} {info['lines']:>10,} {mb:>7.1f}"
            if row.get("error"):
                took = f"> {args.timeout:.0f}" if row["error"].startswith("stopped") else "-"
                print(
                    f"{head} {'':>7} {'':>8} {took:>8} {'':>6} {row['rss_mb'] or '':>12} {'':>11}  {row['error']}",
                    flush=True,
                )
                previous = None
                continue
            ratio = ""
            if previous:
                ratio = f"{row['seconds'] / previous[1]:.2f} ({info['consumed'] / previous[0]:.1f}x)"
            verdict = (
                "PASS" if row["ok"] else "FAIL " + ",".join(sorted(set(row["violations"])))
            ) + f", {row['findings']} findings"
            print(
                f"{head} {row['load_s']:>7.1f} {row['check_s']:>8.1f} {row['seconds']:>8.1f} {row['cpu']:>6.1f} "
                f"{row['rss_mb']:>12,.0f} {ratio:>11}  {verdict}",
                flush=True,
            )
            # The goal, per record: 30 s and 1.5 GB for 10 M records (3 us and 150 bytes each).
            goal_s, goal_mb = GOAL_S * info["consumed"] / GOAL_RECORDS, GOAL_MB * info["consumed"] / GOAL_RECORDS
            print(
                f"{'':>11} goal for {info['consumed']:,} records: {goal_s:.1f} s, {goal_mb:,.0f} MB "
                f"(time {row['seconds'] / goal_s:.2f}x the goal, memory {row['rss_mb'] / goal_mb:.2f}x)",
                flush=True,
            )
            previous = (info["consumed"], row["seconds"], row["cpu"])
            first = first or previous
        if first and previous and previous is not first:  # CPU too: on a busy machine wall-clock is noisy
            print(
                f"time ratio {first[0]:,} -> {previous[0]:,} records ({previous[0] / first[0]:.1f}x the records): "
                f"{previous[1] / first[1]:.2f}x the time, {previous[2] / first[2]:.2f}x the CPU "
                f"(linear: at most {1.1 * previous[0] / first[0]:.1f})"
            )
    return 0


def run_child(path: Path, oracle_root: Path, timeout: float) -> dict:
    """Judge in a fresh interpreter: wall time, and that process's peak RSS (wait4's rusage)."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115 (pipes could fill while we wait4)
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(oracle_root), str(path)], stdout=out, stderr=err)
    deadline = t0 + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            os.kill(proc.pid, signal.SIGKILL)
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = -9
            return {"error": f"stopped after {timeout:.0f} s", "rss_mb": round(usage.ru_maxrss / 1024)}
        time.sleep(0.05)
    seconds, cpu = time.monotonic() - t0, usage.ru_utime + usage.ru_stime
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0), err.seek(0)
    out, err = out.read().decode(), err.read().decode()
    rss_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    if proc.returncode != 0:
        return {
            "error": f"exit {proc.returncode}: {err.strip().splitlines()[-1] if err.strip() else ''}",
            "rss_mb": round(rss_mb),
        }
    return {"seconds": seconds, "cpu": cpu, "rss_mb": rss_mb, **json.loads(out)}


if __name__ == "__main__":
    sys.exit(main())
