"""Expected outcomes (`expect:`): the key validated in a scenario and a suite file, one run judged
against it, a variant held to it over attempts (with runs stood in for), and what CI reads of it
(suite.json, junit.xml against the JUnit schema, index.html). tests/integration/test_suite_and_plugin.py
runs real ones."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from harness.campaigns import suite as suite_module
from harness.campaigns.expectation import run_attempts
from harness.campaigns.suite import SuiteRun, load_suite, select
from harness.reports.suite import BROKEN, FAILED, PASSED
from harness.run.loop import RunResult
from harness.scenario import Scenario, load_scenario, validation_problems
from harness.scenario.expect import NOT_REPRODUCED, OTHERWISE, REPRODUCED, Expect
from runtime.errors import ScenarioError
from tests.junit_schema import assert_valid_junit
from tests.lines import unlined

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
SMOKE = yaml.safe_load((SCENARIOS / "smoke.yaml").read_text())


def problems(data: dict) -> list[tuple[str, str]]:
    try:
        Scenario.model_validate(data)
    except Exception as e:  # a pydantic ValidationError
        return validation_problems(e)
    return []


# ---------------------------------------------------------------------------- the scenario key


@pytest.mark.parametrize(
    "expect, key, reason",
    [
        ({}, "expect", "expected either fails"),
        ({"fails": ["no-loss"], "outcome": "fail"}, "expect", "expected either fails"),
        ({"fails": ["no-los"]}, "expect.fails[1]", "unknown check 'no-los' (known: "),
        ({"fails": ["no-loss/Lost Records"]}, "expect.fails[1]", "is not `check` or `check/kind`"),
        ({"fails": ["no-loss/LOST"]}, "expect.fails[1]", "'LOST' is not a violation's kind"),
        ({"fails": ["no-loss", "no-loss"]}, "expect.fails[2]", "no-loss is listed twice"),
        ({"fails": []}, "expect.fails", "must not be empty"),
        ({"outcome": "pass"}, "expect.outcome", "must be one of 'fail', 'incomplete', 'error'; got 'pass'"),
        ({"fails": ["no-loss"], "attempts": 21}, "expect.attempts", "must be at most 20"),
        ({"fails": ["no-loss"], "attempts": True}, "expect.attempts", "must be a whole number"),
        ({"fails": ["no-loss"], "attempts": 2, "at_least": 3}, "expect.at_least", "cannot happen in 2 attempt"),
        ({"fails": ["no-loss"], "tries": 2}, "expect.tries", "unknown key"),
        ({"outcome": "fail", "may_also_fail": ["no-loss"]}, "expect", "may_also_fail goes with fails"),
        ({"fails": ["no-loss"], "may_also_fail": ["no-los"]}, "expect.may_also_fail[1]", "unknown check 'no-los'"),
        ({"fails": ["no-loss"], "may_also_fail": ["no-loss"]}, "expect.may_also_fail[1]", "no-loss is in fails"),
    ],
)
def test_a_bad_expectation_names_its_key_and_reason(expect, key, reason):
    found = problems({**SMOKE, "expect": expect})
    assert any(k == key and reason in r for k, r in found), found


def test_a_check_the_scenario_leaves_out_cannot_be_expected_to_fail(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        yaml.safe_dump({**SMOKE, "checks": {"exclusive-ownership": {}}, "expect": {"fails": ["no-loss/lost-write"]}})
    )
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    assert e.value.exit_code == 2
    line = (
        "expect.fails[1]: no-loss/lost-write: no-loss is not among the scenario's checks (exclusive-ownership): "
        "a check that does not judge the run cannot fail"
    )
    assert unlined(str(e.value)) == f"{path}: {line}"
    assert f"error: s.yaml: {line}" in (REPO / "docs" / "inputs.md").read_text()
    # history-integrity judges every run, whatever `checks:` selects
    assert not problems({**SMOKE, "checks": {"no-loss": {}}, "expect": {"fails": ["history-integrity"]}})


def test_the_docs_say_every_key_of_the_expectation():
    doc = (REPO / "docs" / "inputs.md").read_text()
    [section] = re.findall(r"\n## Expected outcomes \(`expect`\)\n(.*?)\n## ", doc, re.S)
    for key in Expect.model_fields:
        assert f"`{key}`" in section, key
    [example] = re.findall(r"```yaml\n(# expected outcome.*?)```", section, re.S)
    scenario = Scenario.model_validate({**SMOKE, **yaml.safe_load(example)})
    assert scenario.expect.describe() == "fails no-loss/lost-write in at least 3 of 5 attempts"


# ---------------------------------------------------------------------------- one run judged

LOST = {"check": "no-loss", "kind": "lost-records", "message": "events-3: offsets 120..131"}
TWICE = {"check": "exclusive-ownership", "kind": "double-owner", "message": "events-1: two owners"}


def _verdict(status: str, violations=(), **extra) -> dict:
    return {
        "status": status,
        "violations": list(violations),
        "findings": [],
        "skipped_checks": {},
        "errored_checks": {},
        "duplicates": {"count": 0},
        "stats": {"protocol": "classic-eager"},
        "rebalances": [{"status": "completed", "duration_ms": 400.0, "max_unowned_ms": 200.0}],
        **extra,
    }


@pytest.mark.parametrize(
    "expect, outcome, verdict, how, said",
    [
        ({"fails": ["no-loss"]}, "completed", _verdict("fail", [LOST, LOST]), REPRODUCED, "failed no-loss (2)"),
        ({"fails": ["no-loss/lost-records"]}, "completed", _verdict("fail", [LOST]), REPRODUCED, "failed no-loss (1)"),
        ({"fails": ["no-loss"]}, "completed", _verdict("pass"), NOT_REPRODUCED, "passed"),
        (
            {"fails": ["no-loss"]},
            "completed",
            _verdict("fail", [LOST, TWICE]),
            OTHERWISE,
            "failed exclusive-ownership, no-loss; exclusive-ownership not expected",
        ),
        (
            {"fails": ["no-loss", "exclusive-ownership"]},
            "completed",
            _verdict("fail", [LOST]),
            OTHERWISE,
            "failed no-loss; not exclusive-ownership",
        ),
        (
            {"fails": ["no-loss/gap"]},
            "completed",
            _verdict("fail", [LOST]),
            OTHERWISE,
            "failed with no-loss/lost-records, not no-loss/gap",
        ),
        (
            {"fails": ["no-loss"]},
            "completed",
            _verdict("incomplete", skipped_checks={"no-loss": "no phase: done"}),
            OTHERWISE,
            "ended incomplete (no-loss: no phase: done)",
        ),
        ({"fails": ["no-loss"]}, "error", None, OTHERWISE, "the run error, no verdict"),
        ({"outcome": "incomplete"}, "completed", _verdict("incomplete"), REPRODUCED, "ended incomplete"),
        ({"outcome": "incomplete"}, "completed", _verdict("fail", [LOST]), OTHERWISE, "failed no-loss"),
        ({"outcome": "fail"}, "completed", _verdict("fail", [TWICE]), REPRODUCED, "ended fail: exclusive-ownership"),
        # a consequence the expectation allows may come with it, or not; it is never required
        (
            {"fails": ["no-loss"], "may_also_fail": ["exclusive-ownership"]},
            "completed",
            _verdict("fail", [LOST, TWICE]),
            REPRODUCED,
            "failed exclusive-ownership (1), no-loss (1)",
        ),
        (
            {"fails": ["no-loss"], "may_also_fail": ["exclusive-ownership"]},
            "completed",
            _verdict("fail", [LOST]),
            REPRODUCED,
            "failed no-loss (1)",
        ),
        (
            {"fails": ["exclusive-ownership"], "may_also_fail": ["no-loss"]},
            "completed",
            _verdict("fail", [LOST]),
            OTHERWISE,
            "failed no-loss; not exclusive-ownership",
        ),
    ],
)
def test_one_run_against_an_expectation(expect, outcome, verdict, how, said):
    judged = Expect.model_validate(expect).judge(outcome, verdict)
    assert (judged.how, judged.said) == (how, said)


# ---------------------------------------------------------------------------- attempts


def _runs(*verdicts):
    """run_once standing in for real runs: each attempt's (outcome, verdict) in turn."""
    calls = []

    def run_once(n: int) -> RunResult:
        calls.append(n)
        outcome, verdict = verdicts[n - 1]
        return RunResult(Path(f"/runs/attempt-{n}"), outcome, verdict, None if verdict else "broker-1 never started")

    return run_once, calls


FAIL, PASS = ("completed", _verdict("fail", [LOST])), ("completed", _verdict("pass"))
EXPECT = Expect(fails=["no-loss"], attempts=5, at_least=3)


@pytest.mark.parametrize(
    "runs, state, ran, message",
    [
        (
            [FAIL, PASS, FAIL, FAIL],
            PASSED,
            4,
            "fails no-loss in at least 3 of 5 attempts: reproduced 3 (1 passed) in 4",
        ),
        ([FAIL, FAIL, FAIL], PASSED, 3, "reproduced 3 (0 passed) in 3 attempts"),
        # after three passes, two attempts cannot make three reproductions: stop
        ([PASS, FAIL, PASS, PASS], FAILED, 4, "expected to fail no-loss in ≥ 3 of 5 attempts: reproduced 1 (3 passed)"),
        ([PASS, PASS, PASS], FAILED, 3, "reproduced 0 (3 passed); 2 left cannot reach 3"),
        (
            [FAIL, ("completed", _verdict("fail", [TWICE]))],
            FAILED,
            2,
            "expected to fail no-loss; attempt 2 of 5 failed exclusive-ownership; not no-loss; exclusive-ownership not expected",
        ),
        ([FAIL, ("error", None)], BROKEN, 2, "attempt 2 of 5 the run error, no verdict: broker-1 never started"),
        (
            [("completed", _verdict("error", errored_checks={"no-loss": "KeyError: 'x'"}))],
            BROKEN,
            1,
            "attempt 1 of 5 ended error (no-loss: KeyError: 'x')",
        ),
        (
            [("completed", _verdict("incomplete", skipped_checks={"no-loss": "no phase: done"}))],
            FAILED,
            1,
            "attempt 1 of 5 ended incomplete",
        ),
    ],
)
def test_a_variant_runs_until_its_expectation_is_decided(runs, state, ran, message):
    run_once, calls = _runs(*runs)
    out = run_attempts(EXPECT, run_once)
    assert (out.state, calls) == (state, list(range(1, ran + 1)))
    assert message in out.message, out.message
    assert [a.to_dict()["run_dir"] for a in out.attempts] == [f"/runs/attempt-{n}" for n in calls]


def test_without_an_expectation_a_variant_is_one_run_judged_as_ever():
    for runs, state in (([PASS], PASSED), ([FAIL], FAILED), ([("error", None)], BROKEN)):
        out = run_attempts(None, _runs(*runs)[0])
        assert out.state == state and len(out.attempts) == 1 and out.attempts[0].to_dict()["reproduced"] is False
    one = run_attempts(Expect(fails=["no-loss"]), _runs(PASS)[0])
    assert (one.state, one.message) == (
        FAILED,
        "expected to fail no-loss in ≥ 1 of 1 attempts: reproduced 0 (1 passed)",
    )


# ---------------------------------------------------------------------------- suites


def write_suite(tmp_path: Path, text: str, name: str = "suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text.replace("SCENARIOS", str(SCENARIOS)))
    return path


SUITE = """
name: s
scenarios: [SCENARIOS/smoke.yaml, SCENARIOS/faulty-consumer.yaml]
matrix: {protocol: [classic-eager, classic-cooperative], seed: [1, 2]}
"""


def test_a_suite_entry_sets_the_expectation_of_every_variant_it_matches(tmp_path):
    suite = load_suite(
        write_suite(
            tmp_path,
            SUITE
            + """expect:
  - {scenario: faulty-consumer, fails: [no-loss], attempts: 3}
  - {scenario: smoke, seed: 2, outcome: incomplete}
""",
        )
    )
    said = {v.id: v.expect and v.expect.describe() for v in suite.variants}
    assert said["faulty-consumer[classic-cooperative, seed 2]"] == "fails no-loss in at least 1 of 3 attempts"
    assert said["smoke[classic-eager, seed 2]"] == "ends incomplete in at least 1 of 1 attempts"
    assert said["smoke[classic-eager, seed 1]"] is None
    assert [v.scenario_data.get("expect") for v in suite.variants if v.scenario == "smoke"] == [
        None,
        {"outcome": "incomplete"},
    ] * 2


def test_a_suite_may_overrule_a_scenarios_own_expectation_with_passes(tmp_path):
    own = tmp_path / "faulty.yaml"
    data = yaml.safe_load((SCENARIOS / "faulty-consumer.yaml").read_text())
    own.write_text(yaml.safe_dump({**data, "expect": {"fails": ["no-loss"], "attempts": 2}}))
    text = f"name: s\nscenarios: [{own}]\nmatrix: {{seed: [1, 2]}}\n"
    assert {v.expect.attempts for v in load_suite(write_suite(tmp_path, text)).variants} == {2}
    suite = load_suite(write_suite(tmp_path, text + "expect: [{seed: 2, passes: true}]\n"))
    assert [(v.id, v.expect) for v in suite.variants][1] == ("faulty-consumer[seed 2]", None)
    assert "expect" not in suite.variants[1].scenario_data


@pytest.mark.parametrize(
    "entries, key, reason",
    [
        ("[{scenario: smoke, seed: 7, fails: [no-loss]}]", "expect[1]", "matches no variant of the matrix"),
        ("[{kafka: '3.9', fails: [no-loss]}]", "expect[1].kafka", "kafka is not an axis of this suite's matrix"),
        ("[{scenario: smok, fails: [no-loss]}]", "expect[1].scenario", "no scenario of this suite"),
        (
            "[{scenario: smoke, fails: [no-loss]}, {seed: 1, passes: true}]",
            "expect[2]",
            "matches smoke[classic-eager, seed 1], which expect[1] matches too: one expectation per variant",
        ),
        ("[{fails: [no-loss]}]", "expect[1]", "names at least one of scenario"),
        ("[{seed: 1}]", "expect[1]", "expected either fails"),
        ("[{seed: 1, fails: [nope]}]", "expect[1].fails[1]", "unknown check 'nope'"),
        (
            "[{seed: 1, passes: true, attempts: 3}]",
            "expect[1]",
            "with passes: true the variants must simply pass: no attempts",
        ),
        ("[{seed: 1, passes: false}]", "expect[1].passes", "must be one of True"),
        ("[{seed: 1, fails: [no-loss], attempts: 2, at_least: 5}]", "expect[1].at_least", "cannot happen"),
    ],
)
def test_a_bad_suite_expectation_is_named_as_expect_i(tmp_path, entries, key, reason):
    with pytest.raises(ScenarioError) as e:
        load_suite(write_suite(tmp_path, SUITE + f"expect: {entries}\n"))
    assert e.value.exit_code == 2
    assert any(k == key and reason in r for k, r in unlined(e.value.problems)), unlined(e.value.problems)


def test_a_check_the_protocol_does_not_run_cannot_be_expected_to_fail(tmp_path):
    text = "name: s\nscenarios: [SCENARIOS/smoke.yaml]\nmatrix: {protocol: [classic-eager, zk-eager]}\n"
    with pytest.raises(ScenarioError) as e:
        load_suite(write_suite(tmp_path, text + "expect: [{scenario: smoke, fails: [fenced-commits]}]\n"))
    [(key, reason)] = unlined(e.value.problems)
    assert key == "expect[1]" and reason.startswith(
        "smoke[zk-eager]: expect.fails[1]: fenced-commits: not applicable to zk-eager (the ZooKeeper-era consumer "
        "has no commit fencing"
    )


def test_scenario_entries_may_be_globs_sorted_and_one_matching_nothing_is_an_error(tmp_path):
    for bug in ("b-2", "a-1"):
        (tmp_path / "bugs" / bug).mkdir(parents=True)
        data = {**yaml.safe_load((SCENARIOS / "faulty-consumer.yaml").read_text()), "name": f"{bug}-affected"}
        (tmp_path / "bugs" / bug / "affected.yaml").write_text(yaml.safe_dump(data))
    (tmp_path / "suites").mkdir()
    suite = load_suite(write_suite(tmp_path / "suites", "name: s\nscenarios: [../bugs/*/affected.yaml]\n"))
    assert [v.id for v in suite.variants] == ["a-1-affected", "b-2-affected"]
    with pytest.raises(ScenarioError) as e:
        load_suite(write_suite(tmp_path / "suites", "name: s\nscenarios: [../bugs/*/fixed.yaml]\n"))
    assert unlined(e.value.problems) == [("scenarios[1]", "../bugs/*/fixed.yaml: no file matches")]


class FakeRun:
    """Stands in for harness.run.loop.Run: each variant's runs' outcomes in turn, by its scenario name."""

    outcomes: dict[str, list] = {}
    made: list[Path] = []

    def __init__(self, scenario, path, runs_dir, report, pool=None):
        n = sum(d.name.startswith(f"{scenario.name}-s") for d in runs_dir.iterdir())
        self.scenario, self.run_dir = scenario, runs_dir / f"{scenario.name}-s{scenario.seed}-{n + 1}"
        self.n = n

    def execute(self):
        self.run_dir.mkdir()
        self.made.append(self.run_dir)
        (self.run_dir / "summary.md").write_text(f"# {self.scenario.name}\n")
        runs = self.outcomes.get(self.scenario.name, [PASS])
        outcome, verdict = runs[min(self.n, len(runs) - 1)]
        if outcome == "ctrl-c-as-it-ended":
            return RunResult(self.run_dir, "completed", verdict, stop_requested=True)
        return RunResult(self.run_dir, outcome, verdict, None if verdict else "cluster never became ready")


@pytest.fixture
def fake_runs(monkeypatch):
    monkeypatch.setattr(suite_module, "Run", FakeRun)
    FakeRun.outcomes, FakeRun.made = {}, []
    return FakeRun


EXPECTING = """
name: s
scenarios: [SCENARIOS/smoke.yaml, SCENARIOS/faulty-consumer.yaml]
matrix: {protocol: [classic-eager, classic-cooperative]}
expect:
  - {scenario: faulty-consumer, protocol: classic-eager, fails: [no-loss]}
  - {scenario: faulty-consumer, protocol: classic-cooperative, fails: [no-loss/lost-records], attempts: 4, at_least: 2}
"""


def test_a_suite_holds_each_variant_to_its_expectation(tmp_path, fake_runs):
    suite = load_suite(write_suite(tmp_path, EXPECTING))
    fake_runs.outcomes = {
        "faulty-consumer-classic-eager": [FAIL],
        "faulty-consumer-classic-cooperative": [PASS, FAIL, FAIL],
    }
    run = SuiteRun(suite, suite.variants, tmp_path / "runs")
    assert run.execute() == 0
    data = json.loads((run.dir / "suite.json").read_text())
    by_id = {v["id"]: v for v in data["variants"]}
    coop = by_id["faulty-consumer[classic-cooperative]"]
    assert coop["state"] == "passed" and coop["reproduced"] == 2
    assert coop["expect"] == {"fails": ["no-loss/lost-records"], "attempts": 4, "at_least": 2}
    assert coop["expected"] == "fails no-loss/lost-records in at least 2 of 4 attempts"
    assert [(a["status"], a["reproduced"], a["failed_checks"]) for a in coop["attempts"]] == [
        ("pass", False, []),
        ("fail", True, ["no-loss"]),
        ("fail", True, ["no-loss"]),
    ]
    assert len({a["run_dir"] for a in coop["attempts"]}) == 3 and coop["run_dir"] == coop["attempts"][-1]["run_dir"]
    assert all(
        set(a) >= {"run_dir", "status", "outcome", "failed_checks", "reproduced", "seconds"} for a in coop["attempts"]
    )
    smoke = by_id["smoke[classic-eager]"]
    assert (smoke["expect"], smoke["expected"], smoke["reproduced"], len(smoke["attempts"])) == (None, None, None, 1)

    assert_valid_junit(run.dir / "junit.xml")
    root = ET.parse(run.dir / "junit.xml").getroot()
    assert root.get("failures") == "0" and root.get("errors") == "0"
    case = next(c for c in root.iter("testcase") if c.get("name") == "faulty-consumer[classic-cooperative]")
    assert list(case) == [case.find("system-out")]  # a pass
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    key = "faulty-consumer[classic-cooperative]."
    assert props[key + "expected"] == "fails no-loss/lost-records in at least 2 of 4 attempts"
    assert (props[key + "attempts"], props[key + "reproduced"]) == ("3", "2")
    assert [props[f"{key}attempt.{n}.run_dir"] for n in (1, 2, 3)] == [a["run_dir"] for a in coop["attempts"]]
    assert props[key + "attempt.1.result"] == "not reproduced: passed"
    assert props["faulty-consumer[classic-eager].expected"] == "fails no-loss in at least 1 of 1 attempts"
    assert "smoke[classic-eager].expected" not in props
    page = (run.dir / "index.html").read_text()
    assert "fails no-loss/lost-records in at least 2 of 4 attempts" in page and "attempt 3: " in page


def test_an_unmet_expectation_fails_the_suite_as_an_expectation_failure(tmp_path, fake_runs):
    suite = load_suite(write_suite(tmp_path, EXPECTING))
    fake_runs.outcomes = {"faulty-consumer-classic-cooperative": [PASS, ("completed", _verdict("fail", [TWICE]))]}
    run = SuiteRun(suite, suite.variants, tmp_path / "runs")
    assert run.execute() == 1  # a variant expected to fail that passed, another that failed otherwise
    data = json.loads((run.dir / "suite.json").read_text())
    states = {v["id"]: (v["state"], v["reason"]) for v in data["variants"]}
    assert states["faulty-consumer[classic-eager]"] == (
        "failed",
        "expected to fail no-loss in ≥ 1 of 1 attempts: reproduced 0 (1 passed)",
    )
    assert states["faulty-consumer[classic-cooperative]"] == (
        "failed",
        "expected to fail no-loss/lost-records; attempt 2 of 4 failed exclusive-ownership; not no-loss; "
        "exclusive-ownership not expected",
    )
    assert_valid_junit(run.dir / "junit.xml")
    root = ET.parse(run.dir / "junit.xml").getroot()
    failure = next(c for c in root.iter("testcase") if c.get("name") == "faulty-consumer[classic-eager]").find(
        "failure"
    )
    assert (
        failure.get("type") == "expectation" and failure.get("message") == states["faulty-consumer[classic-eager]"][1]
    )
    assert failure.text.startswith("expected: fails no-loss in at least 1 of 1 attempts\nattempt 1: not reproduced")

    # --rerun-failed takes both again; --fail-fast stops after the first
    from harness.campaigns.suite import last_suite_json

    again = select(suite, (), last_suite_json(tmp_path / "runs", "s"))
    assert [v.id for v in again] == ["faulty-consumer[classic-eager]", "faulty-consumer[classic-cooperative]"]
    run = SuiteRun(suite, suite.variants[2:], tmp_path / "runs", fail_fast=True)
    assert run.execute() == 1
    assert [v["state"] for v in json.loads((run.dir / "suite.json").read_text())["variants"]] == ["failed", "skipped"]


def test_a_broken_attempt_breaks_the_variant_and_a_stop_ends_the_suite(tmp_path, fake_runs):
    suite = load_suite(write_suite(tmp_path, EXPECTING))
    chosen = select(suite, ("faulty-consumer[classic-cooperative]",), None)
    fake_runs.outcomes = {"faulty-consumer-classic-cooperative": [FAIL, ("error", None)]}
    run = SuiteRun(suite, chosen, tmp_path / "runs")
    assert run.execute() == 3
    [v] = json.loads((run.dir / "suite.json").read_text())["variants"]
    assert v["state"] == "broken" and v["reason"].endswith(
        "attempt 2 of 4 the run error, no verdict: cluster never became ready"
    )
    assert_valid_junit(run.dir / "junit.xml")

    # a Ctrl-C as attempt 1 ended: no second attempt, the rest not run, the suite interrupted
    fake_runs.outcomes = {"faulty-consumer-classic-cooperative": [("ctrl-c-as-it-ended", _verdict("fail", [LOST]))]}
    run = SuiteRun(suite, [*chosen, suite.variants[0]], tmp_path / "stopped")
    assert run.execute() == 130
    data = json.loads((run.dir / "suite.json").read_text())
    [first, rest] = data["variants"]
    assert (first["state"], len(first["attempts"]), rest["state"]) == ("broken", 1, "skipped")
    assert "interrupted after attempt 1 of 4" in first["reason"]
    assert_valid_junit(run.dir / "junit.xml")


# ---------------------------------------------------------------------------- `run` says it, judges as ever


def test_run_says_whether_its_one_run_met_the_expectation_and_keeps_its_exit_code(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import harness.cli.runs as runs_cli
    import harness.run.loop as loop
    from harness.cli import main  # the `rebalance-lab` group

    class Broke:
        def __init__(self, scenario, path, runs_dir, report, progress=None, pool=None, detail=None, scenario_text=None):
            self.run_dir = runs_dir / "r"

        def execute(self):
            return RunResult(self.run_dir, "error", None, "broker-1 never started")

    monkeypatch.setattr(loop, "Run", Broke)
    monkeypatch.setattr(runs_cli, "installed_for", lambda *a, **k: None)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({**SMOKE, "expect": {"fails": ["no-loss"], "attempts": 2}}))
    out = CliRunner().invoke(main, ["run", str(path), "--runs-dir", str(tmp_path / "runs")])
    assert out.exit_code == 3, out.output  # the run's own exit code: it broke
    assert (
        "Expected: fails no-loss in at least 1 of 2 attempts (suite and pytest hold it); this run did not meet it: "
        "the run error, no verdict" in " ".join(out.output.split())
    )
