"""How soon `on:` faults act on the event that fires them, from real run histories.

    python3 benchmarks/trigger_latency.py RUN_DIR… (or globs: runs/*kill-in-revoke*)

Each `fault_started` a trigger fired carries the event (`trigger`) and the time from it to
the injection beginning, the configured delay left out (`trigger_latency_ms`). Printed per
kind of event: members' own events (read from the history as they are written, every 5 ms)
and the brokers' log lines (read into the history as often while a trigger waits on them),
with count, p50, p95 and max. Goal: p95 ≤ 50 ms.
"""

from __future__ import annotations

import glob
import json
import math
import sys
from collections import defaultdict
from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]  # nearest rank: a latency that happened


def main(args: list[str]) -> int:
    dirs = [Path(p) for a in args or ["runs/*"] for p in sorted(glob.glob(a)) if (Path(p) / "history.jsonl").exists()]
    by_source: dict[str, list[float]] = defaultdict(list)
    for d in dirs:
        for line in (d / "history.jsonl").read_text().splitlines():
            if '"fault_started"' in line and '"trigger"' in line:
                e = json.loads(line)
                source = e["trigger"]["source"]
                kind = (
                    "broker log"
                    if source.startswith("broker-")
                    else "coordinator"
                    if source.startswith("coordinator")
                    else "member / harness"
                )
                by_source[kind].append(e["trigger_latency_ms"])
    if not by_source:
        print(f"no triggered faults in {len(dirs)} run directories")
        return 1
    print(f"{len(dirs)} runs")
    print(f"{'fired by':<18} {'faults':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for kind, values in sorted(by_source.items()):
        print(
            f"{kind:<18} {len(values):>6} {percentile(values, 0.5):>8.1f} {percentile(values, 0.95):>8.1f} "
            f"{max(values):>8.1f}"
        )
    every = [v for values in by_source.values() for v in values]
    print(
        f"{'all':<18} {len(every):>6} {percentile(every, 0.5):>8.1f} {percentile(every, 0.95):>8.1f} {max(every):>8.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
