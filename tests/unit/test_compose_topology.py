"""harness/cluster/compose_topology.py: the Compose project written for a cluster — what is
published (127.0.0.1 only), who reaches whom through Toxiproxy, labels, start order. Pure: no engine."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from harness.cluster.compose_topology import OWNER_LABEL, Images, render
from harness.cluster.spec import ClusterSpec, ProjectCoordinator

IMAGES = Images(
    kafka="rebalance-lab/kafka:test",
    toxiproxy="rebalance-lab/toxiproxy:test",
    coordinator="rebalance-lab/coordinator:test",
)


def properties(path) -> dict:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


@pytest.fixture
def zk_project(tmp_path):
    spec = ClusterSpec(
        kafka="3.9",
        brokers=3,
        lanes=2,
        coordinator=ProjectCoordinator("v3", instances=2, history=str(tmp_path / "run" / "history.jsonl")),
    )
    topology = render(spec, tmp_path / "p", IMAGES, "rl-test", "run:/runs/x")
    return topology, yaml.safe_load(topology.compose_file.read_text())


def test_every_service_and_the_network_carry_the_owner_and_publish_on_loopback_only(zk_project):
    topology, project = zk_project
    services = project["services"]
    assert set(services) == {
        "toxiproxy",
        "zookeeper-1",
        "broker-1",
        "broker-2",
        "broker-3",
        "coordinator-1",
        "coordinator-2",
    }
    assert project["name"] == "rl-test"
    assert project["networks"]["lab"]["labels"] == {OWNER_LABEL: "run:/runs/x"}
    for name, service in services.items():
        assert service["labels"] == {OWNER_LABEL: "run:/runs/x"}, name
        assert service["networks"] == ["lab"], name
        for port in service.get("ports", []):
            host, outside, inside = port.split(":")
            assert host == "127.0.0.1" and outside == inside, (name, port)
    published = {int(p.split(":")[1]) for s in services.values() for p in s.get("ports", [])}
    network = topology.network
    assert {network.direct[b] for b in (1, 2, 3)} <= published  # the harness's direct bootstrap
    assert {r.listen_port for r in network.routes.values() if r.proxy.startswith("lane-")} <= published
    inter_broker = {r.listen_port for r in network.routes.values() if ".to." in r.proxy}
    assert not inter_broker & published  # links between nodes stay on the project's network


def test_brokers_reach_each_other_and_zookeeper_through_toxiproxy_and_clients_through_their_lane(zk_project):
    topology, _ = zk_project
    b1 = properties(topology.directory / "config" / "broker-1.properties")
    assert b1["listeners"].startswith("CLIENT://broker-1:")
    advertised = dict(item.split("://") for item in b1["advertised.listeners"].split(","))
    assert advertised["CLIENT"].startswith("127.0.0.1:")
    assert advertised["LANE1"] == f"127.0.0.1:{topology.network.routes['lane-1.broker-1'].listen_port}"
    assert advertised["FROM2"] == f"toxiproxy:{topology.network.routes['broker-2.to.broker-1'].listen_port}"
    assert advertised["FROM1"].startswith("broker-1:")  # itself: no proxy
    assert b1["zookeeper.connect"] == f"toxiproxy:{topology.network.routes['broker-1.to.zookeeper-1'].listen_port}"
    proxies = {p["name"]: p for p in json.loads((topology.directory / "config" / "toxiproxy-proxies.json").read_text())}
    assert (
        proxies["broker-1.to.zookeeper-1"]["upstream"]
        == f"zookeeper-1:{topology.network.zookeeper_ports['zookeeper-1']}"
    )
    assert proxies["lane-2.coordinator-1"]["upstream"].startswith("coordinator-1:")
    assert all(p["listen"].startswith("toxiproxy:") for p in proxies.values())


def test_start_order_is_declared_with_healthchecks_and_the_coordinators_write_into_the_run(zk_project, tmp_path):
    topology, project = zk_project
    services = project["services"]
    assert services["broker-2"]["depends_on"] == {
        "toxiproxy": {"condition": "service_healthy"},
        "zookeeper-1": {"condition": "service_healthy"},
    }
    assert all("healthcheck" in s for s in services.values())
    coordinator = json.loads((topology.directory / "config" / "coordinator-1.json").read_text())
    assert coordinator["host"] == "coordinator-1" and coordinator["history"] == str(tmp_path / "run" / "history.jsonl")
    assert f"{tmp_path / 'run'}:{tmp_path / 'run'}" in services["coordinator-1"]["volumes"]
    assert coordinator["zookeeper_connect"].startswith("toxiproxy:")
    log4j = (topology.directory / "config" / "broker-1.log4j").read_text()
    assert "/lab/logs/broker-1.log" in log4j  # the server log lands in the mounted logs directory
    ports = (topology.directory / "PORTS.md").read_text()
    assert topology.network.direct_bootstrap() in ports and "127.0.0.1 only" in ports


def test_kraft_formats_storage_once_and_compose_does_not_read_the_shell_s_dollar(tmp_path):
    topology = render(ClusterSpec(kafka="4.1", brokers=1, lanes=1), tmp_path / "k", IMAGES, "rl-k", "run:k")
    text = topology.compose_file.read_text()
    project = yaml.safe_load(text)
    assert set(project["services"]) == {"toxiproxy", "controller-1", "broker-1"}
    command = project["services"]["broker-1"]["command"]
    assert command[:2] == ["bash", "-c"] and "--ignore-formatted" in command[2] and command[2].endswith('exec "$$@"')
    assert re.search(r"\$[^$]", text.replace("$$", "")) is None  # no $ left for Compose to interpolate
    controller = properties(topology.directory / "config" / "controller-1.properties")
    assert controller["listeners"] == f"CONTROLLER://controller-1:{topology.controller_port}"
    broker = properties(topology.directory / "config" / "broker-1.properties")
    assert broker["controller.quorum.voters"] == f"1000@controller-1:{topology.controller_port}"
