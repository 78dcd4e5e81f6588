"""What a member driver is to the harness: its spec, and the small contract it implements.

A driver runs one member of the consumer group as its own OS process, with one client
library (librdkafka, Kafka's Java client) or one design (the 0.8 consumer over ZooKeeper,
the project's coordinator). The harness starts it as ``python -m <module> SPEC.json``,
the module named by the generation's row (``oracle.protocols``, ``Generation.drivers``).

The spec file is a ``MemberSpec``: what every member is told — who it is, its group and
topics, the capabilities of its protocol generation, how it commits and processes — and,
under ``settings``, what only its driver family reads (``Driver.Settings``). A driver reads
a generation's capabilities from the spec, never its name: ``static_membership``, not
"classic-static".

Adding a client library is one class implementing ``Driver``:

- ``Settings``: the dataclass of its family's settings (``MemberSpec.settings``), filled in
  by the harness (``harness/run/clients.py``, ``Member.settings``);
- ``__init__(spec, stop)`` and ``run() -> int``: the member, built from its spec with the
  event that SIGTERM / SIGINT set, runs until that event is set (or it fails) and returns
  the process's exit code; ``main`` wires the signals, the harness's commands and the spec
  file together, so the module's entry point is ``main = TheDriver.main``;
- ``events``: a ``workloads.member_events.MemberEvents`` — every history event the member
  writes goes through it (a unit test holds the drivers to it);
- ``command_pending``: set on SIGUSR1, a command from the harness (``workloads.poll_stall``:
  a driver that can stall its poll loop mixes ``TakesCommands`` in, one that cannot says so);

and one more entry in the ``drivers`` of the generations it runs — or, for a driver from
outside the tree (an entry point in ``rebalance_lab.drivers``, docs/extending.md), ``runs``
saying which generations those are.
"""

from __future__ import annotations

import importlib
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

from oracle.extensions import ExtensionError
from oracle.protocols import AssignorHome, Generation, GroupProtocol
from runtime.child import read_spec, stop_on_signals
from workloads.poll_stall import TakesCommands, listen_for_commands

if TYPE_CHECKING:
    from workloads.member_events import MemberEvents

S = TypeVar("S")


@dataclass(frozen=True)
class MemberSpec(Generic[S]):
    """What the harness tells one member incarnation (the spec file, as JSON)."""

    # Who: the member slot, which life of it, the history it appends to.
    member: str
    incarnation: int
    history: str
    # Its group, and the capabilities of the protocol generation it runs (``protocol_fields``).
    group: str
    topics: list[str]  # names, or one regex starting with "^" (pattern subscription)
    protocol: str  # the generation's name, as consumer_started reports it: never compared
    group_protocol: GroupProtocol | None  # Kafka's group.protocol; None: the group lives elsewhere
    static_membership: bool  # KIP-345: a group.instance.id
    assignor_runs_on: AssignorHome  # who computes the assignment
    broker_timing: bool  # KIP-848: session and heartbeat timing are the brokers'
    incremental: bool  # the generation's rebalances are incremental (KIP-429, KIP-848)
    coordinator_variant: str | None  # the project's coordinator: "v1", "v2", "v3"
    assignor: str
    # The cluster, as this member reaches it: its own lane, and cluster.client_config (security).
    bootstrap_servers: str
    # Consuming: commits, processing, the client's timing.
    commit: str  # sync | auto | before-processing
    processing_ms: float
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    settings: S  # the driver family's own part (``Driver.Settings``)
    auto_commit_interval_ms: int = 1000
    batch_size: int = 500
    metadata_refresh_ms: int = 5000  # how soon the member's client notices new partitions and topics
    control_file: str | None = None  # commands from the harness (poll stalls), announced by SIGUSR1
    # Under the harness's own keys; secret values never in the file (runtime.secrets, read_spec).
    client_settings: dict = field(default_factory=dict)
    subscription: str | None = None  # its workload.subscriptions entry's name (None: the group's topics)
    client_rack: str | None = None  # client.rack (KIP-392 fetch from follower, KIP-881 rack-aware assignors)
    # The client release this incarnation runs on ("confluent-kafka==2.3.0", "kafka-clients==3.9.2"): the
    # harness starts it in that release's environment (harness/components/client_envs.py); None: the pinned
    # one, the harness's own. Per incarnation: a restart may run another (a rolling client upgrade).
    client: str | None = None

    @property
    def group_instance_id(self) -> str | None:
        """KIP-345: the same for every incarnation of the slot, so a restarted member is the same member."""
        return f"{self.group}-{self.member}" if self.static_membership else None

    @property
    def cooperative(self) -> bool:
        """Rebalance callbacks carry deltas: an incremental generation, or cooperative-sticky on any."""
        return self.incremental or self.assignor == "cooperative-sticky"

    def fetcher_config(self, group_id: str) -> dict:
        """librdkafka, fetching only, for members whose group lives elsewhere (zk-eager, the project's
        coordinator) and the test hook's non-owner: a manual assignment, a group id of its own,
        nothing committed to Kafka."""
        return {
            **self.client_settings,
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": group_id,
            "client.id": self.member,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": self.metadata_refresh_ms,
            **({"client.rack": self.client_rack} if self.client_rack else {}),
        }

    @property
    def subscription_record(self) -> dict:
        """What consumer_started says the member subscribed to: ``topics`` by name, or a
        ``pattern``; ``name``: its workload.subscriptions entry, where it has one."""
        record = (
            {"pattern": self.topics[0]}
            if self.topics and self.topics[0].startswith("^")
            else {"topics": list(self.topics)}
        )
        return record | ({"name": self.subscription} if self.subscription else {})


def protocol_fields(generation: Generation) -> dict:
    """A generation's row as a member's spec carries it: its name and the capabilities drivers read."""
    return dict(
        protocol=generation.name,
        group_protocol=generation.group_protocol,
        static_membership=generation.static_membership,
        assignor_runs_on=generation.assignor_runs_on,
        broker_timing=generation.broker_timing,
        incremental=generation.incremental,
        coordinator_variant=generation.coordinator_variant,
    )


def read_member_spec(argv: list[str], settings: type[S]) -> MemberSpec[S]:
    """The spec file named on the command line, its ``settings`` as the driver's own type."""
    spec = read_spec(MemberSpec, argv)
    return replace(spec, settings=settings(**spec.settings))


class Driver(ABC):
    """One member of the group, run by one client library (see the module's docstring)."""

    Settings: ClassVar[type]
    # What it can do, which validation and setup read (never a driver's name):
    # it takes cluster.client_config in its client's own settings (an external cluster's security;
    # a driver that would have to write them to a file, where secret ones would lie, cannot);
    takes_client_config: ClassVar[bool] = True
    needs_kafka_tools: ClassVar[bool] = False  # it runs Kafka's own Java tools, installed for the cluster's line
    one_topic_by_name: ClassVar[bool] = False  # it consumes exactly one topic, subscribed by name
    commits_before_processing: ClassVar[bool] = True  # it can commit a batch before processing it
    # Classic assignors whose assignments it writes user data of its own into. The brokers cannot
    # carry that into a consumer group, so they refuse the online upgrade of such a group
    # (Kafka 4.x, ConsumerGroup.fromClassicGroup: "userData from a custom assignor would be lost").
    assignment_user_data: ClassVar[frozenset[str]] = frozenset()
    # The client distribution workload.client may name a release of (workloads/client_versions.py):
    # "confluent-kafka" (librdkafka), "kafka-clients" (Java); None: it runs on the harness's own only.
    client_distribution: ClassVar[str | None] = None
    # How long its client waits for most answers before it gives the request up (librdkafka's
    # socket.timeout.ms, 60 s by default); the group's requests have their own (answer_timeout_ms).
    request_timeout_ms: ClassVar[int] = 60_000
    # Many of its members can share one process, each its own client handle (workloads/member_host.py).
    # Such a driver is built with ``tap=`` (a client_log.TapRouter) and ``host=`` (the host's name),
    # and has ``crash()`` (leave without a close), ``crashed`` and ``thawed`` (cleared: frozen).
    hosts_many: ClassVar[bool] = False
    spec: MemberSpec
    events: MemberEvents
    command_pending: threading.Event

    @abstractmethod
    def __init__(self, spec: MemberSpec, stop: threading.Event): ...

    @abstractmethod
    def run(self) -> int:
        """Be the member until ``stop`` is set; the process's exit code."""

    @classmethod
    def answer_timeout_ms(
        cls, api: str, session_timeout_ms: int, max_poll_interval_ms: int, heartbeat_interval_ms: int
    ) -> int:
        """How long a request of ``api`` (Kafka's name) waits for its answer before the client gives it
        up: librdkafka's own timeouts per request (src/rdkafka_request.c, rd_kafka_buf_set_abs_timeout)."""
        return {
            "JoinGroup": max_poll_interval_ms + 3_000,  # the rebalance timeout (KIP-62), plus 3 s of grace
            "SyncGroup": session_timeout_ms + 3_000,
            "Heartbeat": session_timeout_ms,
            "LeaveGroup": 5_000,
            "ConsumerGroupHeartbeat": heartbeat_interval_ms,  # the interval the coordinator gave it
        }.get(api, cls.request_timeout_ms)

    @classmethod
    def stalls_polls(cls) -> bool:
        """It obeys a poll stall (the harness's command): it mixes ``TakesCommands`` in."""
        return issubclass(cls, TakesCommands)

    @classmethod
    def runs(cls, generation: Generation) -> bool:
        """Whether it can be a member of ``generation``'s groups, read from the row's capabilities:
        how a plugin's driver joins a generation's ``drivers``. The table lists its own drivers."""
        return False

    @classmethod
    def main(cls, argv: list[str]) -> int:
        """``python -m <module> SPEC.json``. The signals are taken first: a SIGTERM that comes
        while the member starts stops it cleanly too."""
        stop = stop_on_signals()
        member = cls(read_member_spec(argv, cls.Settings), stop)
        listen_for_commands(member)
        return member.run()


def driver_of(module: str) -> type[Driver]:
    """The Driver a driver module runs: the class whose ``main`` is the module's."""
    driver = getattr(getattr(importlib.import_module(module), "main", None), "__self__", None)
    if not (isinstance(driver, type) and issubclass(driver, Driver)):
        # Only a plugin's module can be so (the table's are tested): say it as an unusable plugin.
        raise ExtensionError(
            f"driver module {module}: its main is not a workloads.driver.Driver's main "
            f"(write `main = TheDriver.main`, TheDriver a Driver subclass)"
        )
    return driver
