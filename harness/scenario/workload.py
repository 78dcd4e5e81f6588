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

from faults.base import DAY_S, MAX_MEMBERS, MAX_MEMBERS_PER_HOST
from faults.strict import Strict
from harness.components import client_envs
from harness.components.versions import KafkaRelease
from harness.scenario.cluster import Rack
from harness.scenario.lanes import Lanes, member_number
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


class Subscription(Strict):
    """One kind of member of a group whose members subscribe to different topics
    (``workload.subscriptions``): ``members`` of them, each subscribed to ``topics`` by name.
    Real groups have them: a service's new release consumes one more topic while the old
    instances still run, and the assignors give a topic only to the members subscribed to it."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,64}$")]  # a scale or join-storm names it
    members: Annotated[int, Field(ge=0, le=MAX_MEMBERS)]
    topics: Annotated[list[str], Field(min_length=1, max_length=100)]

    @model_validator(mode="after")
    def _topics_once(self):
        if len(set(self.topics)) != len(self.topics):
            raise ValueError(f"topics: a topic listed twice ({', '.join(self.topics)})")
        return self


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
    # Members per process: 1, each its own process; more, that many client handles share a member
    # host (workloads/member_host.py), each still its own member with its own faults (docs/scale.md).
    members_per_host: Annotated[int, Field(ge=1, le=MAX_MEMBERS_PER_HOST)] = 1
    # Which client lane each member rides (harness/scenario/lanes.py): its own, or its own only if
    # a fault names it and a crowd lane otherwise.
    lanes: Lanes = "per-member"
    topics: Annotated[list[str] | None, Field(max_length=100)] = None  # default: every topic of the scenario
    topic_pattern: Annotated[str | None, Field(max_length=1000)] = (
        None  # a regex subscription instead, e.g. "^events.*"
    )
    # Members subscribed to different topics: the entries in order, consumer-1… the first one's
    # members, then the next one's; instead of topics / topic_pattern (subscription_of).
    subscriptions: Annotated[list[Subscription] | None, Field(min_length=1, max_length=100)] = None
    # Each member's client.rack, dealt in turn by member number: consumer-k gets client_racks[(k-1) % n].
    client_racks: Annotated[list[Rack] | None, Field(min_length=1, max_length=100)] = None
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

    @model_validator(mode="before")
    @classmethod
    def _consumers_from_subscriptions(cls, data):
        """With subscriptions, the group starts with their members: ``consumers`` need not be said."""
        if isinstance(data, dict) and isinstance(data.get("subscriptions"), list) and "consumers" not in data:
            counts = [e.get("members") for e in data["subscriptions"] if isinstance(e, dict)]
            if all(type(c) is int for c in counts):
                data = {**data, "consumers": sum(counts)}
        return data

    @model_validator(mode="after")
    def _subscriptions_coherent(self):
        entries = self.subscriptions
        if entries is None:
            return self
        problems = []
        if self.topics or self.topic_pattern:
            problems.append("subscriptions: give either subscriptions or topics / topic_pattern, not both")
        names = [e.name for e in entries]
        if len(set(names)) != len(names):
            problems.append(f"subscriptions: each entry's name once ({', '.join(names)})")
        total = sum(e.members for e in entries)
        if total != self.consumers:
            problems.append(
                f"subscriptions: their members add up to {total}, but consumers is {self.consumers} "
                f"(leave consumers out: it is their sum)"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self

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

    @property
    def hosted(self) -> bool:
        """Its members share member hosts (``members_per_host`` above 1)."""
        return self.members_per_host > 1

    def host_of(self, member: str) -> str:
        """The member host ``member`` lives in: consumer-1..m the first, m+1..2m the next."""
        return f"member-host-{(member_number(member) - 1) // self.members_per_host + 1}"

    def member_names(self) -> list[str]:
        """The members started with the workload."""
        return [f"consumer-{i}" for i in range(1, self.consumers + 1)]

    def subscription_of(self, number: int, named: str | None = None) -> Subscription | None:
        """The subscription of member ``consumer-<number>`` (None: the group's topics or pattern,
        no ``subscriptions``). The members the workload starts: the entries' members in order.
        A member started later (scale, join-storm, a load profile) gets the entry its fault
        ``named``, else the entries in turn: the first one started later the first entry, the
        next the second… by member number, so every incarnation of a slot has the same one."""
        entries = self.subscriptions
        if not entries:
            return None
        if named is not None:
            return next(e for e in entries if e.name == named)
        first = 1
        for entry in entries:
            if number < first + entry.members:
                return entry
            first += entry.members
        return entries[(number - first) % len(entries)]

    def client_rack_of(self, number: int) -> str | None:
        """Member ``consumer-<number>``'s client.rack (None: no rack)."""
        return self.client_racks[(number - 1) % len(self.client_racks)] if self.client_racks else None


def client_problem(
    requirement: ClientRequirement,
    driver: type[Driver],
    name: str,
    generation: Generation | None,
    release: KafkaRelease | None = None,
) -> str | None:
    """Why members of ``driver`` (called ``name``) in ``generation`` cannot run on ``requirement``
    against brokers of ``release``, or None. The one rule for every (client, generation) pair a run
    has: the workload's own, and each one a fault moves members to (a rolling upgrade, a protocol
    migration). ``generation`` None: the client alone (its distribution, floor, release);
    ``release`` None: whatever the brokers answer (it is checked where the release is known)."""
    dist = requirement.distribution
    takes = driver.client_distribution
    if takes is None:
        who = f"{generation.name} members" if generation else "its members"
        return f"{who} (driver: {name}) run on the harness's own client only; they take no client release"
    if dist.name != takes:
        return f"the {name} driver takes a release of {takes} ('{takes}==<version>'), not of {dist.name}"
    if requirement.floor_problem:
        return requirement.floor_problem
    if generation is not None and generation.group_protocol == "consumer":
        if requirement.consumer_heartbeat_version is None:
            first = f"{dist.name}>={dist.consumer_heartbeat[0][0]}" if dist.consumer_heartbeat else "another client"
            why = dist.consumer_heartbeat_why or f"{dist.name} members run the classic protocols only"
            return f"{requirement}: protocol {generation.name} needs {first} ({why})"
        if release is not None and (problem := _heartbeat_problem(requirement, release)):
            return problem
    if dist.registry == "maven":
        return client_envs.java_release_problem(requirement)
    return None


def _heartbeat_problem(client: ClientRequirement, release: KafkaRelease) -> str | None:
    """KIP-848's ConsumerGroupHeartbeat: the client speaks one version (client_versions.py), the
    harness pairs the release with one (the release catalogue's consumer_heartbeat_version). A
    v1 client on 3.7/3.8 never finds its coordinator ("ConsumerGroupHeartbeatRequest not supported
    by broker"): the run could only time out. 4.x brokers still answer v0, but an early-access
    client on GA brokers is a pairing no run has verified: the harness does not run it."""
    spoken, served = client.consumer_heartbeat_version, release.consumer_heartbeat_version
    if spoken is None or served is None or spoken == served:
        return None  # a release without KIP-848 is the generation's need to say
    steps = client.distribution.consumer_heartbeat
    fits = ", ".join(
        f"{client.distribution.name} {first}" + (f" … before {nxt[0]}" if nxt else " on")
        for (first, v), nxt in zip(steps, [*steps[1:], None], strict=True)
        if v == served
    )
    said = f"{client} speaks KIP-848's ConsumerGroupHeartbeat v{spoken}; Kafka {release.version}'s consumer protocol "
    if release.consumer_protocol == "early-access":
        return f"{said}(early access) answers v{served} only: its members would never find their coordinator (for it: {fits})"
    return (
        f"{said}(GA) is v{served}'s: its brokers still answer the early access's v{spoken}, but the harness runs "
        f"early-access clients on early-access brokers only (for it: {fits})"
    )
