"""The shrinking search on a fake probe (which faults make it fail is known), and the refusals of
a run directory that cannot be shrunk. tests/integration/test_shrink.py shrinks a real run."""

import json
import random

import pytest
import yaml

from harness.campaigns.shrink import (
    MIN_TAIL_S,
    Budget,
    Candidate,
    FailingRun,
    ProbeRun,
    Shrinker,
)
from runtime.errors import ScenarioError


def candidate(n: int, duration_s: float = 90.0) -> Candidate:
    ids = tuple(f"f{i}" for i in range(1, n + 1))
    faults = tuple(
        {"kind": "pause", "target": "consumer-1", "at_s": 10.0 * i, "duration_s": 8.0} for i in range(1, n + 1)
    )
    return Candidate(ids, faults, duration_s)


def fails_when(needed: set[str], flaky: float = 0.0, seed: int = 0, min_length: float = 0.0):
    """A probe that reproduces when every needed fault is kept (and lasts at least min_length),
    missing a reproduction with probability ``flaky``."""
    rnd = random.Random(seed)
    calls = []

    def probe(c: Candidate, n: int, attempt: int) -> ProbeRun:
        calls.append((n, attempt))
        lengths = {i: f.get("duration_s", 0) for i, f in zip(c.fault_ids, c.faults, strict=False)}
        bad = needed <= set(c.fault_ids) and all(lengths[i] >= min_length for i in needed) and rnd.random() >= flaky
        return ProbeRun(f"run-{n}-{attempt}", "completed", "fail" if bad else "pass", bad)

    probe.calls = calls
    return probe


def test_drops_every_fault_the_failure_does_not_need():
    probe = fails_when({"f2", "f5"})
    best = Shrinker(candidate(6), probe, Budget(1000, 60), repeats=1, report=lambda _m: None).shrink()
    assert best.fault_ids == ("f2", "f5")


def test_shortens_faults_moves_them_earlier_and_cuts_the_tail():
    probe = fails_when({"f3"}, min_length=2.0)
    best = Shrinker(candidate(4), probe, Budget(1000, 60), repeats=1, report=lambda _m: None).shrink()
    (fault,) = best.faults
    assert best.fault_ids == ("f3",)
    assert fault["duration_s"] == 2.0  # 8 -> 4 -> 2; 1 no longer fails
    assert fault["at_s"] == 0.0  # from 30 s, with the run as much shorter
    assert best.duration_s - best.faults_end_s() < 2 * MIN_TAIL_S


def test_a_noisy_failure_is_repeated_before_a_candidate_is_dropped():
    shrinker = Shrinker(
        candidate(4), fails_when({"f1"}, flaky=0.5, seed=3), Budget(1000, 60), repeats=8, report=lambda _m: None
    )
    assert shrinker.shrink().fault_ids == ("f1",)
    assert any(len(p.runs) > 1 and p.reproduced for p in shrinker.probes)  # a miss, then a reproduction
    assert all(p.reproduced or len(p.runs) == 8 for p in shrinker.probes)  # dropped only after every repeat


def test_the_original_must_reproduce_first():
    shrinker = Shrinker(candidate(3), fails_when({"f9"}), Budget(1000, 60), repeats=2, report=lambda _m: None)
    assert shrinker.shrink() is None
    assert len(shrinker.probes) == 1 and len(shrinker.probes[0].runs) == 2


def test_the_budget_stops_the_search_with_the_smallest_so_far():
    probe = fails_when({"f1"})
    shrinker = Shrinker(candidate(8), probe, Budget(4, 60), repeats=1, report=lambda _m: None)
    best = shrinker.shrink()
    assert len(probe.calls) == 4  # the original; without any fault; without f1-f4; without f5-f8
    assert "4 runs" in shrinker.stopped
    assert best.fault_ids == ("f1", "f2", "f3", "f4")


def test_an_invalid_candidate_costs_no_run():
    def probe(c, n, attempt):
        if c.duration_s < 90:
            return ProbeRun(None, "invalid", None, False, note="not a valid scenario")
        return ProbeRun("r", "completed", "fail", True)

    budget = Budget(1000, 60)
    shrinker = Shrinker(candidate(1), probe, budget, repeats=3, report=lambda _m: None)
    shrinker.shrink()
    invalid = [p for p in shrinker.probes if p.runs[0].outcome == "invalid"]
    assert invalid and all(len(p.runs) == 1 for p in invalid)
    assert budget.runs == len(shrinker.probes) - len(invalid)


def judged_run(tmp_path, checks: dict, schedule=None):
    (tmp_path / "verdict.json").write_text(json.dumps({"status": "fail", "checks": checks}))
    (tmp_path / "scenario.yaml").write_text(
        yaml.safe_dump({"name": "x", "duration_s": 30, "topics": [{"name": "t", "partitions": 1}]})
    )
    (tmp_path / "schedule.json").write_text(
        json.dumps(
            schedule
            if schedule is not None
            else [
                {"fault_id": "f1", "kind": "crash", "target": "consumer-1", "at_s": 12, "signal": "SIGKILL", "on": None}
            ]
        )
    )
    return tmp_path


def test_reads_the_failed_check_and_the_schedule_as_explicit_faults(tmp_path):
    run = FailingRun.read(judged_run(tmp_path, {"no-loss": {"violations": 2}, "duplicates": {"violations": 0}}), None)
    assert run.check == "no-loss"
    assert run.original == Candidate(
        ("f1",), ({"kind": "crash", "target": "consumer-1", "at_s": 12, "signal": "SIGKILL"},), 30.0
    )


@pytest.mark.parametrize(
    "checks, check, reason",
    [
        ({"no-loss": {"violations": 0}}, None, "no check failed in this run"),
        ({"no-loss": {"violations": 1}}, "duplicates", "did not fail in this run (failed: no-loss)"),
    ],
)
def test_refuses_a_run_that_did_not_fail_the_check(tmp_path, checks, check, reason):
    with pytest.raises(ScenarioError) as e:
        FailingRun.read(judged_run(tmp_path, checks), check)
    assert "verdict.json" in str(e.value) and reason in str(e.value)


def test_refuses_a_directory_that_is_not_a_judged_run(tmp_path):
    with pytest.raises(ScenarioError, match=r"verdict.json: \(file\): No such file"):
        FailingRun.read(tmp_path, None)
    judged_run(tmp_path, {"no-loss": {"violations": 1}}, schedule={"not": "a list"})
    with pytest.raises(ScenarioError, match=r"schedule.json: \(file\): expected a JSON array"):
        FailingRun.read(tmp_path, None)


def test_a_candidate_met_again_is_not_run_again():
    probe = fails_when({"f2"})
    shrinker = Shrinker(candidate(2), probe, Budget(1000, 60), repeats=2, report=lambda _m: None)
    assert shrinker.shrink().fault_ids == ("f2",)
    # dropping f1 leaves [f2]; dropping f2 from it again gives the empty list, tried as the first chunk
    keys = [p.candidate.key() for p in shrinker.probes]
    assert len(keys) == len(set(keys))


def test_a_budget_spent_before_the_failure_came_back_shrinks_nothing():
    shrinker = Shrinker(candidate(3), fails_when({"f1"}, flaky=1.0), Budget(2, 60), repeats=3, report=lambda _m: None)
    assert shrinker.shrink() is None  # two passing runs of three: not "the original is minimal"
    assert "2 runs" in shrinker.stopped


def test_refuses_a_schedule_the_scenario_cannot_run(tmp_path):
    judged_run(
        tmp_path,
        {"no-loss": {"violations": 1}},
        schedule=[{"fault_id": "f1", "kind": "crash", "target": "consumer-9", "at_s": 12}],
    )
    with pytest.raises(ScenarioError) as e:
        FailingRun.read(tmp_path, None)
    assert "scenario.yaml with schedule.json" in str(e.value) and "consumer-9" in str(e.value)


def test_a_ctrl_c_as_a_probe_ended_stops_the_shrink_after_it():
    calls = []

    def probe(c: Candidate, n: int, attempt: int) -> ProbeRun:
        calls.append(n)
        return ProbeRun(f"run-{n}", "completed", "fail", True, stopped=n == 1)  # judged, then a Ctrl-C

    shrinker = Shrinker(candidate(3), probe, Budget(1000, 60), repeats=2, report=lambda _m: None)
    with pytest.raises(KeyboardInterrupt):
        shrinker.shrink()
    assert calls[-1] == 1 and shrinker.probes[-1].runs[-1].stopped  # recorded, then no other probe
