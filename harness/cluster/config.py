"""Configuration files for ZooKeeper, brokers and controllers, as text.

Kept apart from process handling so the files a run used can be read in its
directory and the templates tested without starting anything.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

# The brokers' log must carry the GroupCoordinator's INFO lines ("Preparing to
# rebalance group", "Stabilized group …"): they are the independent clock the
# history's coordinator events come from. Timestamps carry the zone offset so the
# parser never has to guess it.
LOG_PATTERN = "[%d{yyyy-MM-dd'T'HH:mm:ss.SSSZ}] %p %m (%c)%n"

# Small heaps and the serial collector: four JVMs share two cores here. A broker of a big group
# takes more (cluster.broker_heap_mb): with 1,000 members and 2,000 partitions its 384 MB old
# generation was 90 % full and its collections stalled every request for seconds.
DEFAULT_HEAP_MB = 384
JVM_OPTS = [
    "-Xms64m",
    f"-Xmx{DEFAULT_HEAP_MB}m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",  # C1 only: starts faster, plenty for test loads
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
]


# Kafka's default is 3 s (KIP-134): every new group would start 3 s late. A scenario that wants
# the delay sets group.initial.rebalance.delay.ms in cluster.broker_config.
INITIAL_REBALANCE_DELAY_MS = 0

# Kafka's default is 18 s; 6 s lets a crashed broker's registration expire sooner, so it
# can be started again sooner (see nodes.Broker.start).
BROKER_ZK_SESSION_TIMEOUT_MS = 6000


def log4j1_properties(log_file: Path) -> str:
    return f"""log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log_file}
log4j.appender.file.Append=true
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern={LOG_PATTERN}
log4j.logger.kafka.coordinator.group=INFO
log4j.logger.org.apache.kafka.coordinator.group=INFO
log4j.logger.kafka.request.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.org.apache.zookeeper=INFO
"""


def log4j2_xml(log_file: Path) -> str:
    pattern = LOG_PATTERN.replace("&", "&amp;").replace("<", "&lt;")
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <File name="file" fileName="{log_file}" append="true">
      <PatternLayout pattern="{pattern}"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="org.apache.kafka.coordinator.group" level="INFO"/>
    <Logger name="kafka.coordinator.group" level="INFO"/>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Logger name="state.change.logger" level="WARN"/>
    <Root level="INFO"><AppenderRef ref="file"/></Root>
  </Loggers>
</Configuration>
"""


def log_settings(log4j1: bool, log_config: Path, log_file: Path) -> tuple[str, str]:
    """(the log configuration's text, the JVM option naming it): Kafka 3.x ships log4j 1, 4.x log4j 2.
    Paths are as the JVM sees them (on this machine, or in its container)."""
    if log4j1:
        return log4j1_properties(log_file), f"-Dlog4j.configuration=file:{log_config}"
    return log4j2_xml(log_file), f"-Dlog4j2.configurationFile={log_config}"


def kafka_jvm_argv(
    main_class: str,
    config_file: Path,
    classpath: str,
    logs_dir: Path,
    log_option: str,
    agents: list[str] = (),
    heap_mb: int | None = None,
) -> list[str]:
    """The command line of a JVM of the Kafka distribution (a broker, a controller, a ZooKeeper
    node); ``heap_mb``: its maximum heap, else DEFAULT_HEAP_MB."""
    return [
        "java",
        *agents,
        *(f"-Xmx{heap_mb}m" if heap_mb and o.startswith("-Xmx") else o for o in JVM_OPTS),
        log_option,
        f"-Dkafka.logs.dir={logs_dir}",
        "-cp",
        classpath,
        main_class,
        str(config_file),
    ]


def zookeeper_cfg(
    data_dir: Path,
    client_port: int,
    peers: list[tuple[int, int, int]],
    tick_ms: int = 500,
    host_of: Callable[[str], str] = lambda _node: "127.0.0.1",
    node: str = "",
) -> str:
    """``peers``: (id, quorum port, election port) for every node; a single node runs standalone.
    ``host_of``: a node's address by name (network.Hosts.of): loopback, or a container's service name."""
    lines = [
        f"dataDir={data_dir}",
        f"clientPortAddress={host_of(node)}",
        f"clientPort={client_port}",
        f"tickTime={tick_ms}",
        "initLimit=20",
        "syncLimit=10",
        # Session timeouts between 2 and 60 ticks are honoured: lets scenarios ask for short ones.
        f"minSessionTimeout={tick_ms * 2}",
        "maxSessionTimeout=60000",
        "admin.enableServer=false",
        "4lw.commands.whitelist=ruok,stat,srvr,cons,mntr",
        "maxClientCnxns=0",
    ]
    if len(peers) > 1:
        lines += [f"server.{i}={host_of(f'zookeeper-{i}')}:{q}:{e}" for i, q, e in peers]
    return "\n".join(lines) + "\n"


def properties(values: dict) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


def broker_common(id_key: str, node_id: int, log_dir: Path, brokers: int, listeners: dict) -> dict:
    """Settings every broker gets; ``listeners`` comes from the cluster's NetworkPlan."""
    rf = min(3, brokers)
    return {
        id_key: node_id,
        **listeners,
        "log.dirs": log_dir,
        "num.partitions": 1,
        "default.replication.factor": rf,
        "min.insync.replicas": max(1, rf - 1),
        "offsets.topic.replication.factor": rf,
        "offsets.topic.num.partitions": 12,  # fewer than 50: faster first coordinator lookup
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": max(1, rf - 1),
        "unclean.leader.election.enable": "false",
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": INITIAL_REBALANCE_DELAY_MS,
        "log.segment.bytes": 16 * 1024 * 1024,
        "num.network.threads": 2,
        "num.io.threads": 4,
        # Parallel teardown makes brokers wait on a controller that is itself stopping.
        "controlled.shutdown.retry.backoff.ms": 1000,
    }


def zk_broker_properties(node_id, listeners, log_dir, brokers, zk_connect, overrides) -> dict:
    props = broker_common("broker.id", node_id, log_dir, brokers, listeners)
    props.update(
        {
            "zookeeper.connect": zk_connect,
            "zookeeper.session.timeout.ms": BROKER_ZK_SESSION_TIMEOUT_MS,
            "zookeeper.connection.timeout.ms": 18000,
        }
    )
    props.update(overrides)
    return props


def kraft_broker_properties(node_id, listeners, log_dir, brokers, controller_voters, overrides) -> dict:
    props = broker_common("node.id", node_id, log_dir, brokers, listeners)
    props.update(
        {
            "process.roles": "broker",
            "controller.quorum.voters": controller_voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": listeners["listener.security.protocol.map"] + ",CONTROLLER:PLAINTEXT",
        }
    )
    props.update(overrides)
    return props


def kraft_controller_properties(
    node_id: int, port: int, log_dir: Path, controller_voters: str, host: str = "127.0.0.1"
) -> dict:
    return {
        "process.roles": "controller",
        "node.id": node_id,
        "controller.quorum.voters": controller_voters,
        "listeners": f"CONTROLLER://{host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        "log.dirs": log_dir,
    }
