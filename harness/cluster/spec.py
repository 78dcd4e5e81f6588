"""What a run asks of its cluster, whichever backend brings it up (harness.cluster.backend).

Plain data: a backend reads the parts it can do something with — the local and compose
backends start brokers, ZooKeeper and the project's coordinator from it; the external
backend reads only where someone else's cluster is (``external``) and the run's topics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.cluster import config
from harness.cluster.admin import TopicSpec
from harness.components import versions


@dataclass
class SaslPlainUser:
    """`cluster up --sasl-plain`: the one user a SASL/PLAIN listener (SASL_PLAINTEXT) of every broker accepts.
    Its password goes into the brokers' configuration only (a file of the cluster, mode 0600), never into
    a repr, a log line or the console."""

    user: str
    password: str = field(repr=False)

    def jaas_config(self) -> str:
        return (
            f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{self.user}" '
            f'password="{self.password}" user_{self.user}="{self.password}";'
        )


@dataclass
class ProjectCoordinator:
    """The project's own group coordinator (the ``coordinator`` package), started beside the brokers."""

    variant: str  # v1 | v2 | v3
    instances: int = 1
    initial_rebalance_delay_ms: int = 3000
    zookeeper_session_timeout_ms: int = 6000
    history: str | None = None  # where its events go (a run's history); default: its log directory


@dataclass
class MessageProxySpec:
    """The Kafka-protocol-aware proxy (faults/message_proxy/) in front of these client lanes (network.py):
    where ``message`` faults act on single requests and responses."""

    lanes: frozenset[int]
    history: str | None = None  # where it writes what it did to a message (a run's history); default: its log directory


@dataclass
class ExternalTarget:
    """Where someone else's cluster is, how to reach it, and what the run leaves in it."""

    bootstrap_servers: str
    zookeeper_connect: str | None = None
    client_config: dict = field(default_factory=dict)  # security settings, given to every client
    group: str | None = None  # the run's (prefixed) group: deleted at the end
    # How long the coordinator may take to see the last member go (a static member does not
    # leave: its session has to expire) before the group can be deleted.
    group_empty_timeout_s: float = 30.0


@dataclass
class ClusterSpec:
    kafka: str = versions.DEFAULT_KAFKA  # exact release or line (versions.kafka_release)
    metadata: str | None = None  # "zookeeper" | "kraft"; None: the release's default
    brokers: int = 3
    zookeeper_nodes: int = 1
    broker_config: dict = field(default_factory=dict)
    topics: list[TopicSpec] = field(default_factory=list)
    lanes: int = 0  # client lanes, each routed through its own proxies (see network.py)
    coordinator: ProjectCoordinator | None = None  # the project's coordinator service, if the run uses it
    external: ExternalTarget | None = None  # backend external: someone else's cluster (harness/cluster/external.py)
    # `cluster up --sasl-plain`: every broker also listens with SASL_PLAINTEXT (PLAIN) for this user, on
    # 127.0.0.1; the harness's own listeners (client lanes, inter-broker, controller) stay PLAINTEXT.
    sasl_plain: SaslPlainUser | None = None
    broker_racks: tuple[str, ...] = ()  # broker.rack of broker-1, broker-2, … (cluster.broker_racks); () none
    message_proxy: MessageProxySpec | None = None  # the run has message faults: its lanes pass the message proxy
    broker_heap_mb: int | None = None  # each broker's maximum heap; None: config.DEFAULT_HEAP_MB

    def broker_settings(self, node_id: int) -> dict:
        """broker_config, and this broker's broker.rack where the scenario gives racks."""
        rack = {"broker.rack": self.broker_racks[node_id - 1]} if self.broker_racks else {}
        return {**self.broker_config, **rack}

    @property
    def release(self) -> versions.KafkaRelease:
        return versions.kafka_release(self.kafka)

    @property
    def zookeeper_mode(self) -> bool:
        return (self.metadata or self.release.default_metadata) == "zookeeper"

    @property
    def broker_zookeeper_session_timeout_ms(self) -> int:
        return int(self.broker_config.get("zookeeper.session.timeout.ms", config.BROKER_ZK_SESSION_TIMEOUT_MS))

    def coordinator_names(self) -> list[str]:
        return [f"coordinator-{i}" for i in range(1, self.coordinator.instances + 1)] if self.coordinator else []

    def zookeeper_session_timeout_s(self, name: str) -> float:
        """How long the ZooKeeper session of ``name`` (a broker or a coordinator instance) outlives it."""
        if name in self.coordinator_names():
            return self.coordinator.zookeeper_session_timeout_ms / 1000
        return self.broker_zookeeper_session_timeout_ms / 1000
