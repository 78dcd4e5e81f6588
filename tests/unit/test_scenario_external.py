"""backend: external — what a scenario on someone else's cluster may say and do, refused up
front with the reason; the run's topics and group carry its id. The real cluster side is
tests/integration/test_external_target.py."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from harness.scenario import Scenario, validation_problems

SMOKE = yaml.safe_load((Path(__file__).resolve().parents[2] / "scenarios" / "smoke.yaml").read_text())


def external(**cluster) -> dict:
    data = copy.deepcopy(SMOKE)
    data["cluster"] = {"backend": "external", "kafka": "3.9", "bootstrap_servers": "127.0.0.1:9092", **cluster}
    data["faults"] = [
        {"kind": "pause", "target": "consumer-2", "at_s": 8, "duration_s": 12},
        {"kind": "crash", "target": "consumer-1", "at_s": 26, "restart_after_s": 3},
    ]
    return data


def problems(data: dict) -> str:
    """What the user is told: `key: reason` per line (as ScenarioError prints them)."""
    with pytest.raises(ValidationError) as e:
        Scenario.model_validate(data)
    return "\n".join(f"{key}: {reason}" for key, reason in validation_problems(e.value))


def test_faults_on_the_runs_own_processes_are_accepted():
    s = Scenario.model_validate(external(client_config={"security.protocol": "PLAINTEXT"}))
    assert s.cluster.external and s.cluster.client_config == {"security.protocol": "PLAINTEXT"}


@pytest.mark.parametrize(
    "fault, reason",
    [
        (
            {"kind": "crash", "target": "broker-2", "at_s": 5},
            "faults[1].target: the external backend cannot pause, stop or restart the cluster's brokers, ZooKeeper or "
            "coordinator: it does not run them; faults act only on the processes the run starts (consumer-1, ",
        ),
        ({"kind": "pause", "target": "coordinator", "at_s": 5, "duration_s": 3}, "not 'coordinator'"),
        (
            {"kind": "network", "target": "consumer-1", "at_s": 5, "duration_s": 3},
            "faults[1].kind: the external backend cannot cut or degrade network links: its clients and brokers do not talk "
            "through the harness's own Toxiproxy",
        ),
        (
            {"kind": "zk-session-expiry", "target": "broker-1", "at_s": 5},
            "faults[1].kind: the external backend cannot expire ZooKeeper sessions: that needs control of the cluster's "
            "brokers and ZooKeeper",
        ),
        (
            {"kind": "add-partitions", "topic": "events", "partitions": 12, "at_s": 5},
            "faults[1].kind: the external backend cannot create or grow topics during the run: the harness only creates "
            "the run's own topics there",
        ),
        (
            {
                "kind": "pause",
                "target": "consumer-1",
                "at_s": 5,
                "duration_s": 3,
                "on": {"state": "PreparingRebalance"},
            },
            "faults[1].on: the external backend cannot read the brokers' logs, where a trigger sees the group's states",
        ),
    ],
)
def test_faults_that_need_the_cluster_are_refused_with_the_reason(fault, reason):
    data = external()
    data["faults"] = [fault]
    assert reason in problems(data)


def test_random_faults_are_held_to_the_same_rule():
    data = external()
    data["faults"] = []
    data["random_faults"] = {"count": 3, "kinds": ["pause", "network"], "duration_s": [2, 4]}
    assert "random_faults.kinds: network: the external backend cannot cut or degrade network links" in problems(data)
    data["random_faults"]["kinds"] = ["pause", "crash", "poll-stall"]
    schedule = Scenario.model_validate(data).schedule()
    assert len(schedule) == 3 and all(f["target"].startswith("consumer-") for f in schedule)


@pytest.mark.parametrize(
    "cluster, reason",
    [
        ({"bootstrap_servers": None}, "cluster.bootstrap_servers: an external cluster needs its bootstrap servers"),
        ({"brokers": 5}, "cluster.brokers: an external cluster is not started by the harness"),
        ({"client_config": {"group.id": "x"}}, "cluster.client_config.group.id: the harness sets this"),
        ({"bootstrap_servers": "not an address"}, "cluster.bootstrap_servers"),
    ],
)
def test_the_cluster_section_of_an_external_cluster(cluster, reason):
    data = external(**cluster)
    if cluster.get("bootstrap_servers", "") is None:
        del data["cluster"]["bootstrap_servers"]
    assert reason in problems(data)


def test_external_settings_on_a_cluster_the_harness_runs_are_refused():
    data = copy.deepcopy(SMOKE)
    data["cluster"]["bootstrap_servers"] = "127.0.0.1:9092"
    assert "cluster.bootstrap_servers: only for backend: external" in problems(data)


@pytest.mark.parametrize(
    "workload, reason",
    [
        (
            {"protocol": "zk-eager"},
            "workload.protocol: zk-eager rebalances through ZooKeeper, which the harness runs itself",
        ),
        ({"protocol": "coordinator-v2"}, "keeps its groups in ZooKeeper, which the harness runs itself"),
        (
            {"driver": "java"},
            "workload.driver: on an external cluster members use a driver given cluster.client_config",
        ),
    ],
)
def test_what_needs_more_than_kafka_is_refused(workload, reason):
    data = external()
    data["workload"].update(workload)
    data["workload"].pop("assignor", None)
    assert reason in problems(data)


def test_the_runs_topics_and_group_carry_its_prefix():
    data = external()
    data["workload"]["producer"]["topic"] = "events"
    s = Scenario.model_validate(data).isolated("rl-run7-")
    assert [t.name for t in s.topics] == ["rl-run7-events"] and s.workload.group == "rl-run7-smoke"
    assert s.produced_topic == "rl-run7-events" and s.consumed_topics == ["rl-run7-events"]
    data["workload"].pop("producer")
    data["workload"]["topic_pattern"] = "^ev.*"
    s = Scenario.model_validate(data).isolated("rl-run.7-")
    assert s.workload.topic_pattern == r"^rl\-run\.7\-ev.*" and s.subscribes("rl-run.7-events")
    assert not s.subscribes("events")


def test_run_backend_external_needs_the_clusters_address():
    from runtime.errors import ScenarioError

    with pytest.raises(ScenarioError, match="bootstrap_servers: an external cluster needs its bootstrap servers"):
        Scenario.model_validate(SMOKE).with_backend("external")
    assert Scenario.model_validate(SMOKE).with_backend("compose").cluster.backend == "compose"


def test_rolling_restarts_of_their_brokers_and_kip848_timing_are_refused():
    data = external()
    data["faults"] = [{"kind": "rolling-restart", "targets": "brokers", "at_s": 5}]
    assert (
        "faults[1].targets: the external backend cannot pause, stop or restart the cluster's brokers, ZooKeeper "
        "or coordinator: it does not run them"
    ) in problems(data)
    data = external(kafka="4.1")
    data["workload"].update(protocol="consumer", assignor="uniform")
    assert "workload.session_timeout_ms: KIP-848 groups take their timing from the brokers" in problems(data)
    del data["workload"]["session_timeout_ms"], data["workload"]["heartbeat_interval_ms"]
    Scenario.model_validate(data)  # the cluster's own timing


def test_every_setting_the_clients_make_their_own_is_refused_in_client_config():
    from harness.scenario import HARNESS_CLIENT_SETTINGS
    from oracle.protocols import GENERATIONS
    from workloads.consumer import LibrdkafkaSettings, client_config
    from workloads.driver import MemberSpec, protocol_fields
    from workloads.producer import ProducerSpec

    for protocol, assignor in (("classic-static", "range"), ("consumer", "uniform")):
        spec = MemberSpec(
            member="consumer-1",
            incarnation=1,
            history="h",
            bootstrap_servers="b",
            group="g",
            topics=["t"],
            **protocol_fields(GENERATIONS[protocol]),
            assignor=assignor,
            commit="sync",
            processing_ms=0,
            session_timeout_ms=6000,
            heartbeat_interval_ms=1000,
            max_poll_interval_ms=300000,
            client_settings={"security.protocol": "SSL"},
            settings=LibrdkafkaSettings(),
        )
        for conf in (client_config(spec), spec.fetcher_config("x")):
            assert set(conf) - {"security.protocol"} <= HARNESS_CLIENT_SETTINGS
            assert conf["security.protocol"] == "SSL"
    conf = ProducerSpec(
        history="h",
        bootstrap_servers="b",
        topic="t",
        partitions=6,
        rate=200,
        linger_ms=50,
        client_settings={"security.protocol": "SSL"},
    ).client_config()
    assert set(conf) - {"security.protocol"} <= HARNESS_CLIENT_SETTINGS
    assert conf["security.protocol"] == "SSL" and conf["linger.ms"] == 50
