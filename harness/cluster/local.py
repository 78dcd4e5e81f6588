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
import logging
import random
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness.cluster import config
from harness.errors import ClusterError
from harness.install import KafkaDist, kafka_dist, toxiproxy_binary
from harness.processes import Supervisor

Report = Callable[[str], None]

KRAFT_CONTROLLER_ID = 1000

QUIET_CLIENT_LOG = logging.getLogger("rebalance_lab.admin")
QUIET_CLIENT_LOG.propagate = False
QUIET_CLIENT_LOG.addHandler(logging.NullHandler())


@dataclass
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int | None = None  # None: min(3, brokers)
    config: dict = field(default_factory=dict)


@dataclass
class ClusterSpec:
    kafka: str = "3.9"
    brokers: int = 3
    zookeeper_nodes: int = 1
    broker_config: dict = field(default_factory=dict)
    topics: list[TopicSpec] = field(default_factory=list)


_handed_out: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A free port on 127.0.0.1 *below* the kernel's ephemeral range.

    A port taken from the ephemeral range (bind to 0) can be grabbed by any outgoing
    connection — brokers open many — between our probe and the broker's bind.
    """
    lo, _ = _ephemeral_range()
    first = 10_000 if lo > 12_000 else 1024
    for _ in range(1000):
        port = random.randrange(first, lo)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise ClusterError("no free port found on 127.0.0.1")


def _four_letter_word(port: int, word: bytes, timeout: float = 1.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(word)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
        return b"".join(chunks)


@dataclass
class _Launch:
    role: str
    argv: list[str]
    log: Path


class LocalCluster:
    def __init__(self, spec: ClusterSpec, workdir: Path, supervisor: Supervisor, report: Report = lambda _m: None):
        self.spec = spec
        self.workdir = Path(workdir)
        self.supervisor = supervisor
        self.report = report
        self.dist: KafkaDist = kafka_dist(spec.kafka)
        self.launches: dict[str, _Launch] = {}
        self.broker_ports: dict[str, int] = {}
        self.broker_ids: dict[str, int] = {}
        self.zk_ports: dict[str, int] = {}
        self.controller_port: int | None = None
        self.toxiproxy_port: int | None = None

    # ----------------------------------------------------------------- addresses

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.broker_ports.values())

    @property
    def zookeeper_connect(self) -> str | None:
        return ",".join(f"127.0.0.1:{p}" for p in self.zk_ports.values()) or None

    @property
    def toxiproxy_api(self) -> str | None:
        return f"http://127.0.0.1:{self.toxiproxy_port}" if self.toxiproxy_port else None

    def broker_names(self) -> list[str]:
        return list(self.broker_ports)

    def describe(self) -> dict:
        return {
            "backend": "local",
            "kafka": self.dist.version,
            "mode": "zookeeper" if self.dist.zookeeper_mode else "kraft",
            "bootstrap_servers": self.bootstrap_servers,
            "zookeeper_connect": self.zookeeper_connect,
            "toxiproxy_api": self.toxiproxy_api,
            "brokers": {n: {"id": self.broker_ids[n], "port": p} for n, p in self.broker_ports.items()},
            "processes": {n: self.supervisor.get(n).pid for n in self.launches if n in self.supervisor.processes},
            "workdir": str(self.workdir),
        }

    # ----------------------------------------------------------------- lifecycle

    def start(self, ready_timeout: float = 90.0) -> None:
        for sub in ("config", "data", "logs"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        if self.dist.zookeeper_mode:
            self._start_zookeeper()
        else:
            self._prepare_kraft()
        self._start_brokers()
        self._start_toxiproxy()
        deadline = t0 + ready_timeout
        if self.dist.zookeeper_mode:
            self._wait_zookeeper(deadline)
        self.wait_ready(deadline - time.monotonic())
        self.create_topics(self.spec.topics, deadline - time.monotonic())
        self.report(f"cluster ready in {time.monotonic() - t0:.1f}s: Kafka {self.dist.version} "
                    f"({'ZooKeeper' if self.dist.zookeeper_mode else 'KRaft'}), {self.spec.brokers} brokers at {self.bootstrap_servers}")

    def stop(self) -> None:
        # Clients first, then brokers (in parallel), then their metadata quorum, Toxiproxy last.
        clients = [n for n, p in self.supervisor.processes.items() if p.role in ("consumer", "producer", "observer")]
        quorum = list(self.zk_ports) + (["controller-1"] if self.controller_port else [])
        self.supervisor.stop_all(tiers=[clients, list(self.broker_ports), quorum, ["toxiproxy"]])

    def restart(self, name: str) -> None:
        """Start a stopped node again with exactly the command line it had.

        A ZooKeeper-mode broker killed without a clean shutdown leaves its ephemeral
        /brokers/ids/<id> behind until its ZooKeeper session expires; started before
        that, it dies at once ("node already exists"). Wait for the expiry, as an
        operator would have to.
        """
        launch = self.launches[name]
        if launch.role == "broker" and self.dist.zookeeper_mode:
            self._wait_registration_gone(self.broker_ids[name])
        self.supervisor.start(name, launch.role, launch.argv, launch.log.with_suffix(".stdout"))

    def _wait_registration_gone(self, broker_id: int) -> None:
        from kazoo.client import KazooClient

        session_ms = int(self.spec.broker_config.get("zookeeper.session.timeout.ms",
                                                     config.BROKER_ZK_SESSION_TIMEOUT_MS))
        timeout_s = session_ms / 1000 + 10
        zk = KazooClient(hosts=self.zookeeper_connect, timeout=5, logger=QUIET_CLIENT_LOG)
        zk.start(timeout=10)
        try:
            deadline = time.monotonic() + timeout_s
            while zk.exists(f"/brokers/ids/{broker_id}") and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            zk.stop()
            zk.close()

    def _launch(self, name: str, role: str, argv: list[str]) -> None:
        log = self.workdir / "logs" / f"{name}.log"
        self.launches[name] = _Launch(role, argv, log)
        self.supervisor.start(name, role, argv, log.with_suffix(".stdout"))

    def _java(self, name: str, main_class: str, *args: str) -> list[str]:
        logcfg = self.workdir / "config" / f"{name}.log4j"
        log = self.workdir / "logs" / f"{name}.log"
        if self.dist.zookeeper_mode:
            logcfg.write_text(config.log4j1_properties(log))
            log_opt = f"-Dlog4j.configuration=file:{logcfg}"
        else:
            logcfg.write_text(config.log4j2_xml(log))
            log_opt = f"-Dlog4j2.configurationFile={logcfg}"
        return ["java", *config.JVM_OPTS, log_opt, f"-Dkafka.logs.dir={self.workdir / 'logs'}",
                "-cp", self.dist.classpath(), main_class, *args]

    # ----------------------------------------------------------------- ZooKeeper

    def _start_zookeeper(self) -> None:
        n = self.spec.zookeeper_nodes
        peers = [(i, free_port(), free_port()) for i in range(1, n + 1)]
        for i in range(1, n + 1):
            name = f"zookeeper-{i}"
            self.zk_ports[name] = free_port()
            data = self.workdir / "data" / name
            data.mkdir(parents=True, exist_ok=True)
            if n > 1:
                (data / "myid").write_text(f"{i}\n")
            cfg = self.workdir / "config" / f"{name}.cfg"
            cfg.write_text(config.zookeeper_cfg(data, self.zk_ports[name], peers))
            self._launch(name, "zookeeper", self._java(name, "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(cfg)))

    def _wait_zookeeper(self, deadline: float) -> None:
        for name, port in self.zk_ports.items():
            while True:
                self._check_alive(name)
                try:
                    if _four_letter_word(port, b"srvr").find(b"Mode:") >= 0:
                        break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise ClusterError(f"{name} did not start serving on 127.0.0.1:{port}; see {self.launches[name].log}")
                time.sleep(0.2)

    # ----------------------------------------------------------------- KRaft

    def _prepare_kraft(self) -> None:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        self.controller_port = free_port()
        voters = f"{KRAFT_CONTROLLER_ID}@127.0.0.1:{self.controller_port}"
        nodes = {"controller-1": config.kraft_controller_properties(
            KRAFT_CONTROLLER_ID, self.controller_port, self.workdir / "data" / "controller-1", voters)}
        for i in range(1, self.spec.brokers + 1):
            name = f"broker-{i}"
            self.broker_ports[name] = free_port()
            self.broker_ids[name] = i
            nodes[name] = config.kraft_broker_properties(
                i, self.broker_ports[name], self.workdir / "data" / name, self.spec.brokers, voters, self.spec.broker_config)
        # Format every node's storage in parallel (a JVM start each) before any of them runs.
        formats = []
        for name, props in nodes.items():
            path = self.workdir / "config" / f"{name}.properties"
            path.write_text(config.properties(props))
            formats.append((name, subprocess.Popen(
                ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", self.dist.classpath(),
                 "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(path)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        for name, proc in formats:
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise ClusterError(f"formatting KRaft storage of {name} failed:\n{out[-2000:]}")
        self._launch("controller-1", "controller",
                     self._java("controller-1", "kafka.Kafka", str(self.workdir / "config" / "controller-1.properties")))

    # ----------------------------------------------------------------- brokers

    def _start_brokers(self) -> None:
        for i in range(1, self.spec.brokers + 1):
            name = f"broker-{i}"
            path = self.workdir / "config" / f"{name}.properties"
            if self.dist.zookeeper_mode:
                self.broker_ports[name] = free_port()
                self.broker_ids[name] = i
                path.write_text(config.properties(config.zk_broker_properties(
                    i, self.broker_ports[name], self.workdir / "data" / name, self.spec.brokers,
                    self.zookeeper_connect, self.spec.broker_config)))
            self._launch(name, "broker", self._java(name, "kafka.Kafka", str(path)))

    def _start_toxiproxy(self) -> None:
        self.toxiproxy_port = free_port()
        self._launch("toxiproxy", "toxiproxy",
                     [str(toxiproxy_binary()), "-host", "127.0.0.1", "-port", str(self.toxiproxy_port)])

    def _check_alive(self, name: str) -> None:
        proc = self.supervisor.get(name)
        if not proc.running():
            tail = _tail(self.launches[name].log.with_suffix(".stdout")) or _tail(self.launches[name].log)
            raise ClusterError(f"{name} exited with code {proc.popen.returncode} while starting:\n{tail}")

    def admin(self):
        from confluent_kafka.admin import AdminClient

        # Connection errors while brokers start or crash are expected; keep them off the terminal.
        return AdminClient({"bootstrap.servers": self.bootstrap_servers, "socket.connection.setup.timeout.ms": 3000,
                            "logger": QUIET_CLIENT_LOG})

    def wait_ready(self, timeout: float) -> None:
        """Ready: every broker registered and listed in metadata."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + timeout
        admin = self.admin()
        seen: set[int] = set()
        while time.monotonic() < deadline:
            for name in self.launches:
                self._check_alive(name)
            try:
                seen = set(admin.list_topics(timeout=2).brokers)
                if seen >= set(self.broker_ids.values()):
                    return
            except KafkaException:
                pass
            time.sleep(0.25)
        raise ClusterError(f"brokers not ready after {timeout:.0f}s: metadata lists {sorted(seen)} "
                           f"of {sorted(self.broker_ids.values())}; logs in {self.workdir / 'logs'}")

    def create_topics(self, topics: list[TopicSpec], timeout: float = 60.0) -> None:
        """Create topics and wait until every partition has a leader."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewTopic

        if not topics:
            return
        admin = self.admin()
        futures = admin.create_topics([
            NewTopic(t.name, t.partitions, t.replication_factor or min(3, self.spec.brokers), config=dict(t.config))
            for t in topics
        ], operation_timeout=30)
        for name, fut in futures.items():
            try:
                fut.result()
            except KafkaException as e:
                if e.args[0].name() != "TOPIC_ALREADY_EXISTS":
                    raise ClusterError(f"creating topic {name} failed: {e.args[0].str()}") from None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            md = admin.list_topics(timeout=5)
            ok = all(
                t.name in md.topics and len(md.topics[t.name].partitions) == t.partitions
                and all(p.leader >= 0 for p in md.topics[t.name].partitions.values())
                for t in topics
            )
            if ok:
                return
            time.sleep(0.25)
        raise ClusterError(f"topics {[t.name for t in topics]} have no leader for every partition after {timeout:.0f}s")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
