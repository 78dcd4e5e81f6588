"""The ``workload:`` section: the consumer group, how its members run, the producer."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, model_validator

from faults.base import DAY_S, MAX_MEMBERS
from faults.strict import Strict
from oracle.protocols import ASSIGNORS, GENERATIONS, PROTOCOLS, Generation
from workloads.zk_settings import ZkEagerSettings  # the driver's own settings

DAY_MS = DAY_S * 1000


class Producer(Strict):
    topic: str | None = None  # default: the first topic
    rate: Annotated[float, Field(gt=0, le=50_000, description="records per second")] = 200
    value_bytes: Annotated[int, Field(ge=1, le=1_000_000)] = 100
    # How long a record waits for others of its partition (librdkafka's linger.ms; 5 is its
    # default). Longer: fewer, fuller produce requests — brokers do less per record — and later acks.
    linger_ms: Annotated[int, Field(ge=0, le=60_000)] = 5


class CoordinatorSettings(Strict):
    """The project's coordinator service, for the ``coordinator-v*`` protocols."""

    instances: Annotated[int, Field(ge=1, le=3)] = 1  # more than one: leader election, failover
    initial_rebalance_delay_ms: Annotated[int, Field(ge=0, le=600_000)] = 3000  # v3 only (KIP-134)
    zookeeper_session_timeout_ms: Annotated[int, Field(ge=2000, le=600_000)] = 6000


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


class Workload(Strict):
    group: Annotated[str, Field(min_length=1, max_length=255)] = "rebalance-lab"
    protocol: Literal[PROTOCOLS] = "classic-eager"  # type: ignore[valid-type]  # oracle/protocols.py
    assignor: Literal[ASSIGNORS] | None = None  # type: ignore[valid-type]
    driver: Literal["librdkafka", "java"] = "librdkafka"  # java: Kafka's own VerifiableConsumer
    zk_eager: ZkEagerSettings = ZkEagerSettings()
    coordinator: CoordinatorSettings = CoordinatorSettings()
    consumers: Annotated[int, Field(ge=0, le=MAX_MEMBERS)] = 3
    topics: Annotated[list[str] | None, Field(max_length=100)] = None  # default: every topic of the scenario
    topic_pattern: Annotated[str | None, Field(max_length=1000)] = None  # a regex subscription instead, e.g. "^events.*"
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
    # Each member stays this long inside its revoke callback, after recording the revoke and before
    # giving the partitions up: the window an `on: {event: partitions_revoked}` fault acts in.
    revoke_hold_ms: Annotated[float, Field(ge=0, le=600_000)] = 0
    # "worker": each member processes on a thread of its own while its poll loop polls on; a revoke
    # callback waits for that thread to finish what it holds (workloads/worker.py, `revoke_started`).
    processing: Literal["inline", "worker"] = "inline"
    test_hooks: DriverTestHooks | None = None  # test-only (docs/history.md, "Test hooks")

    @model_validator(mode="after")
    def _test_hooks_fit_the_driver(self):
        hooks = self.test_hooks or DriverTestHooks()
        if hooks != DriverTestHooks() and self.driver != "librdkafka":
            raise ValueError("test_hooks: only the librdkafka driver has them")
        if hooks.consume_unassigned and self.generation.drivers[self.driver] != "workloads.consumer":
            raise ValueError(f"test_hooks.consume_unassigned: the {self.protocol} driver does not have it")
        for switch in ("revoke_hold_ms", "processing"):
            if getattr(self, switch) != type(self).model_fields[switch].default \
                    and self.generation.drivers[self.driver] != "workloads.consumer":
                raise ValueError(f"{switch}: {self.protocol} members ({self.driver} driver) do not have it "
                                 f"(librdkafka members of the classic and KIP-848 protocols do)")
        if hooks.sigterm_after_join and not self.generation.classic:
            raise ValueError(f"test_hooks.sigterm_after_join: {self.protocol} members send no JoinGroup "
                             f"through librdkafka (classic protocols only)")
        return self

    @model_validator(mode="after")
    def _coherent(self):
        allowed = self.generation.assignors
        if self.assignor is not None and self.assignor not in allowed:
            raise ValueError(f"assignor: {self.assignor!r} does not go with protocol {self.protocol!r} "
                             f"(allowed: {', '.join(allowed)})")
        if self.driver not in self.generation.drivers:
            raise ValueError(f"driver: the java driver (VerifiableConsumer) runs the classic protocols, not {self.protocol!r}")
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

    @property
    def generation(self) -> Generation:
        return GENERATIONS[self.protocol]

    @property
    def timing_on_brokers(self) -> bool:
        """KIP-848 moves the group's session and heartbeat timing from the members to the brokers
        (``group.consumer.*``): the harness sets it there, and on an external cluster cannot."""
        return self.generation.group_protocol == "consumer"

    @property
    def effective_assignor(self) -> str:
        return self.assignor or self.generation.assignors[0]

    def member_names(self) -> list[str]:
        """The members started with the workload."""
        return [f"consumer-{i}" for i in range(1, self.consumers + 1)]
