"""What the project's own test suite costs, and where it goes: wall time, test time per
lane, and CPU-seconds per kind of process, with the floor the machine's cores put under
the wall time (issue 12: the suite on the 2-core CI machine).

    python3 benchmarks/suite_cost.py [--out DIR] [--interval 1.0] [-- PYTEST ARGS...]

Runs `python3 -m pytest` (the project's addopts: three workers) with the given arguments
(default: the whole suite) and, beside it, reads /proc every --interval seconds: each
process's CPU time, named by its role in the lab's process registry (broker, zookeeper,
consumer, ...) or else by its command line (pytest, spark, the container engine).
A process that ends between two readings loses its last interval, so the figures are a
little low; processes that were running before the suite count only what they spend
during it. The real runs' directories (under pytest's --basetemp, DIR/basetemp unless
given) say what their phases took: cluster start, warm-up, workload, recovery, drain.
Prints the figures and writes them to DIR/suite-cost.json; exits with pytest's exit code.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.processes import registered  # noqa: E402
from tests.conftest import HEAVY_MODULES  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")

# Processes the lab's registry does not name, by a piece of their command line (first match).
BY_COMMAND = (("kafka.Kafka", "broker (in a container)"), ("QuorumPeerMain", "zookeeper (in a container)"),
              ("toxiproxy", "toxiproxy (in a container)"), ("spark", "spark"), ("pyspark", "spark"),
              ("containerd", "engine"), ("dockerd", "engine"), ("docker-proxy", "engine"),
              ("runc", "engine"), ("buildkit", "engine"), ("pytest", "pytest"),
              ("exec(eval(sys.stdin.readline()))", "pytest"),  # a pytest-xdist worker
              ("-m harness", "harness"), ("rebalance-lab", "harness"), ("-m analysis", "harness"),
              ("locust", "load"), ("java", "other java"), ("python", "other python"))


def _cpu_seconds(pid: str) -> tuple[str, float] | None:
    """(start time, user+system seconds) of a process, None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[19], (int(fields[11]) + int(fields[12])) / TICK


def _command(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _kind(command: str) -> str:
    return next((kind for needle, kind in BY_COMMAND if needle in command), "other")


def _machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of every core since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


class CpuSampler(threading.Thread):
    """Each process's CPU time, by kind, read every `interval` seconds until stopped."""

    def __init__(self, interval: float):
        super().__init__(daemon=True)
        self.interval, self.halt = interval, threading.Event()
        self.before: dict[tuple[str, str], float] = {}  # what pre-existing processes had spent already
        self.last: dict[tuple[str, str], list] = {}  # (pid, start time) -> [kind, CPU seconds]
        self.own = str(os.getpid())
        self._read(first=True)

    def _read(self, first: bool = False) -> None:
        roles = {str(p.pid): p.role for p in registered()}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            seen = _cpu_seconds(pid)
            if seen is None or pid == self.own:
                continue
            key = (pid, seen[0])
            if key in self.last:
                self.last[key][1] = seen[1]
                continue
            command = _command(pid)
            if not command:  # a kernel thread
                continue
            if first:
                self.before[key] = seen[1]
            self.last[key] = [roles.get(pid) or _kind(command), seen[1]]

    def run(self) -> None:
        while not self.halt.wait(self.interval):
            self._read()

    def stop(self) -> dict[str, dict]:
        self.halt.set()
        self.join()
        self._read()
        spent, count = collections.Counter(), collections.Counter()
        for key, (kind, seconds) in self.last.items():
            used = seconds - self.before.get(key, 0.0)
            if used > 0 or key not in self.before:
                spent[kind] += used
                count[kind] += key not in self.before
        return {kind: {"cpu_s": round(s, 1), "processes": count[kind]} for kind, s in spent.most_common()}


def lanes(junit: Path) -> dict:
    """Test time (setup + call + teardown) per module, and the three-broker lane's share."""
    per_module: collections.Counter = collections.Counter()
    for case in ET.parse(junit).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")[1:]  # tests.integration.test_pause[.TestClass]
        module = "/".join(parts[:next((i + 1 for i, p in enumerate(parts) if p.startswith("test_")), len(parts))])
        per_module[module] += float(case.get("time") or 0)
    heavy = sum(t for m, t in per_module.items() if m in HEAVY_MODULES)
    return {"test_s": round(sum(per_module.values()), 1), "three_broker_lane_s": round(heavy, 1),
            "modules_s": {m: round(t, 1) for m, t in per_module.most_common()}}


# A run's phases (run.json "phases": seconds from its start at which each began), and the
# stretch from each to the next, as the figures name it.
PHASES = {"start": "cluster start", "cluster_ready": "topics and clients", "warmup": "warm-up",
          "workload": "workload", "recovery": "recovery", "drain": "drain"}


def run_phases(root: Path) -> dict:
    """What the real runs under `root` (the session's basetemp) spent in each phase, summed."""
    spent: collections.Counter = collections.Counter()
    runs = shared = 0
    for path in root.rglob("run.json"):
        if any(part.endswith("current") for part in path.relative_to(root).parts):  # pytest's symlinks
            continue
        try:
            run = json.loads(path.read_text())
            began = sorted((float(t), name) for name, t in (run.get("phases") or {}).items())
        except (OSError, ValueError, TypeError, AttributeError):
            continue
        if not began:
            continue
        runs += 1
        shared += bool(run.get("shared_cluster"))
        for (t, name), (t_next, _) in zip(began, began[1:]):
            spent[PHASES.get(name, name)] += t_next - t
    return {"runs": runs, "on_a_shared_cluster": shared,
            "phases_s": {k: round(v, 1) for k, v in spent.most_common() if round(v, 1) > 0}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="where suite-cost.json and junit.xml go (default: a new temporary directory)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between two readings of /proc")
    parser.add_argument("--workers", type=int, default=3, help="pytest-xdist workers the addopts give (for the lane figures)")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments (default: the whole suite)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="suite-cost-"))
    out.mkdir(parents=True, exist_ok=True)
    cores = os.cpu_count() or 1

    pytest_args = list(args.pytest_args)
    given = [i for i, a in enumerate(pytest_args) if a.split("=", 1)[0] == "--basetemp"]
    if not given:  # where the runs' directories go, for their phases
        pytest_args.append(f"--basetemp={out / 'basetemp'}")
        given = [len(pytest_args) - 1]
    i = given[-1]
    basetemp = Path(pytest_args[i].split("=", 1)[1] if "=" in pytest_args[i] else pytest_args[i + 1])

    sampler = CpuSampler(args.interval)
    busy0, total0 = _machine_busy()
    started = time.monotonic()
    sampler.start()
    code = subprocess.call([sys.executable, "-m", "pytest", f"--junitxml={out / 'junit.xml'}", *pytest_args], cwd=REPO)
    wall = time.monotonic() - started
    by_kind = sampler.stop()
    busy1, total1 = _machine_busy()

    cpu = sum(k["cpu_s"] for k in by_kind.values())
    figures = {"pytest_exit_code": code, "wall_s": round(wall, 1), "cores": cores,
               "machine_busy_percent": round(100 * (busy1 - busy0) / max(1, total1 - total0), 1),
               "cpu_s": round(cpu, 1), "cpu_floor_s": round(cpu / cores, 1), "cpu_by_kind": by_kind}
    if (out / "junit.xml").exists():
        figures |= lanes(out / "junit.xml")
        figures["other_lanes_s"] = round((figures["test_s"] - figures["three_broker_lane_s"]) / max(1, args.workers - 1), 1)
    figures["real_runs"] = run_phases(basetemp) if basetemp.is_dir() else None
    (out / "suite-cost.json").write_text(json.dumps(figures, indent=2) + "\n")

    print(f"\nwall {wall / 60:.1f} min, pytest exit {code}; the machine's {cores} cores {figures['machine_busy_percent']} % busy")
    print(f"CPU {cpu:,.0f} s: at least {cpu / cores / 60:.1f} min of this machine's cores, however the work is spread")
    for kind, k in by_kind.items():
        print(f"  {k['cpu_s']:8,.0f} s {100 * k['cpu_s'] / max(cpu, 1):5.1f} %  {kind} ({k['processes']} started)")
    if "test_s" in figures:
        print(f"test time {figures['test_s']:,.0f} s: the three-broker lane {figures['three_broker_lane_s']:,.0f} s, "
              f"each other lane {figures['other_lanes_s']:,.0f} s ({args.workers} workers)")
        for module, seconds in list(figures["modules_s"].items())[:12]:
            print(f"  {seconds:7,.0f} s  {module}")
    if figures["real_runs"]:
        r = figures["real_runs"]
        print(f"{r['runs']} real runs ({r['on_a_shared_cluster']} on a shared cluster), seconds per phase, summed: "
              + ", ".join(f"{name} {s:,.0f}" for name, s in r["phases_s"].items()))
    print(f"figures: {out / 'suite-cost.json'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
