"""The bad-input campaign: thousands of mutated scenarios and corrupted histories through the
command line, in-process, seeded. Every input must end in exit code 0, 1, 2 (bad input, one
message naming the file) or 4 (a history that cannot be judged in full) — never a traceback,
a hang or a memory blow-up.

    python3 benchmarks/fuzz_inputs.py [--scenarios 6000] [--histories 360] [--draws 2000] [--seed 1]
                                      [--timeout 30] [--memory-gb 4] [--keep DIR]

Scenarios are the shipped ones (scenarios/*.yaml) mutated by tests/fuzzing.py and fed to
`schedule` (validates and draws the random faults, starts nothing); one in fifty of those
refused also goes through `run` and `compare`, which must refuse it before creating any
directory. Histories are the small real histories in tests/fixtures/histories, corrupted
and fed to `check`; a few get a 17 MiB line. Draws are scenarios whose random_faults draw
degenerately (tiny, huge, equal or reversed bounds, zero counts, NaN-like values), through
`schedule`. Outputs are every command that writes given each kind of path it cannot write
(under a file, /proc, /sys, a read-only or non-empty directory, a NUL, overlong names), and
`check --write` where its files are directories. Options are every command of `--help` with
each option and argument given bad numbers, bad choices, missing files, directories where files
are expected. Nothing may start: what would start a cluster, a run, Spark, an installation or
a cleanup raises instead (tests/fuzzing.py, nothing_starts), and a refusal must leave the
output sandbox as it was. Each input runs under an alarm (`--timeout`)
and the process under an address-space limit (`--memory-gb`), so a hang or a memory bomb
shows up as a failed input, not a stuck or killed campaign.

Prints inputs tried, exit codes by family, failures (tracebacks, hangs, unnamed files: must
be 0), the slowest input and the peak RSS. Exit status 1 if anything failed.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from click.testing import CliRunner  # noqa: E402

from harness.cli import main as cli  # noqa: E402
from tests.fuzzing import (  # noqa: E402
    HISTORY_MUTATIONS,
    RARE_HISTORY_MUTATIONS,
    SCENARIO_MUTATIONS,
    Outcome,
    draw_outcomes,
    mutate,
    option_outcomes,
    output_outcomes,
    try_history,
    try_scenario,
)

FAMILIES = ("scenario", "history", "draw", "output", "option")


class InputTimeout(Exception):
    """An input took longer than --timeout: a hang, as far as a user can tell."""


def _alarm(signum, frame):
    raise InputTimeout("no answer within the timeout")


def _refused_early(path: Path, work: Path) -> str | None:
    """`run` and `compare` refuse a bad scenario before creating any directory."""
    runs = work / "runs-never"
    for args in (
        ["run", str(path), "--runs-dir", str(runs)],
        ["compare", str(path), "--protocols", "classic-eager", "--runs-dir", str(runs)],
    ):
        result = CliRunner().invoke(cli, args)
        if result.exit_code != 2 or (result.exception and not isinstance(result.exception, SystemExit)):
            return f"{args[0]}: exit {result.exit_code} {result.exception!r}"
        if runs.exists():
            return f"{args[0]}: created {runs}"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", type=int, default=6000)
    ap.add_argument("--histories", type=int, default=360)
    ap.add_argument("--draws", type=int, default=2000, help="scenarios with degenerate random draws")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=30, help="seconds per input")
    ap.add_argument("--memory-gb", type=float, default=4.0, help="address-space limit of this process")
    ap.add_argument("--keep", type=Path, help="keep the inputs here (default: a temporary directory)")
    args = ap.parse_args()

    limit = int(args.memory_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _alarm)
    work = args.keep or Path(tempfile.mkdtemp(prefix="fuzz-inputs-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    scenarios = [p.read_bytes() for p in sorted((REPO / "scenarios").glob("*.yaml"))]
    histories = [
        gzip.decompress(p.read_bytes()) for p in sorted((REPO / "tests/fixtures/histories").glob("*.jsonl.gz"))
    ]
    if not histories:
        print("no histories under tests/fixtures/histories", file=sys.stderr)
        return 2

    outcomes: list[Outcome] = []
    failures: list[tuple[Outcome, str]] = []
    started = time.perf_counter()

    def judge(outcome: Outcome) -> None:
        outcomes.append(outcome)
        problem = outcome.problem()
        if problem:
            failures.append((outcome, problem))

    for i in range(args.scenarios):
        name, data = mutate(rng, rng.choice(scenarios), SCENARIO_MUTATIONS)
        path = work / f"scenario-{i:05d}.yaml"
        path.write_bytes(data)
        signal.alarm(args.timeout)
        try:
            outcome = try_scenario(path, name)
            if outcome.exit_code == 2 and i % 50 == 0 and not outcome.problem():
                early = _refused_early(path, work)
                if early:
                    failures.append((outcome, early))
        finally:
            signal.alarm(0)
        judge(outcome)

    for i in range(args.histories):
        mutations = RARE_HISTORY_MUTATIONS if i % 60 == 59 else HISTORY_MUTATIONS
        name, data = mutate(rng, rng.choice(histories), mutations)
        run_dir = work / f"history-{i:04d}"
        run_dir.mkdir(exist_ok=True)
        (run_dir / "history.jsonl").write_bytes(data)
        signal.alarm(args.timeout)
        try:
            judge(try_history(run_dir, name))
        finally:
            signal.alarm(0)
        if not args.keep and len(data) > 2**20:
            (run_dir / "history.jsonl").unlink()

    def guarded(outcomes):
        """Each outcome of a generator, under the alarm (a hang is a failed input)."""
        iterator = iter(outcomes)
        while True:
            signal.alarm(args.timeout)
            try:
                outcome = next(iterator)
            except StopIteration:
                return
            finally:
                signal.alarm(0)
            judge(outcome)

    guarded(draw_outcomes(rng, scenarios, work, args.draws))
    guarded(output_outcomes(REPO, work / "outputs", histories[0]))
    guarded(option_outcomes(REPO, work / "options", histories[0]))

    elapsed = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    slowest = max(outcomes, key=lambda o: o.seconds)
    print(f"inputs tried: {len(outcomes)} (seed {args.seed}) in {elapsed:.0f} s")
    for kind in FAMILIES:
        mine = [o for o in outcomes if o.kind == kind]
        codes = collections.Counter(o.exit_code for o in mine)
        print(
            f"  {kind}: {len(mine)} inputs, {sum(o.seconds for o in mine):.0f} s; exit codes "
            + ", ".join(f"{code}: {n}" for code, n in sorted(codes.items(), key=str))
            + f"; tracebacks {sum(1 for o in mine if o.exception or 'Traceback' in o.output)}"
        )
    tracebacks = sum(1 for o in outcomes if o.exception or "Traceback" in o.output)
    print(f"tracebacks: {tracebacks}")
    print(f"failures: {len(failures)}")
    for outcome, problem in failures[:20]:
        shown = outcome.path if len(outcome.path) < 200 else outcome.path[:200] + "…"  # overlong names are inputs too
        print(f"  {shown} [{outcome.mutation}]: {problem[:300]}")
    print(f"slowest input: {slowest.seconds:.2f} s ({slowest.kind}, {slowest.mutation}, exit {slowest.exit_code})")
    print(f"peak RSS: {peak_mb:.0f} MB")
    if args.keep:
        print(f"inputs kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
