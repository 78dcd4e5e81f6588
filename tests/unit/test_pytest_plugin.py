"""The pytest plugin: scenario files collected as items, chaos_run, options, markers — with
runs stood in for (a conftest swaps harness.run.loop.Run); tests/integration/test_suite_and_plugin.py
runs real scenarios through it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

REPO = Path(__file__).resolve().parents[2]

FAKE_RUNS = """
import json
from pathlib import Path
import harness.components.install
import harness.run.loop
from harness.run.loop import RunResult

LOST = {"check": "no-loss", "kind": "lost-records", "message": "events-3: offsets 120..131 acknowledged, never processed"}


class FakeRun:
    def __init__(self, scenario, path, runs_dir, report, pool=None):
        self.scenario, self.path, self.run_dir = scenario, path, Path(runs_dir) / f"{scenario.name}-s{scenario.seed}"
        self.pool = pool

    def execute(self):
        base, attempt = self.run_dir, 1
        while self.run_dir.exists():  # an expectation's next attempt: a run directory of its own
            attempt += 1
            self.run_dir = base.with_name(f"{base.name}-{attempt}")
        self.run_dir.mkdir(parents=True)
        (self.run_dir / "seen.yaml").write_text(Path(self.path).read_text())
        (self.run_dir / "pool.txt").write_text(str(self.pool.workdir) if self.pool else "none")
        # seed 7: the faulty consumer's first attempt misses (a kill between batches)
        failing = self.scenario.workload.commit == "before-processing" and (self.scenario.seed != 7 or attempt > 1)
        verdict = {"status": "fail" if failing else "pass", "violations": [LOST] if failing else [], "findings": [],
                   "skipped_checks": {}, "errored_checks": {}, "duplicates": {"count": 0},
                   "rebalances": [{"status": "completed", "duration_ms": 1234.5, "max_unowned_ms": 600.0}]}
        # what a run records of the versions it ran (run.json): the release as validated, the client asked
        (self.run_dir / "run.json").write_text(json.dumps({"kafka": self.scenario.cluster.kafka,
                                                           "client": self.scenario.workload.model_dump().get("client")}))
        (self.run_dir / "history.jsonl").write_text(json.dumps({"name": "run_started", "ts": 1.0, "mono_ms": 1.0,
                                                                "source": "harness", "seq": 1}) + "\\n")
        # seed 99: a Ctrl-C came as the run wrote its verdict
        return RunResult(self.run_dir, "completed", verdict, stop_requested=self.scenario.seed == 99)


harness.run.loop.Run = FakeRun
harness.components.install.installed_for = lambda *args, **kwargs: None  # nothing runs: nothing needs installing
"""


@pytest.fixture
def lab(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """A project with the two shipped scenarios, a YAML file that is no scenario, and runs stood in for.
    The plugin is named explicitly (entry-point loading is the integration test's business)."""
    for name in ("smoke.yaml", "faulty-consumer.yaml"):
        shutil.copy(REPO / "scenarios" / name, pytester.path / name)
    (pytester.path / "settings.yaml").write_text("just: some settings\n")
    pytester.makeconftest(FAKE_RUNS)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PYTHONPATH", str(REPO))

    def run(*more: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(
            "-p",
            "harness.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "--chaos-runs-dir",
            str(pytester.path / "runs"),
            *more,
        )

    return run


def test_scenario_files_named_on_the_command_line_are_items(lab, pytester):
    result = lab(str(pytester.path), "--junitxml=out.xml", "-v")
    result.assert_outcomes(passed=1, failed=1)  # settings.yaml is not a scenario: not collected
    result.stdout.fnmatch_lines(
        [
            "*faulty-consumer.yaml::faulty-consumer FAILED*",
            "*smoke.yaml::smoke PASSED*",
            "*FAIL: 1 violation*",
            "*[[]no-loss/lost-records] events-3: offsets 120..131*",
        ]
    )
    xml = (pytester.path / "out.xml").read_text()
    assert 'name="rebalance_max_ms" value="1234.5"' in xml and "[no-loss/lost-records]" in xml


def test_options_reach_the_scenario(lab, pytester):
    result = lab(str(pytester.path / "smoke.yaml"), "--chaos-protocol", "consumer", "--chaos-seed", "9")
    result.assert_outcomes(passed=1)
    [seen] = (pytester.path / "runs").glob("smoke-s9/seen.yaml")
    text = seen.read_text()
    assert "protocol: consumer" in text and "kafka: 4.4.0" in text  # KIP-848 runs where it exists
    # The session's runs share clusters, kept under the runs directory, unless told not to.
    assert (seen.parent / "pool.txt").read_text().startswith(str(pytester.path / "runs" / "pytest-clusters-"))
    lab(str(pytester.path / "smoke.yaml"), "--chaos-seed", "10", "--chaos-fresh-clusters").assert_outcomes(passed=1)
    assert (pytester.path / "runs" / "smoke-s10" / "pool.txt").read_text() == "none"


def test_a_ctrl_c_as_a_scenario_ended_stops_the_session_after_it(lab, pytester):
    result = lab(str(pytester.path / "smoke.yaml"), str(pytester.path / "faulty-consumer.yaml"), "--chaos-seed", "99")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert [p.name for p in (pytester.path / "runs").glob("*-s99")] == ["smoke-s99"]  # the second never ran


def test_yaml_under_testpaths_is_not_collected_unless_asked(lab, pytester):
    pytester.makeini("[pytest]\ntestpaths = .\n")
    lab().assert_outcomes()  # no args: testpaths, no scenario items
    pytester.makeini("[pytest]\ntestpaths = .\nchaos_scenarios = true\n")
    lab().assert_outcomes(passed=1, failed=1)


def test_chaos_run_returns_the_verdict_and_history_and_is_marked(lab, pytester):
    pytester.makepyfile(
        test_release=f"""
def test_more_consumers_still_pass(chaos_run):
    result = chaos_run({str(REPO / "scenarios" / "smoke.yaml")!r}, workload__consumers=5, seed=4, protocol="consumer")
    result.assert_passed()
    assert result.figures()["rebalances"] == 1 and result.history[0]["name"] == "run_started"
    seen = (result.run_dir / "seen.yaml").read_text()
    assert "consumers: 5" in seen and "protocol: consumer" in seen and "kafka: 4.4.0" in seen and "seed: 4" in seen

def test_a_bad_override_is_named(chaos_run):
    import pytest
    from runtime.errors import ScenarioError
    with pytest.raises(ScenarioError, match="workload.consumers"):
        chaos_run({str(REPO / "scenarios" / "smoke.yaml")!r}, workload__consumers=-1)

def test_no_cluster():
    pass
"""
    )
    lab("test_release.py").assert_outcomes(passed=3)
    lab("test_release.py", "-m", "not chaos").assert_outcomes(passed=1, deselected=2)


def test_the_labs_own_copies_of_scenarios_are_not_collected(lab, pytester):
    lab(str(pytester.path)).assert_outcomes(passed=1, failed=1)
    for archive, mark in (
        ("old-runs/20260101T000000Z-smoke-s1", "run.json"),
        ("old-runs/suite-x", "suite.json"),
        ("old-runs/capacity-y", "capacity.json"),
    ):
        (pytester.path / archive / "scenarios").mkdir(parents=True)
        (pytester.path / archive / mark).write_text("{}")
        shutil.copy(REPO / "scenarios" / "smoke.yaml", pytester.path / archive / "scenarios" / "smoke.yaml")
    (pytester.path / "runs" / "pytest-scenarios").mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "scenarios" / "smoke.yaml", pytester.path / "runs" / "pytest-scenarios" / "again.yaml")
    lab(str(pytester.path), "--chaos-seed", "2").assert_outcomes(
        passed=1, failed=1
    )  # the two scenarios, not their copies


@pytest.mark.parametrize(
    "options, said",
    [
        (("--chaos-protocol", "consumer", "--chaos-kafka", "3.9"), "protocol consumer, kafka 3.9: "),
        (("--chaos-runs-dir", "afile"), "afile/pytest-scenarios: cannot be made a directory: "),
    ],
)
def test_options_a_scenario_cannot_take_fail_its_item_with_the_reason(lab, pytester, options, said):
    (pytester.path / "afile").write_text("x\n")
    result = lab(str(pytester.path / "smoke.yaml"), *options)
    if "--chaos-protocol" in options:  # a scenario that cannot run so is refused when collected
        result.assert_outcomes(errors=1)
    else:
        result.assert_outcomes(failed=1)
    assert said in result.stdout.str() and "Traceback" not in result.stdout.str(), result.stdout.str()


def test_a_seed_no_scenario_takes_is_a_usage_error(lab, pytester):
    result = lab(str(pytester.path / "smoke.yaml"), "--chaos-seed", "-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--chaos-seed -1: must be at least 0, got -1" in result.stderr.str()


def test_kafka_and_client_options_reach_the_scenario_and_name_the_testcase(lab, pytester):
    result = lab(
        str(pytester.path / "smoke.yaml"),
        "--chaos-kafka",
        "4.1",
        "--chaos-client",
        "confluent-kafka==2.10.1",
        "--chaos-seed",
        "5",
        "--junitxml=out.xml",
    )
    result.assert_outcomes(passed=1)
    [seen] = (pytester.path / "runs").glob("smoke-*s5/seen.yaml")
    data = __import__("yaml").safe_load(seen.read_text())
    assert data["cluster"]["kafka"] == "4.1" and data["workload"]["client"] == "confluent-kafka==2.10.1"
    xml = (pytester.path / "out.xml").read_text()
    from harness.components.versions import kafka_release

    assert f'name="kafka" value="{kafka_release("4.1").version}"' in xml  # the exact release it ran
    assert 'name="client" value="confluent-kafka==2.10.1"' in xml


def test_chaos_run_takes_kafka_and_client_overrides(lab, pytester):
    pytester.makepyfile(
        test_versions=f"""
import pytest
from runtime.errors import ScenarioError

SMOKE = {str(REPO / "scenarios" / "smoke.yaml")!r}

def test_versions(chaos_run):
    result = chaos_run(SMOKE, kafka="4.1", client="confluent-kafka==2.10.1", seed=6)
    result.assert_passed()
    assert result.kafka.startswith("4.1") and result.client == "confluent-kafka==2.10.1"

def test_a_client_the_driver_does_not_take_is_named(chaos_run):
    with pytest.raises(ScenarioError, match="workload.client"):
        chaos_run(SMOKE, client="kafka-clients==3.9.2")
"""
    )
    lab("test_versions.py").assert_outcomes(passed=2)


def test_a_kafka_release_no_cluster_takes_is_a_usage_error(lab, pytester):
    from harness.scenario.variants import kafka_problem

    result = lab(str(pytester.path / "smoke.yaml"), "--chaos-kafka", "2.0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--chaos-kafka" in result.stderr.str() and kafka_problem("2.0") in result.stderr.str(), result.stderr.str()


def test_a_scenario_items_expect_is_held_over_its_attempts(lab, pytester):
    import yaml

    for name, expect in (
        ("faulty-consumer", {"fails": ["no-loss"], "attempts": 3}),
        ("smoke", {"fails": ["no-loss"], "attempts": 2}),
    ):
        path = pytester.path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "seed": 7, "expect": expect}))
    result = lab(str(pytester.path), "--junitxml=out.xml", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*faulty-consumer.yaml::faulty-consumer PASSED*",
            "*smoke.yaml::smoke FAILED*",
            "*expected to fail no-loss in ≥ 1 of 2 attempts: reproduced 0 (2 passed)*",
            "*attempt 2: PASS*",
        ]
    )
    assert sorted(p.name for p in (pytester.path / "runs").glob("faulty-consumer-s7*")) == [
        "faulty-consumer-s7",
        "faulty-consumer-s7-2",
    ]
    import xml.etree.ElementTree as ET

    case = next(c for c in ET.parse(pytester.path / "out.xml").iter("testcase") if c.get("name") == "faulty-consumer")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["expected"] == "fails no-loss in at least 1 of 3 attempts"
    assert (props["attempts"], props["reproduced"]) == ("2", "1")
    assert props["attempt.2.run_dir"] == props["run_dir"] and props["attempt.1.run_dir"].endswith("faulty-consumer-s7")


def test_chaos_run_takes_an_expectation(lab, pytester):
    pytester.makepyfile(
        test_expected=f"""
FAULTY = {str(REPO / "scenarios" / "faulty-consumer.yaml")!r}

def test_the_faulty_consumer_loses_records(chaos_run):
    result = chaos_run(FAULTY, seed=7, expect={{"fails": ["no-loss/lost-records"], "attempts": 2}})
    result.assert_met()
    assert not result.passed and len(result.attempts) == 2 and result.reproduced == 1
    assert result.expected == "fails no-loss/lost-records in at least 1 of 2 attempts"

def test_failing_otherwise_is_not_met(chaos_run):
    result = chaos_run(FAULTY, seed=3, expect={{"fails": ["exclusive-ownership"], "attempts": 4}})
    assert not result.met and len(result.attempts) == 1
    assert result.expectation == (
        "expected to fail exclusive-ownership; attempt 1 of 4 failed no-loss; not exclusive-ownership; "
        "no-loss not expected"
    )

def test_without_one_a_failing_run_is_not_met(chaos_run):
    result = chaos_run(FAULTY, seed=3)
    assert not result.met and result.expected is None and result.attempts == []

def test_a_check_the_protocol_does_not_run_cannot_be_expected(chaos_run):
    import re
    import pytest
    from runtime.errors import ScenarioError
    with pytest.raises(ScenarioError, match=re.escape("expect.fails[1]: fenced-commits: not applicable to zk-eager")):
        chaos_run(FAULTY, protocol="zk-eager", expect={{"fails": ["fenced-commits"]}})
"""
    )
    lab("test_expected.py").assert_outcomes(passed=4)
