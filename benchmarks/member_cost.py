"""What one group member costs: memory and CPU per member process, idle and at a rate.

    python3 benchmarks/member_cost.py [--members 8] [--rates 1,2000] [--duration 30]
                                      [--protocol classic-eager] [--kafka 3.9] [--runs-dir DIR]

Per rate, one real run (Kafka on one broker, one topic of 2 × members partitions, the
librdkafka driver, commits after each batch) with `--members` members for `--duration`
seconds; meanwhile every member process is sampled from /proc once a second. Printed per
rate: resident memory per member (mean, max, at the end of the workload), CPU per member
over the workload phase (% of one core: mean, max), the group's total, and what a group of
100 such members would need at that rate on this machine. The rate is the producer's, spread
over the group: at rate 1 the members only heartbeat and poll.

The run's verdict is printed too: a member that is cheap but wrong is not the point.
"""

from __future__ import annotations

import argparse
import os
import statistics
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


@dataclass
class Sample:
    at: float
    cpu_s: float  # user + system, since the process started
    rss_mb: float


@dataclass
class Sampler:
    """Samples the run's member processes while it runs (a thread; reads /proc only)."""

    run: Run
    every_s: float = 1.0
    samples: dict[int, list[Sample]] = field(default_factory=dict)  # by pid
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self):
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.wait(self.every_s):
            for p in list(self.run.supervisor.processes.values()):
                if p.role == "consumer" and p.running():
                    sample = _sample(p.pid)
                    if sample:
                        self.samples.setdefault(p.pid, []).append(sample)

    def window(self, start: float, end: float) -> list[tuple[float, float]]:
        """Per member that lived through [start, end]: (CPU % of a core, RSS MB at the end)."""
        out = []
        for samples in self.samples.values():
            inside = [s for s in samples if start <= s.at <= end]
            if len(inside) >= 2:
                first, last = inside[0], inside[-1]
                out.append((100 * (last.cpu_s - first.cpu_s) / (last.at - first.at), last.rss_mb))
        return out


def _sample(pid: int) -> Sample | None:
    stat = proc_stat(pid)
    try:
        rss_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return Sample(time.monotonic(), cpu_seconds(stat), rss_pages * PAGE / 2**20) if stat else None


def scenario(members: int, rate: float, duration_s: float, protocol: str, kafka: str) -> dict:
    return {
        "name": f"member-cost-{members}x-{rate:g}",
        "seed": 1,
        "duration_s": duration_s,
        "cluster": {"kafka": kafka, "brokers": 1},
        "topics": [{"name": "events", "partitions": 2 * members}],
        "workload": {"group": "member-cost", "consumers": members, "protocol": protocol, "producer": {"rate": rate}},
        "faults": [],
        "recovery": {"timeout_s": 60},
    }


def measure(members: int, rate: float, duration_s: float, protocol: str, kafka: str, runs: Path) -> dict:
    path = runs / f"member-cost-{members}x-{rate:g}.yaml"
    runs.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(scenario(members, rate, duration_s, protocol, kafka), sort_keys=False))
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
    per_member = sampler.window(start + 2, end)  # the first seconds of the workload are still the join
    cpu = [c for c, _ in per_member]
    rss = [r for _, r in per_member]
    return {
        "rate": rate,
        "members": len(per_member),
        "verdict": (result.verdict or {}).get("status", result.outcome),
        "cpu_mean": statistics.fmean(cpu),
        "cpu_max": max(cpu),
        "rss_mean": statistics.fmean(rss),
        "rss_max": max(rss),
        "workload_s": end - start,
        "run_dir": result.run_dir,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--rates", default="1,2000", help="producer records/s, comma-separated (default 1,2000)")
    parser.add_argument("--duration", type=float, default=30.0, help="workload seconds per rate (default 30)")
    parser.add_argument("--protocol", default="classic-eager")
    parser.add_argument("--kafka", default="3.9")
    parser.add_argument("--runs-dir", type=Path, help="keep the runs here (default: a temporary directory)")
    args = parser.parse_args()
    runs = args.runs_dir or Path(tempfile.mkdtemp(prefix="member-cost-"))
    print(f"{args.members} members, {args.protocol}, Kafka {args.kafka}, {args.duration:g} s per rate; runs in {runs}")
    print(
        f"{'rate/s':>8} {'members':>7} {'CPU % mean':>10} {'CPU % max':>9} {'RSS MB mean':>11} {'RSS MB max':>10}"
        f" {'group CPU %':>11} {'group RSS MB':>12} {'100 members: CPU cores, GB':>27}  verdict"
    )
    for rate in (float(r) for r in args.rates.split(",")):
        m = measure(args.members, rate, args.duration, args.protocol, args.kafka, runs)
        n = m["members"]
        cores_100, gb_100 = 100 * m["cpu_mean"] / 100, 100 * m["rss_mean"] / 1024  # 100 members; 100 % = a core
        print(
            f"{rate:>8g} {n:>7} {m['cpu_mean']:>10.1f} {m['cpu_max']:>9.1f} {m['rss_mean']:>11.1f} {m['rss_max']:>10.1f}"
            f" {m['cpu_mean'] * n:>11.1f} {m['rss_mean'] * n:>12.0f} {cores_100:>14.2f}, {gb_100:>10.2f}  {m['verdict']}"
        )
    print("(100 members: the per-member mean × 100 — at that rate spread over 100 members each would do less work)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
