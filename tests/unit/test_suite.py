"""suite: the matrix expanded and validated up front, the variants run in order, and what
CI reads (suite.json, junit.xml against the JUnit schema, index.html) — with runs stood in
for, so every branch is quick; tests/integration/test_suite_and_plugin.py runs real ones."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.campaigns import suite as suite_module
from harness.campaigns.suite import SuiteRun, last_suite_json, load_suite, select
from harness.reports.suite import junit_xml
from harness.run.loop import RunResult
from runtime.errors import LabError, ScenarioError
from tests.junit_schema import assert_valid_junit
from tests.lines import unlined

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"


def write_suite(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(text.replace("SCENARIOS", str(SCENARIOS)))
    return path


def test_the_shipped_release_suite_expands_to_every_valid_variant():
    suite = load_suite(REPO / "suites" / "release.yaml")
    assert len(suite.variants) == 3 * 3 * 2
    assert suite.variants[0].id == "smoke[classic-eager, seed 1]"
    consumer = next(v for v in suite.variants if v.axes.protocol == "consumer")
    assert consumer.scenario_data["cluster"]["kafka"] == "4.4.0"  # KIP-848 runs where it exists
    assert consumer.scenario_data["name"] == "smoke-consumer" and consumer.scenario_data["seed"] == 1
    assert len({v.id for v in suite.variants}) == len(suite.variants)


def test_every_impossible_pair_is_named_before_anything_runs(tmp_path):
    path = write_suite(
        tmp_path,
        """
name: impossible
scenarios: [SCENARIOS/smoke.yaml, SCENARIOS/faulty-consumer.yaml]
matrix: {protocol: [classic-eager, consumer, zk-eager], kafka: ["3.9", "4.1"]}
exclude:
  - {protocol: consumer, kafka: "3.9", scenario: smoke}
  - {seed: 7}
  - {protocol: classic-cooperative}
""",
    )
    with pytest.raises(ScenarioError) as e:
        load_suite(path)
    problems = dict(unlined(e.value.problems))
    assert "smoke[consumer, kafka 3.9]" not in problems  # excluded
    assert problems["faulty-consumer[consumer, kafka 3.9]"].startswith(
        "consumer on Kafka 3.9: the consumer protocol (KIP-848) needs brokers"
    )
    assert problems["smoke[zk-eager, kafka 4.1]"].startswith(
        "zk-eager on Kafka 4.1: zk-eager rebalances through ZooKeeper; Kafka 4.1.1 has no ZooKeeper mode"
    )
    assert problems["exclude[2].seed"] == "seed is not an axis of this suite's matrix (axes: protocol, kafka)"
    assert problems["exclude[3]"] == "matches no variant of the matrix"  # classic-cooperative is not in it
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "text, key, reason",
    [
        ("name: s\nscenarios: []\n", "scenarios", "must not be empty"),
        (
            "name: s\nscenarios: [SCENARIOS/smoke.yaml]\nmatrix: {protocol: [classic-eagerly]}\n",
            "matrix.protocol[1]",
            "must be one of 'zk-eager', 'classic-eager',",
        ),
        ("name: s\nscenarios: [SCENARIOS/smoke.yaml]\nmatrix: {seed: [1, 1]}\n", "matrix.seed", "listed twice"),
        (
            "name: s\nscenarios: [SCENARIOS/smoke.yaml, SCENARIOS/smoke.yaml]\n",
            "scenarios[2]",
            "a second scenario named",
        ),
        ("name: s\nscenarios: [nope.yaml]\n", "scenarios[1]", "No such file"),
        (
            "name: s\nscenarios: [SCENARIOS/smoke.yaml]\nexclude: [{scenario: smok}]\n",
            "exclude[1].scenario",
            "no scenario of this suite",
        ),
        ("name: s\nscenarios: [SCENARIOS/smoke.yaml]\nexclude: [{}]\n", "exclude[1]", "at least one"),
        (
            "name: s\nscenarios: [SCENARIOS/smoke.yaml]\nexclude: [{scenario: smoke}]\n",
            "exclude",
            "every variant is excluded",
        ),
        ("- a list\n", "(top level)", "a suite is a mapping"),
    ],
)
def test_bad_suite_files_name_the_key_and_the_reason(tmp_path, text, key, reason):
    with pytest.raises(ScenarioError) as e:
        load_suite(write_suite(tmp_path, text))
    assert any(k == key and reason in r for k, r in unlined(e.value.problems)), unlined(e.value.problems)


def test_a_variant_the_scenario_rules_refuse_is_named_with_the_scenarios_own_reason(tmp_path):
    scenario = tmp_path / "zk-fault.yaml"
    data = (
        (SCENARIOS / "smoke.yaml")
        .read_text()
        .replace(
            "kind: crash            # SIGKILL: no controlled shutdown\n    target: broker-2",
            "kind: zk-session-expiry\n    target: broker-2",
        )
    )
    scenario.write_text(data.replace("    restart_after_s: 8\n", ""))
    path = write_suite(tmp_path, f"name: s\nscenarios: [{scenario}]\nmatrix: {{kafka: ['3.9', '4.1']}}\n")
    with pytest.raises(ScenarioError) as e:
        load_suite(path)
    assert [k for k, _ in unlined(e.value.problems)] == ["smoke[kafka 4.1]"]


def test_only_and_rerun_failed_choose_variants(tmp_path):
    suite = load_suite(REPO / "suites" / "release.yaml")
    assert [v.id for v in select(suite, ("faulty*seed 2]",), None)] == [
        f"faulty-consumer[{p}, seed 2]" for p in ("classic-eager", "classic-cooperative", "consumer")
    ]
    everything = [v.id for v in suite.variants]
    earlier = {"variants": [{"id": v, "state": "passed"} for v in everything]}
    earlier["variants"][2]["state"] = "broken"
    assert [v.id for v in select(suite, (), earlier)] == [everything[2]]
    killed = {"state": "running", "chosen": everything, "variants": earlier["variants"][:3]}  # what it finished
    assert [v.id for v in select(suite, (), killed)] == everything[2:]
    # a rerun of that one broken variant, which passed: the next rerun has nothing left, not the 17 it never chose
    rerun = {"state": "completed", "chosen": [everything[2]], "variants": [{"id": everything[2], "state": "passed"}]}
    assert select(suite, (), rerun) == []
    with pytest.raises(LabError, match="no variant matches"):
        select(suite, ("nothing*",), None)
    with pytest.raises(LabError, match="no earlier run of suite 'release'"):
        last_suite_json(tmp_path, "release")
    (tmp_path / "suite-20250101T000000Z-pre-release").mkdir()
    (tmp_path / "suite-20250101T000000Z-pre-release" / "suite.json").write_text('{"suite": "pre-release"}')
    with pytest.raises(LabError, match="no earlier run of suite 'release'"):  # another suite's file is not read as ours
        last_suite_json(tmp_path, "release")
    for text in ('{"suite": "release"', '{"suite": "release"}', "[1]"):
        (tmp_path / "suite-20260101T000000Z-release").mkdir(exist_ok=True)
        (tmp_path / "suite-20260101T000000Z-release" / "suite.json").write_text(text)
        with pytest.raises(LabError, match=r"suite-20260101T000000Z-release/suite.json: not a suite.json") as e:
            last_suite_json(tmp_path, "release")
        assert e.value.exit_code == 2


def _verdict(status: str, violations=()):
    return {
        "status": status,
        "violations": list(violations),
        "findings": [],
        "skipped_checks": {},
        "errored_checks": {},
        "duplicates": {"count": 3},
        "stats": {"protocol": "classic-eager"},
        "rebalances": [{"status": "completed", "duration_ms": d, "max_unowned_ms": d / 2} for d in (400.0, 900.0)],
    }


LOST = {
    "check": "no-loss",
    "kind": "lost-records",
    "message": "events-3: offsets 120..131 acknowledged, never processed",
}


class FakeRun:
    """Stands in for harness.run.loop.Run: the outcome each variant's scenario name asks for."""

    outcomes = {}

    pools = []  # the pool each run was given

    def __init__(self, scenario, path, runs_dir, report, pool=None):
        self.scenario, self.run_dir = scenario, runs_dir / f"{scenario.name}-s{scenario.seed}"
        self.pools.append(pool)

    def execute(self):
        self.run_dir.mkdir()
        (self.run_dir / "summary.md").write_text(f"# {self.scenario.name}\n")
        if self.scenario.workload.model_dump().get("client"):  # what a run records of the versions it ran
            ran = {"kafka": f"{self.scenario.cluster.kafka}.ran", "client": self.scenario.workload.client}
            (self.run_dir / "run.json").write_text(json.dumps(ran))
        outcome, verdict = self.outcomes.get(self.scenario.name, ("completed", _verdict("pass")))
        if outcome == "sigterm-between-runs":
            import os
            import signal

            os.kill(os.getpid(), signal.SIGTERM)
        if outcome == "ctrl-c-as-it-ended":  # judged, then a Ctrl-C during the run's last words
            return RunResult(self.run_dir, "completed", _verdict("pass"), stop_requested=True)
        return RunResult(self.run_dir, outcome, verdict, None if verdict else "cluster never became ready")


@pytest.fixture
def fake_runs(monkeypatch):
    monkeypatch.setattr(suite_module, "Run", FakeRun)
    FakeRun.outcomes = {
        "faulty-consumer-classic-eager": ("completed", _verdict("fail", [LOST])),
        "smoke-consumer": ("error", None),
    }
    FakeRun.pools = []
    return FakeRun


def test_variants_share_one_pool_unless_told_not_to(tmp_path, fake_runs):
    suite = load_suite(REPO / "suites" / "release.yaml")
    chosen = select(suite, ("smoke[classic-*]",), None)
    SuiteRun(suite, chosen, tmp_path).execute()
    assert len(fake_runs.pools) == 4 and len({id(p) for p in fake_runs.pools}) == 1 and fake_runs.pools[0].keep == 2
    assert fake_runs.pools[0].lanes == 3 and fake_runs.pools[0].clusters == {}  # closed at the end
    fake_runs.pools.clear()
    SuiteRun(suite, chosen, tmp_path / "fresh", share_clusters=False).execute()
    assert fake_runs.pools == [None] * 4


def release_unexpected(tmp_path: Path):
    """The release suite with no expectation: its faulty consumer's failure is a plain failed check."""
    text = (REPO / "suites" / "release.yaml").read_text().split("\nexpect:")[0]
    path = tmp_path / "release.yaml"
    path.write_text(text.replace("../scenarios/", f"{SCENARIOS}/"))
    return load_suite(path)


def test_a_suite_run_writes_suite_json_junit_and_the_page(tmp_path, fake_runs):
    suite = release_unexpected(tmp_path)
    chosen = select(suite, ("smoke[*seed 1]", "faulty-consumer[classic-eager, seed 1]"), None)
    run = SuiteRun(suite, chosen, tmp_path)
    assert run.execute() == 3  # a run broke: that outranks a failed check
    data = json.loads((run.dir / "suite.json").read_text())
    assert data["state"] == "completed" and data["exit_code"] == 3
    assert [(v["id"], v["state"]) for v in data["variants"]] == [
        ("smoke[classic-eager, seed 1]", "passed"),
        ("smoke[classic-cooperative, seed 1]", "passed"),
        ("smoke[consumer, seed 1]", "broken"),
        ("faulty-consumer[classic-eager, seed 1]", "failed"),
    ]
    assert data["variants"][0]["figures"]["rebalance_p95_ms"] == 900.0
    assert_valid_junit(run.dir / "junit.xml")
    root = ET.parse(run.dir / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert len(cases) == 4 and root.get("tests") == "4" and root.get("failures") == "1" and root.get("errors") == "1"
    failure = cases["faulty-consumer[classic-eager, seed 1]"].find("failure")
    assert (
        failure.get("message") == "1 violation(s): no-loss"
        and "[no-loss/lost-records] events-3: offsets 120..131" in failure.text
    )
    assert cases["smoke[consumer, seed 1]"].find("error").get("message") == "cluster never became ready"
    assert "run directory:" in cases["smoke[classic-eager, seed 1]"].find("system-out").text
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["smoke[classic-eager, seed 1].rebalance_max_ms"] == "900.0"
    page = (run.dir / "index.html").read_text()
    assert "FAILED" in page and "events-3: offsets 120..131" in page and "smoke-classic-eager-s1/summary.md" in page


def test_fail_fast_skips_the_rest_and_an_interrupted_variant_stops_the_suite(tmp_path, fake_runs):
    suite = release_unexpected(tmp_path)
    chosen = select(suite, ("faulty-consumer[*seed 1]",), None)
    run = SuiteRun(suite, chosen, tmp_path, fail_fast=True)
    assert run.execute() == 1
    states = [(v["state"], v["reason"]) for v in json.loads((run.dir / "suite.json").read_text())["variants"]]
    assert states[0] == ("failed", "") and all(
        s == "skipped" and "--fail-fast after faulty-consumer" in r for s, r in states[1:]
    )
    assert_valid_junit(run.dir / "junit.xml")

    fake_runs.outcomes = {"smoke-classic-cooperative": ("interrupted", None)}
    run = SuiteRun(suite, select(suite, ("smoke[*seed 1]",), None), tmp_path / "again")
    assert run.execute() == 130
    data = json.loads((run.dir / "suite.json").read_text())
    assert data["state"] == "interrupted" and [v["state"] for v in data["variants"]] == ["passed", "broken", "skipped"]

    # a Ctrl-C as a variant's run ended: that variant keeps its own result, the rest are not run
    fake_runs.outcomes = {"smoke-classic-eager": ("ctrl-c-as-it-ended", None)}
    run = SuiteRun(suite, select(suite, ("smoke[*seed 1]",), None), tmp_path / "stopped")
    assert run.execute() == 130
    data = json.loads((run.dir / "suite.json").read_text())
    assert data["state"] == "interrupted" and [(v["state"], v["reason"]) for v in data["variants"]] == [
        ("passed", ""),
        ("skipped", "not run: the suite was interrupted after smoke[classic-eager, seed 1]"),
        ("skipped", "not run: the suite was interrupted after smoke[classic-eager, seed 1]"),
    ]


def test_junit_escapes_what_runs_wrote():
    text = 'commit "<fenced>" & lost ]]> \x1b[31m'
    suite = {
        "suite": "s",
        "started": "2026-11-24T10:00:00+00:00",
        "variants": [
            {
                "id": "x[classic-eager]",
                "scenario": "x",
                "state": "failed",
                "seconds": 1.0,
                "reason": "",
                "status": "fail",
                "outcome": "completed",
                "run_dir": None,
                "figures": None,
                "violations": [{"check": "fenced-commits", "kind": "k", "message": text.replace("\x1b", "")}],
            }
        ],
    }
    root = ET.fromstring(junit_xml(suite))
    assert root.find("./testsuite/testcase/failure").text.endswith("lost ]]> [31m")


def test_sigterm_between_variants_stops_the_suite_with_its_reports(tmp_path, fake_runs):
    suite = load_suite(REPO / "suites" / "release.yaml")
    fake_runs.outcomes = {"smoke-classic-cooperative": ("sigterm-between-runs", None)}
    run = SuiteRun(suite, select(suite, ("smoke[*seed 1]",), None), tmp_path)
    assert run.execute() == 130
    data = json.loads((run.dir / "suite.json").read_text())
    assert data["state"] == "interrupted" and [v["state"] for v in data["variants"]] == ["passed", "skipped", "skipped"]
    assert_valid_junit(run.dir / "junit.xml")


CLIENTS = ["confluent-kafka==2.10.1", "confluent-kafka==2.16.1"]


def _axes_suite(tmp_path: Path, extra: str = "") -> Path:
    return write_suite(
        tmp_path,
        f"""
name: versions
scenarios: [SCENARIOS/smoke.yaml]
matrix: {{kafka: ["3.9", "4.1"], client: {CLIENTS}}}
{extra}""",
    )


def test_kafka_and_client_axes_make_a_variant_each_named_by_both(tmp_path):
    suite = load_suite(_axes_suite(tmp_path, "exclude: [{kafka: '4.1', client: 'confluent-kafka==2.10.1'}]"))
    assert [v.id for v in suite.variants] == [
        "smoke[kafka 3.9, confluent-kafka==2.10.1]",
        "smoke[kafka 3.9, confluent-kafka==2.16.1]",
        "smoke[kafka 4.1, confluent-kafka==2.16.1]",
    ]
    v = suite.variants[0]
    assert v.scenario_data["cluster"]["kafka"] == "3.9" and v.scenario_data["workload"]["client"] == CLIENTS[0]
    assert v.run_name == "smoke-kafka3.9-confluent-kafka2.10.1"  # a scenario name's characters only
    assert [x.id for x in select(suite, ("*confluent-kafka==2.16.1*",), None)] == [x.id for x in suite.variants[1:]]


def test_an_axis_value_is_refused_in_the_scenario_keys_own_words(tmp_path):
    from harness.scenario.variants import kafka_problem

    with pytest.raises(ScenarioError) as e:
        load_suite(write_suite(tmp_path, "name: s\nscenarios: [SCENARIOS/smoke.yaml]\nmatrix: {kafka: ['2.0']}\n"))
    [(key, reason)] = unlined(e.value.problems)
    assert key == "matrix.kafka[1]" and reason == kafka_problem("2.0")
    # a client the driver does not take is named per variant, by the scenario's validation
    with pytest.raises(ScenarioError) as e:
        load_suite(
            write_suite(
                tmp_path, "name: s\nscenarios: [SCENARIOS/smoke.yaml]\nmatrix: {client: [kafka-clients==3.9.2]}\n"
            )
        )
    [(key, reason)] = unlined(e.value.problems)
    assert key == "smoke[kafka-clients==3.9.2]" and reason.startswith("workload.client: "), reason
    # refused by every variant for that one reason: named once, as the matrix's value
    with pytest.raises(ScenarioError) as e:
        load_suite(
            write_suite(
                tmp_path,
                "name: s\nscenarios: [SCENARIOS/smoke.yaml]\nmatrix: {client: [kafka-clients==3.9.2], seed: [1, 2]}\n",
            )
        )
    assert unlined(e.value.problems) == [("matrix.client[1]", reason.removeprefix("workload.client: "))]
    with pytest.raises(ScenarioError) as e:
        load_suite(_axes_suite(tmp_path, "exclude: [{client: 'confluent-kafka==1.0.0'}]"))
    assert unlined(e.value.problems) == [("exclude[1]", "matches no variant of the matrix")]


def test_the_junit_of_a_suite_with_version_axes_names_them(tmp_path, fake_runs):
    from harness.components.versions import kafka_release

    suite = load_suite(_axes_suite(tmp_path))
    run = SuiteRun(suite, suite.variants, tmp_path)
    assert run.execute() == 0
    data = json.loads((run.dir / "suite.json").read_text())
    # suite.json says what ran (run.json: the exact release), the id what the axis asked for
    assert [(v["id"], v["kafka"], v["client"]) for v in data["variants"]] == [
        (f"smoke[kafka {k}, {c}]", f"{kafka_release(k).version}.ran", c) for k in ("3.9", "4.1") for c in CLIENTS
    ]
    assert_valid_junit(run.dir / "junit.xml")
    root = ET.parse(run.dir / "junit.xml").getroot()
    assert [c.get("name") for c in root.iter("testcase")] == [v["id"] for v in data["variants"]]
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    for v in data["variants"]:
        assert props[f"{v['id']}.kafka"] == v["kafka"] and props[f"{v['id']}.client"] == v["client"]
