"""Time from `cluster up` to ready (ZooKeeper or KRaft controller + 3 brokers, topic
with a leader for every partition), and the wall time of the smoke run.

    python3 benchmarks/cluster_ready.py [--repeat 3] [--no-smoke]

Goal on the 2-core reference machine: cluster ready in under 20 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.cluster import ClusterSpec, TopicSpec, local_cluster

REPO = Path(__file__).resolve().parents[1]


def time_cluster(kafka: str) -> tuple[float, float]:
    spec = ClusterSpec(kafka=kafka, brokers=3, topics=[TopicSpec("events", 6)])
    with tempfile.TemporaryDirectory(prefix="rl-bench-") as tmp:
        t0 = time.monotonic()
        with local_cluster(spec, Path(tmp) / "cluster"):
            ready = time.monotonic() - t0
            t1 = time.monotonic()
        return ready, time.monotonic() - t1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-smoke", action="store_true")
    args = parser.parse_args()

    print(f"{'cluster':<28} {'ready (s) median':>17} {'min':>6} {'max':>6} {'teardown (s)':>13}")
    for kafka, label in (("3.9", "ZooKeeper + 3 brokers (3.9)"), ("4.1", "KRaft ctrl + 3 brokers (4.1)")):
        runs = [time_cluster(kafka) for _ in range(args.repeat)]
        ready = [r for r, _ in runs]
        down = [d for _, d in runs]
        print(f"{label:<28} {statistics.median(ready):>17.1f} {min(ready):>6.1f} {max(ready):>6.1f} "
              f"{statistics.median(down):>13.1f}")

    if not args.no_smoke:
        with tempfile.TemporaryDirectory(prefix="rl-bench-runs-") as runs:
            t0 = time.monotonic()
            proc = subprocess.run([sys.executable, "-m", "harness", "run", str(REPO / "scenarios" / "smoke.yaml"),
                                   "--runs-dir", runs], capture_output=True, text=True)
            took = time.monotonic() - t0
            phases = json.loads(next(Path(runs).glob("*/run.json")).read_text())["phases"]
        print(f"smoke run: {took:.1f} s wall, exit {proc.returncode} (workload phase 45 s); "
              f"phase starts (s): {', '.join(f'{k} {v:.1f}' for k, v in phases.items())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
