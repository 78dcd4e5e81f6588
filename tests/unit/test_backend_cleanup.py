"""What harnesses left behind is removed by the backends that left it, each asked through
ClusterBackend.clean_up — by `cleanup`, the start of a run, a harness's watchdog and `cluster
down` alike — never by a backend's own functions called from elsewhere."""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner

from harness.cluster import cleanup
from harness.cluster.backend import BACKENDS, Cleaned, Cleanup, CleanupScope, backend_class


@pytest.fixture
def asked(monkeypatch, tmp_path):
    """Every backend's clean_up replaced by a recorder: [(backend, scope)] in the order asked.
    The local backend "stops" one process of a run, the compose backend fails to remove a project."""
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    calls: list[tuple[str, CleanupScope]] = []
    left = {
        "local": Cleanup([Cleaned("processes", "broker-1"), Cleaned("processes", "consumer-2", tmp_path / "r")]),
        "compose": Cleanup([Cleaned("compose projects", "rl-a")], ["could not remove compose project rl-b"]),
    }

    def recorder(name: str):
        def clean_up(scope: CleanupScope, report) -> Cleanup:
            calls.append((name, scope))
            report(f"{name} cleaned up")
            return left.get(name, Cleanup())

        return clean_up

    for name in BACKENDS:
        monkeypatch.setattr(backend_class(name), "clean_up", recorder(name))
    return calls


def test_every_backend_is_asked_the_process_registry_last(asked):
    said: list[str] = []
    done = cleanup.clean_up(CleanupScope("a test"), said.append)
    assert [name for name, _ in asked] == [*reversed(BACKENDS)] and asked[-1][0] == "local"
    assert said == [f"{name} cleaned up" for name in reversed(BACKENDS)]
    assert [c.name for c in done.cleaned] == ["rl-a", "broker-1", "consumer-2"]
    assert done.problems == ["could not remove compose project rl-b"]
    assert cleanup.tally(done.cleaned) == "1 compose projects: rl-a; 2 processes: broker-1, consumer-2"
    assert cleanup.tally(done.cleaned, names=False) == "1 compose projects; 2 processes"
    assert cleanup.tally([]) == "nothing"


def test_the_start_of_a_run_cleans_up_after_dead_harnesses_only(asked):
    said: list[str] = []
    cleanup.clean_up_after_dead_harnesses("the start of run r2", said.append)
    assert {scope for _, scope in asked} == {CleanupScope("the start of run r2")}  # not detached, anyone's
    assert said[-1] == "could not remove compose project rl-b"  # said, not raised


def test_the_watchdog_cleans_up_after_its_own_harness(asked, capsys):
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert cleanup.main(["watchdog", str(gone.pid)]) == 0
    assert {scope for _, scope in asked} == {CleanupScope(f"the watchdog of harness {gone.pid}", owner_pid=gone.pid)}
    assert f"the watchdog of harness {gone.pid}: local cleaned up" in capsys.readouterr().out


def test_the_cleanup_command_asks_every_backend_for_everything(asked, tmp_path):
    from harness.cli import main

    (tmp_path / "cluster.json").write_text("{}")
    result = CliRunner().invoke(main, ["cleanup"])
    assert result.exit_code == 3, result.output  # rl-b could not be removed: not a pass (runtime/errors.py)
    assert [name for name, _ in asked] == [*reversed(BACKENDS)]
    assert {scope for _, scope in asked} == {CleanupScope("rebalance-lab cleanup", detached=True)}
    assert "cleanup: could not remove compose project rl-b" in result.stderr
    assert f"run {tmp_path / 'r'}: no run.json" in result.stdout
    assert "cleanup: 1 compose projects; 2 processes left behind, stopped or removed." in result.stdout
    assert not (tmp_path / "cluster.json").exists()  # the standalone cluster went with the rest


def test_cluster_down_asks_every_backend_for_its_owners_and_keeps_the_state_if_one_fails(asked, tmp_path):
    from harness.cli import main

    state = tmp_path / "cluster.json"
    state.write_text(json.dumps({"backend": "local", "owner": "cluster:/w"}))
    result = CliRunner().invoke(main, ["cluster", "down"])
    assert {scope for _, scope in asked} == {
        CleanupScope("rebalance-lab cluster down", detached=True, owner="cluster:/w")
    }
    assert result.exit_code != 0 and "could not remove compose project rl-b" in result.stderr
    assert state.exists()  # `cluster down` again, once the engine answers


def test_cluster_down_says_what_it_stopped(monkeypatch, tmp_path):
    from harness.cli import main

    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    for name in BACKENDS:
        monkeypatch.setattr(backend_class(name), "clean_up", lambda scope, report: Cleanup())
    monkeypatch.setattr(
        backend_class("local"),
        "clean_up",
        lambda scope, report: Cleanup([Cleaned("processes", n) for n in ("zookeeper-1", "broker-1", "toxiproxy")]),
    )
    (tmp_path / "cluster.json").write_text(json.dumps({"backend": "local", "owner": "cluster:/w"}))
    result = CliRunner().invoke(main, ["cluster", "down"])
    assert result.exit_code == 0 and result.stdout == "stopped 3 processes: zookeeper-1, broker-1, toxiproxy\n"
    assert not (tmp_path / "cluster.json").exists()


def test_no_backends_own_cleaner_is_called_from_outside_it():
    """Only harness/cluster/ names what a backend removes (processes, compose projects): the rest asks."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    own = {"cleanup_leftovers", "stop_owned", "_remove_projects", "live_projects", "stop_engine"}
    callers = []
    for path in (root / "harness").rglob("*.py"):
        if path.is_relative_to(root / "harness" / "cluster") or path.is_relative_to(root / "harness" / "supervision"):
            continue
        if path.is_relative_to(root / "harness" / "components"):  # the engine's own module defines stop_engine
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
            if name in own:
                callers.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    assert callers == []
