"""What the project's own test suite costs, and where it goes: wall time, test time, and
CPU-seconds per kind of process, with the floor the machine's cores put under the wall
time, and what the real runs spent in each phase (issue 12: the suite on the 2-core CI
machine). Run it on an otherwise quiet machine.

    python3 benchmarks/suite_cost.py [--out DIR] [--interval 1.0] [-- PYTEST ARGS...]

Runs `python3 -m pytest` (the project's addopts: three workers) with the given arguments
(default: the whole suite) and, beside it, reads /proc every --interval seconds. The suite's
processes are pytest's descendants, the processes in the lab's registry and the container
engine's; each is named by its registry role (broker, zookeeper, consumer, ...) or else by
its command line (pytest, spark, the engine, containerised brokers). Processes that were
running before count only what they spend during the suite. A process that lives less than
an interval is not seen: what pytest's process tree spent all in all (wait4) minus what the
readings saw of it is printed as "not seen by a reading".
The real runs' directories (under pytest's --basetemp, DIR/basetemp unless given; a run
counts once its cluster was ready) say what their phases took: cluster start, warm-up,
workload, recovery, drain (teardown is not a phase). Prints the figures and writes them to
DIR/suite-cost.json; exits with pytest's exit code.
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

from harness.supervision.processes import cpu_seconds, proc_stat, registered  # noqa: E402
from harness.supervision.run_state import RUN_STATE, phase_seconds, read_state  # noqa: E402
from tests.conftest import HEAVY_MODULES  # noqa: E402

PF_KTHREAD = 0x00200000  # /proc/pid/stat flags (field 9): a kernel thread

# Processes the registry does not name, by their command line: (kind, test on argv).
BY_COMMAND = (
    ("kafka (in a container)", lambda argv: "kafka.Kafka" in argv),  # the lab's own brokers are registered
    ("zookeeper (in a container)", lambda argv: any(a.endswith(".QuorumPeerMain") for a in argv)),
    ("toxiproxy (in a container)", lambda argv: Path(argv[0]).name.startswith("toxiproxy")),
    ("spark", lambda argv: "org.apache.spark.deploy.SparkSubmit" in argv or "pyspark.daemon" in argv),
    (
        "engine",
        lambda argv: Path(argv[0]).name.startswith(("dockerd", "containerd", "docker-proxy", "runc", "docker-init")),
    ),
    (
        "pytest",
        lambda argv: "pytest" in argv[:3] or "import sys;exec(eval(sys.stdin.readline()))" in argv,
    ),  # xdist workers
    (
        "harness",
        lambda argv: Path(argv[0]).name == "rebalance-lab" or argv[1:3] in (["-m", "harness"], ["-m", "analysis"]),
    ),
    ("load", lambda argv: any(Path(a).name == "locust" for a in argv[:3])),
    ("other java", lambda argv: Path(argv[0]).name == "java"),
    ("other python", lambda argv: Path(argv[0]).name.startswith("python")),
)
ENGINE_KINDS = ("engine", "kafka (in a container)", "zookeeper (in a container)", "toxiproxy (in a container)")


def _argv(pid: str) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a] or [""]
    except OSError:
        return [""]


def _kind(argv: list[str]) -> str:
    return next((kind for kind, matches in BY_COMMAND if matches(argv)), "other")


def _machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of every core since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


class CpuSampler(threading.Thread):
    """Each process's CPU time and kind, read every `interval` seconds until stopped; the
    suite's are the descendants of `root`, the registered ones and the engine's."""

    def __init__(self, interval: float):
        super().__init__(daemon=True)
        self.interval, self.halt, self.root = interval, threading.Event(), None
        self.before: dict[tuple[str, str], float] = {}  # what processes running at the start had spent then
        self.seen: dict[tuple[str, str], dict] = {}  # (pid, start time): never reused -> kind, cpu_s, suite's, in_tree
        self.own = str(os.getpid())
        self._read(first=True)

    def _read(self, first: bool = False) -> None:
        roles = {str(p.pid): p.role for p in registered(forget_dead=False)}  # a measuring tool never writes
        stats = {
            pid: stat
            for pid in filter(str.isdigit, os.listdir("/proc"))
            if pid != self.own and (stat := proc_stat(pid)) and not int(stat[6]) & PF_KTHREAD
        }
        keys = {pid: (pid, stat[19]) for pid, stat in stats.items()}
        for pid, stat in sorted(stats.items(), key=lambda item: int(item[1][19])):  # parents first
            key = keys[pid]
            entry = self.seen.get(key)
            if entry is None:
                if first:
                    self.before[key] = cpu_seconds(stat)
                parent = self.seen.get(keys.get(stat[1], ("", "")))
                in_tree = self.root in (pid, stat[1]) or bool(parent and parent["in_tree"])
                entry = self.seen[key] = {"in_tree": in_tree, "suite": in_tree or bool(parent and parent["suite"])}
            # Named again at every reading: a process seen between fork and exec, or before its
            # registration was written, has its parent's command line and no role yet.
            argv = _argv(pid)
            if pid in roles or argv != [""] or "kind" not in entry:  # a zombie's command line is empty
                entry["kind"] = roles.get(pid) or _kind(argv)
            entry["suite"] = entry["suite"] or pid in roles or entry["kind"] in ENGINE_KINDS
            entry["cpu_s"] = cpu_seconds(stat)

    def run(self) -> None:
        while not self.halt.wait(self.interval):
            self._read()

    def stop(self) -> dict:
        self.halt.set()
        self.join()
        self._read()
        spent, started = collections.Counter(), collections.Counter()
        tree = 0.0
        for key, entry in self.seen.items():
            used = entry["cpu_s"] - self.before.get(key, 0.0)
            if entry["suite"] and used > 0:
                spent[entry["kind"]] += used
                started[entry["kind"]] += key not in self.before
            tree += used if entry["in_tree"] else 0.0
        return {
            "by_kind": {kind: {"cpu_s": round(s, 1), "processes": started[kind]} for kind, s in spent.most_common()},
            "tree_seen_s": tree,
        }


def lanes(junit: Path) -> dict:
    """Test time (setup + call + teardown) per module, and the three-broker modules' share."""
    per_module: collections.Counter = collections.Counter()
    for case in ET.parse(junit).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")[1:]  # tests.integration.test_pause[.TestClass]
        module = "/".join(parts[: next((i + 1 for i, p in enumerate(parts) if p.startswith("test_")), len(parts))])
        per_module[module] += float(case.get("time") or 0)
    heavy = sum(t for m, t in per_module.items() if m in HEAVY_MODULES)
    return {
        "test_s": round(sum(per_module.values()), 1),
        "three_broker_modules_s": round(heavy, 1),
        "modules_s": {m: round(t, 1) for m, t in per_module.most_common()},
    }


# A run's phases (harness.supervision.run_state.phase_seconds), as the figures name them.
PHASES = {
    "start": "cluster start",
    "cluster_ready": "topics and clients",
    "warmup": "warm-up",
    "workload": "workload",
    "recovery": "recovery",
    "drain": "drain",
}


def run_phases(root: Path) -> dict:
    """What the real runs under `root` (a pytest session's basetemp) spent in each phase,
    summed. A real run is one whose cluster was ready (not a unit test's run.json)."""
    spent: collections.Counter = collections.Counter()
    runs = shared = 0
    for path in root.rglob(RUN_STATE):  # rglob does not follow pytest's *current symlinks
        run = read_state(path.parent) or {}
        if "cluster_ready" not in (run.get("phases") or {}):  # a unit test's run.json, or no cluster
            continue
        try:
            seconds = phase_seconds(run)
        except (TypeError, ValueError):  # torn
            continue
        runs += 1
        shared += bool(run.get("shared_cluster"))
        for name, s in seconds.items():
            spent[PHASES.get(name, name)] += s
    return {
        "runs": runs,
        "on_a_shared_cluster": shared,
        "phases_s": {k: round(v, 1) for k, v in spent.most_common() if round(v, 1) > 0},
    }


def _basetemp(pytest_args: list[str], out: Path) -> tuple[list[str], Path]:
    """pytest's arguments with a --basetemp (DIR/basetemp unless one is given), and that directory."""
    given = [i for i, a in enumerate(pytest_args) if a.split("=", 1)[0] == "--basetemp"]
    if not given:
        return [*pytest_args, f"--basetemp={out / 'basetemp'}"], out / "basetemp"
    i = given[-1]
    path = Path(pytest_args[i].split("=", 1)[1] if "=" in pytest_args[i] else pytest_args[i + 1])
    return pytest_args, path if path.is_absolute() else REPO / path  # pytest runs in the repository


def _pytest(argv: list[str], sampler: CpuSampler) -> tuple[int, float]:
    """Run pytest to its end (a Ctrl-C reaches it too, and it stops its workers: we wait for
    that); its exit code and what its whole process tree spent (wait4's rusage)."""
    proc = subprocess.Popen(argv, cwd=REPO)
    sampler.root = str(proc.pid)
    sampler.start()
    while True:
        try:
            _, status, usage = os.wait4(proc.pid, 0)
            break
        except KeyboardInterrupt:
            continue
    proc.returncode = os.waitstatus_to_exitcode(status)
    code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    return code, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--out",
        type=Path,
        help="where suite-cost.json, junit.xml and the basetemp go (default: a new temporary directory)",
    )
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between two readings of /proc")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments (default: the whole suite)")
    args = parser.parse_args()
    out = (args.out or Path(tempfile.mkdtemp(prefix="suite-cost-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    pytest_args, basetemp = _basetemp(list(args.pytest_args), out)
    cores = len(os.sched_getaffinity(0))

    sampler = CpuSampler(args.interval)
    busy0, total0 = _machine_busy()
    started = time.monotonic()
    code, tree_s = _pytest([sys.executable, "-m", "pytest", f"--junitxml={out / 'junit.xml'}", *pytest_args], sampler)
    wall = time.monotonic() - started
    sampled = sampler.stop()
    busy1, total1 = _machine_busy()

    by_kind = sampled["by_kind"]
    unseen = max(0.0, tree_s - sampled["tree_seen_s"])
    if unseen >= 0.05:
        by_kind["not seen by a reading"] = {"cpu_s": round(unseen, 1), "processes": 0}
    cpu = sum(k["cpu_s"] for k in by_kind.values())
    figures = {
        "pytest_exit_code": code,
        "wall_s": round(wall, 1),
        "cores": cores,
        "machine_busy_percent": round(100 * (busy1 - busy0) / max(1, total1 - total0), 1),
        "cpu_s": round(cpu, 1),
        "cpu_floor_s": round(cpu / cores, 1),
        "cpu_by_kind": by_kind,
    }
    try:
        figures |= lanes(out / "junit.xml")
    except (OSError, ET.ParseError) as e:
        figures["junit_error"] = str(e)
    figures["real_runs"] = run_phases(basetemp) if basetemp.is_dir() else None
    (out / "suite-cost.json").write_text(json.dumps(figures, indent=2) + "\n")

    print(
        f"\nwall {wall / 60:.1f} min, pytest exit {code}; the machine's {cores} cores {figures['machine_busy_percent']} % busy"
    )
    print(
        f"the suite's CPU {cpu:,.0f} s: at least {cpu / cores / 60:.1f} min of these {cores} cores, however it is spread"
    )
    for kind, k in by_kind.items():
        print(
            f"  {k['cpu_s']:8,.0f} s {100 * k['cpu_s'] / max(cpu, 1):5.1f} %  {kind}"
            + (f" ({k['processes']} started)" if k["processes"] else "")
        )
    if "test_s" in figures:
        print(
            f"test time {figures['test_s']:,.0f} s (setup, call and teardown, summed), "
            f"{figures['test_s'] / wall:.2f} tests at a time on average; the three-broker modules, "
            f"which take turns on one worker: {figures['three_broker_modules_s']:,.0f} s"
        )
        for module, seconds in list(figures["modules_s"].items())[:12]:
            print(f"  {seconds:7,.0f} s  {module}")
    if figures["real_runs"]:
        r = figures["real_runs"]
        print(
            f"{r['runs']} real runs ({r['on_a_shared_cluster']} on a shared cluster), seconds per phase, summed: "
            + ", ".join(f"{name} {s:,.0f}" for name, s in r["phases_s"].items())
        )
    print(f"figures: {out / 'suite-cost.json'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
