"""How well the members' clock of each rebalance agrees with the coordinator's own.

Over every completed rebalance (teardown ones excluded) of the given run directories
whose coordinator logged both ends, prints the distribution of

- start:      the members' first sign (revoke, loss, JoinGroup sent) − the coordinator's
              "Preparing to rebalance" (`start_vs_coordinator_ms`), split by which came
              first: a member-triggered rebalance (a join or leave) shows the member's sign
              a few ms *before* "Preparing"; a coordinator-triggered one (an eviction) shows
              it up to a heartbeat interval *after* — that detection delay is a real part of
              the rebalance, not a clock error;
- stabilized: the last member's JoinGroup answer − the coordinator's "Stabilized group"
              (`stabilized_vs_coordinator_ms`): the same instant seen from both sides.

    python3 benchmarks/rebalance_clocks.py                    # the runs of the latest pytest session
    python3 benchmarks/rebalance_clocks.py 'runs/*' /tmp/x/runs/*

Reads histories only (the oracle), like `rebalance-lab check`.
"""
from __future__ import annotations

import glob
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oracle import check_history, load_history  # noqa: E402


def run_dirs(patterns: list[str]) -> list[Path]:
    if not patterns:  # pytest keeps its last sessions' temp dirs: /tmp/pytest-of-<user>/pytest-<n>/
        sessions = sorted(Path("/tmp").glob("pytest-of-*/pytest-[0-9]*"), key=lambda p: p.stat().st_mtime)
        patterns = [str(sessions[-1] / "**" / "history.jsonl")] if sessions else []
    found = set()
    for match in (Path(h) for p in patterns for h in glob.glob(p, recursive=True)):
        run = match.parent if match.name == "history.jsonl" else match
        # A real run's directory (run.json, cluster/), once: pytest's "…current" links repeat them.
        if (run / "history.jsonl").exists() and (run / "run.json").exists() and (run / "cluster").is_dir():
            found.add(run.resolve())
    return sorted(found)


def _family(protocol: str | None) -> str:
    """KIP-848 has no "Stabilized": its members reach the epoch of the broker's target assignment one
    by one, on their own heartbeats — not the same instant, so it is reported on its own."""
    if protocol == "consumer":
        return "KIP-848 (epoch reached vs target computed)"
    if protocol and protocol.startswith("coordinator-"):
        return "the project's coordinator"
    return "classic (Kafka's GroupCoordinator)"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def describe(label: str, values: list[float]) -> str:
    if not values:
        return f"{label:<34} n=0"
    a = [abs(v) for v in values]
    return (f"{label:<34} n={len(values):<4} median {statistics.median(values):8.1f}  "
            f"|Δ| p50 {percentile(a, 50):7.1f}  p95 {percentile(a, 95):7.1f}  max {max(a):8.1f} ms   "
            f"within 50 ms: {sum(x <= 50 for x in a) / len(a):6.1%}")


def main(argv: list[str]) -> int:
    dirs = run_dirs(argv[1:])
    if not dirs:
        print("no run directories found (give RUN_DIR globs)", file=sys.stderr)
        return 2
    before, after, teardown, unmatched = [], [], 0, 0
    stabilized: dict[str, list[float]] = {}
    worst: list[tuple[float, str]] = []
    for d in dirs:
        try:
            verdict = check_history(load_history(d)).to_dict()
        except (OSError, ValueError) as e:
            print(f"skipped {d}: {e}", file=sys.stderr)
            continue
        teardown += verdict["stats"].get("teardown_rebalances", 0)
        for r in verdict["rebalances"]:
            if r["status"] != "completed":
                continue
            s, z = r.get("start_vs_coordinator_ms"), r.get("stabilized_vs_coordinator_ms")
            if s is None and z is None:
                unmatched += 1
                continue
            if s is not None:
                (before if s <= 0 else after).append(s)
            if z is not None:
                stabilized.setdefault(_family(verdict["stats"].get("protocol")), []).append(z)
                worst.append((abs(z), f"{d.name} generation {r['generation']}: stabilized Δ {z:+.1f} ms"))
    print(f"{len(dirs)} run directories; teardown rebalances left out: {teardown}; "
          f"completed rebalances without a coordinator clock: {unmatched}")
    print(describe("start, member sign first", before))
    print(describe("start, coordinator first", after))
    print(describe("start, all", before + after))
    for family, values in sorted(stabilized.items()):
        print(describe(f"stabilized, {family}", values))
    for _, line in sorted(worst, reverse=True)[:5]:
        print("  worst:", line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
