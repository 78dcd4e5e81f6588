"""A fault kind, a check and a driver from outside the tree, by the route a user takes: a
distribution whose entry points name them (tests/fixtures/toy_extension, its `*.dist-info` as
pip would leave it), put on the path of `rebalance-lab` — validation, the schedule, the oracle
(`check`). The toy driver's real run is tests/integration/test_toy_extension.py.

Each command runs in a process of its own: a process finds its plugins once.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.lines import unlined
from tests.unit.test_extensions import distribution

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "tests" / "fixtures" / "toy_extension"
RECORDED = REPO / "tests" / "fixtures" / "histories" / "classic-eager-range.jsonl.gz"


def lab(*args: str, path: tuple[Path, ...] = (TOY,), cwd: Path = REPO) -> subprocess.CompletedProcess:
    """`rebalance-lab ARGS` with these directories on its path (and its children's), as
    `pip install` would put them on site-packages."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, (REPO, *path)))}
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def scenario(tmp_path: Path, **changes) -> Path:
    data = {
        "name": "toy",
        "duration_s": 20,
        "cluster": {"kafka": "3.9", "brokers": 1},
        "topics": [{"name": "events", "partitions": 2}],
        "workload": {"driver": "toy", "consumers": 2},
        "faults": [{"kind": "toy-nap", "at_s": 3, "target": "consumer-1", "duration_s": 2}],
        "random_faults": {
            "count": 1,
            "kinds": ["toy-nap"],
            "targets": ["consumer-2"],
            "start_s": 6,
            "end_s": 18,
            "duration_s": [1, 2],
        },
        "checks": {"toy-commits": {"min_commits": 2}, "no-loss": {}},
        **changes,
    }
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_scenario_takes_the_plugins_kind_check_and_driver(tmp_path):
    result = lab("schedule", str(scenario(tmp_path)))
    assert result.returncode == 0, unlined(result.stderr)
    faults = json.loads(result.stdout)
    assert faults[0] == {
        "fault_id": "f1",
        "kind": "toy-nap",
        "at_s": 3.0,
        "target": "consumer-1",
        "duration_s": 2.0,
        "on": None,
    }
    drawn = faults[1:]  # like a built-in kind's, from the seed
    assert [(f["kind"], f["target"]) for f in drawn] == [("toy-nap", "consumer-2")], drawn


def test_the_plugins_kind_validates_its_entries(tmp_path):
    path = scenario(
        tmp_path,
        faults=[{"kind": "toy-nap", "at_s": 3, "target": "broker-1", "duration_s": 2}],
        random_faults={"count": 1, "kinds": ["toy-nap"], "targets": ["broker-1"]},
    )
    result = lab("schedule", str(path))
    assert result.returncode == 2 and "Traceback" not in unlined(result.stderr)
    assert f"{path}: faults[1].target: a toy nap is for members (consumer-1, consumer-2), not 'broker-1'" in unlined(
        result.stderr
    )
    assert f"{path}: random_faults.kinds: toy-nap needs member targets only" in unlined(result.stderr)


def test_the_plugins_driver_runs_the_generations_it_says(tmp_path):
    path = scenario(tmp_path, workload={"driver": "toy", "protocol": "classic-cooperative"})
    result = lab("schedule", str(path))
    assert result.returncode == 2
    assert (
        f"{path}: workload.driver: the toy driver runs classic-eager, classic-static, not 'classic-cooperative'"
    ) in unlined(result.stderr)


def test_without_the_plugin_its_names_are_unknown(tmp_path):
    path = scenario(tmp_path)
    result = lab("schedule", str(path), path=())
    assert result.returncode == 2 and "Traceback" not in unlined(result.stderr)
    assert f"{path}: workload.driver: must be one of 'librdkafka', 'java'" in unlined(result.stderr)
    assert f"{path}: faults[1].kind: unknown fault kind 'toy-nap' (known: pause, crash," in unlined(result.stderr)


def recorded_run(tmp_path: Path, checks: dict) -> Path:
    """A recorded run's directory, its run_started naming `checks` and the toy plugins as installed."""
    with gzip.open(RECORDED, "rt") as recorded:
        events = [json.loads(line) for line in recorded]
    plugins = [
        {"group": group, "name": name, "value": value, "distribution": "rebalance-lab-toy", "version": "0.1.0"}
        for group, name, value in (
            ("rebalance_lab.checks", "toy-commits", "toy_extension.check"),
            ("rebalance_lab.drivers", "toy", "toy_extension.driver:ToyDriver"),
        )
    ]
    events[0] = {**events[0], "checks": checks, "plugins": plugins}
    assert events[0]["name"] == "run_started"
    run = tmp_path / "run"
    run.mkdir(parents=True)
    (run / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run


def test_the_oracle_judges_with_the_plugins_check(tmp_path):
    run = recorded_run(tmp_path, {"toy-commits": {"min_commits": 1}})
    result = lab("check", str(run))
    assert result.returncode == 0, result.stdout + unlined(result.stderr)
    assert "toy-commits" in result.stdout and "PASS" in result.stdout

    run = recorded_run(tmp_path / "strict", {"toy-commits": {"min_commits": 10_000}})
    result = lab("check", str(run), "--write")
    assert result.returncode == 1, result.stdout + unlined(result.stderr)
    verdict = json.loads((run / "verdict.json").read_text())
    assert {v["kind"] for v in verdict["violations"]} == {"no-commits"}
    assert verdict["violations"][0]["message"].startswith("consumer-1 consumed records but had ")


def not_installed(run: Path) -> str:
    """What `check` says of a run whose scenario named toy-commits, where the toy is not installed."""
    return (
        f"error: {run}/history.jsonl: run_started.checks.toy-commits: check 'toy-commits' comes from a plugin not "
        f"installed here: rebalance-lab-toy 0.1.0 (entry point rebalance_lab.checks: toy-commits = "
        f"toy_extension.check); install it to judge this history"
    )


def test_a_history_naming_a_check_not_installed_says_which_plugin_it_needs(tmp_path):
    run = recorded_run(tmp_path, {"toy-commits": {"min_commits": 1}})
    result = lab("check", str(run), path=())
    assert result.returncode == 2 and "Traceback" not in unlined(result.stderr)
    assert result.stderr.replace("\n", "") == not_installed(run)
    # Every check installed judges a run that named none: the plugin's that is not is said, not judged.
    result = lab("check", str(recorded_run(tmp_path / "all", {})), path=())
    assert result.returncode == 0, unlined(result.stderr)
    assert (
        "note: the run also had check 'toy-commits' from rebalance-lab-toy 0.1.0, not installed here: not judged"
        in unlined(result.stderr)
    )


# A broken distribution beside the toy one -> what the command says (docs/extending.md lists these).
UNUSABLE = {
    "fails-to-import": (
        {"rebalance_lab.checks": {"late": "toy_broken.late"}},
        "error: plugin toy-broken 1.0 (entry point rebalance_lab.checks: late = toy_broken.late): failed to load: "
        "ModuleNotFoundError: No module named 'not_installed_anywhere'",
    ),
    "name-claimed-twice": (
        {"rebalance_lab.checks": {"toy-commits": "toy_broken.late"}},
        "error: check 'toy-commits' is claimed by 2 plugins: rebalance-lab-toy 0.1.0 (entry point "
        "rebalance_lab.checks: toy-commits = toy_extension.check) and toy-broken 1.0 (entry point "
        "rebalance_lab.checks: toy-commits = toy_broken.late); uninstall one, or rename its entry point",
    ),
    "built-in-name": (
        {"rebalance_lab.fault_kinds": {"pause": "toy_broken.late:Pause"}},
        "error: fault kind 'pause' is built in to rebalance-lab, and a plugin claims it too: toy-broken 1.0 (entry "
        "point rebalance_lab.fault_kinds: pause = toy_broken.late:Pause); a plugin's fault kind needs a name of its own",
    ),
    "not-a-driver": (
        {"rebalance_lab.drivers": {"odd": "toy_broken:Odd"}},
        "error: plugin toy-broken 1.0 (entry point rebalance_lab.drivers: odd = toy_broken:Odd): not a driver: it has "
        "no runs(generation) -> bool, saying which generations' members it can be",
    ),
}


@pytest.mark.parametrize("case", UNUSABLE)
def test_a_plugin_that_cannot_be_used_is_bad_input_naming_it(tmp_path, case):
    broken, message = UNUSABLE[case]
    broken_dist = distribution(
        tmp_path / "site",
        "toy-broken",
        broken,
        {"toy_broken/__init__.py": "class Odd:\n    pass\n", "toy_broken/late.py": "import not_installed_anywhere\n"},
    )
    result = lab("schedule", str(scenario(tmp_path)), path=(TOY, broken_dist))
    assert result.returncode == 2 and "Traceback" not in unlined(result.stderr), unlined(result.stderr)
    assert result.stderr.replace("\n", "") == message


def test_a_plugin_that_cannot_be_used_is_a_pytest_sessions_collection_error(tmp_path):
    """The pytest plugin collects scenario files: a plugin that cannot be used is said as the
    collection's error, in the same words, without a traceback."""
    broken, message = UNUSABLE["fails-to-import"]
    site = distribution(
        tmp_path / "site",
        "toy-broken",
        broken,
        {"toy_broken/__init__.py": "", "toy_broken/late.py": "import not_installed_anywhere\n"},
    )
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "toy.yaml").write_text((TOY / "toy.yaml").read_text())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(map(str, (REPO, TOY, site))),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }  # ours alone, named below: the others only take time
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "scenarios",
            "--collect-only",
            "-p",
            "no:cacheprovider",
            "-p",
            "harness.pytest_plugin",
            "-o",
            "chaos_scenarios=true",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0 and "Traceback" not in result.stdout, result.stdout
    assert message.removeprefix("error: ") in result.stdout.splitlines(), result.stdout
