"""What a fault kind is: one package of everything about it (Jepsen's nemesis package idea).

- ``FaultSpec``: its entry under ``faults:`` in a scenario — a strict pydantic model with
  the kind's typed, defaulted options — and what makes it impossible in a given scenario
  (``problems``, checked against ``ScenarioFacts``, never the Scenario itself);
- its random draw, for kinds ``random_faults`` may pick (``drawable``);
- ``Fault``: what it does to a run — inject at ``at_s``, heal ``heal_after_s`` later;
- ``Effects``: what it does to its target, as data (``FaultSpec.effects``), written into its
  ``fault_started`` so the oracle reads what a fault did, never which kind it was.

Faults act through ``Targets``, which the run provides, so a fault never needs to know
whether ``broker-2`` is a local JVM or a container, or how a member is told to stall.
Every kind lives in its own module and is listed once in ``faults/catalogue.py``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, Literal, Protocol, TypeVar, get_args

from pydantic import Field, model_validator

from faults.capabilities import EVERY_CAPABILITY, Capability, lacking
from faults.strict import DAY_S, Strict
from faults.trigger import Trigger
from oracle import vocabulary as ev

if TYPE_CHECKING:
    from faults.message_proxy.client import MessageProxyClient
    from faults.toxiproxy import ToxiproxyClient

# How big a group this machine carries (2 cores, 24 GiB; benchmarks/member_cost.py measures each
# cost; docs/scale.md explains the caps). The most members a group may have at once
# (workload.consumers, scale, join-storm, a load profile's peak): 1,000 ran, hosted, on 2 cores.
MAX_MEMBERS = 1000
# Members each in a process of its own (workload.members_per_host: 1): a process is ~30 MB and
# ~0.2 % of a core when idle, and each starts its own interpreter: 128 take ~4 GB and a start of
# all of them ~1 min of CPU.
MAX_MEMBER_PROCESSES = 128
# Members in one member host: they share its interpreter (one GIL for their poll loops and
# callbacks) and its open files (a handle keeps a socket and wake-up pipes per broker).
MAX_MEMBERS_PER_HOST = 250
COORDINATOR = "coordinator"  # a fault target resolved when injected: whatever coordinates the group
STOP_SIGNALS = ("SIGKILL", "SIGTERM")  # no LeaveGroup and no controlled shutdown, or a clean close
StopSignal = Literal[STOP_SIGNALS]  # type: ignore[valid-type]


@dataclass(frozen=True)
class ScenarioFacts:
    """What a fault entry is checked against: the scenario's processes, cluster and topics."""

    targets: tuple[str, ...]  # every process a fault may name, ``coordinator`` included
    members: tuple[str, ...]  # every member the run may start (join storms and scale-ups too)
    brokers: tuple[str, ...]
    coordinator_instances: tuple[str, ...]  # the project's coordinator (coordinator-v* protocols)
    kafka: str  # the Kafka line
    zookeeper: bool  # ZooKeeper mode (else KRaft)
    driver: str  # the members' driver (workload.driver)
    topics: Mapping[str, int]  # topic -> partitions: declared, and created by the entries before
    driver_stalls_polls: bool = True  # it obeys a poll stall (workloads.driver.Driver.stalls_polls)
    backend: str = "local"  # the cluster's backend, as a refusal names it
    # What that backend can do (faults/capabilities.py). Without CLUSTER_NODES, ``targets`` holds
    # only the run's own processes.
    capabilities: frozenset[Capability] = EVERY_CAPABILITY
    # The Kafka release the cluster runs, as the release catalogue states its facts (``version``,
    # ``line``, ``zookeeper``, ``kraft`` …: harness/components/versions.py), and the catalogue itself:
    # ``kafka_release(text)`` gives another release's facts or raises ValueError with the reason.
    # None where unknown (an external cluster), or in tests that need neither.
    release: Any = None
    kafka_release: Callable[[str], Any] | None = None
    broker_config: Mapping[str, Any] = field(default_factory=dict)  # cluster.broker_config, as written
    # The client release the members run (workload.client, or its default: a requirement with its
    # ``version``), and how another one is read: ``client_release(text)`` gives the requirement, or
    # raises ValueError with why this workload's members cannot run it. None where they run none.
    client: Any = None
    client_release: Callable[[str], Any] | None = None
    # The protocol generation the members run (workload.protocol; an earlier protocol-migration's
    # ``to`` for the entries after it).
    protocol: str | None = None
    assignor: str | None = None  # the assignor the members run (workload.assignor or the generation's)
    # KIP-848 on the brokers' release, in their metadata mode: None (none), "early-access" or "ga"
    # (the release catalogue's consumer_protocol); and why they cannot migrate a group online
    # between the classic and consumer protocols (None: they can). Both come from ``release_facts``.
    consumer_protocol: str | None = None
    group_migration_problem: str | None = "the cluster's Kafka release is not known here"
    # Classic assignors the driver writes its own user data into assignments with (Driver.assignment_user_data).
    driver_assignment_user_data: frozenset[str] = frozenset()
    hosted: bool = False  # members share member hosts (workload.members_per_host above 1)
    members_busy_until_s: float = 0.0  # a protocol-migration's round moves the members until then
    heartbeat_interval_ms: int | None = None  # workload.heartbeat_interval_ms (None: not known here)

    def with_topic(self, topic: str, partitions: int) -> ScenarioFacts:
        return replace(self, topics={**self.topics, topic: partitions})

    def with_release(self, release: Any) -> ScenarioFacts:
        """The facts once the cluster runs ``release`` (after a rolling upgrade): every fact that
        comes from the release moves with it."""
        return replace(self, release=release, **release_facts(release, self.zookeeper))


def release_facts(release: Any, zookeeper: bool) -> dict[str, Any]:
    """ScenarioFacts' facts of the brokers' release (the catalogue's KafkaRelease) in their
    metadata mode: the one place they are derived, for a scenario and after each upgrade."""
    metadata = "zookeeper" if zookeeper else "kraft"
    return {
        "kafka": release.version,
        "consumer_protocol": None if zookeeper else release.consumer_protocol,
        "group_migration_problem": release.group_migration_problem(metadata),
    }


@dataclass(frozen=True)
class Drawing:
    """What a kind's random draw may depend on."""

    members: Collection[str]  # which of the candidate targets are consumers
    zookeeper: bool
    brokers: int = 3  # how many: a lone broker has no other to be cut from
    kafka_apis: tuple[str, ...] = ()  # what the members send to the brokers (their generation's kafka_apis)
    directions: tuple[str, ...] = ("both",)  # a member's drawn cut: random_faults.directions
    # The members' generation's capabilities (oracle.protocols.Generation): which errors a broker
    # could answer them with (faults/message_proxy/apis.py ERRORS).
    static_membership: bool = False
    member_epochs: bool = False


@dataclass(frozen=True)
class Effects:
    """What a fault does to its ``target``, declared by its kind as Jepsen's nemesis packages
    declare what a fault means. The scheduler writes it into every ``fault_started``
    (``effects``: ``to_event``); the oracle's explanations, ownership and convergence read it
    there, and the scenario's timeline here. Only what they need:

    - ``silences``: which of a member's signals to its group stop. ``heartbeats``: nothing of
      it reaches the coordinator (paused, crashed, cut off), which evicts it only when its
      session.timeout.ms runs out. ``polls``: its heartbeat thread goes on but it does not
      poll (KIP-62), and it leaves the group only when max.poll.interval.ms runs out.
      ``silenced_as``: the words an explanation says it with ("paused", "crashed", …).
    - ``down``: what becomes of the target's process. ``paused`` (SIGSTOP): it runs on when
      the fault heals. ``killed``: it exits, by the fault's doing — a crash, however cleanly
      it closed — and is started again ``restart_after_s`` after the fault began, or never
      (None: down for good, and its partitions rightly idle until the group rebalances).

    A fault on the group or the cluster as a whole (no ``target``) declares none: the members
    it starts or stops and the topics it changes write their own events.
    """

    silences: Literal["heartbeats", "polls"] | None = None
    silenced_as: str | None = None
    down: Literal["paused", "killed"] | None = None
    restart_after_s: float | None = None

    def __post_init__(self):
        if (self.silences is None) != (self.silenced_as is None):
            raise ValueError("a fault that silences its target says how, and only such a fault")
        if self.restart_after_s is not None and not self.kills:
            raise ValueError("only a killed process is started again")

    @property
    def kills(self) -> bool:
        return self.down == ev.KILLED

    def to_event(self) -> dict:
        """As ``fault_started`` carries it (docs/history.md)."""
        return {
            ev.SILENCES: self.silences,
            ev.SILENCED_AS: self.silenced_as,
            ev.DOWN: self.down,
            ev.RESTART_AFTER_S: self.restart_after_s,
        }


NO_EFFECTS = Effects()  # its target (if it has one) goes on as before


@dataclass(frozen=True)
class MemberChanges:
    """What a member's next incarnation runs differently from the workload's members, for a fault
    that restarts it changed (``Targets.restart``): an upgrade path moves a group member by member.
    A field left None keeps what the member ran before. The changes a member was given stay with
    its slot: a later restart without changes starts it as it last ran.

    - ``protocol``: another protocol generation (``oracle/protocols.py``), all its row says — Kafka's
      ``group.protocol``, who assigns, the timing's owner — as the member's spec carries it
      (``workloads.driver.protocol_fields``). ``assignor`` goes with it: None is the generation's
      default, or the workload's own assignor when the generation is the workload's.
    - ``client``: another client library release, in ``workload.client``'s form
      (``"confluent-kafka==2.10.1"``).
    - ``session_timeout_ms``, ``max_poll_interval_ms``: the client's own timing (the classic
      protocols' session and rebalance timeouts, which a JoinGroup carries), as a deploy that
      changes them brings them."""

    protocol: str | None = None
    assignor: str | None = None
    client: str | None = None
    session_timeout_ms: int | None = None
    max_poll_interval_ms: int | None = None

    def __post_init__(self):
        if self.assignor is not None and self.protocol is None:
            raise ValueError("an assignor is changed with the protocol generation it belongs to")

    def then(self, later: MemberChanges) -> MemberChanges:
        """These changes, then ``later``'s on top (a protocol brings its own assignor)."""
        protocol, assignor = (later.protocol, later.assignor) if later.protocol else (self.protocol, self.assignor)
        return MemberChanges(
            protocol=protocol,
            assignor=assignor,
            client=later.client or self.client,
            session_timeout_ms=later.session_timeout_ms or self.session_timeout_ms,
            max_poll_interval_ms=later.max_poll_interval_ms or self.max_poll_interval_ms,
        )


class FaultSpec(Strict):
    """One entry under ``faults:``. A kind adds ``kind: Literal["its-name"]`` and its options."""

    at_s: Annotated[float, Field(ge=0, le=DAY_S)]
    # Fired by the group's state instead (faults/trigger.py); then at_s is when it is armed.
    on: Trigger | None = None

    @model_validator(mode="before")
    @classmethod
    def _armed_from_the_start(cls, data: Any) -> Any:
        if isinstance(data, dict) and True in data and "on" not in data:  # YAML 1.1 reads a bare `on:` as true
            data = {("on" if k is True else k): v for k, v in data.items()}
        if isinstance(data, dict) and data.get("on") is not None and "at_s" not in data:
            return {**data, "at_s": 0.0}
        return data

    @classmethod
    def kind_name(cls) -> str:
        return get_args(cls.model_fields["kind"].annotation)[0]

    # What every entry of this kind needs of the cluster's backend; ``needs_by_key`` adds what an option asks.
    needs: ClassVar[frozenset[Capability]] = frozenset()
    # It names a topic of the scenario (creates or grows it): a run on a shared cluster, whose
    # topics carry the run's id, cannot have it (harness.cluster.shared).
    names_topics: ClassVar[bool] = False
    # The option that says how long it lasts, if it has one: a random draw sets it, shrinking halves it.
    length_key: ClassVar[str | None] = None
    # It acts on its target's process (a signal, its poll loop, its ZooKeeper session), which must be
    # up when it starts; a network fault acts on the target's proxies, which are there either way.
    acts_on_process: ClassVar[bool] = False
    # Why it must act on a member's whole process, if it must (a client release is loaded once per
    # process): refused for hosted members (workload.members_per_host), which share one.
    whole_process: ClassVar[str | None] = None
    # It leaves the cluster other than it found it (another Kafka release): a run with it cannot
    # borrow a cluster other runs use (harness.cluster.shared).
    changes_cluster: ClassVar[bool] = False

    @property
    def effects(self) -> Effects:
        """What it does to its target (``NO_EFFECTS``: nothing), from its options. Every kind says
        so itself: one that does not is refused when it is defined, not taken to do nothing."""
        raise NotImplementedError

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "kind" in cls.model_fields and cls.effects is FaultSpec.effects:
            raise TypeError(f"fault kind {cls.kind_name()!r} does not declare its effects (FaultSpec.effects)")

    @property
    def holds_target_s(self) -> float:
        """How long from ``at_s`` its target is taken (its length option; 0 if it has none)."""
        return getattr(self, self.length_key) if self.length_key else 0.0

    def needs_by_key(self) -> dict[str, frozenset[Capability]]:
        """What this entry needs of the backend, by the key that asks for it: ``kind`` for the
        kind's own needs; a trigger on the group's state reads the brokers' logs."""
        needs = {"kind": self.needs}
        if self.on and self.on.reads_coordinator_log:
            needs["on"] = frozenset({Capability.BROKER_LOGS})
        return needs

    def refusals(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        """(key, reason) for each thing this entry needs that the scenario's backend cannot do."""
        return [
            (key, capability.refusal(scenario.backend))
            for key, needs in self.needs_by_key().items()
            for capability in lacking(needs, scenario.capabilities)
        ]

    def problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        """(key, reason) for whatever keeps this entry from being done in ``scenario``."""
        return []

    def kafka_releases(self) -> list[str]:
        """The Kafka releases this entry runs beyond the cluster's own (installed before the run)."""
        return []

    def client_requirements(self) -> list[str]:
        """The client releases this entry runs members on beyond the workload's (installed before the run)."""
        return []

    def after(self, scenario: ScenarioFacts) -> ScenarioFacts:
        """The scenario as the entries after this one see it (a created topic exists)."""
        return scenario

    def broker_config(self) -> dict[str, str]:
        """Broker settings this entry needs (under what the scenario sets explicitly)."""
        return {}

    def member_protocols(self) -> tuple[str, ...]:
        """Protocol generations it starts members on, beyond the workload's (their broker settings apply)."""
        return ()

    def members_after(self, running: int) -> int:
        """How many members run once this fault is done, ``running`` before it."""
        return running

    def acts_on_members(self, members: Collection[str]) -> bool:
        """It starts, stops or acts on members of the group (``members``: the run's slots). A
        load profile, which decides the group's members itself, cannot have it."""
        return False

    # --- the random draw (faults/random_schedule.py): drawable kinds override these ---------

    drawable: ClassVar[bool] = False
    draw_targets: ClassVar[str] = "any target"  # which targets the draw gives this kind, in words

    @classmethod
    def drawable_for(cls, target: str, drawing: Drawing) -> bool:
        return True

    @classmethod
    def draw(cls, rng: random.Random, target: str, length_s: float, drawing: Drawing) -> dict:
        """This kind's own options for a fault on ``target`` lasting ``length_s``, drawn from
        ``rng`` after the time, length and target. Each draw from ``rng`` is part of every
        schedule seeded before: never add, drop or reorder one."""
        raise NotImplementedError(f"{cls.kind_name()} faults are not drawn")

    @classmethod
    def draw_shapes(cls, target: str, drawing: Drawing) -> list[dict]:
        """One set of options for each shape ``draw`` can give ``target``, for validation."""
        raise NotImplementedError(f"{cls.kind_name()} faults are not drawn")


class TargetedSpec(FaultSpec):
    """An entry aimed at one process (``target``); else it acts on the group or the cluster."""

    target: str

    def problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        if self.target not in scenario.targets and Capability.CLUSTER_NODES not in scenario.capabilities:
            return [
                (
                    "target",
                    f"{Capability.CLUSTER_NODES.refusal(scenario.backend)}; faults act only on the "
                    f"processes the run starts ({', '.join(scenario.targets)}), not {self.target!r}",
                )
            ]
        if self.target not in scenario.targets:
            return [("target", f"no process {self.target!r} in this scenario (targets: {', '.join(scenario.targets)})")]
        return self.target_problems(scenario)

    def target_problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        """Problems of a target the scenario has, for this kind."""
        return []

    def acts_on_members(self, members: Collection[str]) -> bool:
        return self.target in members


class TimedSpec(TargetedSpec):
    """An entry on one target that lasts ``duration_s``; a random schedule draws it as one
    stretch of the drawn length."""

    duration_s: Annotated[float, Field(gt=0, le=DAY_S)]

    drawable = True
    length_key = "duration_s"

    @classmethod
    def draw(cls, rng: random.Random, target: str, length_s: float, drawing: Drawing) -> dict:
        return {cls.length_key: length_s}

    @classmethod
    def draw_shapes(cls, target: str, drawing: Drawing) -> list[dict]:
        return [{"duration_s": 1.0}]


class Targets(Protocol):
    def resolve(self, name: str) -> str: ...  # "coordinator" -> whatever coordinates the group now
    def pause(self, name: str) -> dict | None: ...  # details of how, where it is modelled (a hosted member)
    def resume(self, name: str) -> None: ...
    def kill(self, name: str, sig: int) -> None: ...
    # Start a stopped process again; a member with ``changes`` runs them from this incarnation on.
    def restart(self, name: str, changes: MemberChanges | None = None) -> None: ...
    # A node of the cluster (a broker, the KRaft controller) stopped cleanly and started again on
    # release ``kafka`` (None: the one it runs), its settings changed by ``settings`` (a None value
    # removes one), on the same data; back once the cluster is whole again. What was done, and how long.
    def restart_node(self, name: str, kafka: str | None, settings: Mapping[str, Any]) -> dict: ...
    # The release the cluster's brokers run now (the catalogue's facts) and how it keeps its
    # metadata (``zookeeper`` | ``kraft``); another release's facts, from the catalogue.
    def cluster_kafka(self) -> tuple[Any, str]: ...
    def kafka_release(self, text: str) -> Any: ...
    # Every node runs ``kafka``: the upgrade finalized (KRaft: metadata.version raised to the highest
    # level every node supports; ZooKeeper mode: the brokers' inter.broker.protocol.version, which a
    # rolling restart set, confirmed), recorded as ``cluster_finalized``. What it was and is now.
    def finalize_features(self, kafka: str, started_mono_ms: float) -> dict: ...
    def is_running(self, name: str) -> bool: ...
    def group_names(self, which: str) -> list[str]: ...  # "brokers" | "consumers" | "controllers"
    def proxies(self, target: str, link: str) -> list[str]: ...  # faults.network.LINKS
    def toxiproxy(self) -> ToxiproxyClient: ...
    def request_timeout_ms(self, member: str, api: str) -> int: ...  # how long its client waits for an answer
    def message_proxy(
        self,
    ) -> MessageProxyClient: ...  # the message proxy of the run's lanes (Capability.MESSAGE_LANES)
    def command(self, member: str, command: dict) -> None: ...
    def expire_zookeeper_session(self, name: str) -> dict: ...
    def zookeeper_session_timeout_s(self, name: str) -> float: ...
    def start_consumers(self, count: int, subscription: str | None = None) -> list[str]: ...
    def scale_consumers(self, count: int, subscription: str | None = None) -> list[str]: ...
    def add_partitions(self, topic: str, total: int) -> None: ...
    def create_topic(self, topic: str, partitions: int) -> None: ...


S = TypeVar("S", bound=FaultSpec)


@dataclass
class Fault(Generic[S]):
    """One fault of a run: its entry (typed options), and what it does and undoes."""

    Spec: ClassVar[type[FaultSpec]]  # the kind's scenario entry

    fault_id: str
    spec: S
    params: dict = field(default_factory=dict)  # the options as the schedule gave them, for the history
    resolved: str | None = None  # the process actually hit (``coordinator`` is looked up at injection)

    def __post_init__(self):
        if self.resolved is None:
            self.resolved = self.target

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def at_s(self) -> float:
        return self.spec.at_s

    @property
    def effects(self) -> Effects:
        return self.spec.effects

    @property
    def target(self) -> str | None:
        """None for faults on the group or the cluster as a whole."""
        return getattr(self.spec, "target", None)

    @property
    def heal_after_s(self) -> float:
        """Seconds from injection to heal; 0 means there is nothing to undo."""
        return 0.0

    @property
    def in_progress(self) -> bool:
        """Still acting on its own (a rolling restart's round): its scheduled heal waits."""
        return False

    def inject(self, targets: Targets) -> dict | None:
        """Do it; may return details worth recording (e.g. which proxies, which session)."""
        raise NotImplementedError

    def heal(self, targets: Targets) -> None:
        pass


class TimedFault(Fault[S]):
    """A fault undone ``duration_s`` (its TimedSpec's) after it was done."""

    @property
    def heal_after_s(self) -> float:
        return self.spec.duration_s
