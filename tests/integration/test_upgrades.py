"""Upgrade paths as faults, against real brokers and real clients: a rolling broker upgrade
(ZooKeeper mode with its inter-broker protocol step, KRaft with metadata.version finalized) and a
rolling client upgrade, each under load and judged by every check of the oracle.

CI runs the cheapest upgrade that can fail: two members of a one-broker group moved from
confluent-kafka 2.10.1 to the pinned 2.16.1 (no broker restarted: ~40 s). The full campaign
(three-broker upgrades across lines) is marked ``campaign`` and left out of the default run
(pyproject's addopts); run it with

    python3 -m pytest -m campaign -n 1 tests/integration/test_upgrades.py
"""

from __future__ import annotations

import pytest

from harness.components import client_envs
from tests.integration.conftest import RunOutcome, assert_healed, small_scenario

INTER_BROKER_PROTOCOL = "inter.broker.protocol.version"


def upgrade_scenario(name: str, kafka: str, to: str, brokers: int, duration_s: int, protocol="classic-eager") -> dict:
    return {
        "name": name,
        "seed": 5,
        "duration_s": duration_s,
        "cluster": {"kafka": kafka, "brokers": brokers},
        "topics": [{"name": "events", "partitions": 6, "replication_factor": brokers}],
        "workload": {
            "group": name,
            "protocol": protocol,
            "assignor": "range",
            "consumers": 3,
            "commit": "sync",
            "processing_ms": 1,
            "session_timeout_ms": 10000,
            "heartbeat_interval_ms": 1000,
            "producer": {"rate": 100},
        },
        "faults": [{"kind": "rolling-broker-upgrade", "at_s": 5, "to": to, "interval_s": 3}],
        "recovery": {"timeout_s": 120, "stable_for_s": 3},
    }


def releases_run(run: RunOutcome, process: str) -> list[str]:
    """The Kafka release each start of that node ran, in order, as its process_started says."""
    return [e["kafka"] for e in run.named("process_started") if e["process"] == process]


def assert_upgraded(run: RunOutcome, old: str, new: str, nodes: list[str], settings: list[dict]) -> None:
    assert run.exit_code == 0, run.output[-4000:]
    assert all(check["status"] == "passed" for check in run.verdict["checks"].values()), run.verdict["checks"]
    [fault] = run.named("fault_started")
    assert fault["details"]["from"] == old and fault["details"]["to"] == new
    assert fault["details"]["order"] == nodes
    restarted = run.named("node_restarted")
    assert [(e["process"], e["kafka"], e["settings"]) for e in restarted] == [
        (node, new, setting) for node, setting in zip([*nodes, *nodes][: len(settings)], settings, strict=True)
    ]
    assert all(e["problems"] == [] for e in restarted), restarted
    for node in nodes:  # started on the old release, every start after the upgrade's on the new one
        runs = releases_run(run, node)
        assert runs[0] == old and set(runs[1:]) == {new}, (node, runs)
    assert_healed(run)


@pytest.mark.campaign
def test_a_zookeeper_cluster_upgraded_across_lines_with_its_protocol_raised_by_a_second_roll(module_run):
    brokers = ["broker-1", "broker-2", "broker-3"]
    run = module_run("upgrade-zk", upgrade_scenario("upgrade-zk", "3.8.1", "3.9.2", 3, 100))
    pinned, raised = {INTER_BROKER_PROTOCOL: "3.8"}, {INTER_BROKER_PROTOCOL: "3.9"}
    assert_upgraded(run, "3.8.1", "3.9.2", brokers, [pinned] * 3 + [raised] * 3)
    [final] = run.named("cluster_finalized")
    assert (final["metadata"], final["feature"], final["previous"], final["level"]) == (
        "zookeeper",
        INTER_BROKER_PROTOCOL,
        "3.8",
        "3.9",
    )
    assert final["mono_ms"] > run.named("node_restarted")[-1]["mono_ms"]


@pytest.mark.campaign
def test_a_kraft_cluster_upgraded_controller_first_then_its_metadata_version_finalized(module_run):
    nodes = ["controller-1", "broker-1", "broker-2", "broker-3"]
    run = module_run("upgrade-kraft", upgrade_scenario("upgrade-kraft", "4.3.1", "4.4.0", 3, 120))
    assert_upgraded(run, "4.3.1", "4.4.0", nodes, [{}] * 4)
    [final] = run.named("cluster_finalized")
    assert (final["metadata"], final["feature"]) == ("kraft", "metadata.version")
    assert final["previous"].startswith("4.3-") and final["level"].startswith("4.4-"), final


OLD_CLIENT = "confluent-kafka==2.10.1"


def test_a_rolling_client_upgrade_restarts_each_member_on_the_new_librdkafka(run_scenario):
    """Each member's first incarnation loads the old librdkafka, its restart the new one; the group
    rides it out under load."""
    import confluent_kafka

    new = f"confluent-kafka=={confluent_kafka.__version__}"  # the pinned default: the harness's own
    scenario = small_scenario("client-upgrade", duration_s=30)
    scenario["workload"]["client"] = OLD_CLIENT
    scenario["faults"] = [{"kind": "rolling-client-upgrade", "at_s": 4, "to": new, "interval_s": 4}]
    run = run_scenario(scenario)
    assert run.exit_code == 0, run.output[-4000:]
    assert all(check["status"] == "passed" for check in run.verdict["checks"].values()), run.verdict["checks"]
    old_lib = client_envs.installed_librdkafka(client_envs.requirement_of(OLD_CLIENT))
    new_lib = confluent_kafka.libversion()[0]
    assert old_lib and old_lib != new_lib
    [fault] = run.named("fault_started")
    assert fault["details"]["order"] == ["consumer-1", "consumer-2"]
    started = [(e["member"], e["incarnation"], e["client_version"]) for e in run.named("consumer_started")]
    for member in ("consumer-1", "consumer-2"):
        lives = [(inc, version) for m, inc, version in started if m == member]
        assert lives[0] == (1, old_lib), lives
        assert len(lives) >= 2 and {version for _, version in lives[1:]} == {new_lib}, lives
    [started_run] = run.named("run_started")
    assert started_run.get("client", OLD_CLIENT) == OLD_CLIENT
    assert_healed(run)
