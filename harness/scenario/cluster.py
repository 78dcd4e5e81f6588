"""The ``cluster:`` section (which brokers, on which backend) and the ``topics:`` it holds.

Broker and client settings the harness derives itself cannot be overridden here: they
are what network faults act through, or what the history depends on.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from faults.strict import Strict
from faults.topic_names import TopicName
from harness.cluster.backend import BACKENDS, started_backends
from harness.components import versions

Scalar = str | int | float | bool

# The settings sections whose values reach Kafka as text (a properties line, the AdminClient's
# configs): a value YAML reads as another number than written (`3.10` as 3.1, `010` as 8, `1_000`
# as 1000) would reach it changed, so it is refused where it is read
# (files.read_scenario_data), told to write it quoted. `*` is every topic.
TEXT_VALUED_SETTINGS = (("cluster", "broker_config"), ("cluster", "client_config"), ("topics", "*", "config"))


def config_problems(config: dict, key: str) -> list[str]:
    """Settings are written one per line into server.properties (or sent to the AdminClient):
    a name is a Kafka config name, a value one line (a newline or a trailing backslash would
    smuggle in, or swallow, the next setting)."""
    problems = []
    for name, value in config.items():
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,255}", name):
            problems.append(f"{key}: {name!r} is not a Kafka config name")
        elif isinstance(value, str) and (re.search(r"[\r\n\x00]", value) or value.endswith("\\")):
            problems.append(f"{key}.{name}: a value is one line (no line breaks, no trailing backslash)")
    return problems


# The most partitions a topic may have: a broker keeps a log (its segment, offset and time index
# files) open per partition replica, so 4,000 on one broker are ~12,000 open files, within the
# 20,000 this machine allows a process; a 1,000-member group is given 2 partitions each.
MAX_TOPIC_PARTITIONS = 4000


# The brokers' own bounds on one group's size, by group protocol (KIP-389 for classic groups,
# KIP-848 for consumer groups), and their defaults — Integer.MAX_VALUE in every release the
# harness runs (GroupCoordinatorConfig.GROUP_MAX_SIZE_DEFAULT and CONSUMER_GROUP_MAX_SIZE_DEFAULT,
# read from kafka-group-coordinator 3.8 to 4.4; before 3.8 the same in KafkaConfig): unbounded
# unless a scenario sets them in cluster.broker_config. A run records the ones in effect
# (run_started.group_settings); validation refuses a group that can grow past one it sets.
GROUP_SIZE_LIMITS = {"classic": "group.max.size", "consumer": "group.consumer.max.size"}
GROUP_SIZE_LIMIT_DEFAULT = 2_147_483_647


def group_size_needed(members: int, static_membership: bool, replaced: int = 0) -> int:
    """The bound a group of ``members`` needs, when ``replaced`` member incarnations may be
    stopped and started again while one join phase lasts (a load profile's restart and churn).

    - A dynamic member stopped while its JoinGroup waits in a join phase is counted until that
      phase ends: a broker reads one request at a time from a connection, so its LeaveGroup waits
      behind its own JoinGroup. Its next incarnation, joining meanwhile, is one member more, and
      while the group prepares a rebalance the coordinator counts those awaiting a join against
      the bound and turns away the last to rejoin, old members included, which it then removes
      (classic groups: GroupMetadataManager.acceptJoiningMember). At 1,000 classic-cooperative
      members with the bound exactly 1,000, a restart and a churn fenced the group's leader.
    - A static member that restarts joins again without its member id, and the coordinator
      checks the bound before it finds that the member replaces its old self (classic groups;
      consumer groups until KAFKA-20601): at exactly its bound a static group cannot take a
      restarted member back until the old one's session expires. One slot at least.
    """
    return members + max(replaced, 1 if static_membership else 0)


class Topic(Strict):
    name: TopicName
    partitions: Annotated[int, Field(ge=1, le=MAX_TOPIC_PARTITIONS)]
    replication_factor: Annotated[int | None, Field(ge=1, le=9)] = None
    config: dict[str, Scalar] = {}

    @model_validator(mode="after")
    def _one_setting_a_line(self):
        problems = config_problems(self.config, "config")
        if problems:
            raise ValueError("\n".join(problems))
        return self


# Broker settings the harness derives for every broker: its listeners (one per lane, each
# advertised at that lane's proxy, so a network fault cuts exactly one member's traffic),
# node ids, log directories, its ZooKeeper or KRaft quorum. Overridden, the proxies would
# be bypassed (a "partition" that cuts nothing) or the brokers pointed at another cluster.
HARNESS_BROKER_SETTINGS = frozenset(
    {
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "inter.broker.listener.name",
        "control.plane.listener.name",
        "controller.listener.names",
        "zookeeper.connect",
        "log.dirs",
        "log.dir",
        "node.id",
        "broker.id",
        "process.roles",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
    }
)


# Client settings that are the harness's own (the scenario's workload decides them, or the
# history depends on them); tests/unit/test_scenario_external.py holds it to the clients' configs.
HARNESS_CLIENT_SETTINGS = frozenset(
    {
        "bootstrap.servers",
        "group.id",
        "client.id",
        "group.instance.id",
        "group.protocol",
        "group.remote.assignor",
        "partition.assignment.strategy",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "max.poll.interval.ms",
        "auto.offset.reset",
        "enable.auto.commit",
        "enable.auto.offset.store",
        "auto.commit.interval.ms",
        "topic.metadata.refresh.interval.ms",
        "debug",
        "logger",
        "log_level",
        "acks",
        "enable.idempotence",
        "linger.ms",
        "delivery.timeout.ms",
        "socket.connection.setup.timeout.ms",
    }
)


# A rack id (broker.rack, client.rack): Kafka takes any string; one word keeps it one config line.
Rack = Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,64}$")]


class Cluster(Strict):
    backend: Literal[tuple(BACKENDS)] = "local"  # type: ignore[valid-type]
    # An exact Apache Kafka release ("3.7.2") or a line ("3.7" = its newest tested release);
    # validation turns it into the exact release (harness/components/versions.py).
    kafka: str = versions.DEFAULT_KAFKA
    # ZooKeeper or KRaft; absent = ZooKeeper on releases that have it (≤ 3.9), else KRaft.
    metadata: Literal["zookeeper", "kraft"] | None = None
    brokers: Annotated[int, Field(ge=1, le=9)] = 3
    zookeeper_nodes: Literal[1, 3] = 1
    broker_config: dict[str, Scalar] = {}
    # broker.rack of broker-1, broker-2, …: one per broker. Fetching from a follower in the member's
    # rack (KIP-392) takes replica.selector.class in broker_config as well; racks alone only tell
    # the clients (KIP-881's rack-aware assignors) where the replicas are.
    broker_racks: Annotated[list[Rack] | None, Field(min_length=1, max_length=9)] = None
    # Each broker's maximum heap in MB; absent: 384, enough for tests. A group of a thousand
    # members on 2,000 partitions wants 1,024 (docs/scale.md).
    broker_heap_mb: Annotated[int, Field(ge=128, le=16384)] | None = None
    # backend: external — someone else's cluster: where it is, and the client settings (security)
    # every client the harness makes is given. `kafka` then says which line it runs.
    bootstrap_servers: Annotated[str, Field(pattern=r"^[^,\s]+:\d{1,5}(,[^,\s]+:\d{1,5})*$")] | None = None
    zookeeper_connect: Annotated[str, Field(min_length=1, max_length=1000)] | None = None
    client_config: dict[str, Scalar] = {}

    @field_validator("kafka", mode="before")
    @classmethod
    def _exact_release(cls, value):
        # Text only: unquoted, YAML reads `kafka: 3.10` as the number 3.1 (errors.located tells to quote it).
        if not isinstance(value, str):
            return value  # refused by the type, as text wanted
        return versions.kafka_release(value).version  # ValueError with the reason

    @model_validator(mode="after")
    def _metadata_mode(self):
        release = self.release
        if self.metadata is None:
            object.__setattr__(self, "metadata", release.default_metadata)
        elif self.metadata not in release.metadata_modes:
            raise ValueError(
                f"metadata: Kafka {release.version} has no {self.metadata} mode "
                + ("(ZooKeeper mode ends with 3.9; 4.x is KRaft only)" if self.metadata == "zookeeper" else "")
            )
        return self

    @model_validator(mode="after")
    def _harness_settings_stay(self):
        problems = config_problems(self.broker_config, "broker_config")
        problems += config_problems(self.client_config, "client_config")
        if self.broker_racks is not None and len(self.broker_racks) != self.brokers:
            problems.append(f"broker_racks: one rack per broker: {len(self.broker_racks)} for {self.brokers} brokers")
        if self.broker_racks is not None and "broker.rack" in self.broker_config:
            problems.append("broker_config.broker.rack: the racks are broker_racks' (one per broker)")
        if self.external:
            problems += [
                f"{key}: an external cluster is not started by the harness"
                for key in ("brokers", "zookeeper_nodes", "broker_config", "broker_racks", "broker_heap_mb")
                if key in self.model_fields_set
            ]
            if not self.bootstrap_servers:
                problems.append("bootstrap_servers: an external cluster needs its bootstrap servers (host:port,…)")
            problems += [
                f"client_config.{key}: the harness sets this for each client"
                for key in self.client_config
                if key in HARNESS_CLIENT_SETTINGS
            ]
        else:
            problems += [
                f"{key}: only for backend: external (the harness runs this cluster itself)"
                for key in ("bootstrap_servers", "zookeeper_connect", "client_config")
                if key in self.model_fields_set
            ]
            if self.zookeeper_nodes != 1 and not self.zookeeper_mode:
                problems.append(
                    f"zookeeper_nodes: Kafka {self.kafka} runs without ZooKeeper (KRaft)"
                    + (" here: metadata: kraft" if self.release.zookeeper else "")
                )
        problems += [
            f"broker_config.{key}: the harness sets this for every broker (listeners, ids, log "
            f"directories and the quorum are its own: network faults act through those listeners)"
            for key in self.broker_config
            if key in HARNESS_BROKER_SETTINGS
        ]
        timeout = self.broker_config.get("zookeeper.session.timeout.ms")
        whole = type(timeout) is int or (type(timeout) is str and timeout.isascii() and timeout.isdigit())
        if timeout is not None and not (whole and 1000 <= int(timeout) <= 600_000):
            problems.append(
                "broker_config.zookeeper.session.timeout.ms: the harness times ZooKeeper faults by it: "
                "a whole number of milliseconds, 1000..600000"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def broker_rack_map(self) -> dict[str, str] | None:
        """Each broker's rack by name (run_started.broker_racks), None without racks."""
        if not self.broker_racks:
            return None
        return {f"broker-{i}": rack for i, rack in enumerate(self.broker_racks, 1)}

    @property
    def release(self) -> versions.KafkaRelease:
        return versions.kafka_release(self.kafka)

    @property
    def zookeeper_mode(self) -> bool:
        return self.metadata == "zookeeper"

    @property
    def recorded_kafka(self) -> str | None:
        """The exact broker release a run records (run_started.kafka, run.json): someone else's
        cluster runs what it runs — null unless the scenario states it."""
        return None if self.external and "kafka" not in self.model_fields_set else self.kafka

    @property
    def recorded_metadata(self) -> str | None:
        return None if self.external and "metadata" not in self.model_fields_set else self.metadata

    @property
    def external(self) -> bool:
        """Someone else's cluster: the harness runs only its clients there."""
        return self.backend not in started_backends()
