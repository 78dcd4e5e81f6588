"""Per-scenario overhead of a suite, with and without a shared cluster, side by side.

    python3 benchmarks/suite_overhead.py [--scenarios 10] [--duration 15] [--runs-dir DIR]

Builds a suite of N short scenarios on one cluster spec (Kafka 3.9, ZooKeeper, 3 brokers),
one fault kind each — none, a member pause past its session, a broker SIGKILL and
restart, a broker's ZooKeeper session expired, a member cut off by the network, a poll
stall, a member crash, a scale-up, a join storm, a rolling restart of the brokers — so the
shared cluster is healed and health-checked after the faults that damage it. The suite
runs twice in this one invocation: first every variant on a cluster of its own
(`suite --fresh-clusters`), then with sharing (the default).

Overhead of a variant = its wall time in the suite minus its own warm-up, workload and
recovery (run.json's phases: from `warmup` to `done`): starting or borrowing the cluster,
creating topics, starting clients, stopping them, handing the cluster back, judging.

Goal on the 2-core reference machine: ≤ 5 s per scenario with sharing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from harness.campaigns.suite import SuiteRun, load_suite
from harness.supervision.run_state import SCENARIO_PHASES, phase_seconds, read_state

FAULTS = [  # one per scenario, at 4 s into the workload
    [],
    [{"kind": "pause", "target": "consumer-2", "at_s": 4, "duration_s": 8}],
    [{"kind": "crash", "target": "broker-2", "at_s": 4, "restart_after_s": 4}],
    [{"kind": "zk-session-expiry", "target": "broker-1", "at_s": 4}],
    [{"kind": "network", "target": "consumer-1", "link": "brokers", "effect": "blackhole", "at_s": 4, "duration_s": 8}],
    [{"kind": "poll-stall", "target": "consumer-3", "at_s": 4, "duration_s": 8}],
    [{"kind": "crash", "target": "consumer-1", "at_s": 4, "restart_after_s": 3}],
    [{"kind": "scale", "consumers": 5, "at_s": 4}],
    [{"kind": "join-storm", "consumers": 3, "at_s": 4}],
    [{"kind": "rolling-restart", "targets": "brokers", "at_s": 2, "down_s": 1, "interval_s": 3}],
]


def scenario(i: int, duration_s: float) -> dict:
    faults = FAULTS[i % len(FAULTS)]
    return {
        "name": f"overhead-{i + 1:02d}-{faults[0]['kind'] if faults else 'none'}",
        "seed": i + 1,
        "duration_s": duration_s,
        "cluster": {"kafka": "3.9", "brokers": 3},
        "topics": [{"name": "events", "partitions": 6, "replication_factor": 3}],
        "workload": {
            "group": "overhead",
            "protocol": "classic-cooperative",
            "assignor": "cooperative-sticky",
            "consumers": 3,
            "commit": "sync",
            "processing_ms": 1,
            "session_timeout_ms": 6000,
            "heartbeat_interval_ms": 1000,
            "producer": {"rate": 200},
        },
        "faults": faults,
        "recovery": {"timeout_s": 90, "stable_for_s": 2},
    }


def overheads(suite_dir: Path) -> list[tuple[str, float, float, str]]:
    """(variant, wall s, overhead s, state) per variant of a finished suite."""
    out = []
    for v in json.loads((suite_dir / "suite.json").read_text())["variants"]:
        spent = phase_seconds(read_state(Path(v["run_dir"])) or {})
        own = sum(spent.get(phase, 0.0) for phase in SCENARIO_PHASES)
        out.append((v["id"], v["seconds"], v["seconds"] - own, v["state"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", type=int, default=10)
    parser.add_argument("--duration", type=float, default=15.0, help="each scenario's workload, seconds")
    parser.add_argument(
        "--runs-dir", type=Path, default=None, help="keep the runs here (default: a temporary directory)"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="rl-overhead-") as tmp:
        root = Path(tmp)
        runs = args.runs_dir or root / "runs"
        names = []
        for i in range(args.scenarios):
            data = scenario(i, args.duration)
            (root / f"{data['name']}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
            names.append(f"{data['name']}.yaml")
        (root / "suite.yaml").write_text(yaml.safe_dump({"name": "overhead", "scenarios": names}))
        suite = load_suite(root / "suite.yaml")
        results = {}
        for label, share in (("fresh cluster per scenario", False), ("shared cluster", True)):
            t0 = time.monotonic()
            run = SuiteRun(
                suite,
                suite.variants,
                runs,
                share_clusters=share,
                report=lambda m: print(f"  {m}", flush=True) if "stopping a shared" in m else None,
            )
            code = run.execute()
            results[label] = (overheads(run.dir), time.monotonic() - t0, code, run.dir)
            time.sleep(1)  # distinct suite directory stamps

    print(
        f"\n{args.scenarios} scenarios of {args.duration:.0f} s workload; overhead = wall − (warm-up + workload + recovery)\n"
    )
    print(f"{'variant':34} {'fresh: wall':>12} {'overhead':>9} {'shared: wall':>13} {'overhead':>9}")
    (fresh, fresh_wall, _, _), (shared, shared_wall, _, _) = results.values()
    for (name, fw, fo, fs), (_, sw, so, ss) in zip(fresh, shared, strict=False):
        print(
            f"{name:34} {fw:11.1f}s {fo:8.1f}s{'' if fs == 'passed' else ' ' + fs:1} {sw:12.1f}s {so:8.1f}s"
            f"{'' if ss == 'passed' else ' ' + ss}"
        )
    for label, (rows, wall, code, _) in results.items():
        o = [r[2] for r in rows]
        print(
            f"{label:28} suite wall {wall:6.1f} s (exit {code}); overhead per scenario: "
            f"mean {statistics.mean(o):4.1f} s, median {statistics.median(o):4.1f} s, max {max(o):4.1f} s"
        )

    def mean(rows):
        return statistics.mean(r[2] for r in rows)

    print(
        f"sharing cuts the mean overhead {mean(fresh) / mean(shared):.1f}x and the suite's wall time "
        f"{fresh_wall / shared_wall:.2f}x (goal: ≤ 5 s per scenario shared)"
    )


if __name__ == "__main__":
    main()
