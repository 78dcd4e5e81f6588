"""A cluster as a Compose project: the compose file and every service's configuration,
written from a ClusterSpec. Pure: writes files, starts nothing.

Each service kind is a fragment in ``compose/services/`` (readable YAML with ``${…}``
placeholders); this module fills them in from the same network plan and configuration
templates the local backend uses, with the nodes' Compose service names where the local
backend has 127.0.0.1. What the harness and the members reach is published on
127.0.0.1 only, under the same port number as inside the container::

    <dir>/compose.yaml            the project (`docker compose up -d --wait` starts it)
    <dir>/config/                 each node's configuration, mounted read-only at /lab/config
    <dir>/logs/                   the JVMs' server logs (mounted at /lab/logs)
    <dir>/data/                   the coordinators' published ZooKeeper sessions
    <dir>/PORTS.md                which 127.0.0.1 port is which
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

from harness.cluster import config, zookeeper
from harness.cluster.local import KRAFT_CONTROLLER_ID, _kraft_cluster_id
from harness.cluster.message_lanes import message_lanes
from harness.cluster.network import Hosts, NetworkPlan
from harness.cluster.ports import free_port
from harness.cluster.spec import ClusterSpec
from harness.components.containers.images import Images

FRAGMENTS = Path(__file__).resolve().parents[2] / "compose" / "services"
CONFIG, LOGS, DATA = PurePosixPath("/lab/config"), PurePosixPath("/lab/logs"), PurePosixPath("/lab/data")
HOSTS = Hosts(containers=True)
OWNER_LABEL = "rebalance-lab.owner"  # on every container and network of a run: what `cleanup` removes


@dataclass
class Topology:
    """What a rendered project is: its name, its network plan and its published ports."""

    project: str
    directory: Path
    kafka: str
    zookeeper_mode: bool
    network: NetworkPlan
    toxiproxy_api_port: int
    broker_ids: dict[str, int]
    jolokia_ports: dict[str, int] = field(default_factory=dict)  # ZooKeeper node -> published Jolokia port
    controller_port: int | None = None

    @property
    def compose_file(self) -> Path:
        return self.directory / "compose.yaml"


def render(
    spec: ClusterSpec, directory: Path, images: Images, project: str, owner: str, history_dir: Path | None = None
) -> Topology:
    """Write the Compose project for ``spec`` into ``directory``."""
    directory = directory.resolve()
    for sub in ("config", "logs", "data"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    zookeeper_mode = spec.zookeeper_mode
    log4j1 = spec.release.log4j == "log4j1"  # the release's logging family, not its metadata mode
    zk_nodes = [f"zookeeper-{i}" for i in range(1, spec.zookeeper_nodes + 1)] if zookeeper_mode else []
    zk_ports = {name: free_port() for name in zk_nodes}
    coordinators = spec.coordinator_names()
    broker_ids = {f"broker-{i}": i for i in range(1, spec.brokers + 1)}
    network = NetworkPlan(
        list(broker_ids.values()),
        spec.lanes,
        zk_ports,
        free_port,
        coordinators,
        hosts=HOSTS,
        message_lanes=message_lanes(spec),
    )
    topology = Topology(project, directory, spec.kafka, zookeeper_mode, network, free_port(), broker_ids)
    labels = {OWNER_LABEL: owner}
    fill = _Filler(directory, labels)
    services: dict[str, dict] = {}

    (directory / "config" / "toxiproxy-proxies.json").write_text(
        json.dumps(
            [
                {"name": r.proxy, "listen": r.listen, "upstream": r.upstream, "enabled": True}
                for r in network.routes.values()
            ],
            indent=2,
        )
    )
    services.update(
        fill(
            "toxiproxy",
            image=images.toxiproxy,
            binary=images.toxiproxy_binary,
            api_port=topology.toxiproxy_api_port,
            ports=_published([topology.toxiproxy_api_port, *network.published_ports("toxiproxy")]),
        )
    )
    quorum: list[str]
    if zookeeper_mode:
        (directory / "config" / "jolokia-access.xml").write_text(zookeeper.jolokia_policy(remote_hosts=()))
        peers = [(i, free_port(), free_port()) for i in range(1, len(zk_nodes) + 1)]
        for i, name in enumerate(zk_nodes, start=1):
            topology.jolokia_ports[name] = free_port()
            data = DATA / name
            (directory / "config" / f"{name}.cfg").write_text(
                config.zookeeper_cfg(data, zk_ports[name], peers, host_of=HOSTS.of, node=name)
            )
            agent = zookeeper.jolokia_javaagent(
                images.jolokia_agent, topology.jolokia_ports[name], Path(CONFIG / "jolokia-access.xml"), host="0.0.0.0"
            )
            prepare = f"mkdir -p {data} && echo {i} > {data}/myid" if len(zk_nodes) > 1 else ""
            services.update(
                fill(
                    "zookeeper",
                    name=name,
                    image=images.kafka,
                    client_port=zk_ports[name],
                    command=_jvm(
                        fill,
                        name,
                        images,
                        log4j1,
                        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                        CONFIG / f"{name}.cfg",
                        [agent],
                        prepare,
                    ),
                    ports=_published([zk_ports[name], topology.jolokia_ports[name]]),
                )
            )
        quorum = zk_nodes
    else:
        topology.controller_port = free_port()
        voters = f"{KRAFT_CONTROLLER_ID}@{HOSTS.of('controller-1')}:{topology.controller_port}"
        cluster_id = _kraft_cluster_id()
        (directory / "config" / "controller-1.properties").write_text(
            config.properties(
                config.kraft_controller_properties(
                    KRAFT_CONTROLLER_ID,
                    topology.controller_port,
                    DATA / "controller-1",
                    voters,
                    host=HOSTS.of("controller-1"),
                )
            )
        )
        services.update(
            fill(
                "controller",
                name="controller-1",
                image=images.kafka,
                port=topology.controller_port,
                command=_jvm(
                    fill,
                    "controller-1",
                    images,
                    log4j1,
                    "kafka.Kafka",
                    CONFIG / "controller-1.properties",
                    [],
                    _format_storage(images, cluster_id, "controller-1"),
                ),
            )
        )
        quorum = ["controller-1"]

    for name, i in broker_ids.items():
        listeners = network.listener_properties(i)
        if zookeeper_mode:
            props = config.zk_broker_properties(
                i, listeners, DATA / name, spec.brokers, network.zookeeper_connect(i), spec.broker_settings(i)
            )
        else:
            props = config.kraft_broker_properties(
                i, listeners, DATA / name, spec.brokers, voters, spec.broker_settings(i)
            )
        (directory / "config" / f"{name}.properties").write_text(config.properties(props))
        prepare = "" if zookeeper_mode else _format_storage(images, cluster_id, name)
        services.update(
            fill(
                "broker",
                name=name,
                image=images.kafka,
                port=network.direct[i],
                command=_jvm(
                    fill,
                    name,
                    images,
                    log4j1,
                    "kafka.Kafka",
                    CONFIG / f"{name}.properties",
                    [],
                    prepare,
                    spec.broker_heap_mb,
                ),
                ports=_published(network.published_ports(name)),
                depends_on=_healthy(["toxiproxy", *quorum]),
            )
        )

    c = spec.coordinator
    for name in coordinators:
        history = Path(c.history) if c.history else directory / "logs" / "coordinator-history.jsonl"
        (directory / "config" / f"{name}.json").write_text(
            json.dumps(
                {
                    "name": name,
                    "host": HOSTS.of(name),
                    "port": network.coordinator_ports[name],
                    "zookeeper_connect": network.coordinator_zookeeper_connect(name),
                    "variant": c.variant,
                    "history": str(history),
                    "session_file": str(DATA / f"{name}.zk-session.json"),
                    "zookeeper_session_timeout_ms": c.zookeeper_session_timeout_ms,
                    "initial_rebalance_delay_ms": c.initial_rebalance_delay_ms,
                },
                indent=2,
            )
        )
        services.update(
            fill(
                "coordinator",
                name=name,
                image=images.coordinator,
                port=network.coordinator_ports[name],
                history_dir=str(history_dir or history.parent),
                ports=_published(network.published_ports(name)),
                depends_on=_healthy(["toxiproxy", *quorum]),
            )
        )

    project_file = {"name": project, "services": services, "networks": {"lab": {"driver": "bridge", "labels": labels}}}
    topology.compose_file.write_text(
        "# Written by rebalance-lab from compose/services/*.yaml; start it with `docker compose up -d --wait`.\n"
        + yaml.safe_dump(project_file, sort_keys=False, width=200)
    )
    (directory / "PORTS.md").write_text(ports_readme(topology))
    return topology


def ports_readme(t: Topology) -> str:
    n = t.network
    rows = [
        ("bootstrap (direct, never faulted)", n.direct_bootstrap()),
        ("Toxiproxy API", f"127.0.0.1:{t.toxiproxy_api_port}"),
    ]
    rows += [(f"ZooKeeper {z}", f"127.0.0.1:{p}") for z, p in n.zookeeper_ports.items()]
    rows += [(f"Jolokia of {z}", f"http://127.0.0.1:{p}/jolokia/") for z, p in t.jolokia_ports.items()]
    rows += [(f"coordinator {c}", f"127.0.0.1:{p}") for c, p in n.coordinator_ports.items()]
    rows += [(f"member lane {k} bootstrap (through its proxies)", n.lane_bootstrap(k)) for k in range(1, n.lanes + 1)]
    return (
        f"# {t.project}: Kafka {t.kafka} in Docker Compose\n\n"
        "Start: `docker compose up -d --wait` (images from `rebalance-lab setup --compose`); "
        "stop: `docker compose down`.\nEverything below listens on 127.0.0.1 only.\n\n"
        "| what | address |\n|---|---|\n" + "".join(f"| {what} | {addr} |\n" for what, addr in rows)
    )


class _Filler:
    """Fills a fragment of compose/services/ and reads it as YAML."""

    def __init__(self, directory: Path, labels: dict):
        self.directory, self.labels = directory, labels

    def __call__(self, kind: str, **values) -> dict:
        text = (FRAGMENTS / f"{kind}.yaml").read_text()
        values = {
            "workdir": str(self.directory),
            "labels": json.dumps(self.labels),
            "ports": "[]",
            "depends_on": "{}",
            **values,
        }
        return yaml.safe_load(
            string.Template(text).substitute({k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()})
        )

    def log_config(self, name: str, log4j1: bool) -> str:
        """Write the node's log4j file (its server log lands in the run's logs/); the JVM option naming it."""
        text, option = config.log_settings(log4j1, CONFIG / f"{name}.log4j", LOGS / f"{name}.log")
        (self.directory / "config" / f"{name}.log4j").write_text(text)
        return option


def _jvm(
    fill: _Filler,
    name: str,
    images: Images,
    log4j1: bool,
    main_class: str,
    config_file,
    agents: list[str],
    prepare: str,
    heap_mb: int | None = None,
) -> str:
    argv = config.kafka_jvm_argv(
        main_class, config_file, images.kafka_classpath, LOGS, fill.log_config(name, log4j1), agents, heap_mb
    )
    if not prepare:
        return json.dumps(argv)
    # A first step in the container's shell, then the JVM as its main process (signals reach it).
    # "$$": Compose reads "$" in its file as its own variables.
    return json.dumps(["bash", "-c", f'{prepare} && exec "$$@"', name, *argv])


def _format_storage(images: Images, cluster_id: str, name: str) -> str:
    """KRaft storage formatted on the first start; --ignore-formatted keeps it on a restart."""
    return (
        f"java -Xmx256m -XX:TieredStopAtLevel=1 -cp '{images.kafka_classpath}' kafka.tools.StorageTool format "
        f"-t {cluster_id} -c {CONFIG / (name + '.properties')} --ignore-formatted > /dev/null"
    )


def _published(ports: list[int]) -> list[str]:
    return [f"127.0.0.1:{p}:{p}" for p in ports]


def _healthy(services: list[str]) -> dict:
    return {s: {"condition": "service_healthy"} for s in services}
