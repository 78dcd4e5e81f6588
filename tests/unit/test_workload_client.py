"""workload.client: validation by the driver's distribution, the floor and the generation; the
environments a release gets (one install whoever asks, nothing left by a failed one); the
interpreter and spec each member incarnation runs with. docs/inputs.md's messages are these."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from faults.base import MemberChanges
from harness.components import client_envs
from harness.scenario import load_scenario
from runtime.errors import ScenarioError, SetupError
from tests.lines import unlined
from workloads.client_versions import DISTRIBUTIONS, parse_client, version_key

REPO = Path(__file__).resolve().parents[2]
INPUTS = (REPO / "docs" / "inputs.md").read_text()


def scenario(tmp_path: Path, **workload) -> Path:
    path = tmp_path / "s.yaml"
    data = {"name": "s", "duration_s": 10, "topics": [{"name": "events", "partitions": 2}], "workload": workload}
    path.write_text(yaml.safe_dump(data))
    return path


def refused(tmp_path: Path, **workload) -> list[tuple[str, str]]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario(tmp_path, **workload))
    return unlined(info.value.problems)


@pytest.mark.parametrize(
    "workload, message",
    [
        (dict(client="confluent-kafka>=2.2"), "'confluent-kafka>=2.2' is not a requirement of one exact release"),
        (dict(client="kafka-python==2.0.2"), "'kafka-python': members run on confluent-kafka or kafka-clients"),
        (
            dict(client="kafka-clients==3.9.2"),
            "the librdkafka driver takes a release of confluent-kafka ('confluent-kafka==<version>'), not of kafka-clients",
        ),
        (
            dict(client="confluent-kafka==2.2.0", protocol="zk-eager"),
            "zk-eager members (driver: librdkafka) run on the harness's own client only; they take no client release",
        ),
        (
            dict(client="confluent-kafka==1.9.2"),
            "confluent-kafka==1.9.2: below the floor, confluent-kafka 2.0.2: the oldest confluent-kafka with a "
            "CPython 3.11 manylinux wheel (1.9.2 and older have none)",
        ),
        (
            dict(client="confluent-kafka==2.2.0", protocol="consumer"),
            "confluent-kafka==2.2.0: protocol consumer needs confluent-kafka>=2.4.0 (librdkafka speaks KIP-848's "
            "ConsumerGroupHeartbeat v0 (Kafka 3.7/3.8's early access) from 2.4.0 to 2.9.x, v1 (Kafka 4.0's GA) "
            "from 2.10.0)",
        ),
        (
            dict(client="kafka-clients==3.2.0", driver="java", protocol="classic-eager"),
            "the java driver runs Kafka's tools of that release: Kafka 3.2.0 is older than the supported range",
        ),
        (
            dict(client="kafka-clients==3.9", driver="java", protocol="classic-eager"),
            "kafka-clients==3.9: the java driver runs Kafka's tools of one exact release (X.Y.Z)",
        ),
    ],
)
def test_a_client_the_members_cannot_run_is_refused_naming_the_key_and_why(tmp_path, workload, message):
    if workload.get("protocol") == "consumer":
        data = yaml.safe_load(scenario(tmp_path, **workload).read_text())
        data["cluster"] = {"kafka": "4.4"}
        scenario(tmp_path).write_text(yaml.safe_dump(data))
        with pytest.raises(ScenarioError) as info:
            load_scenario(tmp_path / "s.yaml")
        problems = unlined(info.value.problems)
    else:
        problems = refused(tmp_path, **workload)
    [said] = [reason for key, reason in problems if key == "workload.client"]
    assert said.startswith(message)
    assert said.split("==<version>")[0] in INPUTS  # the docs say it as it is said


def test_the_docs_example_and_the_releases_at_and_above_the_floor_load(tmp_path):
    example = INPUTS.split("## Client releases")[1].split("```yaml\n")[1].split("```")[0]
    data = {"name": "s", "duration_s": 10, "topics": [{"name": "events", "partitions": 2}], **yaml.safe_load(example)}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(data))
    assert load_scenario(tmp_path / "e.yaml").workload.client == "confluent-kafka==2.2.0"
    for client in ("confluent-kafka==2.0.2", "confluent-kafka==2.16.1"):
        assert load_scenario(scenario(tmp_path, client=client)).workload.client == client
    assert load_scenario(scenario(tmp_path, driver="java", client="kafka-clients==3.9.2")).workload.client
    # The consumer protocol: a client speaking the ConsumerGroupHeartbeat version its brokers answer.
    for kafka, client in (("4.4", "confluent-kafka==2.10.1"), ("3.7.2", "confluent-kafka==2.6.1")):
        data = yaml.safe_load(scenario(tmp_path, protocol="consumer", client=client).read_text())
        (tmp_path / "c.yaml").write_text(yaml.safe_dump({**data, "cluster": {"kafka": kafka, "metadata": "kraft"}}))
        assert load_scenario(tmp_path / "c.yaml").workload.client == client
    for kafka, client in (("4.4", "confluent-kafka==2.9.0"), ("3.7.2", "confluent-kafka==2.10.0")):
        data = yaml.safe_load(scenario(tmp_path, protocol="consumer", client=client).read_text())
        (tmp_path / "c.yaml").write_text(yaml.safe_dump({**data, "cluster": {"kafka": kafka, "metadata": "kraft"}}))
        with pytest.raises(ScenarioError) as info:
            load_scenario(tmp_path / "c.yaml")
        [(key, reason)] = unlined(info.value.problems)
        assert key == "workload.client" and "(for it: confluent-kafka " in reason
        assert reason.split(": its members")[0].split(" speaks ")[1].split(";")[0] in INPUTS.replace("`", "")


def test_releases_sort_by_their_numbers_a_pre_release_before_its_release():
    assert version_key("2.10.1") > version_key("2.9.0") > version_key("2.2.0") > version_key("2.0.2")
    assert version_key("2.10.1rc1") < version_key("2.10.1")
    assert parse_client(" Confluent_Kafka == 2.3.0 ").distribution is DISTRIBUTIONS["confluent-kafka"]


# --------------------------------------------------------------------- what PyPI has, asked before a run


def test_a_release_pypi_lacks_as_a_wheel_for_this_python_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    files = (
        "confluent-kafka-2.3.0.tar.gz",
        "confluent_kafka-2.3.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "confluent_kafka-2.4.0-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "confluent-kafka-2.4.0.tar.gz",
    )
    monkeypatch.setattr(client_envs, "_pypi_files", lambda project: files)
    monkeypatch.setattr(client_envs.os, "uname", lambda: os.uname_result(("Linux", "h", "r", "v", "x86_64")))
    monkeypatch.setattr(client_envs, "_WHEEL_TAG", "cp311")
    assert client_envs.pypi_problem(parse_client("confluent-kafka==2.3.0")) is None
    assert client_envs.pypi_problem(parse_client("confluent-kafka==2.3.7")) == (
        "PyPI has no release 2.3.7 of confluent-kafka"
    )
    assert client_envs.pypi_problem(parse_client("confluent-kafka==2.4.0")) == (
        "PyPI has no cp311 manylinux x86_64 wheel of confluent-kafka==2.4.0 (wheels only: the floor is 2.0.2)"
    )
    # The pinned release is the harness's own: nothing to ask.
    monkeypatch.setattr(client_envs, "_pypi_files", lambda project: pytest.fail("asked PyPI"))
    assert client_envs.pypi_problem(client_envs.default_client("confluent-kafka")) is None


def test_run_refuses_a_release_pypi_lacks_with_exit_2_before_a_run_directory(tmp_path):
    path = scenario(tmp_path, client="confluent-kafka==2.3.7")
    env = {**os.environ, "REBALANCE_LAB_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    code = (
        "import sys; from harness.components import client_envs as c; "
        "c._pypi_files = lambda p: ('confluent_kafka-2.3.0-cp311-cp311-manylinux_2_17_x86_64.whl',); "
        "from harness.cli import main; sys.argv[0] = 'rebalance-lab'; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "run", str(path), "--runs-dir", str(tmp_path / "runs")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, unlined(result.stderr)
    assert "workload.client: PyPI has no release 2.3.7 of confluent-kafka" in unlined(result.stderr)
    assert "Traceback" not in result.stdout + unlined(result.stderr)
    assert not (tmp_path / "runs").exists()


# --------------------------------------------------------------------- the environments


def fake_build(calls: list, fail: bool = False):
    """client_envs._build without pip: an environment that looks like one (its python a link to ours)."""

    def build(requirement, staging: Path) -> None:
        calls.append(str(requirement))
        (staging / "bin").mkdir(parents=True)
        if fail:
            (staging / "bin" / "half-written").write_text("")
            raise SetupError(f"pip install {requirement} failed")
        (staging / "bin" / "python").symlink_to(sys.executable)
        marker = {**client_envs._marker(requirement), "librdkafka": requirement.version}
        (staging / ".installed").write_text(json.dumps(marker))

    return build


def test_several_processes_asking_at_once_install_a_release_once(monkeypatch, tmp_path):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    calls: list = []
    monkeypatch.setattr(client_envs, "_build", fake_build(calls))
    requirement = parse_client("confluent-kafka==2.2.0")
    results: list = []
    threads = [
        threading.Thread(target=lambda: results.append(client_envs.install_client(requirement, lambda _m: None)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == ["confluent-kafka==2.2.0"] and sorted(results) == [False, False, False, True]
    assert client_envs.installed_librdkafka(requirement) == "2.2.0"
    assert client_envs.member_python(requirement) == str(client_envs.env_dir(requirement) / "bin" / "python")
    assert [p.name for p in client_envs.env_dir(requirement).parent.iterdir() if p.name.startswith(".staging")] == []


def test_a_failed_install_leaves_nothing_that_looks_installed(monkeypatch, tmp_path):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    monkeypatch.setattr(client_envs, "_build", fake_build([], fail=True))
    requirement = parse_client("confluent-kafka==2.2.0")
    with pytest.raises(SetupError):
        client_envs.install_client(requirement, lambda _m: None)
    components = client_envs.env_dir(requirement).parent
    assert not client_envs.env_dir(requirement).exists()
    assert not [p for p in components.iterdir() if p.name.startswith(".staging")]
    assert client_envs.installed_librdkafka(requirement) is None
    # A directory without a marker (an install cut short before this code) is not taken for one either,
    # and the staging an installer killed outright left is cleared by the next one.
    client_envs.env_dir(requirement).mkdir()
    (components / f".staging-{client_envs.env_dir(requirement).name}-99999" / "bin").mkdir(parents=True)
    monkeypatch.setattr(client_envs, "_build", fake_build([]))
    assert client_envs.install_client(requirement, lambda _m: None) is True
    assert not [p for p in components.iterdir() if p.name.startswith(".staging")]


def test_the_pinned_release_and_java_clients_run_in_the_harness_own_interpreter(monkeypatch, tmp_path):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    monkeypatch.setattr(client_envs, "_build", lambda *a: pytest.fail("installed something"))
    for requirement in (None, client_envs.default_client("confluent-kafka"), parse_client("kafka-clients==3.9.2")):
        assert client_envs.member_python(requirement) == sys.executable
        assert client_envs.member_environment(requirement) == {}
    assert client_envs.member_environment(parse_client("confluent-kafka==2.2.0")) == {
        "PYTHONPATH": str(REPO),
        "PYTHONNOUSERSITE": "1",
    }


# --------------------------------------------------------------------- each member incarnation's client


class Lanes:
    bootstrap_servers = "127.0.0.1:9092"

    def lane_bootstrap_servers(self, lane: int) -> str:
        return f"127.0.0.1:{19000 + lane}"


def workload_processes(tmp_path: Path, **workload):
    from harness.run.clients import WorkloadProcesses
    from harness.supervision.processes import Supervisor

    s = load_scenario(scenario(tmp_path, **workload))
    return WorkloadProcesses(s, tmp_path, Lanes(), Supervisor(owner="test"))


def test_the_run_client_is_the_scenarios_or_its_drivers_default(tmp_path):
    from harness.run.clients import run_client

    assert str(run_client(load_scenario(scenario(tmp_path)))) == "confluent-kafka==2.16.1"  # the pinned one
    assert (
        str(run_client(load_scenario(scenario(tmp_path, client="confluent-kafka==2.2.0")))) == "confluent-kafka==2.2.0"
    )
    assert str(run_client(load_scenario(scenario(tmp_path, driver="java")))) == "kafka-clients==3.9.2"  # the cluster's
    assert run_client(load_scenario(scenario(tmp_path, protocol="zk-eager"))) is None


def test_a_member_runs_its_incarnation_on_its_own_client_and_a_restart_may_change_it(monkeypatch, tmp_path):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(client_envs, "_build", fake_build([]))
    member = workload_processes(tmp_path, client="confluent-kafka==2.2.0").member("consumer-1")
    assert member.spec().client == "confluent-kafka==2.2.0"
    python = client_envs.env_dir(parse_client("confluent-kafka==2.2.0")) / "bin" / "python"
    assert member.command()[:3] == [str(python), "-m", "workloads.consumer"]  # installed on first use
    assert member.environment()["PYTHONPATH"] == str(REPO)
    # A rolling client upgrade (Targets.restart with MemberChanges): the next incarnation on another release (here the pinned one, the harness's own).
    member.change(MemberChanges(client="confluent-kafka==2.16.1"))
    assert member.spec().client == "confluent-kafka==2.16.1"
    assert member.command()[0] == sys.executable and member.environment() is None
    with pytest.raises(ValueError, match="consumer-1: .*below the floor"):
        member.change(MemberChanges(client="confluent-kafka==1.9.2"))
    with pytest.raises(ValueError, match="takes a release of confluent-kafka"):
        member.change(MemberChanges(client="kafka-clients==3.9.2"))
    assert str(member.client) == "confluent-kafka==2.16.1"
