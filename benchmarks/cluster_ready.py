"""Time from `cluster up` to ready (ZooKeeper or KRaft controller + 3 brokers, topic
with a leader for every partition), per backend side by side, and the wall time of the
smoke run.

    python3 benchmarks/cluster_ready.py [--repeat 3] [--backends local,compose] [--no-smoke]
                                        [--images-from-nothing]

The backends take turns in each round (local, compose, local, …) so a busy machine
weighs on both alike. `--images-from-nothing` first removes the compose backend's images
and times building them all again (debootstrap, Debian's JRE, the Kafka, Toxiproxy and
coordinator images).

Goals on the 2-core reference machine: local ready in under 20 s; compose at most 2x local
once its images exist.
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

from harness.cluster import ClusterSpec, TopicSpec
from harness.cluster.backend import open_cluster
from harness.supervision.processes import Supervisor

REPO = Path(__file__).resolve().parents[1]


def time_cluster(backend: str, kafka: str) -> tuple[float, float]:
    spec = ClusterSpec(kafka=kafka, brokers=3, topics=[TopicSpec("events", 6)])
    with tempfile.TemporaryDirectory(prefix="rl-bench-") as tmp:
        supervisor = Supervisor(owner=f"api:{tmp}")
        cluster = open_cluster(backend, spec, Path(tmp) / "cluster", supervisor)
        t0 = time.monotonic()
        try:
            cluster.start()
            ready = time.monotonic() - t0
        finally:
            t1 = time.monotonic()
            cluster.stop()
            supervisor.stop_all()
        return ready, time.monotonic() - t1


def images_from_nothing() -> None:
    import docker

    from harness.components.containers.engine import ensure_engine
    from harness.components.containers.images import ROLE_LABEL, ensure_images

    engine = ensure_engine()
    client = docker.DockerClient(base_url=engine.docker_host)
    for image in client.images.list(filters={"label": ROLE_LABEL}):
        client.images.remove(image.id, force=True)
    client.close()
    steps: list[tuple[str, float]] = []
    last = [time.monotonic()]

    def report(message: str) -> None:
        if message.endswith("…"):
            last[0] = time.monotonic()
        elif " built in " in message:
            steps.append((message.split()[1], time.monotonic() - last[0]))

    t0 = time.monotonic()
    ensure_images(["3.9", "4.4"], report, engine.docker_host)
    print(f"images from nothing: {time.monotonic() - t0:.0f} s — " + ", ".join(f"{tag} {s:.0f} s" for tag, s in steps))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backends", default="local", help="comma-separated: local,compose")
    parser.add_argument("--images-from-nothing", action="store_true")
    parser.add_argument("--no-smoke", action="store_true")
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]

    if args.images_from_nothing:
        images_from_nothing()
    print(f"{'cluster':<28} {'backend':<8} {'ready (s) median':>17} {'min':>6} {'max':>6} {'teardown (s)':>13}")
    for kafka, label in (("3.9", "ZooKeeper + 3 brokers (3.9)"), ("4.4", "KRaft ctrl + 3 brokers (4.4)")):
        runs: dict[str, list[tuple[float, float]]] = {b: [] for b in backends}
        for _ in range(args.repeat):
            for backend in backends:  # in turns: both see the same machine
                runs[backend].append(time_cluster(backend, kafka))
        for backend in backends:
            ready = [r for r, _ in runs[backend]]
            down = [d for _, d in runs[backend]]
            print(
                f"{label:<28} {backend:<8} {statistics.median(ready):>17.1f} {min(ready):>6.1f} {max(ready):>6.1f} "
                f"{statistics.median(down):>13.1f}"
            )
        if len(backends) == 2:
            a, b = (statistics.median(r for r, _ in runs[x]) for x in backends)
            print(f"{'':<28} {backends[1]}/{backends[0]} ready: {b / a:.2f}x")

    if not args.no_smoke:
        with tempfile.TemporaryDirectory(prefix="rl-bench-runs-") as runs:
            t0 = time.monotonic()
            proc = subprocess.run(
                [sys.executable, "-m", "harness", "run", str(REPO / "scenarios" / "smoke.yaml"), "--runs-dir", runs],
                capture_output=True,
                text=True,
            )
            took = time.monotonic() - t0
            phases = json.loads(next(Path(runs).glob("*/run.json")).read_text())["phases"]
        print(
            f"smoke run: {took:.1f} s wall, exit {proc.returncode} (workload phase 45 s); "
            f"phase starts (s): {', '.join(f'{k} {v:.1f}' for k, v in phases.items())}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
