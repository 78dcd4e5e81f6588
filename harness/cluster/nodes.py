"""The local backend's services: ZooKeeper nodes, a KRaft controller, brokers, Toxiproxy and
the project's coordinator instances, each a process group on this machine.

Each knows its command line, its logs and how to tell it serves; the wiring between
them (ports, the network plan, config files) is the cluster's (local.py).
"""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

from faults.toxiproxy import ToxiproxyClient, ToxiproxyError
from harness.cluster import config, zookeeper
from harness.install import KafkaDist
from harness.processes import Supervisor
from harness.service import LocalProcess, StopTier
from runtime.errors import ClusterError
from runtime.logs import QUIET_CLIENT_LOG


class KafkaJvm(LocalProcess):
    """A JVM of the Kafka distribution (ZooKeeper ships in it too), logging through log4j to
    ``logs/<name>.log`` — the server log, where a broker's GroupCoordinator lines are."""

    main_class: str

    def __init__(self, name: str, supervisor: Supervisor, workdir: Path, dist: KafkaDist, config_file: Path):
        super().__init__(name, supervisor, workdir / "logs")
        self.workdir, self.dist, self.config_file = workdir, dist, config_file

    @property
    def logs(self) -> dict[str, Path]:
        return {**super().logs, "server": self.logs_dir / f"{self.name}.log"}

    def jvm_agents(self) -> list[str]:
        return []

    def command(self) -> list[str]:
        logcfg = self.workdir / "config" / f"{self.name}.log4j"
        if self.dist.zookeeper_mode:  # Kafka 3.x ships log4j 1, 4.x log4j 2
            logcfg.write_text(config.log4j1_properties(self.logs["server"]))
            log_opt = f"-Dlog4j.configuration=file:{logcfg}"
        else:
            logcfg.write_text(config.log4j2_xml(self.logs["server"]))
            log_opt = f"-Dlog4j2.configurationFile={logcfg}"
        return ["java", *self.jvm_agents(), *config.JVM_OPTS, log_opt, f"-Dkafka.logs.dir={self.logs_dir}",
                "-cp", self.dist.classpath(), self.main_class, str(self.config_file)]


class ZooKeeperNode(KafkaJvm):
    role, tier = "zookeeper", StopTier.QUORUM
    main_class = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

    def __init__(self, name: str, supervisor: Supervisor, workdir: Path, dist: KafkaDist, config_file: Path,
                 client_port: int, jolokia_agent: Path, jolokia_port: int, jolokia_policy: Path):
        super().__init__(name, supervisor, workdir, dist, config_file)
        self.client_port = client_port
        self._jolokia = (jolokia_agent, jolokia_port, jolokia_policy)

    @property
    def jolokia_url(self) -> str:
        """Its Jolokia agent (JMX over HTTP): how a broker's session is expired on the server."""
        return f"http://127.0.0.1:{self._jolokia[1]}/jolokia/"

    def jvm_agents(self) -> list[str]:
        return [zookeeper.jolokia_javaagent(*self._jolokia)]

    def wait_ready(self, deadline: float) -> None:
        while True:
            self.check_alive()
            try:
                if _four_letter_word(self.client_port, b"srvr").find(b"Mode:") >= 0:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"{self.name} did not start serving on 127.0.0.1:{self.client_port}; "
                                   f"see {self.logs['server']}")
            time.sleep(0.2)


class KRaftController(KafkaJvm):
    role, tier = "controller", StopTier.QUORUM
    main_class = "kafka.Kafka"


class Broker(KafkaJvm):
    role, tier = "broker", StopTier.BROKERS
    main_class = "kafka.Kafka"

    def __init__(self, name: str, supervisor: Supervisor, workdir: Path, dist: KafkaDist, config_file: Path,
                 broker_id: int, port: int, zookeeper_connect: str | None = None,
                 zookeeper_session_timeout_ms: int | None = None):
        super().__init__(name, supervisor, workdir, dist, config_file)
        self.broker_id, self.port = broker_id, port  # port: its direct (CLIENT) listener
        self.zookeeper_connect, self.zookeeper_session_timeout_ms = zookeeper_connect, zookeeper_session_timeout_ms

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        """A ZooKeeper-mode broker killed without a clean shutdown leaves its ephemeral
        /brokers/ids/<id> behind until its ZooKeeper session expires; started before that,
        it dies at once ("node already exists"). Wait for the expiry, as an operator would."""
        if self.process is not None and self.zookeeper_connect:
            self._wait_registration_gone()
        super().start()

    def _wait_registration_gone(self) -> None:
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=self.zookeeper_connect, timeout=5, logger=QUIET_CLIENT_LOG)
        zk.start(timeout=10)
        try:
            deadline = time.monotonic() + self.zookeeper_session_timeout_ms / 1000 + 10
            while zk.exists(f"/brokers/ids/{self.broker_id}") and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            zk.stop()
            zk.close()


class ToxiproxyServer(LocalProcess):
    """The proxies every connection of a run passes (network.py): network faults act here."""

    role, tier = "toxiproxy", StopTier.NETWORK

    def __init__(self, name: str, supervisor: Supervisor, logs_dir: Path, binary: Path, port: int):
        super().__init__(name, supervisor, logs_dir)
        self.binary, self.port = binary, port
        self.client = ToxiproxyClient(self.api)

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [str(self.binary), "-host", "127.0.0.1", "-port", str(self.port)]

    def wait_ready(self, deadline: float) -> None:
        while True:
            self.check_alive()
            try:
                self.client.proxies()
                return
            except ToxiproxyError:
                if time.monotonic() > deadline:
                    raise ClusterError(f"Toxiproxy API did not answer at {self.api}") from None
                time.sleep(0.1)


class CoordinatorInstance(LocalProcess):
    """An instance of the project's own group coordinator (the ``coordinator`` package);
    its spec file says its port, ZooKeeper and variant."""

    role, tier = "coordinator", StopTier.COORDINATOR

    def __init__(self, name: str, supervisor: Supervisor, logs_dir: Path, spec_file: Path, session_file: Path):
        super().__init__(name, supervisor, logs_dir)
        self.spec_file = spec_file
        self.session_file = session_file  # its ZooKeeper session, published (how a fault expires it)

    def command(self) -> list[str]:
        return [sys.executable, "-m", "coordinator", str(self.spec_file)]


def _four_letter_word(port: int, word: bytes, timeout: float = 1.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(word)
        s.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
        return b"".join(chunks)
