"""How long `rebalance-lab analyze` takes for 10, 30 and 100 synthetic-but-realistic run
histories, and how the time grows with their number.

    python3 benchmarks/analyze.py [--sizes 10,30,100] [--master local[2]] [--keep DIR]

Each history is a simulated 40-second run of a 3-member group on 6 partitions at 200
records/s with one fault (analysis/synthetic.py): about 1,500 events, 500 KB of JSON,
like a real run of the smoke scenario. Protocols and fault kinds rotate, so the
cross-run tables have groups to fill.

Per size it prints the wall time of a cold analysis as `analyze` runs by default (histories
read, each run's tables computed and cached, every table, plot and the HTML pages: a page
for every run up to 20 runs, above that for the runs that show a problem, and no synthetic
run does), of a warm one (the same runs again: their tables read from the cache) and of a cold one with
every run's page (`--run-reports all`; each page is ~0.2 s of matplotlib), all in one
Spark session started beforehand, whose start is printed on its own. Goal on the 2-core
reference machine: 100 runs in 20 s, and time growing linearly with the number of runs.

Then, as a user runs it, `python3 -m analysis` of the largest size up to 100 in a fresh
process (its own JVM: class loading and JIT paid again), side by side with the class
archive `rebalance-lab setup` built and without it (`--no-fresh` skips this).
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from analysis.class_archive import archive_path  # noqa: E402
from analysis.job import analyze  # noqa: E402
from analysis.session import spark_session  # noqa: E402
from analysis.synthetic import FAULTS, PROTOCOLS, SynthSpec, write_run  # noqa: E402


def make_runs(root: Path, count: int) -> list[Path]:
    """`count` run directories, protocol and fault kind rotating, one seed each."""
    mixes = itertools.cycle(itertools.product(PROTOCOLS, FAULTS))
    dirs = []
    for seed, (protocol, fault) in zip(range(1, count + 1), mixes, strict=False):
        dirs.append(write_run(root / f"synth-{seed:04d}-{protocol}-{fault}", SynthSpec(seed, protocol, fault)))
    return dirs


def timed(runs: Path, out: Path, spark, run_reports: str = "auto") -> tuple[float, dict[str, float]]:
    t0 = time.monotonic()
    result = analyze([str(runs)], out, spark=spark, run_reports=run_reports)
    return time.monotonic() - t0, result.timings


def fresh_process(runs: Path, out: Path, master: str, home: str | None = None) -> float:
    """`python3 -m analysis` in a process of its own; `home` replaces REBALANCE_LAB_HOME (where the archive is)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)} | ({"REBALANCE_LAB_HOME": home} if home else {})
    t0 = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "analysis", str(runs), "--out", str(out), "--master", master],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.monotonic() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,30,100", help="comma-separated numbers of runs")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--keep", type=Path, default=None, help="write runs and results here and keep them")
    parser.add_argument(
        "--no-fresh",
        dest="fresh",
        action="store_false",
        help="skip the fresh processes, with and without the class archive",
    )
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",")})

    root = args.keep or Path(tempfile.mkdtemp(prefix="rl-bench-analyze-"))
    t0 = time.monotonic()
    make_runs(root / "runs", max(sizes))
    print(f"{max(sizes)} synthetic run histories written in {time.monotonic() - t0:.1f} s ({root / 'runs'})")

    t0 = time.monotonic()
    spark = spark_session(args.master)
    print(f"Spark session ({args.master}) started in {time.monotonic() - t0:.1f} s")
    try:
        # a throwaway analysis first: JIT and class loading are paid once, not by the smallest size
        warm = root / "warm-up"
        make_runs(warm / "runs", 2)
        timed(warm / "runs", warm / "out", spark)

        print(f"{'runs':>5} {'cold (s)':>9} {'warm (s)':>9} {'all pages':>9} {'s/run':>6}   cold phases (s)")
        previous = None
        for n in sizes:
            subset = root / f"set-{n}"
            subset.mkdir(parents=True, exist_ok=True)
            for d in sorted((root / "runs").iterdir())[:n]:
                (subset / d.name).symlink_to(d.resolve())
            cold, phases = timed(subset, root / f"out-{n}", spark)
            warm_s, _ = timed(subset, root / f"out-{n}", spark)
            every, _ = timed(subset, root / f"out-{n}-all-pages", spark, run_reports="all")
            growth = f"  ×{cold / previous[1]:.1f} time for ×{n / previous[0]:.1f} runs" if previous else ""
            print(
                f"{n:>5} {cold:>9.1f} {warm_s:>9.1f} {every:>9.1f} {cold / n:>6.2f}   "
                + ", ".join(f"{k} {v:.1f}" for k, v in phases.items() if k != "spark start")
                + growth
            )
            previous = (n, cold)
        spark.stop()  # the fresh processes get the cores to themselves
        small = [n for n in sizes if n <= 100]
        if args.fresh and small:
            n = max(small)
            if not archive_path().exists():
                print("no class archive (`rebalance-lab setup` builds it): fresh processes skipped")
            else:
                with_archive = fresh_process(root / f"set-{n}", root / f"fresh-{n}", args.master)
                (root / "home-without-archive").mkdir()
                without = fresh_process(
                    root / f"set-{n}",
                    root / f"fresh-{n}-no-archive",
                    args.master,
                    home=str(root / "home-without-archive"),
                )
                print(
                    f"fresh process, {n} runs (`python3 -m analysis`, JVM start included): {with_archive:.1f} s "
                    f"with the class archive, {without:.1f} s without (×{without / with_archive:.2f})"
                )
    finally:
        spark.stop()
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
