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
import re
import signal
import socket
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
from harness.cluster.message_lanes import MessageProxyServer, message_lanes, start_message_proxy
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
    kafka_tools,
    toxiproxy_binary,
)
from harness.components.versions import kafka_release
from harness.supervision.processes import Supervisor
from harness.supervision.service import LocalProcess, role_tiers, stop_in_order
from runtime.errors import ClusterError

Report = Callable[[str], None]

KRAFT_CONTROLLER_ID = 1000
INTER_BROKER_PROTOCOL = "inter.broker.protocol.version"
METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
# How long a rolling upgrade waits, after a node's start, for the cluster to be whole again: a JVM's start
# and its replicas catching up take seconds, longer with every other helper's JVMs on two cores.
NODE_READY_TIMEOUT_S = 120.0
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
        self.message_proxy_server: MessageProxyServer | None = None
        self.zookeeper_nodes: dict[str, ZooKeeperNode] = {}
        self.jolokia_agent: Path | None = jolokia_agent() if self.spec.zookeeper_mode else None
        self.controller_port: int | None = None
        self.kafka_admin: ClusterAdmin | None = None  # once the brokers have addresses
        self.sasl_ports: dict[str, int] = {}  # broker -> its SASL/PLAIN listener's port (spec.sasl_plain)
        self.node_settings: dict[str, dict] = {}  # broker -> settings a rolling upgrade gave it (restart_node)
        self.replaced_settings: dict[str, dict] = {}  # broker -> what those settings were before their last change

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

    @property
    def message_proxy(self):
        return self.message_proxy_server.client if self.message_proxy_server else None

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
            **({"message_proxy_api": self.message_proxy_server.api} if self.message_proxy_server else {}),
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
            list(self.broker_ids.values()),
            self.spec.lanes,
            self.zk_ports,
            free_port,
            self.coordinator_names(),
            message_lanes=message_lanes(self.spec),
        )
        for route in self.network.routes.values():
            self.toxiproxy.create(route.proxy, route.listen, route.upstream)
        if self.spec.message_proxy:
            self.message_proxy_server = self._add(
                start_message_proxy(
                    self.spec.message_proxy, self.network, self.supervisor, self.workdir / "logs", deadline
                )
            )
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
                    self.spec.broker_heap_mb,
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
        for name in self.broker_ids:
            self._write_broker_config(name)

    def _write_broker_config(self, name: str) -> None:
        """One broker's server.properties: the harness's settings, the scenario's, then what a rolling
        upgrade set on this broker (``node_settings``)."""
        i = self.broker_ids[name]
        listeners = self.network.listener_properties(i)
        if self.spec.sasl_plain:
            listeners = self._with_sasl_listener(name, listeners)
        data = self.workdir / "data" / name
        if self.spec.zookeeper_mode:
            props = config.zk_broker_properties(
                i, listeners, data, self.spec.brokers, self.network.zookeeper_connect(i), self.spec.broker_settings(i)
            )
        else:
            props = config.kraft_broker_properties(
                i, listeners, data, self.spec.brokers, self._kraft_voters, self.spec.broker_settings(i)
            )
        if self.spec.sasl_plain:
            props.update(
                {
                    "sasl.enabled.mechanisms": "PLAIN",
                    f"listener.name.{SASL_LISTENER.lower()}.plain.sasl.jaas.config": self.spec.sasl_plain.jaas_config(),
                }
            )
        props.update(self.node_settings.get(name, {}))
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

    # ----------------------------------------------------------------- rolling upgrades

    def release(self, name: str | None = None):
        """The catalogue's facts of the release a node runs now (None: the brokers')."""
        service = self.services[name] if name else next(iter(self.brokers.values()))
        return kafka_release(service.dist.version)

    @property
    def metadata_mode(self) -> str:
        return "zookeeper" if self.spec.zookeeper_mode else "kraft"

    def restart_node(self, name: str, kafka: str | None, settings: dict, timeout: float = NODE_READY_TIMEOUT_S) -> dict:
        """Stop a broker or the KRaft controller cleanly (SIGTERM: a broker's controlled shutdown), start it
        again on release ``kafka`` (None: the one it runs) with ``settings`` changed (a None value removes one),
        on the same data and node id, and wait until the cluster is whole again (every broker in metadata,
        every replica in sync) for up to ``timeout``. What was done, how long each part took, and what
        still kept the cluster from whole if the wait ran out."""
        service = self.services[name]
        if not isinstance(service, (Broker, KRaftController)):
            raise ClusterError(f"{name} is not a node a rolling upgrade restarts (a broker or the KRaft controller)")
        if settings and not isinstance(service, Broker):
            raise ClusterError(f"{name}: only a broker's settings change in a rolling upgrade")
        t0 = time.monotonic()
        service.kill(signal.SIGTERM)
        stopped = time.monotonic()
        if kafka is not None:
            service.dist = kafka_dist(kafka_release(kafka).version)
        if settings:
            current = self.node_settings.setdefault(name, {})
            self.replaced_settings[name] = {key: current.get(key) for key in settings}
            for key, value in settings.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            self._write_broker_config(name)
        service.start()
        started = time.monotonic()
        problems = self._wait_whole(service, started + timeout)
        return {
            "process": name,
            "role": service.role,
            "kafka": service.dist.version,
            "settings": dict(settings),
            "stop_ms": round((stopped - t0) * 1000),
            "ready_ms": round((time.monotonic() - started) * 1000),
            "problems": problems,
        }

    def _wait_whole(self, service, deadline: float) -> list[str]:
        """Until the node serves again and the cluster is whole; what is still missing at ``deadline``."""
        if isinstance(service, KRaftController):
            while not _accepts(self.controller_port):
                service.check_alive()
                if time.monotonic() > deadline:
                    return [f"{service.name} does not accept connections on 127.0.0.1:{self.controller_port}"]
                time.sleep(0.2)
        service.check_alive()
        return self.kafka_admin.health_problems(max(0.0, deadline - time.monotonic()))

    def finalize_features(self, kafka: str) -> dict:
        """Every node runs ``kafka``: the upgrade finalized. KRaft: metadata.version raised to the highest
        level every node supports, with Kafka's own FeatureCommand (``kafka-features.sh upgrade``) of that
        release. ZooKeeper mode: a rolling restart gave every broker its inter.broker.protocol.version;
        what they run now is confirmed here. ``feature``, ``previous`` and ``level``."""
        release = kafka_release(kafka)
        if self.metadata_mode == "zookeeper":
            levels = {self.node_settings.get(name, {}).get(INTER_BROKER_PROTOCOL) for name in self.brokers}
            before = {self.replaced_settings.get(name, {}).get(INTER_BROKER_PROTOCOL) for name in self.brokers}
            if len(levels) != 1 or None in levels:
                raise ClusterError(
                    f"the brokers do not all run one {INTER_BROKER_PROTOCOL}: {sorted(map(str, levels))}"
                )
            level = levels.pop()
            previous = before.pop() if len(before) == 1 and None not in before else level
            return {"feature": INTER_BROKER_PROTOCOL, "previous": previous, "level": level}
        tools = kafka_tools(release.version)
        before = self._features(tools, "describe")
        highest = before[METADATA_VERSION]["max"]  # the latest stable level every node of the release supports
        # Kafka's notes finalize with `upgrade --release-version X`: every feature to the level release X
        # maps it to. Done feature by feature here, kraft.version left alone: raising it turns the static
        # quorum (controller.quorum.voters) into a dynamic one (KAFKA-21426). Releases whose tool has no
        # version mapping (before 3.9) raise metadata.version alone, as their notes say (`--metadata`).
        mapping = self._features(tools, "version-mapping", "--release-version", highest)
        if mapping is None:
            updates = ["--metadata", highest] if before[METADATA_VERSION]["finalized"] != highest else []
        else:
            updates = [
                arg
                for feature, level in mapping.items()
                if feature != KRAFT_VERSION
                and (
                    before[METADATA_VERSION]["finalized"] != highest
                    if feature == METADATA_VERSION
                    else int(before.get(feature, {}).get("finalized") or 0) < level
                )
                for arg in ("--feature", f"{feature}={level}")
            ]
        if updates:
            self._features(tools, "upgrade", *updates)
        after = self._features(tools, "describe")
        if after[METADATA_VERSION]["finalized"] != highest:
            raise ClusterError(
                f"metadata.version is {after[METADATA_VERSION]['finalized']} after upgrading it to {highest}"
            )
        return {
            "feature": METADATA_VERSION,
            "previous": before[METADATA_VERSION]["finalized"],
            "level": highest,
            "features": {feature: levels["finalized"] for feature, levels in after.items()},
        }

    def _features(self, tools: KafkaDist, *command: str) -> dict | None:
        """Kafka's FeatureCommand of the new release against the brokers. ``describe``: each feature's
        finalized and highest supported level (``Feature: metadata.version  SupportedMinVersion: 3.3-IV3
        SupportedMaxVersion: 4.4-IV0  FinalizedVersionLevel: 4.3-IV0  Epoch: 12``); ``version-mapping``:
        each feature's level for a release (``group.version=1``, ``metadata.version=27 (4.1-IV1)``), or
        None where the tool has no such command; ``upgrade``: {} once done."""
        log = self.workdir / "logs" / "kafka-features.log"
        argv = [
            "java",
            "-Xmx128m",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            tools.classpath(),
            "org.apache.kafka.tools.FeatureCommand",
            "--bootstrap-server",
            self.bootstrap_servers,
            *command,
        ]
        offset = log.stat().st_size if log.exists() else 0
        # Its own supervisor: registered (`cleanup` stops it if the harness dies), not in the history.
        code = Supervisor(owner=self.supervisor.owner).run("kafka-features", "tool", argv, log, timeout=120)
        out = log.read_text(errors="replace")[offset:]
        if code != 0:
            if command[0] == "version-mapping" and "invalid choice" in out:
                return None
            raise ClusterError(f"kafka-features {' '.join(command)} failed (exit {code}):\n{out[-2000:]}")
        if command[0] == "version-mapping":
            pairs = (
                line.split(" ", 1)[0].split("=", 1) for line in out.splitlines() if re.match(r"^[a-z.]+=\d+", line)
            )
            return {feature: int(level) for feature, level in pairs}
        if command[0] != "describe":
            return {}
        described = {}
        for line in out.splitlines():
            if line.startswith("Feature: "):
                # Tab-separated up to 4.3, padded with spaces from 4.4: "Name: value" pairs either way.
                fields = dict(re.findall(r"(\w+): (\S+)", line))
                described[fields["Feature"]] = {
                    "max": fields.get("SupportedMaxVersion"),
                    "finalized": fields.get("FinalizedVersionLevel"),
                }
        if METADATA_VERSION not in described:
            raise ClusterError(f"kafka-features describe did not say {METADATA_VERSION}'s levels:\n{out[-2000:]}")
        return described

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


def _accepts(port: int | None) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def _kraft_cluster_id() -> str:
    """A random KRaft cluster id, as Kafka's Uuid.randomUuid() makes one: never starting with
    "-", which the storage tool's argument parser would take for an option (seen: one run in
    ~30 failed to format its controller with "argument --cluster-id/-t: expected one argument")."""
    while (cluster_id := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return cluster_id
