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
import random
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from faults.toxiproxy import ToxiproxyClient, ToxiproxyError
from harness.cluster import config, zookeeper
from harness.cluster.network import NetworkPlan
from harness.install import KafkaDist, jolokia_agent, kafka_dist, toxiproxy_binary
from harness.processes import Supervisor
from runtime.errors import ClusterError
from runtime.logs import QUIET_CLIENT_LOG

Report = Callable[[str], None]

KRAFT_CONTROLLER_ID = 1000


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
    lanes: int = 0  # client lanes, each routed through its own proxies (see network.py)
    coordinator: ProjectCoordinator | None = None  # the project's coordinator service, if the run uses it


@dataclass
class ProjectCoordinator:
    """The project's own group coordinator (the ``coordinator`` package), started beside the brokers."""

    variant: str  # v1 | v2 | v3
    instances: int = 1
    initial_rebalance_delay_ms: int = 3000
    zookeeper_session_timeout_ms: int = 6000
    history: str | None = None  # where its events go (a run's history); default: its log directory


_handed_out: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def _port_range() -> tuple[int, int]:
    lo, _ = _ephemeral_range()
    first = 10_000 if lo > 12_000 else 1024
    # Harnesses running side by side (pytest-xdist workers) each take their own slice
    # ("i/n"), so one never hands out a port another probed a moment before.
    if share := os.environ.get("REBALANCE_LAB_PORT_SLICE"):
        i, n = map(int, share.split("/"))
        width = (lo - first) // n
        first, lo = first + i * width, first + (i + 1) * width
    return first, lo


def free_port() -> int:
    """A free port on 127.0.0.1 *below* the kernel's ephemeral range.

    A port taken from the ephemeral range (bind to 0) can be grabbed by any outgoing
    connection — brokers open many — between our probe and the broker's bind.
    """
    first, lo = _port_range()
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
        self.broker_ids = {f"broker-{i}": i for i in range(1, spec.brokers + 1)}
        self.broker_ports: dict[str, int] = {}  # direct (CLIENT) listener of each broker
        self.network: NetworkPlan | None = None
        self.toxiproxy: ToxiproxyClient | None = None
        self.zk_ports: dict[str, int] = {}
        # Each ZooKeeper node's Jolokia agent (JMX over HTTP): how a broker's session is expired.
        self.zk_jolokia: dict[str, str] = {}
        self.jolokia_agent: Path | None = jolokia_agent() if self.dist.zookeeper_mode else None
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
        return list(self.broker_ids)

    def lane_bootstrap_servers(self, lane: int) -> str:
        """Bootstrap for the member on ``lane``: every connection through its own proxies."""
        return self.network.lane_bootstrap(lane)

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
        deadline = t0 + ready_timeout
        # Toxiproxy first: brokers reach each other and ZooKeeper through its proxies.
        self._start_toxiproxy(deadline)
        if self.dist.zookeeper_mode:
            self._start_zookeeper()
        else:
            self.controller_port = free_port()
        self.network = NetworkPlan(list(self.broker_ids.values()), self.spec.lanes, dict(self.zk_ports), free_port,
                                   self.coordinator_names())
        for route in self.network.routes.values():
            self.toxiproxy.create(route.proxy, f"127.0.0.1:{route.listen_port}", f"127.0.0.1:{route.upstream_port}")
        self.broker_ports = {name: self.network.direct[i] for name, i in self.broker_ids.items()}
        self._write_broker_configs()
        if not self.dist.zookeeper_mode:
            self._prepare_kraft()
        self._start_brokers()
        if self.dist.zookeeper_mode:
            self._wait_zookeeper(deadline)
        self.wait_ready(deadline - time.monotonic())
        self.create_topics(self.spec.topics, deadline - time.monotonic())
        self._wait_every_broker_knows(self.spec.topics, deadline)
        if self.spec.coordinator:
            self._start_coordinators(deadline)
        self.report(f"cluster ready in {time.monotonic() - t0:.1f}s: Kafka {self.dist.version} "
                    f"({'ZooKeeper' if self.dist.zookeeper_mode else 'KRaft'}), {self.spec.brokers} brokers at {self.bootstrap_servers}")

    def stop(self) -> None:
        # Clients first, then brokers (in parallel), then their metadata quorum, Toxiproxy last.
        clients = [n for n, p in self.supervisor.processes.items() if p.role in ("consumer", "producer", "observer")]
        quorum = list(self.zk_ports) + (["controller-1"] if self.controller_port else [])
        self.supervisor.stop_all(tiers=[clients, self.coordinator_names(), list(self.broker_ports), quorum,
                                        ["toxiproxy"]])

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
        jolokia_policy = self.workdir / "config" / "jolokia-access.xml"
        jolokia_policy.write_text(zookeeper.JOLOKIA_POLICY)
        for i in range(1, n + 1):
            name = f"zookeeper-{i}"
            self.zk_ports[name] = free_port()
            data = self.workdir / "data" / name
            data.mkdir(parents=True, exist_ok=True)
            if n > 1:
                (data / "myid").write_text(f"{i}\n")
            cfg = self.workdir / "config" / f"{name}.cfg"
            cfg.write_text(config.zookeeper_cfg(data, self.zk_ports[name], peers))
            argv = self._java(name, "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(cfg))
            jolokia_port = free_port()
            argv.insert(1, zookeeper.jolokia_javaagent(self.jolokia_agent, jolokia_port, jolokia_policy))
            self.zk_jolokia[name] = f"http://127.0.0.1:{jolokia_port}/jolokia/"
            self._launch(name, "zookeeper", argv)

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

    def expire_zookeeper_session(self, name: str) -> dict:
        """Expire broker ``name``'s ZooKeeper session on the server, as a real expiry
        would: its /brokers/ids/<id> goes at once, the broker learns "session expired"
        and registers again with a new session.

        A broker's session password never leaves its JVM, so instead of the client-side
        trick (zookeeper.expire_session_as_client) this calls terminateSession() on the
        connection's MBean, on whichever ZooKeeper node the broker is connected to.
        """
        if name in self.coordinator_names():
            return self.expire_coordinator_session(name)
        if name not in self.broker_ids or not self.zk_jolokia:
            raise ClusterError(f"{name!r} is not a broker of a ZooKeeper-mode cluster; only those have a ZooKeeper session")
        path = f"/brokers/ids/{self.broker_ids[name]}"
        session_id = zookeeper.ephemeral_owner(self.zookeeper_connect, path)
        if not session_id:
            raise ClusterError(f"{name} is not registered in ZooKeeper (no {path}): no session to expire")
        failures = []
        for node, url in self.zk_jolokia.items():  # the connection can be on any node of the ensemble
            try:
                if zookeeper.terminate_session(url, session_id):
                    return {"session_id": zookeeper.session_hex(session_id), "zookeeper": node}
            except ClusterError as e:  # a paused or stopped node must not hide the one holding it
                failures.append(f"{node}: {e}")
        raise ClusterError(f"no ZooKeeper node has a connection of {name}'s session {zookeeper.session_hex(session_id)} "
                           f"(owner of {path}); the broker may be reconnecting" + "".join(f"\n{f}" for f in failures))

    # ----------------------------------------------------------------- the project's coordinator

    def coordinator_names(self) -> list[str]:
        c = self.spec.coordinator
        return [f"coordinator-{i}" for i in range(1, c.instances + 1)] if c else []

    def coordinator_addresses(self) -> dict[str, str]:
        """Instance name -> its own (unproxied) address."""
        return {name: f"127.0.0.1:{port}" for name, port in self.network.coordinator_ports.items()}

    def coordinator_leader(self) -> str | None:
        """The instance leading right now, as the instances themselves say (FindCoordinator)."""
        from coordinator.protocol import Address, Connection, CoordinatorError

        for address in self.coordinator_addresses().values():
            connection = Connection(Address.parse(address), connect_timeout_s=1.0)
            try:
                return connection.request("FindCoordinator", 2.0)["leader"]
            except (ConnectionError, CoordinatorError):
                continue
            finally:
                connection.close()
        return None

    def _start_coordinators(self, deadline: float) -> None:
        c = self.spec.coordinator
        for name in self.coordinator_names():
            spec = {"name": name, "port": self.network.coordinator_ports[name],
                    "zookeeper_connect": self.network.coordinator_zookeeper_connect(name), "variant": c.variant,
                    "history": c.history or str(self.workdir / "logs" / "coordinator-history.jsonl"),
                    "session_file": str(self.workdir / "data" / f"{name}.zk-session.json"),
                    "zookeeper_session_timeout_ms": c.zookeeper_session_timeout_ms,
                    "initial_rebalance_delay_ms": c.initial_rebalance_delay_ms}
            path = self.workdir / "config" / f"{name}.json"
            path.write_text(json.dumps(spec, indent=2))
            self._launch(name, "coordinator", [sys.executable, "-m", "coordinator", str(path)])
        while self.coordinator_leader() is None:
            for name in self.coordinator_names():
                if not self.supervisor.get(name).running():
                    raise ClusterError(f"{name} exited during startup; see {self.workdir / 'logs' / (name + '.stdout')}")
            if time.monotonic() > deadline:
                raise ClusterError("the project's coordinator elected no leader in time")
            time.sleep(0.1)
        self.report(f"coordinator {c.variant}: {c.instances} instance(s), {self.coordinator_leader()} leads")

    def expire_coordinator_session(self, name: str) -> dict:
        """Expire a coordinator instance's ZooKeeper session on the server: its password is
        ours (it publishes its session), so the client-side twin trick does it."""
        path = self.workdir / "data" / f"{name}.zk-session.json"
        try:
            session = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise ClusterError(f"{name} has published no ZooKeeper session ({path}): {e}") from None
        session_id = int(session["session_id"], 16)
        zookeeper.expire_session_as_client(self.zookeeper_connect, session_id, bytes.fromhex(session["password"]))
        return {"session_id": session["session_id"]}

    # ----------------------------------------------------------------- KRaft

    @property
    def _kraft_voters(self) -> str:
        return f"{KRAFT_CONTROLLER_ID}@127.0.0.1:{self.controller_port}"

    def _prepare_kraft(self) -> None:
        """Format every node's storage (a JVM start each, in parallel), then start the controller."""
        cluster_id = _kraft_cluster_id()
        controller = self.workdir / "config" / "controller-1.properties"
        controller.write_text(config.properties(config.kraft_controller_properties(
            KRAFT_CONTROLLER_ID, self.controller_port, self.workdir / "data" / "controller-1", self._kraft_voters)))
        formats = []
        for name in ["controller-1", *self.broker_ids]:
            path = self.workdir / "config" / f"{name}.properties"
            formats.append((name, subprocess.Popen(
                ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", self.dist.classpath(),
                 "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(path)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        for name, proc in formats:
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                raise ClusterError(f"formatting KRaft storage of {name} failed:\n{out[-2000:]}")
        self._launch("controller-1", "controller", self._java("controller-1", "kafka.Kafka", str(controller)))

    # ----------------------------------------------------------------- brokers

    def _write_broker_configs(self) -> None:
        for name, i in self.broker_ids.items():
            listeners = self.network.listener_properties(i)
            data = self.workdir / "data" / name
            if self.dist.zookeeper_mode:
                props = config.zk_broker_properties(i, listeners, data, self.spec.brokers,
                                                    self.network.zookeeper_connect(i), self.spec.broker_config)
            else:
                props = config.kraft_broker_properties(i, listeners, data, self.spec.brokers, self._kraft_voters,
                                                       self.spec.broker_config)
            (self.workdir / "config" / f"{name}.properties").write_text(config.properties(props))

    def _start_brokers(self) -> None:
        for name in self.broker_ids:
            self._launch(name, "broker", self._java(name, "kafka.Kafka", str(self.workdir / "config" / f"{name}.properties")))

    def _start_toxiproxy(self, deadline: float) -> None:
        self.toxiproxy_port = free_port()
        self._launch("toxiproxy", "toxiproxy",
                     [str(toxiproxy_binary()), "-host", "127.0.0.1", "-port", str(self.toxiproxy_port)])
        self.toxiproxy = ToxiproxyClient(self.toxiproxy_api)
        while True:
            self._check_alive("toxiproxy")
            try:
                self.toxiproxy.proxies()
                return
            except ToxiproxyError:
                if time.monotonic() > deadline:
                    raise ClusterError(f"Toxiproxy API did not answer at {self.toxiproxy_api}") from None
                time.sleep(0.1)

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
        """Ready: every broker registered and listed in metadata, and a controller known."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + timeout
        admin = self.admin()
        seen: set[int] = set()
        while time.monotonic() < deadline:
            for name in self.launches:
                self._check_alive(name)
            try:
                md = admin.list_topics(timeout=2)
                seen = set(md.brokers)
                if seen >= set(self.broker_ids.values()) and md.controller_id >= 0:
                    return
            except KafkaException:
                pass
            time.sleep(0.25)
        raise ClusterError(f"brokers not ready after {timeout:.0f}s: metadata lists {sorted(seen)} "
                           f"of {sorted(self.broker_ids.values())}; logs in {self.workdir / 'logs'}")

    def add_partitions(self, topic: str, total: int, timeout: float = 60.0) -> None:
        """Grow a topic to ``total`` partitions and wait until every one has a leader."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewPartitions

        admin = self.admin()  # keep a reference: a collected client fails its futures ("handle destroyed")
        try:
            admin.create_partitions([NewPartitions(topic, total)], operation_timeout=30)[topic].result()
        except KafkaException as e:
            raise ClusterError(f"adding partitions to {topic} failed: {e.args[0].str()}") from None
        self._wait_leaders([TopicSpec(topic, total)], timeout)

    def create_topics(self, topics: list[TopicSpec], timeout: float = 60.0) -> None:
        """Create topics and wait until every partition has a leader."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import NewTopic

        if not topics:
            return
        deadline = time.monotonic() + timeout
        pending = list(topics)
        while pending:
            # On a busy machine a client may not learn the controller from its first metadata
            # ("Failed while waiting for controller") and keep waiting on it: a retriable
            # error is tried again, with a fresh client, until the deadline.
            admin = self.admin()  # referenced until its futures are read ("handle destroyed" otherwise)
            futures = admin.create_topics([
                NewTopic(t.name, t.partitions, t.replication_factor or min(3, self.spec.brokers), config=dict(t.config))
                for t in pending
            ], operation_timeout=30, request_timeout=max(5.0, min(15.0, deadline - time.monotonic())))
            by_name = {t.name: t for t in pending}
            retry = []
            for name, fut in futures.items():
                topic = by_name[name]
                try:
                    fut.result()
                except KafkaException as e:
                    error = e.args[0]
                    if error.name() == "TOPIC_ALREADY_EXISTS":
                        continue
                    if not (error.retriable() or error.code() == KafkaError._TIMED_OUT) or time.monotonic() >= deadline:
                        raise ClusterError(f"creating topic {topic.name} failed: {error.str()}") from None
                    retry.append(topic)
            if retry:
                time.sleep(1)
            pending = retry
        self._wait_leaders(topics, max(10.0, deadline - time.monotonic()))

    def _wait_every_broker_knows(self, topics: list[TopicSpec], deadline: float) -> None:
        """Each broker's own metadata cache (ZooKeeper mode: filled by the controller's
        UpdateMetadata, which may lag) lists every broker, the controller and every
        partition's leader — whichever broker a client asks first gives the whole picture."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        def complete(port: int) -> bool:
            # A client that knows only this broker sends its first metadata request there.
            client = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "logger": QUIET_CLIENT_LOG})
            try:
                md = client.list_topics(timeout=2)
            except KafkaException:
                return False
            return set(md.brokers) >= set(self.broker_ids.values()) and md.controller_id >= 0 and _led(md, topics)

        waiting = dict(self.broker_ports)
        while waiting and time.monotonic() < deadline:
            waiting = {name: port for name, port in waiting.items() if not complete(port)}
            if waiting:
                time.sleep(0.25)
        if waiting:
            raise ClusterError(f"{', '.join(sorted(waiting))}: metadata still incomplete at the start deadline; "
                               f"logs in {self.workdir / 'logs'}")

    def _wait_leaders(self, topics: list[TopicSpec], timeout: float) -> None:
        admin = self.admin()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _led(admin.list_topics(timeout=5), topics):
                return
            time.sleep(0.25)
        raise ClusterError(f"topics {[t.name for t in topics]} have no leader for every partition after {timeout:.0f}s")


def _led(md, topics: list[TopicSpec]) -> bool:
    """The metadata has every topic with all its partitions, each with a leader."""
    return all(t.name in md.topics and len(md.topics[t.name].partitions) == t.partitions
               and all(p.leader >= 0 for p in md.topics[t.name].partitions.values()) for t in topics)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _kraft_cluster_id() -> str:
    """A random KRaft cluster id, as Kafka's Uuid.randomUuid() makes one: never starting with
    "-", which the storage tool's argument parser would take for an option (seen: one run in
    ~30 failed to format its controller with "argument --cluster-id/-t: expected one argument")."""
    while (cluster_id := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return cluster_id
