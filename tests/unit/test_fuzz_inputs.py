"""The bad-input fuzz, small: a few hundred seeded mutants of the shipped scenarios and of small
histories, through `schedule` and `check` in-process (tests/fuzzing.py has the mutations;
benchmarks/fuzz_inputs.py runs the full campaign). A traceback, an exit code other than
0 / 1 / 2 / 4, or an exit 2 whose message does not name the file fails the test, naming the
input and the mutations that made it."""

from __future__ import annotations

import collections
import gzip
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from tests.fuzzing import (
    HISTORY_MUTATIONS,
    SCENARIO_MUTATIONS,
    draw_outcomes,
    mutate,
    option_outcomes,
    output_outcomes,
    try_history,
    try_scenario,
)

REPO = Path(__file__).resolve().parents[2]
SEED = 20261123


def small_story(history_builder) -> bytes:
    """Two members, one rebalance, records acknowledged, consumed and committed, a lag sample, done."""
    b = history_builder(topics={"events": 4})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    c1.at(100).join_sent()
    c2.at(120).join_sent()
    b.at(130).coordinator("coordinator_stabilized", generation=1, members=2)
    c1.at(150).joined(1, leader=True)
    c2.at(160).joined(1)
    c1.at(170).synced().assigned(0, 1)
    c2.at(190).synced().assigned(2, 3)
    b.at(200).acked(0, 0, 9).acked(2, 0, 9)
    c1.at(300).consumed(0, 0, 9).committed(0, 10)
    c2.at(310).consumed(2, 0, 9).committed(2, 10)
    b.at(400).lag({0: 0, 2: 0})
    b.at(500).done()
    return "\n".join(json.dumps(e) for e in b.build()).encode() + b"\n"


@pytest.mark.timeout(120)
def test_mutated_scenarios_give_an_answer_never_a_traceback(tmp_path):
    rng = random.Random(SEED)
    bases = [p.read_bytes() for p in sorted((REPO / "scenarios").glob("*.yaml"))]
    codes: collections.Counter = collections.Counter()
    failures, refused = [], []
    for i in range(300):
        mutation, data = mutate(rng, rng.choice(bases), SCENARIO_MUTATIONS)
        path = tmp_path / f"scenario-{i}.yaml"
        path.write_bytes(data)
        outcome = try_scenario(path, mutation)
        codes[outcome.exit_code] += 1
        if outcome.problem():
            failures.append(f"{path.name} [{mutation}]: {outcome.problem()}")
        elif outcome.exit_code == 2:
            refused.append(path)
    assert not failures, failures[:10]
    assert codes[2] >= 150 and codes[0] >= 10, codes  # the mutants reach both answers: the fuzz is not vacuous

    # What `schedule` refuses, `run` refuses too, before creating a run directory.
    for path in refused[:10]:
        result = CliRunner().invoke(main, ["run", str(path), "--runs-dir", str(tmp_path / "runs")])
        assert result.exit_code == 2 and str(path) in result.output, result.output
    assert not (tmp_path / "runs").exists()


@pytest.mark.timeout(120)
def test_corrupted_histories_give_an_answer_never_a_traceback(tmp_path, history_builder):
    rng = random.Random(SEED)
    real = sorted((REPO / "tests/fixtures/histories").glob("*.jsonl.gz"))[:1]
    bases = [small_story(history_builder)] * 3 + [gzip.decompress(p.read_bytes()) for p in real]
    codes: collections.Counter = collections.Counter()
    failures = []
    for i in range(120):
        mutation, data = mutate(rng, rng.choice(bases), HISTORY_MUTATIONS)
        run_dir = tmp_path / f"run-{i}"
        run_dir.mkdir()
        (run_dir / "history.jsonl").write_bytes(data)
        outcome = try_history(run_dir, mutation)
        codes[outcome.exit_code] += 1
        if outcome.problem():
            failures.append(f"{run_dir.name} [{mutation}]: {outcome.problem()}")
    assert not failures, failures[:10]
    assert codes[2] >= 40 and codes[0] + codes[1] + codes[4] >= 10, codes


def _problems(outcomes) -> tuple[collections.Counter, list[str]]:
    codes: collections.Counter = collections.Counter()
    failures = []
    for outcome in outcomes:
        codes[outcome.exit_code] += 1
        if outcome.problem():
            failures.append(f"{outcome.mutation}: {outcome.problem()}")
    return codes, failures


@pytest.mark.timeout(120)
def test_degenerate_random_draws_give_an_answer_never_a_traceback(tmp_path):
    bases = [p.read_bytes() for p in sorted((REPO / "scenarios").glob("*.yaml"))]
    codes, failures = _problems(draw_outcomes(random.Random(SEED), bases, tmp_path, 150))
    assert not failures, failures[:10]
    assert codes[2] >= 100 and codes[0] >= 1, codes


@pytest.mark.timeout(120)
def test_every_command_refuses_every_unwritable_output_path(tmp_path, history_builder):
    """Each command that writes, each kind of path it cannot write: exit 2 naming it, nothing
    started (tests/fuzzing.py, nothing_starts), nothing left behind."""
    codes, failures = _problems(output_outcomes(REPO, tmp_path, small_story(history_builder)))
    assert not failures, failures[:10]
    assert codes[2] >= 60, codes


@pytest.mark.timeout(120)
def test_every_commands_bad_options_give_an_answer_never_a_traceback(tmp_path, history_builder):
    codes, failures = _problems(option_outcomes(REPO, tmp_path, small_story(history_builder)))
    assert not failures, failures[:10]
    assert codes[2] >= 150 and codes[0] >= 10, codes  # --help everywhere: 0
