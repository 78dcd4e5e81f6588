"""harness/cluster/config.py: the files ZooKeeper, brokers and the KRaft controller are started
with, as text, without starting anything. The listeners come from a real NetworkPlan, so the
templates are checked with what LocalCluster hands them."""

from __future__ import annotations

import itertools
from pathlib import Path
from xml.etree import ElementTree

import pytest
from pydantic import ValidationError

from harness.cluster import config
from harness.cluster.network import NetworkPlan
from harness.run import brokerlog
from harness.scenario import HARNESS_BROKER_SETTINGS, Cluster

DATA = Path("/runs/r1/cluster/data")


def network(brokers: int, zookeeper: bool = True) -> NetworkPlan:
    ports = itertools.count(40_000)
    return NetworkPlan(list(range(1, brokers + 1)), 2, {"zookeeper-1": 2181} if zookeeper else {}, lambda: next(ports))


def read_properties(text: str) -> dict[str, str]:
    """server.properties as Kafka reads it: one ``key=value`` a line, the first ``=`` splits."""
    assert text.endswith("\n")
    lines = text.splitlines()
    parsed = dict(line.split("=", 1) for line in lines)
    assert len(parsed) == len(lines), "a key written twice"
    return parsed


def zk_broker(node_id: int, brokers: int = 3, overrides: dict | None = None) -> dict[str, str]:
    plan = network(brokers)
    props = config.zk_broker_properties(
        node_id,
        plan.listener_properties(node_id),
        DATA / f"broker-{node_id}",
        brokers,
        plan.zookeeper_connect(node_id),
        overrides or {},
    )
    return read_properties(config.properties(props))


def kraft_broker(node_id: int, brokers: int = 3, overrides: dict | None = None) -> dict[str, str]:
    plan = network(brokers, zookeeper=False)
    props = config.kraft_broker_properties(
        node_id,
        plan.listener_properties(node_id),
        DATA / f"broker-{node_id}",
        brokers,
        "3000@127.0.0.1:39999",
        overrides or {},
    )
    return read_properties(config.properties(props))


# --------------------------------------------------------------------- brokers


def test_a_zookeeper_mode_broker_gets_its_id_its_listeners_its_log_dir_and_zookeeper_through_its_proxy():
    plan = network(3)
    props = zk_broker(2)
    assert props["broker.id"] == "2"
    for key, value in plan.listener_properties(2).items():
        assert props[key] == value
    assert props["log.dirs"] == "/runs/r1/cluster/data/broker-2"
    assert (
        props["zookeeper.connect"]
        == plan.zookeeper_connect(2)
        == f"127.0.0.1:{plan.routes['broker-2.to.zookeeper-1'].listen_port}"
    )
    assert props["zookeeper.session.timeout.ms"] == str(config.BROKER_ZK_SESSION_TIMEOUT_MS) == "6000"
    assert "node.id" not in props and "process.roles" not in props


def test_every_broker_listens_on_loopback_only():
    for props in (zk_broker(1), kraft_broker(3)):
        listeners = props["listeners"].split(",")
        assert listeners and all(entry.split("://")[1].startswith("127.0.0.1:") for entry in listeners)
        assert all(entry.split("://")[1].startswith("127.0.0.1:") for entry in props["advertised.listeners"].split(","))


def test_each_broker_has_a_log_dir_of_its_own():
    dirs = [zk_broker(b)["log.dirs"] for b in (1, 2, 3)]
    assert dirs == [f"/runs/r1/cluster/data/broker-{b}" for b in (1, 2, 3)]


@pytest.mark.parametrize("brokers, rf, min_isr", [(1, "1", "1"), (2, "2", "1"), (3, "3", "2"), (5, "3", "2")])
def test_replication_follows_the_cluster_size_up_to_three(brokers, rf, min_isr):
    props = zk_broker(1, brokers)
    assert (
        props["default.replication.factor"],
        props["offsets.topic.replication.factor"],
        props["transaction.state.log.replication.factor"],
    ) == (rf, rf, rf)
    assert (props["min.insync.replicas"], props["transaction.state.log.min.isr"]) == (min_isr, min_isr)


def test_the_harness_defaults_a_run_relies_on():
    props = zk_broker(1)
    assert props["group.initial.rebalance.delay.ms"] == "0"  # the first rebalance is not held back 3 s
    assert props["auto.create.topics.enable"] == "false"  # topics exist because the scenario says so
    assert props["unclean.leader.election.enable"] == "false"  # a crash never loses acknowledged records
    assert props["offsets.topic.num.partitions"] == "12"


def test_the_scenarios_broker_config_is_merged_last_and_wins():
    overrides = {
        "num.io.threads": 8,
        "zookeeper.session.timeout.ms": 12000,
        "group.min.session.timeout.ms": 2000,
        "log.retention.ms": -1,
    }
    props = zk_broker(1, overrides=overrides)
    assert {k: props[k] for k in overrides} == {
        "num.io.threads": "8",
        "zookeeper.session.timeout.ms": "12000",
        "group.min.session.timeout.ms": "2000",
        "log.retention.ms": "-1",
    }
    assert kraft_broker(1, overrides={"num.io.threads": 8})["num.io.threads"] == "8"
    assert zk_broker(1)["num.io.threads"] == "4"


def test_a_kraft_broker_is_a_broker_of_the_controller_quorum_and_knows_no_zookeeper():
    plan = network(3, zookeeper=False)
    props = kraft_broker(3)
    assert (props["node.id"], props["process.roles"]) == ("3", "broker")
    assert props["controller.quorum.voters"] == "3000@127.0.0.1:39999"
    assert props["controller.listener.names"] == "CONTROLLER"
    # The controller's listener is not one of the broker's own: only its security protocol is added.
    assert (
        props["listener.security.protocol.map"]
        == plan.listener_properties(3)["listener.security.protocol.map"] + ",CONTROLLER:PLAINTEXT"
    )
    assert props["listeners"] == plan.listener_properties(3)["listeners"]
    assert "CONTROLLER" not in props["listeners"]
    assert "zookeeper.connect" not in props and "broker.id" not in props


def test_the_kraft_controller_listens_on_loopback_at_the_port_its_voters_name():
    props = read_properties(
        config.properties(
            config.kraft_controller_properties(3000, 39999, DATA / "controller-1", "3000@127.0.0.1:39999")
        )
    )
    assert props == {
        "process.roles": "controller",
        "node.id": "3000",
        "controller.quorum.voters": "3000@127.0.0.1:39999",
        "listeners": "CONTROLLER://127.0.0.1:39999",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        "log.dirs": "/runs/r1/cluster/data/controller-1",
    }


def test_properties_are_one_setting_a_line_in_the_order_given():
    assert config.properties({"b": 1, "a": DATA, "c": "x=y"}) == f"b=1\na={DATA}\nc=x=y\n"
    assert config.properties({}) == ""


# --------------------------------------------------------------------- what a scenario may not override


def harness_derived_keys() -> set[str]:
    """The keys the templates fill from the network plan, the node's id and directory, the quorum."""
    zk = config.zk_broker_properties(1, network(3).listener_properties(1), DATA, 3, "127.0.0.1:1", {})
    kraft = config.kraft_broker_properties(1, network(3, False).listener_properties(1), DATA, 3, "v", {})
    from_inputs = {
        "broker.id",
        "node.id",
        "log.dirs",
        "zookeeper.connect",
        "process.roles",
        "controller.quorum.voters",
        "controller.listener.names",
        *network(3).listener_properties(1),
    }
    assert from_inputs <= set(zk) | set(kraft)
    return from_inputs


def test_every_setting_derived_from_the_plan_ids_dirs_or_quorum_is_refused_in_broker_config():
    """Overridden, a listener would bypass the proxies: a network fault would cut nothing."""
    derived = harness_derived_keys()
    assert derived <= HARNESS_BROKER_SETTINGS
    for key in sorted(derived):
        with pytest.raises(ValidationError, match=f"broker_config.{key}: the harness sets this for every broker"):
            Cluster(broker_config={key: "PLAINTEXT://0.0.0.0:9092"})


def test_any_other_broker_setting_is_accepted_and_reaches_the_file():
    cluster = Cluster(broker_config={"num.io.threads": 8, "message.max.bytes": "2000000"})
    assert zk_broker(1, overrides=cluster.broker_config)["message.max.bytes"] == "2000000"


# --------------------------------------------------------------------- ZooKeeper


def test_a_single_zookeeper_runs_standalone_on_loopback():
    cfg = read_properties(config.zookeeper_cfg(DATA / "zookeeper-1", 2181, [(1, 2888, 3888)]))
    assert cfg == {
        "dataDir": "/runs/r1/cluster/data/zookeeper-1",
        "clientPortAddress": "127.0.0.1",
        "clientPort": "2181",
        "tickTime": "500",
        "initLimit": "20",
        "syncLimit": "10",
        "minSessionTimeout": "1000",
        "maxSessionTimeout": "60000",
        "admin.enableServer": "false",
        "4lw.commands.whitelist": "ruok,stat,srvr,cons,mntr",
        "maxClientCnxns": "0",
    }


def test_an_ensemble_names_every_peer_with_its_quorum_and_election_ports():
    peers = [(1, 30001, 30002), (2, 30003, 30004), (3, 30005, 30006)]
    cfg = read_properties(config.zookeeper_cfg(DATA / "zookeeper-2", 2182, peers, tick_ms=200))
    assert {k: v for k, v in cfg.items() if k.startswith("server.")} == {
        "server.1": "127.0.0.1:30001:30002",
        "server.2": "127.0.0.1:30003:30004",
        "server.3": "127.0.0.1:30005:30006",
    }
    assert (cfg["clientPort"], cfg["tickTime"], cfg["minSessionTimeout"]) == ("2182", "200", "400")


# --------------------------------------------------------------------- logging


def test_log4j1_writes_the_group_coordinators_info_lines_to_the_log_file_in_the_pattern():
    props = read_properties(config.log4j1_properties(Path("/runs/r1/cluster/logs/broker-1.log")))
    assert props["log4j.appender.file.File"] == "/runs/r1/cluster/logs/broker-1.log"
    assert props["log4j.appender.file.layout.ConversionPattern"] == config.LOG_PATTERN
    assert props["log4j.rootLogger"] == "INFO, file"
    assert props["log4j.logger.kafka.coordinator.group"] == "INFO"
    assert props["log4j.logger.org.apache.kafka.coordinator.group"] == "INFO"


def test_log4j2_xml_is_well_formed_and_says_the_same():
    root = ElementTree.fromstring(config.log4j2_xml(Path("/runs/r1/cluster/logs/broker-1.log")))
    file_appender = root.find("Appenders/File")
    assert file_appender.get("fileName") == "/runs/r1/cluster/logs/broker-1.log"
    assert file_appender.find("PatternLayout").get("pattern") == config.LOG_PATTERN  # escaped, read back whole
    levels = {logger.get("name"): logger.get("level") for logger in root.iter("Logger")}
    assert levels["org.apache.kafka.coordinator.group"] == levels["kafka.coordinator.group"] == "INFO"
    assert root.find("Loggers/Root").get("level") == "INFO"


def test_a_line_kafka_wrote_with_the_pattern_is_read_by_the_broker_log_parser():
    """Written by Kafka 3.9.2 (broker-1.log of a smoke run, 2026-11-23) through log4j1_properties:
    the zone offset is in the timestamp, so the parser never guesses it."""
    line = (
        "[2026-11-23T22:50:03.435+0000] INFO [GroupCoordinator 1]: Stabilized group smoke generation 1 "
        "(__consumer_offsets-3) with 1 members (kafka.coordinator.group.GroupCoordinator)"
    )
    assert "%d{yyyy-MM-dd'T'HH:mm:ss.SSSZ}" in config.LOG_PATTERN
    assert brokerlog.parse_line(line) == (
        1795474203435.0,
        "coordinator_stabilized",
        {"group": "smoke", "generation": 1, "members": 1},
    )
