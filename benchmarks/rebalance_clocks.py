"""How well the members' clock of each rebalance agrees with the coordinator's own.

Over every completed rebalance (teardown ones excluded) of the given run directories
whose coordinator logged both ends, prints the distribution of

- start:      the members' sign that "Preparing to rebalance" answers (revoke, loss,
              JoinGroup sent) − "Preparing" (`start_vs_coordinator_ms`, oracle/rebalances.py
              `_answered_by`), split by which came first: a member-triggered rebalance (a
              join or leave) shows the member's request a few ms *before* "Preparing"; a
              coordinator-triggered one (an eviction) shows the members' first sign up to a
              heartbeat interval *after* — that detection delay is a real part of the
              rebalance, not a clock error, so it is printed but is no clock agreement;
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

from oracle import check_history, load_history


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
        return f"{label:<42} n=0"
    a = [abs(v) for v in values]
    return (
        f"{label:<42} n={len(values):<4} median {statistics.median(values):8.1f}  "
        f"|Δ| p50 {percentile(a, 50):7.1f}  p95 {percentile(a, 95):7.1f}  max {max(a):8.1f} ms   "
        f"within 50 ms: {sum(x <= 50 for x in a) / len(a):6.1%}"
    )


def main(argv: list[str]) -> int:
    dirs = run_dirs(argv[1:])
    if not dirs:
        print("no run directories found (give RUN_DIR globs)", file=sys.stderr)
        return 2
    teardown, unmatched = 0, 0
    figures: dict[tuple[str, str], list[float]] = {}  # (family, what) -> Δ ms
    worst: list[tuple[float, str]] = []
    for d in dirs:
        try:
            verdict = check_history(load_history(d)).to_dict()
        except (OSError, ValueError) as e:
            print(f"skipped {d}: {e}", file=sys.stderr)
            continue
        teardown += verdict["stats"].get("teardown_rebalances", 0)
        family = _family(verdict["stats"].get("protocol"))
        for r in verdict["rebalances"]:
            if r["status"] != "completed":
                continue
            s, z = r.get("start_vs_coordinator_ms"), r.get("stabilized_vs_coordinator_ms")
            if s is None and z is None:
                unmatched += 1
                continue
            if s is not None:
                what = "start, member-triggered" if s <= 0 else "start, coordinator-triggered (detection)"
                figures.setdefault((family, what), []).append(s)
                if s <= 0:
                    worst.append((abs(s), f"{d.name} generation {r['generation']}: start Δ {s:+.1f} ms"))
            if z is not None:
                figures.setdefault((family, "stabilized"), []).append(z)
                worst.append((abs(z), f"{d.name} generation {r['generation']}: stabilized Δ {z:+.1f} ms"))
    print(
        f"{len(dirs)} run directories; teardown rebalances left out: {teardown}; "
        f"completed rebalances without a coordinator clock: {unmatched}"
    )
    for family in sorted({f for f, _ in figures}):
        print(family)
        for what in ("start, member-triggered", "start, coordinator-triggered (detection)", "stabilized"):
            print("  " + describe(what, figures.get((family, what), [])))
    for _, line in sorted(worst, reverse=True)[:5]:
        print("  worst:", line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
