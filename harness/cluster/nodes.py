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
from harness.cluster.kinds import (
    BrokerKind,
    CoordinatorKind,
    KRaftControllerKind,
    ToxiproxyKind,
    ZooKeeperKind,
)
from harness.components.install import KafkaDist
from harness.supervision.processes import Supervisor
from harness.supervision.service import LocalProcess
from runtime.errors import ClusterError


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

    heap_mb: int | None = None  # its maximum heap; None: config.DEFAULT_HEAP_MB

    def jvm_agents(self) -> list[str]:
        return []

    def history_fields(self) -> dict:
        return {"kafka": self.dist.version}  # the release this start runs: a rolling upgrade changes it

    def command(self) -> list[str]:
        log_config = self.workdir / "config" / f"{self.name}.log4j"
        text, option = config.log_settings(self.dist.release.log4j == "log4j1", log_config, self.logs["server"])
        log_config.write_text(text)
        return config.kafka_jvm_argv(
            self.main_class,
            self.config_file,
            self.dist.classpath(),
            self.logs_dir,
            option,
            self.jvm_agents(),
            self.heap_mb,
        )


class ZooKeeperNode(ZooKeeperKind, KafkaJvm):
    main_class = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

    def __init__(
        self,
        name: str,
        supervisor: Supervisor,
        workdir: Path,
        dist: KafkaDist,
        config_file: Path,
        client_port: int,
        jolokia_agent: Path,
        jolokia_port: int,
        jolokia_policy: Path,
    ):
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
                raise ClusterError(
                    f"{self.name} did not start serving on 127.0.0.1:{self.client_port}; see {self.logs['server']}"
                )
            time.sleep(0.2)


class KRaftController(KRaftControllerKind, KafkaJvm):
    main_class = "kafka.Kafka"


class Broker(BrokerKind, KafkaJvm):
    main_class = "kafka.Kafka"

    def __init__(
        self,
        name: str,
        supervisor: Supervisor,
        workdir: Path,
        dist: KafkaDist,
        config_file: Path,
        broker_id: int,
        port: int,
        zookeeper_connect: str | None = None,
        zookeeper_session_timeout_ms: int | None = None,
        heap_mb: int | None = None,
    ):
        super().__init__(name, supervisor, workdir, dist, config_file)
        self.broker_id, self.port = broker_id, port  # port: its direct (CLIENT) listener
        self.heap_mb = heap_mb
        self.zookeeper_connect, self.zookeeper_session_timeout_ms = zookeeper_connect, zookeeper_session_timeout_ms

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


class ToxiproxyServer(ToxiproxyKind, LocalProcess):
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
        self.wait_answering(self.client.proxies, ToxiproxyError, f"Toxiproxy API at {self.api}", deadline)


class CoordinatorInstance(CoordinatorKind, LocalProcess):
    """Its spec file says its port, ZooKeeper and variant."""

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
