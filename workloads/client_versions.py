"""The client libraries members run on, and which versions of them the harness runs: one table.

``workload.client`` is a requirement string, ``<distribution>==<version>``: the distribution a
driver takes (``Driver.client_distribution``) at one exact release. Each distribution's row says
what the library is called in the history (``consumer_started.client_library``), the oldest
release the harness runs (its floor, and why) and from which release its members can speak the
``consumer`` group protocol (KIP-848): validation reads those, never a version compared elsewhere.

Pure data and small functions, importing nothing of the project: a member process loads it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class ClientDistribution:
    name: str  # as a requirement names it: the PyPI project, or the Maven artifact
    library: str  # consumer_started.client_library: the library that process really loads
    registry: str  # where a release comes from: "pypi" (a wheel, its own environment) | "maven" (Kafka's tools)
    floor: str | None  # the oldest release the harness runs; None: what the Kafka catalogue installs
    floor_why: str
    # KIP-848's group.protocol=consumer: (first release, the ConsumerGroupHeartbeat version it speaks from
    # there on), oldest first; empty: its members run the classic protocols only.
    consumer_heartbeat: tuple[tuple[str, int], ...] = ()
    consumer_heartbeat_why: str = ""


DISTRIBUTIONS: Mapping[str, ClientDistribution] = MappingProxyType(
    {
        d.name: d
        for d in (
            ClientDistribution(
                "confluent-kafka",
                library="librdkafka",
                registry="pypi",
                # 1.9.2 and older have no wheel for CPython 3.11 (their last wheels are cp310); from 2.0.2
                # on every release has a cp311 manylinux wheel, and the members' API (on_lost,
                # incremental_assign, store_offsets) and librdkafka's cgrp lines the member reads are there.
                floor="2.0.2",
                floor_why="the oldest confluent-kafka with a CPython 3.11 manylinux wheel (1.9.2 and older have none)",
                # librdkafka's rd_kafka_ConsumerGroupHeartbeatRequest asks the broker for version 0..0 from
                # v2.4.0 to v2.9.x (Kafka 3.7/3.8's early access answers v0 only) and 1..1 from v2.10.0 (Kafka
                # 4.0's GA): a member and its brokers must agree, or it never finds its coordinator.
                consumer_heartbeat=(("2.4.0", 0), ("2.10.0", 1)),
                consumer_heartbeat_why="librdkafka speaks KIP-848's ConsumerGroupHeartbeat v0 (Kafka 3.7/3.8's early "
                "access) from 2.4.0 to 2.9.x, v1 (Kafka 4.0's GA) from 2.10.0",
            ),
            ClientDistribution(
                "kafka-clients",
                library="kafka-clients",
                registry="maven",
                floor=None,  # VerifiableConsumer from Kafka's tools of that release: the Kafka catalogue's range
                floor_why="the java driver runs Kafka's tools of that very release: the Kafka catalogue's range "
                "(harness/components/versions.py)",
                # (the java driver runs the classic protocols only: oracle/protocols.py)
            ),
        )
    }
)

_REQUIREMENT = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(?P<version>[0-9][0-9A-Za-z.+-]*)")


def version_key(version: str) -> tuple:
    """A release's sort key: its numbers, a pre-release (``rc``, ``b``) before the release itself."""
    m = re.match(r"(\d+(?:\.\d+)*)(.*)", version)
    numbers = tuple(int(n) for n in m[1].split(".")) if m else ()
    numbers += (0,) * (3 - len(numbers))
    return (*numbers, 0 if m and m[2] else 1, m[2] if m else version)


@dataclass(frozen=True)
class ClientRequirement:
    """One exact release of one client distribution: ``confluent-kafka==2.3.0``."""

    distribution: ClientDistribution
    version: str

    def __str__(self) -> str:
        return f"{self.distribution.name}=={self.version}"

    @property
    def below_floor(self) -> bool:
        floor = self.distribution.floor
        return floor is not None and version_key(self.version) < version_key(floor)

    @property
    def floor_problem(self) -> str | None:
        """Why the harness does not run this release (below its distribution's floor), or None."""
        dist = self.distribution
        return f"{self}: below the floor, {dist.name} {dist.floor}: {dist.floor_why}" if self.below_floor else None

    @property
    def consumer_heartbeat_version(self) -> int | None:
        """The ConsumerGroupHeartbeat version its members speak (KIP-848), or None: none at all."""
        key = version_key(self.version)
        spoken = [v for first, v in self.distribution.consumer_heartbeat if key >= version_key(first)]
        return spoken[-1] if spoken else None


def parse_client(text: str) -> ClientRequirement:
    """``"confluent-kafka==2.3.0"`` → its requirement; ValueError with the reason for anything else."""
    m = _REQUIREMENT.fullmatch(text.strip())
    if not m:
        raise ValueError(
            f"{text!r} is not a requirement of one exact release, e.g. "
            + " or ".join(f"'{d}==<version>'" for d in DISTRIBUTIONS)
        )
    name = re.sub(r"[-_.]+", "-", m["name"]).lower()  # PEP 503: how pip compares names
    if name not in DISTRIBUTIONS:
        raise ValueError(f"{m['name']!r}: members run on {' or '.join(DISTRIBUTIONS)}")
    return ClientRequirement(DISTRIBUTIONS[name], m["version"])
