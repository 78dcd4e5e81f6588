"""The CLI on bad input: exit code 2, a one-message explanation, no traceback, no run directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lines import unlined

REPO = Path(__file__).resolve().parents[2]


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    # Relative paths from tmp_path keep messages short enough for an 80-column console.
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(REBALANCE_LAB_HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )


def test_run_with_bad_scenario_exits_2_without_a_run_directory(tmp_path):
    (tmp_path / "bad.yaml").write_text(
        "name: bad\nduration_s: 10\ntopics: [{name: t, partitions: 0}]\nworkload: {consumerz: 3}\n"
    )
    result = cli(tmp_path, "run", "bad.yaml", "--runs-dir", "runs")
    assert result.returncode == 2, unlined(result.stderr)
    assert "bad.yaml: topics[1].partitions: must be at least 1" in unlined(result.stderr)
    assert "bad.yaml: workload.consumerz: unknown key" in unlined(result.stderr)
    assert "Traceback" not in result.stdout + unlined(result.stderr)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_run_with_invalid_yaml_exits_2(tmp_path):
    (tmp_path / "broken.yaml").write_text("name: x\ntopics: [\n")
    result = cli(tmp_path, "run", "broken.yaml", "--runs-dir", "runs")
    assert result.returncode == 2
    assert "broken.yaml: line 3" in unlined(result.stderr) and "not valid YAML" in unlined(result.stderr)
    assert "Traceback" not in result.stdout + unlined(result.stderr)
    assert not (tmp_path / "runs").exists()


def test_run_without_installed_kafka_exits_2_before_creating_a_run_directory(tmp_path):
    # A valid scenario, but REBALANCE_LAB_HOME is empty: setup has not been run.
    result = cli(tmp_path, "run", str(REPO / "scenarios" / "smoke.yaml"), "--runs-dir", "runs")
    assert result.returncode == 2, unlined(result.stderr)
    # Kafka itself would be installed on first use; what `setup` alone installs stops the run first.
    assert re.search(r"is not (installed|built)", unlined(result.stderr)) and "rebalance-lab setup" in unlined(
        result.stderr
    )
    assert "resolving from Maven Central" not in unlined(result.stderr)
    assert "Traceback" not in result.stdout + unlined(result.stderr)
    assert not (tmp_path / "runs").exists()


def test_check_on_a_directory_without_history_exits_2(tmp_path):
    (tmp_path / "empty-run").mkdir()
    result = cli(tmp_path, "check", "empty-run")
    assert result.returncode == 2
    assert "empty-run/history.jsonl: no history in this directory" in unlined(result.stderr)
    assert "Traceback" not in result.stdout + unlined(result.stderr)


def test_error_lines_are_not_wrapped_for_long_paths(tmp_path):
    deep = tmp_path / ("a-directory-name-long-enough-to-push-the-message-past-eighty-columns" * 2)
    deep.mkdir()
    (deep / "bad.yaml").write_text("name: bad\nduration_s: 10\ntopics: [{name: t, partitions: 1}]\nworkload: {x: 1}\n")
    result = cli(tmp_path, "run", str(deep / "bad.yaml"), "--runs-dir", "runs")
    assert result.returncode == 2
    assert f"{deep / 'bad.yaml'}: workload.x: unknown key" in unlined(result.stderr)


def test_cluster_up_refuses_a_workdir_it_did_not_make_and_keeps_its_files(tmp_path):
    (tmp_path / "mine" / "data").mkdir(parents=True)
    (tmp_path / "mine" / "data" / "notes.txt").write_text("someone's\n")
    result = cli(tmp_path, "cluster", "up", "--workdir", "mine")
    assert result.returncode == 2, unlined(result.stderr)
    assert f"--workdir {tmp_path / 'mine'}: holds files rebalance-lab did not write" in unlined(result.stderr)
    assert "Traceback" not in result.stdout + unlined(result.stderr)
    assert (tmp_path / "mine" / "data" / "notes.txt").read_text() == "someone's\n"
    assert not (tmp_path / "home" / "cluster.json").exists()


def test_cluster_up_empties_the_workdir_an_earlier_cluster_left(tmp_path):
    from harness.cli.cluster import CLUSTER_WORKDIR_MARK, _empty_cluster_workdir

    earlier = tmp_path / "earlier"
    (earlier / "data" / "broker-1").mkdir(parents=True)
    (earlier / "data" / "broker-1" / "meta.properties").write_text("version=1\n")
    (earlier / CLUSTER_WORKDIR_MARK).write_text("")
    _empty_cluster_workdir(earlier, ours=False)
    assert [p.name for p in earlier.iterdir()] == [CLUSTER_WORKDIR_MARK]
    default = tmp_path / "default"  # the lab's own, marked or not (clusters from before the mark)
    (default / "logs").mkdir(parents=True)
    _empty_cluster_workdir(default, ours=True)
    assert [p.name for p in default.iterdir()] == [CLUSTER_WORKDIR_MARK]
    _empty_cluster_workdir(tmp_path / "new" / "dir", ours=False)
    assert (tmp_path / "new" / "dir" / CLUSTER_WORKDIR_MARK).exists()


def test_cluster_up_refuses_a_bad_topic_before_starting_anything(tmp_path):
    for value, reason in [
        ("x:-3", "partitions: Input should be greater than or equal to 1"),
        ("x:abc", "partitions: Input should be a valid integer"),
        (".", "name: Value error, Kafka refuses a topic named '.'"),
        ("a_b:2", "'a.b' collides with topic 'a_b'"),
    ]:
        result = cli(tmp_path, "cluster", "up", "--topic", value, *(["--topic", "a.b"] if value == "a_b:2" else []))
        assert result.returncode == 2, unlined(result.stderr)
        assert "Invalid value for '--topic': " in unlined(result.stderr) and reason in unlined(result.stderr), unlined(
            result.stderr
        )
        assert "Traceback" not in unlined(result.stderr) and not (tmp_path / "home" / "cluster").exists()


def test_cluster_up_refuses_a_zookeeper_ensemble_for_a_kraft_line(tmp_path):
    result = cli(tmp_path, "cluster", "up", "--kafka", "4.1", "--zookeeper-nodes", "3")
    assert result.returncode == 2 and "--zookeeper-nodes: Kafka 4.1.1 runs without ZooKeeper (KRaft)" in unlined(
        result.stderr
    )
    assert "Traceback" not in unlined(result.stderr) and not (tmp_path / "home" / "cluster").exists()


def test_schedule_holds_seed_to_a_scenarios_bounds(tmp_path):
    result = cli(tmp_path, "schedule", str(REPO / "scenarios" / "random-chaos.yaml"), "--seed=-1")
    assert result.returncode == 2 and "--seed -1: must be at least 0" in unlined(result.stderr), unlined(result.stderr)
    assert result.stdout == ""


def test_a_runs_dir_that_is_a_file_is_bad_input(tmp_path):
    """run, compare and suite make their directory with new_stamped_dir and report its SetupError
    as bad input (exit 2); here without an installation, which they check first."""
    from harness.paths import new_stamped_dir
    from runtime.errors import SetupError

    (tmp_path / "afile").write_text("x\n")
    with pytest.raises(SetupError, match="afile: a file, not a directory"):
        new_stamped_dir(tmp_path / "afile", "ok-s1")


def test_cluster_up_on_a_workdir_that_is_a_file_is_bad_input(tmp_path):
    (tmp_path / "afile").write_text("x\n")
    result = cli(tmp_path, "cluster", "up", "--workdir", "afile")
    assert result.returncode == 2 and "--workdir afile: a file, not a directory" in unlined(result.stderr), unlined(
        result.stderr
    )
    assert "Traceback" not in unlined(result.stderr)


def test_schedule_says_how_many_random_draws_found_every_target_busy(tmp_path):
    scenario = tmp_path / "rf.yaml"
    scenario.write_text(
        "name: rf\nduration_s: 30\ncluster: {kafka: '3.9', brokers: 1}\n"
        "topics: [{name: events, partitions: 4, replication_factor: 1}]\nworkload: {consumers: 2}\n"
        "random_faults: {count: 20, kinds: [crash], targets: [consumer-1], start_s: 1, end_s: 10, "
        "duration_s: [3, 5]}\n"
    )
    result = cli(tmp_path, "schedule", str(scenario))
    assert result.returncode == 0 and len(json.loads(result.stdout)) == 1
    assert "random_faults: 1 of 20 drawn; the other draws found every target they may hit busy then" in unlined(
        result.stderr
    )
