"""Pinned versions of every real component. Bumping one is a one-line change here.

Apache Kafka is the exception to "pinned": a scenario may name any release in the
supported range (see ``kafka_release``). What the harness knows of a release — which
metadata modes it has, whether it speaks the ``consumer`` group protocol, how it logs —
is decided here and nowhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

SCALA_BINARY = "2.13"

# The releases the project has run its tests on, one per line at least. A line ("4.3")
# means the newest release of it listed here.
TESTED_KAFKA_RELEASES = ("3.3.2", "3.7.2", "3.8.1", "3.9.2", "4.0.2", "4.1.1", "4.3.1", "4.4.0")

# The default release of each major: `cluster.kafka` when absent is DEFAULT_KAFKA (3.9, with
# ZooKeeper mode, where most generations run); DEFAULT_KAFKA_4 is where a scenario that needs
# KRaft or the consumer protocol GA is pointed by default.
DEFAULT_KAFKA = "3.9"
DEFAULT_KAFKA_4 = "4.4.0"

# The supported range, (major, minor) inclusive at both ends.
# - Floor 3.3: the first release whose KRaft mode is production ready (KIP-833), and the
#   oldest whose GroupCoordinator log lines the harness recognises (tests/fixtures/broker_logs).
# - ZooKeeper mode exists up to 3.9 (KIP-500 removed it in 4.0).
# - Ceiling: the newest line tested; a newer line's log wording is unknown to the harness.
KAFKA_FLOOR = (3, 3)
KAFKA_LAST_ZOOKEEPER = (3, 9)
KAFKA_CEILING = (4, 4)
# KIP-848's `consumer` group protocol: early access in 3.7 and 3.8 (KRaft only, enabled by
# broker settings), generally available from 4.0.
CONSUMER_PROTOCOL_EARLY_ACCESS = ((3, 7), (3, 8))
CONSUMER_PROTOCOL_GA = (4, 0)

# The broker settings that enable the consumer protocol's early access on 3.7/3.8, as the
# early-access release notes give them (cwiki.apache.org/confluence/display/KAFKA/The+Next+
# Generation+of+the+Consumer+Rebalance+Protocol+(KIP-848)+-+Early+Access+Release+Notes):
# listing `consumer` among the rebalance protocols also switches the new group coordinator on
# (KafkaConfig.isNewGroupCoordinatorEnabled; group.coordinator.new.enable is not needed), and
# the transaction verification of KIP-890 is not supported with it, so it is turned off.
_EARLY_ACCESS = MappingProxyType(
    {"group.coordinator.rebalance.protocols": "classic,consumer", "transaction.partition.verification.enable": "false"}
)
# 3.7 also ships ConsumerGroupDescribe (the consumer protocol's own DescribeGroups) as an unstable API
# (latestVersionUnstable in its ConsumerGroupDescribeRequest.json; the only one of 3.7.2): its brokers
# advertise it only with unstable.api.versions.enable, which in 3.7.2 changes nothing else
# (ApiVersionManager alone reads it). Without it the observer's describe falls back to the classic
# DescribeGroups, which answers a consumer-protocol group as Dead without members, and the harness
# never sees the group form. 3.8 made the API stable, with another schema: on 3.7 the observer asks
# with 3.7's (workloads/group_describe.py), librdkafka's parse of it aborting the process.
CONSUMER_GROUP_DESCRIBE_UNSTABLE = ((3, 7),)
CONSUMER_PROTOCOL_EARLY_ACCESS_CONFIG = MappingProxyType(
    {(3, 7): MappingProxyType({**_EARLY_ACCESS, "unstable.api.versions.enable": "true"}), (3, 8): _EARLY_ACCESS}
)

# Kafka 3.x logs through reload4j (log4j 1 API); 4.x through log4j2. Neither brings an
# SLF4J binding with it (the binding is the distribution tarball's, not the Maven
# artifact's), so we add one or the GroupCoordinator lines never reach a file.
# (groupId, artifactId, version)
SLF4J_RELOAD4J = ("org.slf4j", "slf4j-reload4j", "1.7.36")
SLF4J_LOG4J2 = ("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3")

# Kafka's command-line tools, same release as the brokers: the java driver runs their
# VerifiableConsumer. 3.x's tools bring reload4j and its binding; 4.x's bring log4j2
# without one, so the tools get the release's binding too.
KAFKA_TOOLS_ARTIFACT = ("org.apache.kafka", "kafka-tools")

ConsumerProtocol = Literal["early-access", "ga"] | None
Metadata = Literal["zookeeper", "kraft"]


@dataclass(frozen=True)
class KafkaRelease:
    """What the harness knows of one exact Apache Kafka release."""

    version: str  # "3.7.2"
    line: str  # "3.7"
    zookeeper: bool  # ZooKeeper mode available
    kraft: bool  # KRaft mode fit for this harness
    consumer_protocol: ConsumerProtocol  # KIP-848 on the broker (KRaft only)
    log4j: Literal["log4j1", "log4j2"]
    slf4j_bindings: tuple[tuple[str, str, str], ...]
    tested: bool  # in TESTED_KAFKA_RELEASES

    @property
    def consumer_heartbeat_version(self) -> int | None:
        """The ConsumerGroupHeartbeat version (the consumer protocol's own request) the harness runs
        members on against its brokers: v0 in 3.7/3.8's early access, the only one they answer
        (ConsumerGroupHeartbeatRequest.json: validVersions "0"; ApiVersions 0..0 on 3.7.2 and 3.8.1);
        v1 from 4.0 (GA). 4.x brokers answer 0..1 (validVersions "0-1": v1 adds SubscribedTopicRegex
        and the member-generated id of KIP-1082; ApiVersions 0..1 on 4.4.0) and still take v0, but an
        early-access client on GA brokers is a pairing no run has verified: the harness holds to v1."""
        return {None: None, "early-access": 0, "ga": 1}[self.consumer_protocol]

    @property
    def default_metadata(self) -> Metadata:
        """ZooKeeper where the release has it (the harness's ZooKeeper faults need it), else KRaft."""
        return "zookeeper" if self.zookeeper else "kraft"

    @property
    def metadata_modes(self) -> tuple[Metadata, ...]:
        return tuple(m for m, ok in (("zookeeper", self.zookeeper), ("kraft", self.kraft)) if ok)

    @property
    def consumer_group_describe_unstable(self) -> bool:
        """Its brokers answer ConsumerGroupDescribe with 3.7's unstable schema (see
        CONSUMER_PROTOCOL_EARLY_ACCESS_CONFIG): the observer describes the group itself."""
        return _key(self.line) in CONSUMER_GROUP_DESCRIBE_UNSTABLE

    def consumer_protocol_config(self) -> dict[str, str]:
        """Broker settings a KRaft cluster of this release needs for the consumer protocol."""
        return dict(CONSUMER_PROTOCOL_EARLY_ACCESS_CONFIG.get(_key(self.line), {}))

    def consumer_protocol_problem(self, metadata: Metadata) -> str | None:
        """Why a cluster of this release in `metadata` mode cannot serve the consumer protocol; None if it can."""
        if self.consumer_protocol is None:
            return (
                f"Kafka {self.version} has no `consumer` group protocol (KIP-848: early access on 3.7/3.8 "
                "in KRaft mode, generally available from 4.0)"
            )
        if metadata != "kraft":
            return f"the `consumer` group protocol on Kafka {self.version} needs `metadata: kraft`"
        return None

    @property
    def migrates_groups_online(self) -> bool:
        """Its brokers convert a group between the classic and consumer protocols as its members move
        (KIP-848's online migration, group.consumer.migration.policy): by default only where the
        consumer protocol is generally available. The early-access releases have the policy off (3.8)
        or no migration at all (3.7); in ZooKeeper mode there is no consumer protocol to move to."""
        return self.consumer_protocol == "ga"

    def group_migration_problem(self, metadata: Metadata) -> str | None:
        """Why a cluster of this release in `metadata` mode cannot migrate a group online between the
        classic and consumer protocols; None if it can."""
        if metadata == "kraft" and self.migrates_groups_online:
            return None
        ga, early = _line_text(CONSUMER_PROTOCOL_GA), "/".join(map(_line_text, CONSUMER_PROTOCOL_EARLY_ACCESS))
        if self.consumer_protocol is None:
            why = "it has no consumer protocol"
        elif metadata != "kraft":
            why = "the consumer protocol runs in KRaft mode only"
        else:
            why = "its consumer protocol is in early access, whose brokers do not migrate groups by default"
        return (
            f"Kafka {self.version}{' in ZooKeeper mode' if metadata == 'zookeeper' else ''} cannot migrate a group "
            f"online between the classic and consumer protocols: {why} (the brokers migrate from {ga} in KRaft "
            f"mode, group.consumer.migration.policy; the consumer protocol is in early access on {early})"
        )

    def need_problem(self, need: str | None, metadata: Metadata) -> str | None:
        """Why a cluster of this release in `metadata` mode cannot run a generation that needs
        `need` (oracle/protocols.py's Generation.needs); None if it can."""
        if need == "zookeeper":
            if not self.zookeeper:
                return f"Kafka {self.version} has no ZooKeeper mode (the last line with it is 3.9)"
            if metadata != "zookeeper":
                return "it needs `metadata: zookeeper`"
        elif need == "consumer-protocol":
            return self.consumer_protocol_problem(metadata)
        return None


def release_meeting(need: str | None) -> str | None:
    """The default release for a generation that needs `need` (compare and variants run it there)."""
    if need == "zookeeper":
        return kafka_release(DEFAULT_KAFKA).version
    if need == "consumer-protocol":
        return kafka_release(DEFAULT_KAFKA_4).version
    return None


def _key(line: str) -> tuple[int, int]:
    major, minor = line.split(".")
    return int(major), int(minor)


def _line_text(key: tuple[int, int]) -> str:
    return f"{key[0]}.{key[1]}"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def _newest_tested(line: str) -> str | None:
    of_line = [v for v in TESTED_KAFKA_RELEASES if v.rsplit(".", 1)[0] == line]
    return max(of_line, key=_version_key) if of_line else None


def supported_range() -> str:
    return f"{_line_text(KAFKA_FLOOR)}.0 .. {_line_text(KAFKA_CEILING)}.x"


def tested_lines() -> list[str]:
    return sorted({v.rsplit(".", 1)[0] for v in TESTED_KAFKA_RELEASES}, key=_key)


def kafka_release(text: str) -> KafkaRelease:
    """The release `text` names: an exact release ("3.7.2") or a line ("3.7" = the newest
    release of it in TESTED_KAFKA_RELEASES). ValueError saying why for one outside the range.
    An exact release in a supported line but not tested is accepted (`tested` False): it is
    resolved from Maven Central like any other, and its runs say it is untested."""
    text = str(text).strip()
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not m:
        raise ValueError(
            f'{text!r} is not a Kafka release: write an exact release ("3.7.2") or a line ("3.7"); '
            f"supported: {supported_range()}"
        )
    key = (int(m.group(1)), int(m.group(2)))
    line = _line_text(key)
    if key < KAFKA_FLOOR:
        raise ValueError(
            f"Kafka {text} is older than the supported range ({supported_range()}): 3.3 is the first "
            "release with production-ready KRaft (KIP-833) and the oldest whose broker log the harness reads"
        )
    if key > KAFKA_CEILING:
        raise ValueError(
            f"Kafka {text} is newer than the supported range ({supported_range()}): the harness has not "
            f"been tested on line {line}, and reads its broker log by the wording of the lines it knows"
        )
    if m.group(3) is None:
        version = _newest_tested(line)
        if version is None:
            raise ValueError(
                f"Kafka line {line} has no tested release to stand for it; name an exact release "
                f'("{line}.0", …) or a tested line: {", ".join(tested_lines())}'
            )
    else:
        version = f"{line}.{int(m.group(3))}"
    early = key in CONSUMER_PROTOCOL_EARLY_ACCESS
    four = key >= (4, 0)
    return KafkaRelease(
        version=version,
        line=line,
        zookeeper=key <= KAFKA_LAST_ZOOKEEPER,
        kraft=True,
        consumer_protocol="early-access" if early else "ga" if key >= CONSUMER_PROTOCOL_GA else None,
        log4j="log4j2" if four else "log4j1",
        slf4j_bindings=(SLF4J_LOG4J2,) if four else (SLF4J_RELOAD4J,),
        tested=version in TESTED_KAFKA_RELEASES,
    )


def kafka_release_or_none(text: str) -> KafkaRelease | None:
    try:
        return kafka_release(text)
    except ValueError:
        return None


# Jolokia's JVM agent serves JMX as JSON over HTTP. It runs inside every ZooKeeper
# server so the harness can call ZooKeeper's per-connection MBean operation
# terminateSession(): the one way to expire a broker's session on the server
# without knowing its session password. (groupId, artifactId, version, classifier)
JOLOKIA_AGENT = ("org.jolokia", "jolokia-agent-jvm", "2.6.0", "javaagent")

TOXIPROXY_VERSION = "v2.12.0"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"

JAVA_MIN_MAJOR = 17
GO_MIN = (1, 23)

# The compose backend (setup --compose): Debian's Docker Engine when no engine answers, and
# debootstrap for the images' base (no registry is reachable: images are built here).
CONTAINER_DEBS = {
    "docker.io": "20.10.24+dfsg1-1+deb12u1+b6",
    "debootstrap": "1.0.128+nmu2+deb12u2",
}
IMAGE_SUITE = "bookworm"  # the images' Debian release
IMAGE_MIRROR = "http://deb.debian.org/debian"
IMAGE_PACKAGES = ("openjdk-17-jre-headless", "python3")  # the JVMs and the project's coordinator
# `rebalance-lab image build`: the pip that installs the harness's wheels in the image (the Debian
# image has none) and the setuptools its editable install builds with (pyproject: >= 68).
HARNESS_IMAGE_PIP = ("pip==24.3.1", "setuptools==75.8.0")
