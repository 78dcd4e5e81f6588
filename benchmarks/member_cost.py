"""What one group member costs, one process per member against many per member host, side by side.

    python3 benchmarks/member_cost.py [--members 32] [--layouts 1,32] [--rates 1,2000] [--duration 30]
                                      [--protocol classic-eager] [--kafka 3.9] [--runs-dir DIR]

Per layout (members per process: 1 is a process per member, more is workload.members_per_host)
and per rate, one real run (Kafka on one broker, one topic of 2 × members partitions, the
librdkafka driver, commits after each batch) with ``--members`` members for ``--duration``
seconds; meanwhile every member process (or member host) and the broker are sampled from /proc
once a second. Printed per run, per member (the processes' totals over the members they hold):
resident memory, threads, open files, CPU (% of one core) over the workload phase; the
broker's (the group's coordinator's) CPU and threads; the verdict (a member that is cheap but
wrong is not the point). Then, from the cheapest layout's figures, what a group of 1,000 would
take of this machine's memory, threads (pid_max), open files per process (RLIMIT_NOFILE) and
cores, and which of them bounds the group first. The rate is the producer's, spread over the
group: at rate 1 the members only heartbeat and poll.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness.run.loop import Run
from harness.scenario import load_scenario
from harness.supervision.processes import cpu_seconds, proc_stat

PAGE = os.sysconf("SC_PAGE_SIZE")
MEMBER_ROLES = ("consumer", "member-host")  # processes that hold members
GROUP = 1000  # the group size the projection is for


@dataclass
class Sample:
    at: float
    cpu_s: float  # user + system, since the process started
    rss_mb: float
    threads: int
    fds: int


@dataclass
class Sampler:
    """Samples the run's member processes and its brokers while it runs (a thread; reads /proc only)."""

    run: Run
    every_s: float = 1.0
    samples: dict[int, list[Sample]] = field(default_factory=dict)  # by pid
    roles: dict[int, str] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self):
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.wait(self.every_s):
            for p in list(self.run.supervisor.processes.values()):
                if p.role in (*MEMBER_ROLES, "broker") and p.running():
                    sample = _sample(p.pid)
                    if sample:
                        self.samples.setdefault(p.pid, []).append(sample)
                        self.roles[p.pid] = p.role

    def window(self, start: float, end: float, roles: tuple[str, ...]) -> list[tuple[float, Sample]]:
        """Per process of ``roles`` that lived through [start, end]: (CPU % of a core, its last sample)."""
        out = []
        for pid, samples in self.samples.items():
            inside = [s for s in samples if start <= s.at <= end]
            if self.roles[pid] in roles and len(inside) >= 2:
                first, last = inside[0], inside[-1]
                out.append((100 * (last.cpu_s - first.cpu_s) / (last.at - first.at), last))
        return out


def _sample(pid: int) -> Sample | None:
    stat = proc_stat(pid)
    try:
        rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        threads = len(os.listdir(f"/proc/{pid}/task"))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, IndexError, ValueError):
        return None
    return Sample(time.monotonic(), cpu_seconds(stat), rss_pages * PAGE / 2**20, threads, fds) if stat else None


def scenario(members: int, per_host: int, rate: float, duration_s: float, protocol: str, kafka: str) -> dict:
    return {
        "name": f"member-cost-{members}x{per_host}-{rate:g}",
        "seed": 1,
        "duration_s": duration_s,
        "cluster": {"kafka": kafka, "brokers": 1},
        "topics": [{"name": "events", "partitions": 2 * members}],
        "workload": {
            "group": "member-cost",
            "consumers": members,
            "members_per_host": per_host,
            "lanes": "on-demand",  # no fault: every member on a crowd lane, as a large group would be
            "protocol": protocol,
            "producer": {"rate": rate},
            "warmup_timeout_s": 300,
        },
        "faults": [],
        "recovery": {"timeout_s": 120},
    }


def measure(members: int, per_host: int, rate: float, duration_s: float, protocol: str, kafka: str, runs: Path):
    path = runs / f"member-cost-{members}x{per_host}-{rate:g}.yaml"
    runs.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(scenario(members, per_host, rate, duration_s, protocol, kafka), sort_keys=False))
    run = Run(load_scenario(path), path, runs, lambda _msg: None)
    sampler = Sampler(run)
    try:
        result = run.execute()
    finally:
        sampler.stop.set()
        sampler.thread.join()
    start, end = run.timings.get("workload"), run.timings.get("recovery")
    if start is None or end is None:
        raise SystemExit(
            f"the run did not get through its workload: {result.error or result.outcome} ({result.run_dir})"
        )
    start += 2  # the first seconds of the workload are still the join
    procs = sampler.window(start, end, MEMBER_ROLES)
    brokers = sampler.window(start, end, ("broker",))

    def per_member(value) -> float:
        return sum(value(cpu, s) for cpu, s in procs) / members

    return {
        "per_host": per_host,
        "rate": rate,
        "processes": len(procs),
        "verdict": (result.verdict or {}).get("status", result.outcome),
        "cpu": per_member(lambda cpu, _s: cpu),
        "rss": per_member(lambda _c, s: s.rss_mb),
        "threads": per_member(lambda _c, s: s.threads),
        "fds": per_member(lambda _c, s: s.fds),
        "fds_process_max": max(s.fds for _, s in procs),
        "broker_cpu": sum(cpu for cpu, _ in brokers),
        "broker_threads": sum(s.threads for _, s in brokers),
        "run_dir": result.run_dir,
    }


def machine() -> dict:
    """What this machine gives: memory, the thread (pid) bound, open files a process, cores."""
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return {
        "memory_mb": int(meminfo["MemTotal"].split()[0]) / 1024,
        "pids": min(
            int(Path("/proc/sys/kernel/pid_max").read_text()), int(Path("/proc/sys/kernel/threads-max").read_text())
        ),
        "open_files": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        "cores": os.cpu_count() or 1,
    }


def bounds(m: dict, members_per_process: int, limits: dict) -> list[tuple[str, float, float]]:
    """(resource, what GROUP members take, what the machine has), the tightest first (as a fraction)."""
    rows = [
        ("memory MB", GROUP * m["rss"], limits["memory_mb"]),
        ("threads", GROUP * m["threads"] + m["broker_threads"], limits["pids"]),
        ("open files a process", members_per_process * m["fds"], limits["open_files"]),
        ("cores", GROUP * m["cpu"] / 100 + m["broker_cpu"] / 100, limits["cores"]),
    ]
    return sorted(rows, key=lambda r: r[1] / r[2], reverse=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=32)
    parser.add_argument("--layouts", default="1,32", help="members per process, comma-separated (default 1,32)")
    parser.add_argument("--rates", default="1,2000", help="producer records/s, comma-separated (default 1,2000)")
    parser.add_argument("--duration", type=float, default=30.0, help="workload seconds per run (default 30)")
    parser.add_argument("--protocol", default="classic-eager")
    parser.add_argument("--kafka", default="3.9")
    parser.add_argument("--runs-dir", type=Path, help="keep the runs here (default: a temporary directory)")
    args = parser.parse_args()
    runs = args.runs_dir or Path(tempfile.mkdtemp(prefix="member-cost-"))
    layouts = [int(x) for x in args.layouts.split(",")]
    print(f"{args.members} members, {args.protocol}, Kafka {args.kafka}, {args.duration:g} s a run; runs in {runs}")
    print(
        f"{'per process':>11} {'rate/s':>7} {'procs':>5} | per member: {'RSS MB':>6} {'threads':>7} {'fds':>5}"
        f" {'CPU %':>6} | {'broker CPU %':>12} {'threads':>7}  verdict"
    )
    measured = []
    for per_host in layouts:
        for rate in (float(r) for r in args.rates.split(",")):
            m = measure(args.members, per_host, rate, args.duration, args.protocol, args.kafka, runs)
            measured.append(m)
            print(
                f"{per_host:>11} {rate:>7g} {m['processes']:>5} | {'':12}{m['rss']:>6.1f} {m['threads']:>7.1f}"
                f" {m['fds']:>5.1f} {m['cpu']:>6.2f} | {m['broker_cpu']:>12.1f} {m['broker_threads']:>7}  {m['verdict']}"
            )
    limits = machine()
    for m in measured:
        if m["per_host"] == max(layouts):
            tight = bounds(m, m["per_host"], limits)
            print(
                f"{GROUP} members, {m['per_host']} a process, at {m['rate']:g}/s: "
                + "; ".join(f"{name} {need:,.0f} of {have:,.0f} ({need / have:.0%})" for name, need, have in tight)
                + f" -> bound first by {tight[0][0]}"
            )
    print("(per member: the member processes' totals over the members; a host's threads and files are shared)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
