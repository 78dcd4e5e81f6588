"""harness/components/containers: the project's dockerd command line, which engine is used, the Compose
environment, and image tags that change exactly when an input does. No engine needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.components.containers import engine, images


def test_the_projects_dockerd_touches_nothing_of_the_hosts_network(tmp_path):
    argv = engine.dockerd_argv("/usr/sbin/dockerd", tmp_path)
    assert argv[:3] == ["/usr/sbin/dockerd", "--host", f"unix://{tmp_path / 'docker.sock'}"]
    assert {"--iptables=false", "--ip-masq=false", "--bridge=none"} <= set(argv)
    for flag in ("--data-root", "--exec-root", "--pidfile"):
        assert Path(argv[argv.index(flag) + 1]).is_relative_to(tmp_path)  # its state stays in the lab's home


def test_the_users_engine_comes_first_then_the_default_socket_then_ours(monkeypatch, tmp_path):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:2375")
    up: set[str] = set()
    monkeypatch.setattr(engine, "answers", lambda host, timeout=3.0: "20.10" if host in up else None)
    assert engine.find_engine() is None
    up.add(engine.own_socket())
    assert engine.find_engine() == engine.Engine(engine.own_socket(), True, "20.10")
    up.add(engine.USER_SOCKET)
    assert engine.find_engine() == engine.Engine(engine.USER_SOCKET, False, "20.10")
    up.add("tcp://127.0.0.1:2375")
    assert engine.find_engine().docker_host == "tcp://127.0.0.1:2375"


def test_compose_runs_as_the_docker_clis_plugin_without_ryuk(monkeypatch, tmp_path):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    env = engine.compose_env(engine.Engine("unix:///x.sock", True, "20.10"))
    assert env["DOCKER_HOST"] == "unix:///x.sock" and env["TESTCONTAINERS_RYUK_DISABLED"] == "true"
    plugin = Path(env["DOCKER_CONFIG"]) / "cli-plugins" / "docker-compose"
    assert plugin.resolve() == engine.compose_binary() and plugin.resolve().name == "docker-compose"
    assert engine.compose_env(engine.Engine("unix:///x.sock", True, "20.10")) == env  # idempotent


def test_an_image_tag_is_a_digest_of_its_inputs_and_of_its_parents():
    base = images.Recipe("base", None, ("bookworm",))
    child = images.Recipe("jre", base, ("openjdk-17-jre-headless",))
    assert base.tag.startswith("rebalance-lab/base:") and len(base.tag.split(":")[1]) == 12
    assert images.Recipe("base", None, ("bookworm",)).tag == base.tag  # the same inputs, the same tag
    other_base = images.Recipe("base", None, ("trixie",))
    assert images.Recipe("jre", other_base, ("openjdk-17-jre-headless",)).tag != child.tag


def test_the_coordinator_image_changes_with_the_project_s_code(monkeypatch, tmp_path):
    for package in images.COORDINATOR_PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("x = 1\n")
    monkeypatch.setattr(images, "REPO", tmp_path)
    monkeypatch.setattr(images, "jre_recipe", lambda: images.Recipe("jre", None, ()))
    before = images.coordinator_recipe()
    assert {target for _, target in before.files} >= {
        "site/coordinator/__init__.py",
        "site/oracle/__init__.py",
        "site/kazoo/client.py",
    }
    (tmp_path / "oracle" / "__init__.py").write_text("x = 2\n")
    assert images.coordinator_recipe().tag != before.tag


@pytest.mark.parametrize("line, version", [("3.9", "3.9.2"), ("4.1", "4.1.1")])
def test_every_kafka_line_has_its_image(line, version):
    recipe = images.kafka_recipe(line)
    assert recipe.name == f"kafka-{version}" and any(t == "jolokia-agent.jar" for _, t in recipe.files)
    assert images.image_set(line).kafka == recipe.tag


# --------------------------------------------------------------------- removing by label


class _Removable:
    def __init__(self, error: Exception | None = None):
        self.error, self.removed = error, False

    def remove(self, **options):
        if self.error:
            raise self.error
        self.removed = True


def _api_error(status: int, explanation: str):
    import docker
    import requests

    response = requests.Response()
    response.status_code = status
    return docker.errors.APIError(f"{status} Client Error", response=response, explanation=explanation)


def test_a_thing_another_cleaner_is_removing_or_removed_counts_as_gone():
    import docker

    from harness.components.containers.engine import _remove

    assert _remove(_Removable()) is True
    assert _remove(_Removable(docker.errors.NotFound("No such container"))) is False
    busy = _api_error(409, "removal of container 3f2a is already in progress")
    assert _remove(_Removable(busy)) is False
    # Any other refusal is still an error the caller reports.
    with pytest.raises(docker.errors.APIError):
        _remove(_Removable(_api_error(409, "You cannot remove a running container")))
    with pytest.raises(docker.errors.APIError):
        _remove(_Removable(_api_error(500, "driver failed")))


@pytest.fixture
def registry(monkeypatch, tmp_path):
    """An empty compose-project registry; `registry(project, docker_host, …)` registers one whose
    harness is dead (pid 1 is no harness) unless its owner's pid and start time are given."""
    import json

    from harness.cluster import compose

    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    compose.compose_registry().mkdir(parents=True)

    def register(project: str, docker_host: str, owner_pid: int = 1, owner_start_time: int = -1) -> Path:
        path = compose.compose_registry() / f"{project}.json"
        path.write_text(
            json.dumps(
                {
                    "project": project,
                    "directory": str(tmp_path),
                    "docker_host": docker_host,
                    "owner": f"run:{tmp_path / 'runs' / project}",
                    "owner_pid": owner_pid,
                    "owner_start_time": owner_start_time,
                }
            )
        )
        return path

    return register


def test_of_two_cleaners_racing_for_a_dead_harnesss_project_one_removes_it(monkeypatch, tmp_path, registry):
    """A `cleanup` and the start of a run on another pytest worker both find the project of a
    harness that died: one removes it, the other finds it gone, and neither fails."""
    import threading
    import time

    from harness.cluster import compose
    from harness.cluster.backend import CleanupScope
    from harness.cluster.compose_topology import OWNER_LABEL

    registry("rl-dead", "unix:///nowhere")
    removals = []

    def remove_labelled(docker_host, label):
        removals.append(label)
        time.sleep(0.3)  # long enough for the other cleaner to reach the same registration
        return 3

    monkeypatch.setattr(engine, "remove_labelled", remove_labelled)
    removed: list[list[str]] = []

    def clean_up() -> None:
        cleanup = compose.ComposeCluster.clean_up(CleanupScope("the start of run r2"), lambda _m: None)
        removed.append([c.name for c in cleanup.cleaned])

    cleaners = [threading.Thread(target=clean_up) for _ in range(2)]
    for t in cleaners:
        t.start()
    for t in cleaners:
        t.join()
    assert removals == [f"{OWNER_LABEL}=run:{tmp_path / 'runs' / 'rl-dead'}"]
    assert sorted(removed) == [[], ["rl-dead"]]
    assert not list(compose.compose_registry().iterdir())


def test_a_dead_harnesss_project_on_an_engine_that_does_not_answer_is_said_not_fatal(tmp_path, registry):
    """The start of a run removes what dead harnesses left; a project whose engine is gone (a reboot)
    must not fail every run after it: the run says so, and the registration stays for `cleanup`."""
    from harness.cluster.cleanup import clean_up_after_dead_harnesses

    registration = registry("rl-dead", f"unix://{tmp_path}/no-engine.sock")
    said: list[str] = []
    clean_up_after_dead_harnesses("the start of run r2", said.append)
    assert len(said) == 1 and "could not remove compose project rl-dead" in said[0] and "does not answer" in said[0], (
        said
    )
    assert registration.exists()


def test_cleanup_leaves_the_engine_up_while_a_running_harness_has_a_project_on_it(monkeypatch, registry):
    """`cleanup` in one terminal must not take a running compose run's containers down with the engine."""
    import os

    from click.testing import CliRunner

    from harness.cli import main
    from harness.supervision.processes import proc_start_time

    # this test's process plays the running harness
    live = registry("rl-live", engine.own_socket(), os.getpid(), proc_start_time(os.getpid()))
    stops = []
    monkeypatch.setattr(engine, "stop_engine", lambda report: stops.append(report) or False)

    result = CliRunner().invoke(main, ["cleanup"])
    assert result.exit_code == 0, result.output
    assert not stops and "left the project's Docker Engine running: running harnesses use it (rl-live)" in result.output
    assert live.exists()

    # A live project on another engine (the user's) is no reason to keep the project's own running.
    live.write_text(live.read_text().replace(engine.own_socket(), "unix:///var/run/docker.sock"))
    assert CliRunner().invoke(main, ["cleanup"]).exit_code == 0 and len(stops) == 1


def test_two_harnesses_clusters_never_share_a_compose_project():
    """Shared pools name their clusters `…/cluster-1`, `…/cluster-2` in every harness: the project
    (and its registration) must still be each owner's own, or one's cleanup removes the other's."""
    import re

    from harness.cluster.compose import project_name

    a, b = project_name("suite:/tmp/a/suite-1/cluster-1"), project_name("suite:/tmp/b/suite-1/cluster-1")
    assert a != b and a.startswith("rl-cluster-1-")
    run = project_name("run:/home/x/runs/20261126T013623Z-Compose_Long-s7")
    assert run.startswith("rl-20261126t013623z-composelong-s7-")
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9_-]*", p) for p in (a, b, run))  # what Compose accepts


def test_a_project_that_cannot_be_removed_does_not_keep_the_others(monkeypatch, tmp_path, registry):
    from harness.cluster import compose
    from harness.cluster.cleanup import clean_up_after_dead_harnesses
    from runtime.errors import SetupError

    registry("rl-a", "unix:///gone.sock")  # comes first
    registry("rl-b", "unix:///ours.sock")

    def remove_labelled(docker_host, label):
        if docker_host == "unix:///gone.sock":
            raise SetupError(f"the Docker Engine at {docker_host} does not answer")
        return 2

    monkeypatch.setattr(engine, "remove_labelled", remove_labelled)
    said: list[str] = []
    clean_up_after_dead_harnesses("the start of run r2", said.append)
    assert said[0] == (
        f"removed compose project rl-b (its containers and network), left behind by run:{tmp_path / 'runs' / 'rl-b'}"
    )
    assert said[1].startswith("could not remove compose project rl-a: the Docker Engine at unix:///gone.sock")
    assert sorted(p.name for p in compose.compose_registry().iterdir()) == ["rl-a.json"]  # kept for a later cleanup
