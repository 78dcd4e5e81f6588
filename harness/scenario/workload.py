"""The ``workload:`` section: the consumer group, how its members run, the producer.

What every member has — the group, its protocol generation and assignor, the commit mode,
processing time, the group's timing, the warm-up — is a key of ``workload:`` itself. What
only one *driver family* has is in that family's own section, named after it:

- ``librdkafka``: workloads/consumer.py, the classic protocols and KIP-848 on librdkafka's
  group client (revoke hold, processing thread, test hooks);
- ``java``: workloads/verifiable.py, Kafka's VerifiableConsumer (``driver: java``); no
  settings of its own yet;
- ``coordinator``: workloads/coordinated.py, the project's coordinator (``coordinator-v*``)
  and its members;
- ``zk_eager``: workloads/zk_eager, the ZooKeeper-era consumer.

A family is the module that runs one member — what the generation's row in
oracle/protocols.py names for ``workload.driver`` — so the section a scenario may write
follows from its protocol and driver. Another family's section would do nothing: it is
refused, with the reason. Keys that were the workload's own before they moved into a
section (``MOVED_TO_SECTIONS``) are refused where they were, naming where they are now.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Annotated, Literal

from pydantic import Field, model_validator

from faults.base import DAY_S, MAX_MEMBERS
from faults.strict import Strict
from harness.components import client_envs
from oracle.protocols import ASSIGNORS, DRIVER_NAMES, GENERATIONS, PROTOCOLS, Generation
from workloads.client_versions import ClientRequirement, parse_client
from workloads.driver import Driver, driver_of
from workloads.zk_settings import ZkEagerSettings  # the driver's own settings

DAY_MS = DAY_S * 1000


class Producer(Strict):
    topic: str | None = None  # default: the first topic
    rate: Annotated[float, Field(gt=0, le=50_000, description="records per second")] = 200
    value_bytes: Annotated[int, Field(ge=1, le=1_000_000)] = 100
    # How long a record waits for others of its partition (librdkafka's linger.ms; 5 is its
    # default). Longer: fewer, fuller produce requests — brokers do less per record — and later acks.
    linger_ms: Annotated[int, Field(ge=0, le=60_000)] = 5


# ---------------------------------------------------------------- the driver families' sections


class ConsumeUnassignedHook(Strict):
    """Test-only: ``member`` also reads ``partition`` through a second handle as long as the group
    has never assigned it to that member — a non-owner consuming (workloads/consumer.py)."""

    member: Annotated[str, Field(pattern=r"^consumer-[1-9][0-9]*$")]
    partition: Annotated[int, Field(ge=0, le=999)]
    topic: str | None = None  # default: the produced topic


class SigtermAfterJoinHook(Strict):
    """Test-only: ``member`` sends itself SIGTERM right after it sent its ``join``-th JoinGroup."""

    member: Annotated[str, Field(pattern=r"^consumer-[1-9][0-9]*$")]
    join: Annotated[int, Field(ge=1, le=1000)]


class DriverTestHooks(Strict):
    """Test-only switches of the librdkafka driver, for tests of the oracle on real runs; off unless given."""

    consume_unassigned: ConsumeUnassignedHook | None = None
    sigterm_after_join: SigtermAfterJoinHook | None = None


class LibrdkafkaSettings(Strict):
    """``workload.librdkafka``: members on librdkafka's group client (workloads/consumer.py)."""

    # Each member stays this long inside its revoke callback, after recording the revoke and before
    # giving the partitions up: the window an `on: {event: partitions_revoked}` fault acts in.
    revoke_hold_ms: Annotated[float, Field(ge=0, le=600_000)] = 0
    # "worker": each member processes on a thread of its own while its poll loop polls on; a revoke
    # callback waits for that thread to finish what it holds (workloads/worker.py, `revoke_started`).
    processing: Literal["inline", "worker"] = "inline"
    test_hooks: DriverTestHooks | None = None  # test-only (docs/history.md, "Test hooks")


class JavaSettings(Strict):
    """``workload.java``: Kafka's VerifiableConsumer (workloads/verifiable.py). The tool takes no
    setting the common keys do not already give; what it cannot do is checked against those."""


class CoordinatorSettings(Strict):
    """``workload.coordinator``: the project's coordinator service, for the ``coordinator-v*`` protocols."""

    instances: Annotated[int, Field(ge=1, le=3)] = 1  # more than one: leader election, failover
    initial_rebalance_delay_ms: Annotated[int, Field(ge=0, le=600_000)] = 3000  # v3 only (KIP-134)
    zookeeper_session_timeout_ms: Annotated[int, Field(ge=2000, le=600_000)] = 6000


@dataclass(frozen=True)
class DriverFamily:
    section: str  # its key under workload:, a field of Workload
    module: str  # what runs one member (python -m): a value of Generation.drivers
    about: str  # what a sentence calls it

    @property
    def protocols(self) -> tuple[str, ...]:
        """The generations this family runs, in the table's order."""
        return tuple(g.name for g in GENERATIONS.values() if self.module in g.drivers.values())


FAMILIES: Mapping[str, DriverFamily] = MappingProxyType(
    {
        f.section: f
        for f in (
            DriverFamily("librdkafka", "workloads.consumer", "librdkafka's group client"),
            DriverFamily("java", "workloads.verifiable", "Kafka's Java VerifiableConsumer, driver: java"),
            DriverFamily("coordinator", "workloads.coordinated", "the project's coordinator and its members"),
            DriverFamily("zk_eager", "workloads.zk_eager", "the ZooKeeper-era consumer"),
        )
    }
)


def family_of(generation: Generation, driver: str) -> DriverFamily | None:
    """The family that runs ``generation``'s members on ``driver``; None if the generation has no such driver."""
    module = generation.drivers.get(driver)
    return next((f for f in FAMILIES.values() if f.module == module), None)


# Keys a workload held before each driver family had its section: a scenario still writing one
# is told where it is now (errors.validation_problems), rather than that the key is unknown.
MOVED_TO_SECTIONS = MappingProxyType(dict.fromkeys(("revoke_hold_ms", "processing", "test_hooks"), "librdkafka"))


# ---------------------------------------------------------------- the section


class Workload(Strict):
    group: Annotated[str, Field(min_length=1, max_length=255)] = "rebalance-lab"
    protocol: Literal[PROTOCOLS] = "classic-eager"  # type: ignore[valid-type]  # oracle/protocols.py
    assignor: Literal[ASSIGNORS] | None = None  # type: ignore[valid-type]
    # java: Kafka's own VerifiableConsumer; any other: an installed plugin's (docs/extending.md)
    driver: Literal[DRIVER_NAMES] = "librdkafka"  # type: ignore[valid-type]
    # The members' client library at one exact release (workloads/client_versions.py):
    # "confluent-kafka==2.3.0" for librdkafka's drivers, "kafka-clients==3.9.2" for the java driver.
    # Absent: the pinned confluent-kafka (pyproject.toml); the java driver, the cluster's own release.
    client: Annotated[str | None, Field(max_length=100)] = None
    consumers: Annotated[int, Field(ge=0, le=MAX_MEMBERS)] = 3
    topics: Annotated[list[str] | None, Field(max_length=100)] = None  # default: every topic of the scenario
    topic_pattern: Annotated[str | None, Field(max_length=1000)] = (
        None  # a regex subscription instead, e.g. "^events.*"
    )
    commit: Literal["sync", "auto", "before-processing"] = "sync"
    auto_commit_interval_ms: Annotated[int, Field(ge=100, le=DAY_MS)] = 1000
    processing_ms: Annotated[float, Field(ge=0, le=60_000, description="per record")] = 0
    session_timeout_ms: Annotated[int, Field(ge=1000, le=300_000)] = 6000
    heartbeat_interval_ms: Annotated[int, Field(ge=100, le=300_000)] = 1000
    max_poll_interval_ms: Annotated[int, Field(ge=1000, le=DAY_MS)] = 300_000
    # How soon members notice new partitions and topics (librdkafka's default is 5 minutes).
    metadata_refresh_ms: Annotated[int, Field(ge=1000, le=3_600_000)] = 5000
    # The fault schedule's clock starts once the group the workload started has formed
    # (every initial member in a stable group covering all partitions): a slow start —
    # a JVM on a busy machine — must not let a fault hit a member that has not joined yet.
    # "none" starts it with the processes, for faults aimed at the first join itself.
    warmup: Literal["group-formed", "none"] = "group-formed"
    warmup_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 60
    producer: Producer = Producer()
    # Each driver family's own settings (FAMILIES): only the section of the family that runs may be written.
    librdkafka: LibrdkafkaSettings = LibrdkafkaSettings()
    java: JavaSettings = JavaSettings()
    coordinator: CoordinatorSettings = CoordinatorSettings()
    zk_eager: ZkEagerSettings = ZkEagerSettings()

    @model_validator(mode="after")
    def _coherent(self):
        allowed = self.generation.assignors
        if self.assignor is not None and self.assignor not in allowed:
            raise ValueError(
                f"assignor: {self.assignor!r} does not go with protocol {self.protocol!r} "
                f"(allowed: {', '.join(allowed)})"
            )
        if self.driver not in self.generation.drivers:
            runs = [g.name for g in GENERATIONS.values() if self.driver in g.drivers]
            raise ValueError(
                f"driver: the {self.driver} driver runs {', '.join(runs) or 'no protocol generation'}, "
                f"not {self.protocol!r}"
            )
        if self.topic_pattern is not None:
            if self.generation.project_coordinator:
                raise ValueError(f"topic_pattern: {self.protocol} members subscribe to topics by name")
            if self.topics:
                raise ValueError("topic_pattern: give either topics or topic_pattern, not both")
            if not self.topic_pattern.startswith("^"):
                raise ValueError("topic_pattern: a pattern subscription starts with '^' (librdkafka's rule)")
            try:
                re.compile(self.topic_pattern)
            except (re.error, OverflowError, RecursionError) as e:  # a repeat count beyond 2**32: OverflowError
                raise ValueError(f"topic_pattern: not a regular expression: {e}") from None
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms: must be below session_timeout_ms")
        return self

    @model_validator(mode="after")
    def _client_fits_the_driver(self):
        """A release of the distribution the driver takes, at or above its floor, able to speak the
        generation's group protocol."""
        if self.client is None or self.driver not in self.generation.drivers:  # _coherent says so
            return self
        try:
            requirement = parse_client(self.client)
        except ValueError as e:
            raise ValueError(f"client: {e}") from None
        problem = client_problem(requirement, self.driver_class, self.driver, self.generation)
        if problem:
            raise ValueError(f"client: {problem}")
        return self

    @model_validator(mode="after")
    def _sections_fit_the_family(self):
        """Only the running family's section may be written; within it, what its protocol lacks."""
        family, problems = self.family, []
        if self.driver not in self.generation.drivers:  # _coherent says so
            return self
        # A plugin's driver (no family of ours) takes no section: its members run on the common keys.
        takes = f"workload.{family.section}" if family else "no section (a plugin's driver)"
        for other in (
            FAMILIES[key] for key in FAMILIES if key in self.model_fields_set and key != (family and family.section)
        ):
            problems.append(
                f"{other.section}: settings for {', '.join(other.protocols)} ({other.about}); this "
                f"workload's members (protocol: {self.protocol}, driver: {self.driver}) take {takes}"
            )
        hooks = self.librdkafka.test_hooks
        if hooks and hooks.sigterm_after_join and not self.generation.classic:
            problems.append(
                f"librdkafka.test_hooks.sigterm_after_join: {self.protocol} members send no JoinGroup "
                f"through librdkafka (classic protocols only)"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def generation(self) -> Generation:
        return GENERATIONS[self.protocol]

    @property
    def family(self) -> DriverFamily | None:
        """The driver family that runs the members (None for a plugin's driver, or while validating a
        driver the generation lacks)."""
        return family_of(self.generation, self.driver)

    @property
    def driver_class(self) -> type[Driver]:
        """The Driver that runs the members: what it can do is its class's to say."""
        return driver_of(self.generation.drivers[self.driver])

    @property
    def client_requirement(self) -> ClientRequirement | None:
        """``client`` as a requirement; None when absent (the default, which the run resolves: run_client)."""
        return parse_client(self.client) if self.client else None

    @property
    def effective_assignor(self) -> str:
        return self.assignor or self.generation.assignors[0]

    def member_names(self) -> list[str]:
        """The members started with the workload."""
        return [f"consumer-{i}" for i in range(1, self.consumers + 1)]


def client_problem(
    requirement: ClientRequirement, driver: type[Driver], name: str, generation: Generation
) -> str | None:
    """Why members of ``driver`` (called ``name``) in ``generation`` cannot run on ``requirement``, or None:
    what workload.client is refused for, and a restart on another client (a rolling upgrade) too."""
    dist = requirement.distribution
    takes = driver.client_distribution
    if takes is None:
        return f"{generation.name} members (driver: {name}) run on the harness's own client only; they take no client release"
    if dist.name != takes:
        return f"the {name} driver takes a release of {takes} ('{takes}==<version>'), not of {dist.name}"
    if requirement.below_floor:
        return f"{requirement}: below the floor, {dist.name} {dist.floor}: {dist.floor_why}"
    if generation.group_protocol == "consumer" and requirement.consumer_heartbeat_version is None:
        first = f"{dist.name}>={dist.consumer_heartbeat[0][0]}" if dist.consumer_heartbeat else "another client"
        why = dist.consumer_heartbeat_why or f"{dist.name} members run the classic protocols only"
        return f"{requirement}: protocol {generation.name} needs {first} ({why})"
    if dist.registry == "maven":
        return client_envs.java_release_problem(requirement)
    return None
