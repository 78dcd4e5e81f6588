"""`run --seed --protocol --kafka --client --backend --set` (harness/scenario/overrides.py): the
scenario a suite variant's replay command makes is the variant's; `--set` is validated as the file
is; runs/latest; `suite --out/--junit`; `capacity --dry-run`. Runs stood in for; the real replay of
a suite variant: see the report of issue 44 (a 1-broker run of each)."""

from __future__ import annotations

import json
import os
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness.campaigns.suite import load_suite
from harness.cli import main
from harness.paths import LATEST, point_latest
from harness.run.loop import RunResult
from harness.scenario import Scenario, read_scenario_data
from harness.scenario.overrides import Overrides, key_parts, parse_set, scenario_text
from runtime.errors import ScenarioError
from tests.junit_schema import assert_valid_junit

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "scenarios" / "smoke.yaml"


class Capture:
    """Stands in for harness.run.loop.Run: keeps what it was asked to run; passes."""

    made: list[Capture] = []

    def __init__(self, scenario, path, runs_dir, report, progress=None, pool=None, scenario_text=None, detail=None):
        self.scenario, self.path, self.text = scenario, path, scenario_text
        self.run_dir = runs_dir / f"{scenario.name}-s{scenario.seed}"
        Capture.made.append(self)

    def execute(self) -> RunResult:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        return RunResult(self.run_dir, "completed", None, "stood in for")


@pytest.fixture
def captured(monkeypatch):
    import harness.campaigns.suite as suite
    import harness.cli.campaigns as campaigns_cli
    import harness.cli.runs as runs_cli
    import harness.run.loop as loop

    for module in (loop, suite):
        monkeypatch.setattr(module, "Run", Capture)
    for module in (runs_cli, campaigns_cli):
        monkeypatch.setattr(module, "installed_for", lambda *_a, **_k: None)
    Capture.made = []
    return Capture


SUITE = """
name: replay
scenarios: [SCENARIOS/smoke.yaml, SCENARIOS/faulty-consumer.yaml]
matrix:
  protocol: [classic-eager, consumer]
  kafka: ["3.9", "4.1"]
  client: ["confluent-kafka==2.10.0"]
  seed: [1, 7]
exclude:
  - {protocol: consumer, kafka: "3.9"}
expect:
  - {scenario: faulty-consumer, protocol: classic-eager, fails: [no-loss], attempts: 2}
  - {scenario: smoke, kafka: "4.1", passes: true}
"""


def replay_suite(tmp_path: Path):
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE.replace("SCENARIOS", str(REPO / "scenarios")))
    return load_suite(path)


def test_a_suite_variants_replay_command_makes_the_variants_scenario(tmp_path, captured, monkeypatch):
    monkeypatch.chdir(REPO)  # the command names the file as a command run from here would
    suite = replay_suite(tmp_path)
    assert len(suite.variants) == 2 * 3 * 2
    for v in suite.variants:
        argv = shlex.split(v.replay)
        assert argv[:3] == ["rebalance-lab", "run", f"scenarios/{v.scenario}.yaml"], v.replay
        result = CliRunner().invoke(main, [*argv[1:], "--runs-dir", str(tmp_path / "runs")])
        assert result.exit_code == 3, result.output  # the stand-in gives no verdict
        made = captured.made.pop()
        assert made.scenario == Scenario.model_validate(v.scenario_data), v.id
        # what its run directory keeps (scenario.yaml) is what the suite wrote for the variant
        assert made.text == scenario_text(v.scenario_data), v.id
    faulty = next(
        v
        for v in suite.variants
        if v.id == "faulty-consumer[classic-eager, kafka 3.9, confluent-kafka==2.10.0, seed 7]"
    )
    assert faulty.replay == (
        "rebalance-lab run scenarios/faulty-consumer.yaml --seed 7 --protocol classic-eager --kafka 3.9 "
        '--client confluent-kafka==2.10.0 --set \'expect={"fails": ["no-loss"], "attempts": 2}\''
    )
    smoke = next(v for v in suite.variants if v.id.startswith("smoke[consumer, kafka 4.1"))
    assert "expect" not in smoke.scenario_data and "--set" not in smoke.replay  # smoke has no expect: of its own


def test_run_names_its_scenario_as_a_suite_names_the_variant_and_keeps_what_it_made(tmp_path, captured):
    args = ["run", str(SMOKE), "--runs-dir", str(tmp_path / "runs"), "--protocol", "classic-cooperative"]
    args += ["--kafka", "4.1", "--seed", "3", "--set", "workload.consumers=4", "--set", "faults[1].at_s=12"]
    CliRunner().invoke(main, args)
    made = captured.made.pop()
    s = made.scenario
    assert (s.name, s.seed, s.workload.protocol, s.cluster.kafka) == (
        "smoke-classic-cooperative-kafka4.1",
        3,
        "classic-cooperative",
        "4.1.1",
    )
    assert s.workload.consumers == 4 and s.faults[0].at_s == 12
    assert s.workload.assignor != "range"  # the protocol's default, as a variant's
    kept = yaml.safe_load(made.text)
    assert kept["workload"]["consumers"] == 4 and kept["seed"] == 3 and kept["name"] == s.name
    CliRunner().invoke(main, ["run", str(SMOKE), "--runs-dir", str(tmp_path / "runs")])
    assert captured.made.pop().text is None  # no override: the file as written (comments and all)


@pytest.mark.parametrize(
    "sets, want",
    [
        (["workload.consumers=5"], {"workload": {"consumers": 5}}),
        (["description=on 4.1"], {"description": "on 4.1"}),
        (['cluster.kafka="4.1"'], {"cluster": {"kafka": "4.1"}}),
        (["workload.producer={rate: 50}"], {"workload": {"producer": {"rate": 50}}}),
        (["faults[2].at_s=30"], {"faults": [None, {"at_s": 30}]}),
        (
            ['cluster.broker_config."group.initial.rebalance.delay.ms"=0'],
            {"cluster": {"broker_config": {"group.initial.rebalance.delay.ms": 0}}},
        ),
        (["workload.assignor=null"], {"workload": {"assignor": "(removed)"}}),
        (["seed=1", "seed=9"], {"seed": 9}),  # in order: the last wins
    ],
)
def test_set_values_are_yaml_at_key_paths_as_errors_show_them(sets, want):
    data = Overrides(sets=tuple(parse_set(s) for s in sets)).apply(read_scenario_data(SMOKE), SMOKE)

    def holds(have, wanted):
        for k, v in wanted.items():
            if v == "(removed)":
                assert k not in have
            elif isinstance(v, dict):
                holds(have[k], v)
            elif isinstance(v, list):
                for i, item in enumerate(v):
                    if item is not None:
                        holds(have[k][i], item)
            else:
                assert have[k] == v and type(have[k]) is type(v), (k, have[k])

    holds(data, want)


@pytest.mark.parametrize(
    "args, said",
    [
        (
            ["--set", "workload.consumers=many"],
            "smoke.yaml: --set workload.consumers: must be a whole number, got 'many'",
        ),
        (
            ["--set", "workload={consumers: many}"],
            "smoke.yaml: --set workload (workload.consumers): must be a whole number",
        ),
        (["--set", "faults[9].at_s=3"], "smoke.yaml: --set faults[9].at_s: faults has 2 entries: there is no [9]"),
        (["--set", "name.x=1"], 'smoke.yaml: --set name.x: name is a value ("smoke"), not a mapping'),
        (["--set", "workload.consumerz=1"], "smoke.yaml: --set workload.consumerz: unknown key"),
        (["--set", "faults[1].at_s=999"], "smoke.yaml: --set faults[1].at_s: 999.0s is not within duration_s"),
        (["--set", "consumers"], "Invalid value for '--set': 'consumers': KEY.PATH=VALUE"),
        (["--set", "a..b=1"], "'a..b': not a key path"),
        (["--set", "x=[1"], "x: '[1' is not a YAML value"),
        (["--kafka", "2.1"], "smoke.yaml: --kafka: Kafka 2.1 is older than the supported range"),
        (["--seed", "-1"], "smoke.yaml: --seed: must be at least 0, got -1"),
        (["--protocol", "consumer", "--kafka", "3.3"], "smoke.yaml: --protocol/--kafka: consumer on Kafka 3.3"),
        (["--protocol", "eager"], "Invalid value for '--protocol'"),
    ],
)
def test_a_bad_override_is_bad_input_naming_the_option(tmp_path, captured, args, said):
    result = CliRunner().invoke(main, ["run", str(SMOKE), "--runs-dir", str(tmp_path / "runs"), *args])
    assert result.exit_code == 2 and said in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output and not captured.made and not (tmp_path / "runs").exists()


def test_key_paths_read_as_errors_write_them():
    assert key_parts("faults[1].at_s", dotted_indices=False) == ("faults", 0, "at_s")
    assert key_parts("faults.0.at_s", dotted_indices=True) == ("faults", 0, "at_s")
    assert key_parts('a."b.c"') == ("a", "b.c")
    assert key_parts("faults[0]") is None and key_parts("(file)") is None
    with pytest.raises(ScenarioError):
        Overrides(sets=(("faults[1].x", 1),)).apply({"faults": "none"}, "f.yaml")


def test_runs_latest_points_to_the_newest_run_relatively_and_leaves_a_directory_alone(tmp_path):
    first, second = tmp_path / "a-s1", tmp_path / "b-s1"
    for d in (first, second):
        d.mkdir()
        point_latest(d)
        assert os.readlink(tmp_path / LATEST) == d.name and (tmp_path / LATEST).resolve() == d
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary link left
    mine = tmp_path / "other"
    (mine / LATEST).mkdir(parents=True)
    (mine / "r").mkdir()
    point_latest(mine / "r")
    assert (mine / LATEST).is_dir() and not (mine / LATEST).is_symlink()


def test_run_points_runs_latest_to_its_directory(tmp_path):
    from harness.run.loop import Run

    scenario = Scenario.model_validate(read_scenario_data(SMOKE))
    made = Run(scenario, SMOKE, tmp_path, lambda _m: None)  # made, not executed: nothing starts
    assert (tmp_path / LATEST).resolve() == made.run_dir.resolve()
    assert not Path(os.readlink(tmp_path / LATEST)).is_absolute()


def test_suite_out_and_junit_and_the_replay_in_every_report(tmp_path, monkeypatch):
    import harness.campaigns.suite as suite
    import harness.cli.campaigns as campaigns_cli
    from tests.unit.test_exit_codes import FakeRun

    monkeypatch.setattr(suite, "Run", FakeRun)
    monkeypatch.setattr(campaigns_cli, "installed_for", lambda *_a, **_k: None)
    monkeypatch.setattr(FakeRun, "ending", staticmethod(lambda name: "fail" if name == "smoke-consumer" else "pass"))
    monkeypatch.chdir(REPO)
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nscenarios: [{SMOKE}]\nmatrix: {{protocol: [classic-eager, consumer]}}\n")
    out, junit = tmp_path / "out", tmp_path / "reports" / "junit.xml"
    result = CliRunner().invoke(main, ["suite", str(path), "--out", str(out), "--junit", str(junit)])
    assert result.exit_code == 1, result.output
    replay = "rebalance-lab run scenarios/smoke.yaml --seed 1 --protocol consumer"
    text = " ".join(result.output.split())
    assert f"smoke[consumer]: failed; replay: {replay}" in text  # its line as it ends
    assert f"replay smoke[consumer]: {replay}" in text  # and after the table: what did not pass
    data = json.loads((out / "suite.json").read_text())
    assert [v["replay"] for v in data["variants"]] == [replay.replace("consumer", "classic-eager"), replay]
    assert junit.read_bytes() == (out / "junit.xml").read_bytes()
    assert_valid_junit(junit)
    root = ET.parse(junit).getroot()
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["smoke[consumer].replay"] == replay
    case = next(c for c in root.iter("testcase") if c.get("name") == "smoke[consumer]")
    assert f"replay: {replay}" in case.find("system-out").text


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda out, junit: (out.mkdir(), (out / "x").write_text("")), "--out OUT: not empty"),
        (lambda out, junit: junit.mkdir(parents=True), "--junit JUNIT: a directory"),
        (lambda out, junit: out.write_text(""), "--out OUT: a file"),
    ],
)
def test_suite_out_and_junit_are_refused_before_anything_runs(tmp_path, make, said, monkeypatch):
    import harness.cli.campaigns as campaigns_cli

    monkeypatch.setattr(campaigns_cli, "installed_for", lambda *_a, **_k: None)
    out, junit = tmp_path / "out", tmp_path / "junit"
    make(out, junit)
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nscenarios: [{SMOKE}]\n")
    result = CliRunner().invoke(
        main, ["suite", str(path), "--out", str(out), "--junit", str(junit), "--runs-dir", str(tmp_path / "runs")]
    )
    text = result.output.replace(str(out), "OUT").replace(str(junit), "JUNIT")
    assert result.exit_code == 2 and said in text, result.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_capacity_dry_run_lists_the_points_and_runs_nothing(tmp_path):
    runs = tmp_path / "runs"
    result = CliRunner().invoke(
        main, ["capacity", str(REPO / "profiles" / "capacity-small.yaml"), "--dry-run", "--runs-dir", str(runs)]
    )
    assert result.exit_code == 0, result.output
    assert "classic-static-m4-p8-r100" in result.output and "6 of 6 points would run" in result.output
    assert not runs.exists()


@pytest.mark.parametrize("page", ["inputs.md", "suites.md"])
def test_the_docs_run_commands_make_their_scenario(tmp_path, captured, monkeypatch, page):
    import re

    monkeypatch.chdir(REPO)
    text = (REPO / "docs" / page).read_text()
    commands = [
        c for block in re.findall(r"^```(?:sh)?\n(.*?)^```$", text, flags=re.M | re.S) for c in block.splitlines()
    ]
    runs = [shlex.split(c[c.index("rebalance-lab run") :]) for c in commands if "rebalance-lab run " in c]
    assert runs, page
    for argv in runs:
        result = CliRunner().invoke(main, [*argv[1:], "--runs-dir", str(tmp_path / "runs")])
        assert result.exit_code == 3 and captured.made.pop(), (argv, result.output)  # made and run (stood in for)
