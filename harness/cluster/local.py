"""The default backend: ZooKeeper, brokers and Toxiproxy as plain local processes.

Every listener binds 127.0.0.1 on a port chosen free at start. Layout under the
cluster's work directory::

    config/<node>.properties|cfg|log4j     what each process was started with
    data/<node>/                           its data (ZooKeeper snapshots, log dirs)
    logs/<node>.log                        its log4j log (brokers: GroupCoordinator lines)
    logs/<node>.stdout                     its stdout/stderr
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from faults.capabilities import EVERY_CAPABILITY, Capability
from harness.cluster import config, kinds, zookeeper
from harness.cluster.admin import ClusterAdmin, TopicSpec
from harness.cluster.backend import Cleaned, Cleanup, CleanupScope
from harness.cluster.kinds import CLUSTER_KINDS
from harness.cluster.network import NetworkPlan
from harness.cluster.nodes import (
    Broker,
    CoordinatorInstance,
    KRaftController,
    ToxiproxyServer,
    ZooKeeperNode,
)
from harness.cluster.ports import free_port
from harness.cluster.spec import ClusterSpec
from harness.components.install import (
    KafkaDist,
    jolokia_agent,
    kafka_dist,
    toxiproxy_binary,
)
from harness.supervision.processes import Supervisor
from harness.supervision.service import LocalProcess, role_tiers, stop_in_order
from runtime.errors import ClusterError

Report = Callable[[str], None]

KRAFT_CONTROLLER_ID = 1000
SASL_LISTENER = "SASL"  # the name of a broker's SASL/PLAIN listener (ClusterSpec.sasl_plain)


class LocalCluster:
    """ZooKeeper (or a KRaft controller), brokers, Toxiproxy and the project's coordinator
    as processes of this machine (harness.cluster.backend.ClusterBackend)."""

    name: ClassVar[str] = "local"
    service_kinds: ClassVar[tuple[type, ...]] = CLUSTER_KINDS
    starts_cluster: ClassVar[bool] = True
    capabilities: ClassVar[frozenset[Capability]] = EVERY_CAPABILITY  # it runs the whole cluster
    sasl_plain_listeners: ClassVar[bool] = True

    def __init__(self, spec: ClusterSpec, workdir: Path, supervisor: Supervisor, report: Report = lambda _m: None):
        self.spec = spec
        self.workdir = Path(workdir)
        self.supervisor = supervisor
        self.report = report
        self.dist: KafkaDist = kafka_dist(spec.kafka)
        self.services: dict[str, LocalProcess] = {}  # every service of the cluster, in start order
        self.broker_ids = {f"broker-{i}": i for i in range(1, spec.brokers + 1)}
        self.network: NetworkPlan | None = None
        self.toxiproxy_server: ToxiproxyServer | None = None
        self.zookeeper_nodes: dict[str, ZooKeeperNode] = {}
        self.jolokia_agent: Path | None = jolokia_agent() if self.spec.zookeeper_mode else None
        self.controller_port: int | None = None
        self.kafka_admin: ClusterAdmin | None = None  # once the brokers have addresses
        self.sasl_ports: dict[str, int] = {}  # broker -> its SASL/PLAIN listener's port (spec.sasl_plain)

    # ----------------------------------------------------------------- addresses

    @property
    def brokers(self) -> dict[str, Broker]:
        return {name: s for name, s in self.services.items() if isinstance(s, Broker)}

    @property
    def broker_ports(self) -> dict[str, int]:
        """Each broker's direct (unproxied) client listener."""
        return {name: b.port for name, b in self.brokers.items()}

    @property
    def zk_ports(self) -> dict[str, int]:
        return {name: n.client_port for name, n in self.zookeeper_nodes.items()}

    @property
    def zk_jolokia(self) -> dict[str, str]:
        return {name: n.jolokia_url for name, n in self.zookeeper_nodes.items()}

    def admin(self):
        """An AdminClient on the cluster's brokers (connection errors kept off the terminal)."""
        return self.kafka_admin.client()

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.address for b in self.brokers.values())

    @property
    def zookeeper_connect(self) -> str | None:
        return ",".join(f"127.0.0.1:{port}" for port in self.zk_ports.values()) or None

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        """The brokers' SASL/PLAIN listeners (``cluster up --sasl-plain``), or None."""
        return ",".join(f"127.0.0.1:{port}" for port in self.sasl_ports.values()) or None

    @property
    def toxiproxy(self):
        return self.toxiproxy_server.client if self.toxiproxy_server else None

    @property
    def toxiproxy_api(self) -> str | None:
        return self.toxiproxy_server.api if self.toxiproxy_server else None

    def broker_names(self) -> list[str]:
        return list(self.broker_ids)

    def lane_bootstrap_servers(self, lane: int) -> str:
        """Bootstrap for the member on ``lane``: every connection through its own proxies."""
        return self.network.lane_bootstrap(lane)

    def describe(self) -> dict:
        return {
            "backend": self.name,
            "kafka": self.dist.version,
            "mode": "zookeeper" if self.spec.zookeeper_mode else "kraft",
            "bootstrap_servers": self.bootstrap_servers,
            "zookeeper_connect": self.zookeeper_connect,
            "toxiproxy_api": self.toxiproxy_api,
            "brokers": {n: {"id": b.broker_id, "port": b.port} for n, b in self.brokers.items()},
            "processes": {n: s.pid for n, s in self.services.items() if s.process},
            "logs": {n: {k: str(v) for k, v in s.logs.items()} for n, s in self.services.items()},
            "workdir": str(self.workdir),
            **(
                {
                    "sasl_bootstrap_servers": self.sasl_bootstrap_servers,
                    "sasl_mechanism": "PLAIN",
                    "sasl_user": self.spec.sasl_plain.user,
                }
                if self.spec.sasl_plain
                else {}
            ),
        }

    # ----------------------------------------------------------------- lifecycle

    def start(self, ready_timeout: float = 90.0) -> None:
        for sub in ("config", "data", "logs"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        deadline = t0 + ready_timeout
        # Toxiproxy first: brokers reach each other and ZooKeeper through its proxies.
        self.toxiproxy_server = self._add(
            ToxiproxyServer("toxiproxy", self.supervisor, self.workdir / "logs", toxiproxy_binary(), free_port())
        )
        self.toxiproxy_server.start()
        self.toxiproxy_server.wait_ready(deadline)
        if self.spec.zookeeper_mode:
            self._start_zookeeper()
        else:
            self.controller_port = free_port()
        self.network = NetworkPlan(
            list(self.broker_ids.values()), self.spec.lanes, self.zk_ports, free_port, self.coordinator_names()
        )
        for route in self.network.routes.values():
            self.toxiproxy.create(route.proxy, route.listen, route.upstream)
        self._write_broker_configs()
        if not self.spec.zookeeper_mode:
            self._prepare_kraft()
        for name, i in self.broker_ids.items():
            self._add(
                Broker(
                    name,
                    self.supervisor,
                    self.workdir,
                    self.dist,
                    self.workdir / "config" / f"{name}.properties",
                    i,
                    self.network.direct[i],
                    self.zookeeper_connect,
                    self.spec.broker_zookeeper_session_timeout_ms,
                )
            ).start()
        self.kafka_admin = ClusterAdmin(
            self.bootstrap_servers, list(self.broker_ids.values()), str(self.workdir / "logs")
        )
        for node in self.zookeeper_nodes.values():
            node.wait_ready(deadline)
        self.kafka_admin.wait_ready(deadline - time.monotonic(), self._check_alive)
        self.kafka_admin.create_topics(self.spec.topics, deadline - time.monotonic())
        self.kafka_admin.wait_every_broker_knows(
            {n: b.address for n, b in self.brokers.items()}, self.spec.topics, deadline
        )
        if self.spec.coordinator:
            self._start_coordinators(deadline)
        self.report(
            f"cluster ready in {time.monotonic() - t0:.1f}s: Kafka {self.dist.version} "
            f"({'ZooKeeper' if self.spec.zookeeper_mode else 'KRaft'}), {self.spec.brokers} brokers at {self.bootstrap_servers}"
        )

    def stop(self) -> None:
        stop_in_order(self.services.values())

    def poll_exits(self) -> list[str]:
        return []  # its processes are the supervisor's: the run's poll of it sees them

    @classmethod
    def clean_up(cls, scope: CleanupScope, report: Report) -> Cleanup:
        """The registered processes of harnesses that died — a run's clients too, whichever backend
        ran its cluster: every process the lab starts is registered the same way — resumed if
        paused, then SIGKILLed; one owner's (``scope.owner``) stopped tier by tier instead."""
        # Looked up on use: tests/fuzzing.py's guard replaces the cleaners.
        from harness.supervision import processes

        if scope.owner is not None:
            stopped = processes.stop_owned(scope.owner, role_tiers(cls.service_kinds))
        else:
            stopped = processes.cleanup_leftovers(
                include_detached=scope.detached, by=scope.by, owner_pid=scope.owner_pid
            )
        for p in stopped:
            report(
                f"stopped {p.name} (pid {p.pid}, {p.role}{', was paused' if p.stopped else ''}), "
                f"left behind by {p.owner}"
            )
        return Cleanup([Cleaned("processes", p.name, p.run_dir) for p in stopped])

    def _add(self, service: LocalProcess) -> LocalProcess:
        self.services[service.name] = service
        return service

    def _check_alive(self) -> None:
        for service in self.services.values():
            service.check_alive()

    # ----------------------------------------------------------------- ZooKeeper

    def _start_zookeeper(self) -> None:
        n = self.spec.zookeeper_nodes
        peers = [(i, free_port(), free_port()) for i in range(1, n + 1)]
        jolokia_policy = self.workdir / "config" / "jolokia-access.xml"
        jolokia_policy.write_text(zookeeper.JOLOKIA_POLICY)
        for i in range(1, n + 1):
            name = f"zookeeper-{i}"
            client_port = free_port()
            data = self.workdir / "data" / name
            data.mkdir(parents=True, exist_ok=True)
            if n > 1:
                (data / "myid").write_text(f"{i}\n")
            cfg = self.workdir / "config" / f"{name}.cfg"
            cfg.write_text(config.zookeeper_cfg(data, client_port, peers))
            node = ZooKeeperNode(
                name,
                self.supervisor,
                self.workdir,
                self.dist,
                cfg,
                client_port,
                self.jolokia_agent,
                free_port(),
                jolokia_policy,
            )
            self.zookeeper_nodes[name] = self._add(node)
            node.start()

    def zookeeper_session_timeout_s(self, name: str) -> float:
        return self.spec.zookeeper_session_timeout_s(name)

    def expire_zookeeper_session(self, name: str) -> dict:
        if name in self.coordinator_names():
            return self.expire_coordinator_session(name)
        return zookeeper.expire_broker_session(name, self.broker_ids, self.zookeeper_connect, self.zk_jolokia)

    def expire_coordinator_session(self, name: str) -> dict:
        return zookeeper.expire_published_session(name, self.services[name].session_file, self.zookeeper_connect)

    # ----------------------------------------------------------------- the project's coordinator

    def coordinator_names(self) -> list[str]:
        return self.spec.coordinator_names()

    def coordinator_addresses(self) -> dict[str, str]:
        """Instance name -> its own (unproxied) address."""
        return {name: f"127.0.0.1:{port}" for name, port in self.network.coordinator_ports.items()}

    def coordinator_leader(self) -> str | None:
        return kinds.coordinator_leader(self.coordinator_addresses())

    def _start_coordinators(self, deadline: float) -> None:
        c = self.spec.coordinator
        for name in self.coordinator_names():
            session_file = self.workdir / "data" / f"{name}.zk-session.json"
            spec = {
                "name": name,
                "port": self.network.coordinator_ports[name],
                "zookeeper_connect": self.network.coordinator_zookeeper_connect(name),
                "variant": c.variant,
                "history": c.history or str(self.workdir / "logs" / "coordinator-history.jsonl"),
                "session_file": str(session_file),
                "zookeeper_session_timeout_ms": c.zookeeper_session_timeout_ms,
                "initial_rebalance_delay_ms": c.initial_rebalance_delay_ms,
            }
            path = self.workdir / "config" / f"{name}.json"
            path.write_text(json.dumps(spec, indent=2))
            self._add(CoordinatorInstance(name, self.supervisor, self.workdir / "logs", path, session_file)).start()
        while self.coordinator_leader() is None:
            for name in self.coordinator_names():
                if not self.services[name].running():
                    raise ClusterError(f"{name} exited during startup; see {self.services[name].logs['stdout']}")
            if time.monotonic() > deadline:
                raise ClusterError("the project's coordinator elected no leader in time")
            time.sleep(0.1)
        self.report(f"coordinator {c.variant}: {c.instances} instance(s), {self.coordinator_leader()} leads")

    # ----------------------------------------------------------------- KRaft

    @property
    def _kraft_voters(self) -> str:
        return f"{KRAFT_CONTROLLER_ID}@127.0.0.1:{self.controller_port}"

    def _prepare_kraft(self) -> None:
        """Format every node's storage (a JVM start each, in parallel), then start the controller."""
        cluster_id = _kraft_cluster_id()
        controller = self.workdir / "config" / "controller-1.properties"
        controller.write_text(
            config.properties(
                config.kraft_controller_properties(
                    KRAFT_CONTROLLER_ID,
                    self.controller_port,
                    self.workdir / "data" / "controller-1",
                    self._kraft_voters,
                )
            )
        )
        formats = []
        for name in ["controller-1", *self.broker_ids]:
            path = self.workdir / "config" / f"{name}.properties"
            formats.append(
                (
                    name,
                    subprocess.Popen(
                        [
                            "java",
                            "-Xmx256m",
                            "-XX:TieredStopAtLevel=1",
                            "-cp",
                            self.dist.classpath(),
                            "kafka.tools.StorageTool",
                            "format",
                            "-t",
                            cluster_id,
                            "-c",
                            str(path),
                        ],
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                    ),
                )
            )
        for name, proc in formats:
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise ClusterError(f"formatting KRaft storage of {name} failed:\n{out[-2000:]}")
        self._add(KRaftController("controller-1", self.supervisor, self.workdir, self.dist, controller)).start()

    # ----------------------------------------------------------------- brokers

    def _write_broker_configs(self) -> None:
        for name, i in self.broker_ids.items():
            listeners = self.network.listener_properties(i)
            if self.spec.sasl_plain:
                listeners = self._with_sasl_listener(name, listeners)
            data = self.workdir / "data" / name
            if self.spec.zookeeper_mode:
                props = config.zk_broker_properties(
                    i, listeners, data, self.spec.brokers, self.network.zookeeper_connect(i), self.spec.broker_config
                )
            else:
                props = config.kraft_broker_properties(
                    i, listeners, data, self.spec.brokers, self._kraft_voters, self.spec.broker_config
                )
            if self.spec.sasl_plain:
                props.update(
                    {
                        "sasl.enabled.mechanisms": "PLAIN",
                        f"listener.name.{SASL_LISTENER.lower()}.plain.sasl.jaas.config": self.spec.sasl_plain.jaas_config(),
                    }
                )
            _write_private(self.workdir / "config" / f"{name}.properties", config.properties(props))

    def _with_sasl_listener(self, name: str, listeners: dict) -> dict:
        """A broker's listeners plus a SASL_PLAINTEXT one on 127.0.0.1 (no proxy: no network fault reaches it)."""
        port = self.sasl_ports.setdefault(name, free_port())
        return {
            **listeners,
            "listeners": f"{listeners['listeners']},{SASL_LISTENER}://127.0.0.1:{port}",
            "advertised.listeners": f"{listeners['advertised.listeners']},{SASL_LISTENER}://127.0.0.1:{port}",
            "listener.security.protocol.map": f"{listeners['listener.security.protocol.map']},{SASL_LISTENER}:SASL_PLAINTEXT",
        }

    # ----------------------------------------------------------------- topics

    def create_topics(self, topics: list[TopicSpec], timeout: float = 60.0) -> None:
        self.kafka_admin.create_topics(topics, timeout)

    def add_partitions(self, topic: str, total: int, timeout: float = 60.0) -> None:
        self.kafka_admin.add_partitions(topic, total, timeout)


def _write_private(path: Path, text: str) -> None:
    """A file only its owner may read (0600 from its creation): a broker's configuration may hold a password."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(fd, 0o600)
        f.write(text)


def _kraft_cluster_id() -> str:
    """A random KRaft cluster id, as Kafka's Uuid.randomUuid() makes one: never starting with
    "-", which the storage tool's argument parser would take for an option (seen: one run in
    ~30 failed to format its controller with "argument --cluster-id/-t: expected one argument")."""
    while (cluster_id := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return cluster_id
