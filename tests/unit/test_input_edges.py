"""Sharp edges of input (issue 44): a key written twice, an unquoted version, the wrong kind of
file, problems with their lines and one-based paths in the tool's words, and the pytest plugin
refusing an invalid scenario at collection."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from harness.campaigns.bug_corpus import BugFacts
from harness.campaigns.capacity import SweepSpec, load_sweep
from harness.campaigns.suite import SuiteSpec, load_suite
from harness.scenario import Scenario, load_scenario, read_scenario_data, validation_problems
from harness.scenario.errors import REASONS, key_parts, show_key
from harness.scenario.kinds import FILE_KINDS
from runtime.errors import ScenarioError

pytest_plugins = ("pytester",)

REPO = Path(__file__).resolve().parents[2]
SCENARIO = """\
name: t
duration_s: 30
cluster:
  kafka: "3.9"
  brokers: 1
topics:
  - name: events
    partitions: 6
workload:
  consumers: 2
faults:
  - kind: pause
    target: consumer-2
    at_s: 5
    duration_s: 4
"""


def write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def refused(path: Path, load=load_scenario) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        load(path)
    assert str(info.value).startswith(str(path)) and info.value.exit_code == 2
    return str(info.value).splitlines()


# -------------------------------------------------------------------------- a key written twice


def test_a_key_written_twice_is_refused_with_both_lines(tmp_path):
    path = write(tmp_path, SCENARIO + "duration_s: 20\n")
    assert refused(path) == [
        f"{path}: duration_s (line 16): written twice (first at line 2): YAML would keep the last silently; keep one"
    ]


def test_every_key_written_twice_is_named_at_once_nested_ones_by_their_path(tmp_path):
    text = SCENARIO.replace("  consumers: 2\n", "  consumers: 2\n  consumers: 3\n") + "    at_s: 6\n"
    said = refused(write(tmp_path, text))
    assert [line.split(": ", 1)[1] for line in said] == [
        "workload.consumers (line 11): written twice (first at line 10): YAML would keep the last silently; keep one",
        "faults[1].at_s (line 17): written twice (first at line 15): YAML would keep the last silently; keep one",
    ]


def test_a_key_a_merge_brought_in_may_be_written_again(tmp_path):
    text = SCENARIO.replace("workload:\n  consumers: 2\n", "base: &w {consumers: 2}\nworkload:\n  <<: *w\n")
    text = text.replace("base: &w {consumers: 2}\n", "x-base: &w {consumers: 2}\n")
    data = read_scenario_data(write(tmp_path, text.replace("  <<: *w\n", "  <<: *w\n  consumers: 3\n")))
    assert data["workload"] == {"consumers": 3}


def test_suite_sweep_and_bug_files_refuse_a_key_written_twice_too(tmp_path):
    suite = write(tmp_path, "name: s\nscenarios: [a.yaml]\nname: t\n", "suite.yaml")
    assert refused(suite, load_suite) == [
        f"{suite}: name (line 3): written twice (first at line 1): YAML would keep the last silently; keep one"
    ]
    sweep = write(tmp_path, "name: s\nbase: b.yaml\nsweep: {members: [1], members: [2], protocol: [consumer]}\n")
    assert "sweep.members (line 3): written twice (first at line 3)" in refused(sweep, load_sweep)[0]


# ----------------------------------------------------------------------------- unquoted versions


@pytest.mark.parametrize(
    ("written", "said"),
    [
        (
            "3.10",
            'cluster.kafka (line 4): must be text: write it quoted, kafka: "3.10" '
            "(unquoted, YAML reads 3.10 as the number 3.1)",
        ),
        ("4.1", 'cluster.kafka (line 4): must be text: write it quoted, kafka: "4.1"'),
        ("4", 'cluster.kafka (line 4): must be text: write it quoted, kafka: "4"'),
    ],
)
def test_an_unquoted_kafka_release_is_told_to_quote_it_as_written(tmp_path, written, said):
    path = write(tmp_path, SCENARIO.replace('kafka: "3.9"', f"kafka: {written}"))
    assert refused(path) == [f"{path}: {said}"]


def test_an_unquoted_version_anywhere_text_is_wanted_is_told_to_quote_it(tmp_path):
    text = SCENARIO + "  - {kind: rolling-broker-upgrade, at_s: 10, to: 3.90}\n"
    path = write(tmp_path, text)
    assert refused(path) == [
        f'{path}: faults[2].to (line 16): must be text: write it quoted, to: "3.90" '
        "(unquoted, YAML reads 3.90 as the number 3.9)"
    ]
    suite = write(tmp_path, f"name: s\nscenarios: [{REPO}/scenarios/smoke.yaml]\nmatrix:\n  kafka: [3.9, 3.10]\n")
    said = refused(suite, load_suite)
    assert said[0].endswith('matrix.kafka[1] (line 4): must be text: write it quoted: "3.9"'), said
    assert said[1].endswith("(unquoted, YAML reads 3.10 as the number 3.1)"), said


def test_a_setting_yaml_would_hand_kafka_changed_is_told_to_quote_it(tmp_path):
    text = SCENARIO.replace(
        "  brokers: 1\n", "  brokers: 1\n  broker_config:\n    inter.broker.protocol.version: 3.10\n    x.ratio: 0.5\n"
    )
    text = text.replace("    partitions: 6\n", "    partitions: 6\n    config: {retention.ms: 010, segment.ms: 1000}\n")
    path = write(tmp_path, text)
    assert refused(path) == [
        f"{path}: cluster.broker_config.inter.broker.protocol.version (line 7): YAML reads 3.10 as the number 3.1, "
        'which Kafka would be given: write it quoted, inter.broker.protocol.version: "3.10"',
        f"{path}: topics[1].config.retention.ms (line 12): YAML reads 010 as the number 8, "
        'which Kafka would be given: write it quoted, retention.ms: "010"',
    ]
    quoted = text.replace(": 3.10", ': "3.10"').replace(": 010", ': "010"')
    assert load_scenario(write(tmp_path, quoted)).cluster.broker_config["x.ratio"] == 0.5


def test_quoted_the_release_loads(tmp_path):
    assert load_scenario(write(tmp_path, SCENARIO.replace('"3.9"', '"3.9.2"'))).cluster.kafka == "3.9.2"


# ----------------------------------------------------------------------------- the wrong kind of file


@pytest.mark.parametrize(
    ("given", "loader", "said"),
    [
        ("suites/release.yaml", load_scenario, "this is a suite file, not a scenario file: use `rebalance-lab suite "),
        ("profiles/capacity.yaml", load_scenario, "this is a capacity sweep file, not a scenario file: use `rebalance"),
        ("bugs/kafka-14009/bug.yaml", load_scenario, "this is a known bug's description (bug.yaml), whose scenario"),
        ("scenarios/smoke.yaml", load_suite, "this is a scenario file, not a suite file: use `rebalance-lab run "),
        ("profiles/capacity.yaml", load_suite, "this is a capacity sweep file, not a suite file: use `rebalance-lab"),
        ("scenarios/smoke.yaml", load_sweep, "this is a scenario file, not a capacity sweep file: use `rebalance-lab"),
        ("suites/release.yaml", load_sweep, "this is a suite file, not a capacity sweep file: use `rebalance-lab s"),
    ],
)
def test_the_wrong_kind_of_file_is_named_with_the_command_that_takes_it(given, loader, said):
    path = REPO / given
    assert refused(path, loader) == [f"{path}: {said}" + refused(path, loader)[0].split(said, 1)[1]]
    assert str(path if loader is not load_scenario or "bug" not in given else path.parent) in said_use(path, loader)


def said_use(path: Path, loader) -> str:
    return refused(path, loader)[0].split("use `", 1)[1]


def test_a_run_directory_and_a_history_are_named_as_such(tmp_path):
    run_dir = tmp_path / "20260101T000000Z-smoke-s1"
    run_dir.mkdir()
    (run_dir / "history.jsonl").write_text(
        '{"name": "run_started", "mono_ms": 0, "source": "harness"}\n{"name": "phase", "mono_ms": 1, "source": "h"}\n'
    )
    assert refused(run_dir) == [
        f"{run_dir}: this is a run directory: `rebalance-lab check {run_dir}` judges it again; "
        f"`rebalance-lab run {run_dir}/scenario.yaml` runs its scenario again"
    ]
    history = run_dir / "history.jsonl"
    assert refused(history) == [
        f"{history}: this is a run's history, not a scenario file: use `rebalance-lab check {run_dir}`"
    ]


def test_each_kind_is_told_by_keys_of_its_own_model_only():
    models = {"scenario": Scenario, "suite": SuiteSpec, "sweep": SweepSpec, "bug": BugFacts}
    for name, model in models.items():
        assert model.FILE_KIND is FILE_KINDS[name]
        assert set(FILE_KINDS[name].keys) <= set(model.model_fields), name
        for other_name, other in models.items():
            if other_name != name:
                assert not set(FILE_KINDS[name].keys) & set(other.model_fields), (name, other_name)


# ------------------------------------------------------- lines, one-based paths, the tool's words


def test_every_problem_has_its_line_and_a_one_based_path_all_at_once(tmp_path):
    text = SCENARIO.replace("duration_s: 30", "duration_s: ten").replace("consumers: 2", "consumers: 2.5")
    text += "  - kind: crash\n    target: broker-1\n    at_s: -3\n    bogus: 1\n"
    path = write(tmp_path, text)
    assert refused(path) == [
        f"{path}: duration_s (line 2): must be a number, got 'ten'",
        f"{path}: workload.consumers (line 10): must be a whole number, got 2.5",
        f"{path}: faults[2].at_s (line 18): must be at least 0, got -3",
        f"{path}: faults[2].bogus (line 19): unknown key",
    ]


def test_a_missing_key_gets_its_parents_line_and_a_model_validators_key_its_own(tmp_path):
    text = SCENARIO.replace("    partitions: 6\n", "").replace("target: consumer-2", "target: consumer-9")
    said = refused(write(tmp_path, text))
    assert [line.split(": ", 2)[1] for line in said] == ["topics[1].partitions (line 7)"]  # its parent's line
    assert said[0].endswith("missing: this key is required")
    said = refused(write(tmp_path, SCENARIO.replace("target: consumer-2", "target: consumer-9")))
    assert said[0].split(": ", 2)[1] == "faults[1].target (line 13)", said


def test_a_union_of_value_types_is_said_once():
    with pytest.raises(ValidationError) as info:
        Scenario.model_validate(
            {
                "name": "t",
                "duration_s": 5,
                "topics": [{"name": "e", "partitions": 1}],
                "cluster": {"broker_config": {"a": [1]}},
            }
        )
    assert validation_problems(info.value) == [
        ("cluster.broker_config.a", "must be text, a whole number, a number or true/false, got a list")
    ]


def test_no_reason_is_pydantics_own():
    bad = [
        {"duration_s": "x"},
        {"seed": True},
        {"seed": -1},
        {"name": ""},
        {"name": "a b"},
        {"topics": []},
        {"topics": "x"},
        {"workload": {"protocol": "nope"}},
        {"workload": {"group": "x" * 300}},
        {"recovery": [1]},
        {"duration_s": float("nan")},
        {"nope": 1},
    ]
    base = {"name": "t", "duration_s": 5, "topics": [{"name": "e", "partitions": 1}]}
    for change in bad:
        with pytest.raises(ValidationError) as info:
            Scenario.model_validate({**base, **change})
        for e in info.value.errors():
            assert e["type"] in REASONS, e
        for _key, reason in validation_problems(info.value):
            assert "Input should" not in reason and "Field required" not in reason, (change, reason)
            assert "should have" not in reason and "String should" not in reason, (change, reason)


def test_keys_are_shown_one_based_whatever_notation_they_came_in():
    assert show_key("faults.0.at_s") == "faults[1].at_s" == show_key("faults[1].at_s")
    assert key_parts("expect[1].fails[2]") == ("expect", 0, "fails", 1)
    assert key_parts("(file)") is None and key_parts("smoke[classic-eager, seed 1]") is None
    assert key_parts("line 7, column 3") is None


def test_a_suites_problems_are_one_based_with_lines(tmp_path):
    suite = write(tmp_path, f"name: s\nscenarios: [{REPO}/scenarios/smoke.yaml]\nexclude:\n  - {{scenario: smok}}\n")
    said = refused(suite, load_suite)
    assert said == [f"{suite}: exclude[1].scenario (line 4): no scenario of this suite is named 'smok' (known: smoke)"]


def test_the_readme_case_random_faults_past_the_duration_is_clear(tmp_path):
    text = SCENARIO + "random_faults:\n  count: 2\n  kinds: [pause]\n  end_s: 40\n"
    said = refused(write(tmp_path, text))
    assert len(said) == 1 and said[0].split(": ", 2)[1] == "random_faults.end_s (line 19)", said
    assert said[0].endswith("the window 5s..40.0s must be non-empty and within duration_s (30.0s)"), said


# ----------------------------------------------------------------------------------- the CLI and pytest


def test_the_cli_says_it_with_exit_code_2(tmp_path):
    from harness.cli import main

    path = write(tmp_path, SCENARIO.replace('"3.9"', "3.10"))
    result = CliRunner().invoke(main, ["schedule", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert 'cluster.kafka (line 4): must be text: write it quoted, kafka: "3.10"' in result.output
    result = CliRunner().invoke(main, ["schedule", str(REPO / "suites/release.yaml")])
    assert (
        result.exit_code == 2 and "this is a suite file, not a scenario file: use `rebalance-lab suite" in result.output
    )


def test_the_pytest_plugin_refuses_an_invalid_scenario_at_collection(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makefile(".yaml", bad=SCENARIO.replace("consumers: 2", "consumers: ten"))
    result = pytester.runpytest_inprocess("-p", "harness.pytest_plugin", "bad.yaml", "--collect-only", "-q")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out  # a collection error stops the session
    assert "ERROR collecting bad.yaml" in out or "error" in out.lower(), out
    assert "workload.consumers (line 10): must be a whole number, got 'ten'" in out, out
    assert "Traceback" not in out, out


def test_the_pytest_plugin_refuses_a_scenario_found_in_a_directory_with_a_key_written_twice(pytester, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "twice.yaml").write_text(SCENARIO + "duration_s: 20\n")
    (pytester.path / "scenarios" / "settings.yaml").write_text("just: settings\njust: again\n")  # no scenario
    result = pytester.runpytest_inprocess("-p", "harness.pytest_plugin", "scenarios", "--collect-only", "-q")
    out = result.stdout.str()
    assert "duration_s (line 16): written twice (first at line 2)" in out, out
    assert "settings.yaml" not in out, out
