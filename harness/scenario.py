"""Scenario files: what cluster, which group, which faults when, which checks.

Validated with pydantic before anything starts. Every problem is reported as
``FILE: key.path: reason`` (a ScenarioError, exit code 2), all of them at once.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from harness import versions
from harness.errors import ScenarioError
from oracle import CHECK_NAMES
from oracle.verdict import resolve_checks

Scalar = Union[str, int, float, bool]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Topic(_Strict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,200}$")]
    partitions: Annotated[int, Field(ge=1, le=1000)]
    replication_factor: Annotated[int | None, Field(ge=1)] = None
    config: dict[str, Scalar] = {}


class Cluster(_Strict):
    backend: Literal["local"] = "local"
    kafka: Literal[tuple(versions.KAFKA_RELEASES)] = "3.9"  # type: ignore[valid-type]
    brokers: Annotated[int, Field(ge=1, le=9)] = 3
    zookeeper_nodes: Literal[1, 3] = 1
    broker_config: dict[str, Scalar] = {}

    @property
    def zookeeper_mode(self) -> bool:
        return self.kafka in versions.KAFKA_LINES_WITH_ZOOKEEPER


class Producer(_Strict):
    topic: str | None = None  # default: the first topic
    rate: Annotated[float, Field(gt=0, le=50_000, description="records per second")] = 200
    value_bytes: Annotated[int, Field(ge=1, le=1_000_000)] = 100


# Protocol generation -> the assignors it can use (the first is the default). For
# `consumer` (KIP-848) they are the brokers' remote assignors; for `zk-eager` the
# 0.8 high-level consumer's own range assignment over sorted consumer threads.
PROTOCOL_ASSIGNORS = {
    "zk-eager": ("range",),
    "classic-eager": ("range", "roundrobin"),
    "classic-static": ("range", "roundrobin", "cooperative-sticky"),
    "classic-cooperative": ("cooperative-sticky",),
    "consumer": ("uniform", "range"),
}
CLASSIC = ("classic-eager", "classic-static", "classic-cooperative")
# The project's own coordinator (harness/coordinator, docs/coordinator.md): seeds 001-004's designs.
PROJECT_COORDINATOR = ("coordinator-v1", "coordinator-v2", "coordinator-v3")
PROTOCOL_ASSIGNORS.update({protocol: ("range", "roundrobin") for protocol in PROJECT_COORDINATOR})


class ZkEagerSettings(_Strict):
    """The Kafka 0.8 high-level consumer's rebalance settings (seed 000)."""

    rebalance_max_retries: Annotated[int, Field(ge=1)] = 4
    rebalance_backoff_ms: Annotated[int, Field(ge=0)] = 2000
    zookeeper_session_timeout_ms: Annotated[int, Field(ge=1000)] = 6000


class CoordinatorSettings(_Strict):
    """The project's coordinator service, for the ``coordinator-v*`` protocols."""

    instances: Annotated[int, Field(ge=1, le=3)] = 1  # more than one: leader election, failover
    initial_rebalance_delay_ms: Annotated[int, Field(ge=0)] = 3000  # v3 only (KIP-134)
    zookeeper_session_timeout_ms: Annotated[int, Field(ge=2000)] = 6000


class Workload(_Strict):
    group: Annotated[str, Field(min_length=1)] = "rebalance-lab"
    protocol: Literal[tuple(PROTOCOL_ASSIGNORS)] = "classic-eager"  # type: ignore[valid-type]
    assignor: Literal["range", "roundrobin", "cooperative-sticky", "uniform"] | None = None
    driver: Literal["librdkafka", "java"] = "librdkafka"  # java: Kafka's own VerifiableConsumer
    zk_eager: ZkEagerSettings = ZkEagerSettings()
    coordinator: CoordinatorSettings = CoordinatorSettings()
    consumers: Annotated[int, Field(ge=0, le=64)] = 3
    topics: list[str] | None = None  # default: every topic of the scenario
    topic_pattern: str | None = None  # a regex subscription instead, e.g. "^events.*"
    commit: Literal["sync", "auto", "before-processing"] = "sync"
    auto_commit_interval_ms: Annotated[int, Field(ge=100)] = 1000
    processing_ms: Annotated[float, Field(ge=0, le=60_000, description="per record")] = 0
    session_timeout_ms: Annotated[int, Field(ge=1000, le=300_000)] = 6000
    heartbeat_interval_ms: Annotated[int, Field(ge=100)] = 1000
    max_poll_interval_ms: Annotated[int, Field(ge=1000)] = 300_000
    # How soon members notice new partitions and topics (librdkafka's default is 5 minutes).
    metadata_refresh_ms: Annotated[int, Field(ge=1000)] = 5000
    # The fault schedule's clock starts once the group the workload started has formed
    # (every initial member in a stable group covering all partitions): a slow start —
    # a JVM on a busy machine — must not let a fault hit a member that has not joined yet.
    # "none" starts it with the processes, for faults aimed at the first join itself.
    warmup: Literal["group-formed", "none"] = "group-formed"
    warmup_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 60
    producer: Producer = Producer()

    @model_validator(mode="after")
    def _coherent(self):
        allowed = PROTOCOL_ASSIGNORS[self.protocol]
        if self.assignor is not None and self.assignor not in allowed:
            raise ValueError(f"assignor: {self.assignor!r} does not go with protocol {self.protocol!r} "
                             f"(allowed: {', '.join(allowed)})")
        if self.driver == "java" and self.protocol not in CLASSIC:
            raise ValueError(f"driver: the java driver (VerifiableConsumer) runs the classic protocols, not {self.protocol!r}")
        if self.topic_pattern is not None:
            if self.protocol in PROJECT_COORDINATOR:
                raise ValueError(f"topic_pattern: {self.protocol} members subscribe to topics by name")
            if self.topics:
                raise ValueError("topic_pattern: give either topics or topic_pattern, not both")
            if not self.topic_pattern.startswith("^"):
                raise ValueError("topic_pattern: a pattern subscription starts with '^' (librdkafka's rule)")
            try:
                re.compile(self.topic_pattern)
            except re.error as e:
                raise ValueError(f"topic_pattern: not a regular expression: {e}") from None
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms: must be below session_timeout_ms")
        return self

    @property
    def effective_assignor(self) -> str:
        return self.assignor or PROTOCOL_ASSIGNORS[self.protocol][0]

    def member_names(self) -> list[str]:
        """The members started with the workload."""
        return [f"consumer-{i}" for i in range(1, self.consumers + 1)]


COORDINATOR = "coordinator"  # a fault target resolved when injected: the group's coordinator broker


class _FaultBase(_Strict):
    at_s: Annotated[float, Field(ge=0)]


class _TargetedFault(_FaultBase):
    target: str


class PauseFault(_TargetedFault):
    """SIGSTOP, then SIGCONT after ``duration_s``: a stop-the-world GC pause."""

    kind: Literal["pause"]
    duration_s: Annotated[float, Field(gt=0)]


class CrashFault(_TargetedFault):
    """SIGKILL (no LeaveGroup, no controlled shutdown) or SIGTERM (clean close)."""

    kind: Literal["crash"]
    signal: Literal["SIGKILL", "SIGTERM"] = "SIGKILL"
    restart_after_s: Annotated[float | None, Field(gt=0)] = None


class NetworkFault(_TargetedFault):
    """A link of one process degraded through Toxiproxy for ``duration_s``.

    ``link`` for a consumer: ``brokers`` (all), ``coordinator`` (only its group
    coordinator broker) or ``broker-N``; for a broker: ``zookeeper``, ``brokers``
    (every other broker, both ways), ``broker-N`` or ``clients`` (every member).
    """

    kind: Literal["network"]
    duration_s: Annotated[float, Field(gt=0)]
    link: str = "brokers"
    effect: Literal["blackhole", "refuse", "latency", "bandwidth", "reset"] = "blackhole"
    latency_ms: Annotated[int, Field(ge=0)] = 500
    jitter_ms: Annotated[int, Field(ge=0)] = 0
    rate_kbps: Annotated[int, Field(ge=1)] = 64


class ZkSessionExpiryFault(_TargetedFault):
    """A broker's ZooKeeper session expired for real: on the server (``server``), or by
    cutting the broker's ZooKeeper link longer than its session timeout (``network``)."""

    kind: Literal["zk-session-expiry"]
    method: Literal["server", "network"] = "server"


class PollStallFault(_TargetedFault):
    """The member keeps heartbeating (librdkafka's thread) but does not poll: slow processing."""

    kind: Literal["poll-stall"]
    duration_s: Annotated[float, Field(gt=0)]


class RollingRestartFault(_FaultBase):
    """Stop and start each target in turn: a rolling bounce of brokers, or a rolling deploy of
    consumers (with static membership when the protocol is classic-static)."""

    kind: Literal["rolling-restart"]
    targets: Union[Literal["brokers", "consumers"], list[str]]
    signal: Literal["SIGKILL", "SIGTERM"] = "SIGTERM"
    down_s: Annotated[float, Field(ge=0)] = 2
    interval_s: Annotated[float, Field(ge=0)] = 10


class JoinStormFault(_FaultBase):
    """``consumers`` new members start at once."""

    kind: Literal["join-storm"]
    consumers: Annotated[int, Field(ge=1, le=64)]


class ScaleFault(_FaultBase):
    """Scale the group to ``consumers`` members: start new ones, or stop (SIGTERM) the newest."""

    kind: Literal["scale"]
    consumers: Annotated[int, Field(ge=0, le=64)]


class AddPartitionsFault(_FaultBase):
    kind: Literal["add-partitions"]
    topic: str
    partitions: Annotated[int, Field(ge=2, le=1000, description="the new total")]


class CreateTopicFault(_FaultBase):
    """A new topic — picked up by a pattern subscription (``workload.topic_pattern``)."""

    kind: Literal["create-topic"]
    topic: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,200}$")]
    partitions: Annotated[int, Field(ge=1, le=1000)]


FAULT_MODELS = (PauseFault, CrashFault, NetworkFault, ZkSessionExpiryFault, PollStallFault, RollingRestartFault,
                JoinStormFault, ScaleFault, AddPartitionsFault, CreateTopicFault)
Fault = Annotated[Union[FAULT_MODELS], Field(discriminator="kind")]  # type: ignore[valid-type]
FAULT_KINDS = tuple(m.model_fields["kind"].annotation.__args__[0] for m in FAULT_MODELS)
RANDOM_KINDS = ("pause", "crash", "network", "poll-stall")


class RandomFaults(_Strict):
    """Faults drawn from the scenario's seed: which kind, which target, when, how long.
    The same seed always gives the same schedule (``rebalance-lab schedule`` prints it)."""

    count: Annotated[int, Field(ge=1, le=1000)]
    kinds: list[Literal[RANDOM_KINDS]] = ["pause", "crash", "network"]  # type: ignore[valid-type]
    targets: list[str] | None = None  # default: every consumer
    start_s: Annotated[float, Field(ge=0)] = 5
    end_s: Annotated[float | None, Field(gt=0)] = None  # default: duration_s - 5
    duration_s: tuple[Annotated[float, Field(gt=0)], Annotated[float, Field(gt=0)]] = (2.0, 15.0)

class Recovery(_Strict):
    timeout_s: Annotated[float, Field(gt=0)] = 120
    stable_for_s: Annotated[float, Field(ge=0)] = 3


class Scenario(_Strict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,80}$")]
    description: str = ""
    seed: int = 0
    duration_s: Annotated[float, Field(gt=0, le=86_400)]
    cluster: Cluster = Cluster()
    topics: Annotated[list[Topic], Field(min_length=1)]
    workload: Workload = Workload()
    faults: list[Fault] = []
    random_faults: RandomFaults | None = None
    checks: dict[str, dict | None] | None = None  # None: every check with its defaults
    recovery: Recovery = Recovery()

    @model_validator(mode="after")
    def _references(self):
        problems = []
        topic_names = [t.name for t in self.topics]
        for i, name in enumerate(self.workload.topics or []):
            if name not in topic_names:
                problems.append(f"workload.topics.{i}: topic {name!r} is not declared under topics")
        if self.workload.producer.topic and self.workload.producer.topic not in topic_names:
            problems.append(f"workload.producer.topic: topic {self.workload.producer.topic!r} is not declared under topics")
        protocol = self.workload.protocol
        if protocol == "consumer" and self.cluster.zookeeper_mode:
            problems.append(f"workload.protocol: the consumer protocol (KIP-848) needs Kafka 4.x; cluster.kafka is {self.cluster.kafka}")
        if protocol == "zk-eager" and not self.cluster.zookeeper_mode:
            problems.append(f"workload.protocol: zk-eager rebalances through ZooKeeper; Kafka {self.cluster.kafka} runs without one (use 3.9)")
        if protocol in PROJECT_COORDINATOR and not self.cluster.zookeeper_mode:
            problems.append(f"workload.protocol: the project's coordinator keeps its groups in ZooKeeper; "
                            f"Kafka {self.cluster.kafka} runs without one (use 3.9)")
        if self.workload.driver == "java":
            # What Kafka's VerifiableConsumer cannot do: one topic by name, commit after processing.
            if len(self.consumed_topics) != 1 or self.workload.topic_pattern:
                problems.append("workload.driver: the java driver (VerifiableConsumer) consumes exactly one topic by name")
            if self.workload.commit == "before-processing":
                problems.append("workload.commit: the java driver (VerifiableConsumer) cannot commit before processing")
            problems += [f"faults.{i}.kind: the java driver (VerifiableConsumer) cannot stall its poll loop"
                         for i, f in enumerate(self.faults) if isinstance(f, PollStallFault)]
        for i, f in enumerate(self.faults):
            problems += [f"faults.{i}.{key}: {reason}" for key, reason in self._fault_problems(f, set(topic_names))]
            topic_names += [f.topic] if isinstance(f, CreateTopicFault) else []
        if self.random_faults:
            problems += [f"random_faults.{p}" for p in self._random_problems()]
        for name, options in (self.checks or {}).items():
            if name not in CHECK_NAMES:
                problems.append(f"checks.{name}: unknown check (known: {', '.join(CHECK_NAMES)})")
                continue
            try:
                resolve_checks({name: options})
            except ValueError as e:
                problems.append(f"checks.{name}: {e}")
        for t in self.topics:
            if (t.replication_factor or 0) > self.cluster.brokers:
                problems.append(f"topics.{t.name}.replication_factor: {t.replication_factor} exceeds the "
                                f"{self.cluster.brokers} brokers")
        if problems:
            raise ValueError("\n".join(problems))  # one per line: a reason may itself contain "; "
        return self

    def member_slots(self) -> list[str]:
        """Every member name the run may start: the workload's, plus join storms and scale-ups.
        New members always get new numbers (never a stopped one's), as WorkloadProcesses does."""
        highest = running = self.workload.consumers
        for f in sorted(self.faults, key=lambda f: f.at_s):
            grow = f.consumers if isinstance(f, JoinStormFault) else (
                f.consumers - running if isinstance(f, ScaleFault) else 0)
            if grow > 0:
                highest += grow
            running = f.consumers if isinstance(f, ScaleFault) else running + max(grow, 0)
        return [f"consumer-{i}" for i in range(1, highest + 1)]

    def fault_targets(self) -> list[str]:
        targets = self.member_slots() + [f"broker-{i}" for i in range(1, self.cluster.brokers + 1)]
        if self.cluster.zookeeper_mode:
            targets += [f"zookeeper-{i}" for i in range(1, self.cluster.zookeeper_nodes + 1)]
        else:
            targets.append("controller-1")
        return targets + self.coordinator_instances() + ["producer", COORDINATOR]

    def coordinator_instances(self) -> list[str]:
        """The project's coordinator instances (none unless the protocol is coordinator-v*)."""
        if self.workload.protocol not in PROJECT_COORDINATOR:
            return []
        return [f"coordinator-{i}" for i in range(1, self.workload.coordinator.instances + 1)]

    def _fault_problems(self, f, topics: set[str]) -> list[tuple[str, str]]:
        """(key, reason) for one fault, whatever its kind."""
        out = []
        target = getattr(f, "target", None)
        brokers = [f"broker-{i}" for i in range(1, self.cluster.brokers + 1)]
        members = self.member_slots()
        if target is not None and target not in self.fault_targets():
            out.append(("target", f"no process {target!r} in this scenario (targets: {', '.join(self.fault_targets())})"))
        elif isinstance(f, NetworkFault):
            is_member = target in members
            instances = self.coordinator_instances()
            zookeeper = ["zookeeper"] if self.cluster.zookeeper_mode else []
            member_links = ["brokers", COORDINATOR, *brokers, *instances] + zookeeper
            if is_member:
                links = member_links
            elif target in instances or (target == COORDINATOR and instances):
                links = [*zookeeper, "clients"]  # the project's coordinator: its ZooKeeper, its members
            elif target in brokers or target == COORDINATOR:
                links = [*zookeeper, "brokers", "clients", *brokers]
            else:
                links = []
            if not links:
                out.append(("target", f"network faults apply to consumers and brokers, not {target!r}"))
            elif f.link not in links or f.link == target:
                out.append(("link", f"{f.link!r} is not a link of {target} (links: {', '.join(l for l in links if l != target)})"))
        elif isinstance(f, ZkSessionExpiryFault):
            if not self.cluster.zookeeper_mode:
                out.append(("kind", f"Kafka {self.cluster.kafka} runs in KRaft mode: brokers have no ZooKeeper session"))
            elif target not in brokers + self.coordinator_instances() and target != COORDINATOR:
                out.append(("target", f"ZooKeeper sessions expire for brokers and coordinator instances here, "
                                      f"not {target!r}"))
        elif isinstance(f, PollStallFault) and target not in members:
            out.append(("target", f"a poll stall needs a consumer, not {target!r}"))
        elif isinstance(f, RollingRestartFault) and isinstance(f.targets, list):
            unknown = [t for t in f.targets if t not in self.fault_targets() or t == COORDINATOR]
            if unknown:
                out.append(("targets", f"no process {', '.join(map(repr, unknown))} in this scenario"))
        elif isinstance(f, (AddPartitionsFault, CreateTopicFault)):
            exists = f.topic in topics
            if isinstance(f, AddPartitionsFault) and not exists:
                out.append(("topic", f"topic {f.topic!r} is not declared under topics"))
            elif isinstance(f, AddPartitionsFault):
                current = next(t.partitions for t in self.topics if t.name == f.topic)
                if f.partitions <= current:
                    out.append(("partitions", f"{f.partitions} is not more than the {current} partitions {f.topic} has"))
            elif exists:
                out.append(("topic", f"topic {f.topic!r} already exists"))
        if f.at_s >= self.duration_s:
            out.append(("at_s", f"{f.at_s}s is not within duration_s ({self.duration_s}s)"))
        return out

    def _random_problems(self) -> list[str]:
        r = self.random_faults
        end = r.end_s if r.end_s is not None else self.duration_s - 5
        out = []
        if not r.start_s < end <= self.duration_s:
            out.append(f"end_s: the window {r.start_s}s..{end}s must be non-empty and within duration_s ({self.duration_s}s)")
        if r.duration_s[0] > r.duration_s[1]:
            out.append(f"duration_s: [{r.duration_s[0]}, {r.duration_s[1]}] is not a [min, max] range")
        unknown = [t for t in r.targets or [] if t not in self.fault_targets() or t == COORDINATOR]
        if unknown:
            out.append(f"targets: no process {', '.join(map(repr, unknown))} in this scenario")
        if "poll-stall" in r.kinds and any(t not in self.member_slots() for t in r.targets or []):
            out.append("kinds: poll-stall needs consumer targets only")
        return out

    def schedule(self) -> list[dict]:
        """Every fault of the run in time order, the seeded random ones expanded, with ids."""
        from faults.random_schedule import draw

        faults = [f.model_dump() for f in self.faults]
        if self.random_faults:
            # Through the model: drawn faults carry every field, defaults included, as written ones do.
            drawn = draw(self.random_faults.model_dump(), seed=self.seed, duration_s=self.duration_s,
                         consumers=self.workload.member_names())
            faults += [TypeAdapter(Fault).validate_python(f).model_dump() for f in drawn]
        faults.sort(key=lambda f: f["at_s"])  # stable: ties keep the file's order
        return [{"fault_id": f"f{i}", **f} for i, f in enumerate(faults, 1)]

    def subscribes(self, topic: str) -> bool:
        """Whether the group consumes ``topic`` (listed, or matched by the pattern)."""
        if self.workload.topic_pattern:
            return re.match(self.workload.topic_pattern, topic) is not None
        return topic in self.consumed_topics

    @property
    def consumed_topics(self) -> list[str]:
        return self.workload.topics or [t.name for t in self.topics]

    @property
    def produced_topic(self) -> str:
        return self.workload.producer.topic or self.topics[0].name

    def broker_config(self) -> dict:
        """Broker settings the scenario needs, under what it set explicitly."""
        implied = {}
        w = self.workload
        # The broker refuses session timeouts below group.min.session.timeout.ms (6 s by default).
        if w.session_timeout_ms < 6000:
            implied["group.min.session.timeout.ms"] = w.session_timeout_ms
        if w.protocol == "consumer":
            # KIP-848 moves session and heartbeat settings to the broker (minimums 45 s and 5 s).
            implied.update({
                "group.consumer.session.timeout.ms": w.session_timeout_ms,
                "group.consumer.min.session.timeout.ms": min(45_000, w.session_timeout_ms),
                "group.consumer.heartbeat.interval.ms": w.heartbeat_interval_ms,
                "group.consumer.min.heartbeat.interval.ms": min(5_000, w.heartbeat_interval_ms),
            })
        return {**implied, **self.cluster.broker_config}


# Model validators raise "key.path: reason" lines (one per problem); the key path is
# relative to the model that raised, which pydantic gives as the error's location.
_PATHED = re.compile(r"^(?P<key>[\w.\-]+): (?P<reason>.*)$")


def _loc(loc: tuple) -> str:
    parts = [str(p) for p in loc if not str(p).startswith("function-after")]
    # A tagged union puts the tag in the location (faults.0.pause.duration_s): drop it.
    parts = [p for i, p in enumerate(parts) if not (i == 2 and parts[0] == "faults" and p in FAULT_KINDS)]
    return ".".join(parts)


def _problems(err: ValidationError) -> list[tuple[str, str]]:
    out = []
    for e in err.errors():
        loc = _loc(e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "union_tag_invalid":
            loc, msg = f"{loc}.kind", f"unknown fault kind {e.get('input', {}).get('kind')!r} (known: {', '.join(FAULT_KINDS)})"
        elif e["type"] == "union_tag_not_found":
            loc, msg = f"{loc}.kind", f"missing (known kinds: {', '.join(FAULT_KINDS)})"
        if e["type"] == "value_error":
            for part in msg.split("\n"):
                m = _PATHED.match(part)
                key = m["key"] if m else ""
                out.append((".".join(filter(None, (loc, key))) or "(scenario)", m["reason"] if m else part))
        else:
            out.append((loc or "(scenario)", msg))
    return out


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ScenarioError(path, [("(file)", e.strerror or str(e))]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(yaml)"
        raise ScenarioError(path, [(where, f"not valid YAML: {getattr(e, 'problem', None) or e}")]) from None
    if not isinstance(data, dict):
        raise ScenarioError(path, [("(top level)", "a scenario is a mapping of keys such as name, duration_s, topics")])
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(path, _problems(e)) from None
