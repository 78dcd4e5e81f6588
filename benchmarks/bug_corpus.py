"""Measure the corpus of known bugs: each bug's affected scenario and its fixed one, N runs each.

    python3 benchmarks/bug_corpus.py [--runs 5] [--bug librdkafka-4312 …] [--runs-dir runs/bug-corpus]

One suite (`python3 -m harness suite`) per call, so that runs of one cluster spec share a cluster:
each affected scenario with its expectation cut to one attempt, each fixed one as it is, over seeds
1..N (a scenario's faults are written, so the seed changes only what chance decides). A run of the
affected release *reproduced* the bug when it failed exactly as its `expect:` says; a run of the
fixed release counts when it passed. Each bug's `measured.json` is rewritten with the figures
(runs, reproductions or passes, wall seconds a run), then each README.md and docs/known-bugs.md's
table (`rebalance-lab bugs --write-docs`). A table at the end; exit 1 if an affected release
reproduced in fewer runs than its expectation's `at_least` of `attempts` promises, or a fixed
release failed once.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.campaigns import bug_corpus  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each scenario (default 5)")
    parser.add_argument("--bug", action="append", default=[], help="only this bug (repeatable)")
    parser.add_argument("--runs-dir", type=Path, default=ROOT / "runs" / "bug-corpus")
    args = parser.parse_args()
    bugs = [b for b in bug_corpus.load_corpus() if not args.bug or b.id in args.bug]
    if not bugs:
        print(f"no bug in the corpus matches {args.bug}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        suite_file = Path(tmp) / "bug-corpus.yaml"
        scenarios = [str(b.folder / bug_corpus.AFFECTED) for b in bugs]
        scenarios += [str(b.folder / bug_corpus.FIXED) for b in bugs if b.fixed]
        suite_file.write_text(
            yaml.safe_dump(
                {
                    "name": "bug-corpus",
                    "scenarios": scenarios,
                    "matrix": {"seed": list(range(1, args.runs + 1))},
                    # one run per variant: the expectation as written, its attempts cut to one
                    "expect": [
                        {"scenario": b.affected["name"], **b.expectation, "attempts": 1, "at_least": 1} for b in bugs
                    ],
                }
            )
        )
        t0 = time.monotonic()
        suite = subprocess.run(
            [sys.executable, "-m", "harness", "suite", str(suite_file), "--runs-dir", str(args.runs_dir)], cwd=ROOT
        )
        wall = time.monotonic() - t0
    if suite.returncode not in (0, 1):
        print(f"the suite ended with exit code {suite.returncode}: nothing measured", file=sys.stderr)
        return suite.returncode
    [suite_json] = sorted(args.runs_dir.glob("suite-*-bug-corpus/suite.json"))[-1:]
    variants = json.loads(suite_json.read_text())["variants"]
    date, failed = datetime.now(UTC).date().isoformat(), False
    print(f"\n{'bug':24} {'affected':>10} {'fixed':>10} {'s/run':>7}   (suite: {wall:.0f} s, {suite_json.parent})")
    for b in bugs:
        measured: dict = {"date": date}
        for side, scenario in (("affected", b.affected), ("fixed", b.fixed)):
            if scenario is None:
                continue
            ran = [v for v in variants if v["scenario"] == scenario["name"] and v["state"] != "skipped"]
            good = sum(v["state"] == "passed" for v in ran)
            measured[side] = {
                "runs": len(ran),
                "reproduced" if side == "affected" else "passed": good,
                "seconds": [v["seconds"] for v in ran],
            }
        (b.folder / bug_corpus.MEASURED).write_text(json.dumps(measured, indent=2) + "\n")
        a, f = measured["affected"], measured.get("fixed")
        e = b.expectation
        failed |= a["reproduced"] * e.get("attempts", 1) < e.get("at_least", 1) * a["runs"]
        failed |= bool(f) and f["passed"] < f["runs"]
        seconds = a["seconds"] + (f["seconds"] if f else [])
        print(
            f"{b.id:24} {a['reproduced']:>4}/{a['runs']:<5} "
            f"{(str(f['passed']) + '/' + str(f['runs'])) if f else 'unfixed':>10} {sum(seconds) / len(seconds):>7.0f}"
        )
    subprocess.run([sys.executable, "-m", "harness", "bugs", "--write-docs"], cwd=ROOT, check=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
