"""Scenario files: what cluster, which group, which faults when, which checks.

Validated with pydantic before anything starts. Every problem is reported as
``FILE: key.path: reason`` (a ScenarioError, exit code 2), all of them at once.

What a scenario may hold is bounded (docs/inputs.md): a file of at most
1 MiB of UTF-8 YAML (a byte order mark is fine), no YAML tags, at most 20 levels deep
and 50,000 values once aliases are expanded; every number has a range (at most 100
topics of 1000 partitions, 128 consumers, 1000 faults, a day of run time), no NaN or
infinity; broker settings the harness owns cannot be overridden.
"""

from __future__ import annotations

import codecs
import math
import re
from pathlib import Path
from typing import Annotated, Literal, Union

import yaml
from pydantic import Field, TypeAdapter, ValidationError, model_validator

from faults import catalogue, random_schedule
from faults.base import COORDINATOR, DAY_S, MAX_MEMBERS, Drawing, FaultSpec, ScenarioFacts
from faults.base import Strict as _Strict
from faults.topic_names import TOPIC_NAME_MAX, TopicName, topic_set_problems
from harness import versions
from harness.cluster.backend import BACKENDS, EXTERNAL
from harness.paths import longest_stamped_name
from oracle import CHECK_NAMES
from oracle.protocols import ASSIGNORS, GENERATIONS, PROTOCOLS, Generation
from oracle.verdict import CheckOptionError, resolve_checks
from runtime.errors import ScenarioError
from workloads.load.profile import STAGE_KINDS, LoadProfile  # the load profile's own model
from workloads.zk_settings import ZkEagerSettings  # the driver's own settings

Scalar = Union[str, int, float, bool]
DAY_MS = DAY_S * 1000


def _config_problems(config: dict, key: str) -> list[str]:
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


class Topic(_Strict):
    name: TopicName
    partitions: Annotated[int, Field(ge=1, le=1000)]
    replication_factor: Annotated[int | None, Field(ge=1, le=9)] = None
    config: dict[str, Scalar] = {}

    @model_validator(mode="after")
    def _one_setting_a_line(self):
        problems = _config_problems(self.config, "config")
        if problems:
            raise ValueError("\n".join(problems))
        return self


# Broker settings the harness derives for every broker: its listeners (one per lane, each
# advertised at that lane's proxy, so a network fault cuts exactly one member's traffic),
# node ids, log directories, its ZooKeeper or KRaft quorum. Overridden, the proxies would
# be bypassed (a "partition" that cuts nothing) or the brokers pointed at another cluster.
HARNESS_BROKER_SETTINGS = frozenset({
    "listeners", "advertised.listeners", "listener.security.protocol.map", "inter.broker.listener.name",
    "control.plane.listener.name", "controller.listener.names", "zookeeper.connect", "log.dirs", "log.dir",
    "node.id", "broker.id", "process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
})


# Client settings that are the harness's own (the scenario's workload decides them, or the
# history depends on them); tests/unit/test_scenario_external.py holds it to the clients' configs.
HARNESS_CLIENT_SETTINGS = frozenset({
    "bootstrap.servers", "group.id", "client.id", "group.instance.id", "group.protocol", "group.remote.assignor",
    "partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms",
    "auto.offset.reset", "enable.auto.commit", "enable.auto.offset.store", "auto.commit.interval.ms",
    "topic.metadata.refresh.interval.ms", "debug", "logger", "log_level", "acks", "enable.idempotence", "linger.ms",
    "delivery.timeout.ms", "socket.connection.setup.timeout.ms"})


class Cluster(_Strict):
    backend: Literal[tuple(BACKENDS)] = "local"  # type: ignore[valid-type]
    kafka: Literal[tuple(versions.KAFKA_RELEASES)] = "3.9"  # type: ignore[valid-type]
    brokers: Annotated[int, Field(ge=1, le=9)] = 3
    zookeeper_nodes: Literal[1, 3] = 1
    broker_config: dict[str, Scalar] = {}
    # backend: external — someone else's cluster: where it is, and the client settings (security)
    # every client the harness makes is given. `kafka` then says which line it runs.
    bootstrap_servers: Annotated[str, Field(pattern=r"^[^,\s]+:\d{1,5}(,[^,\s]+:\d{1,5})*$")] | None = None
    zookeeper_connect: Annotated[str, Field(min_length=1, max_length=1000)] | None = None
    client_config: dict[str, Scalar] = {}

    @model_validator(mode="after")
    def _harness_settings_stay(self):
        problems = _config_problems(self.broker_config, "broker_config")
        problems += _config_problems(self.client_config, "client_config")
        if self.external:
            problems += [f"{key}: an external cluster is not started by the harness" for key in
                         ("brokers", "zookeeper_nodes", "broker_config") if key in self.model_fields_set]
            if not self.bootstrap_servers:
                problems.append("bootstrap_servers: an external cluster needs its bootstrap servers (host:port,…)")
            problems += [f"client_config.{key}: the harness sets this for each client" for key in self.client_config
                         if key in HARNESS_CLIENT_SETTINGS]
        else:
            problems += [f"{key}: only for backend: external (the harness runs this cluster itself)" for key in
                         ("bootstrap_servers", "zookeeper_connect", "client_config") if key in self.model_fields_set]
            if self.zookeeper_nodes != 1 and not self.zookeeper_mode:
                problems.append(f"zookeeper_nodes: Kafka {self.kafka} runs without ZooKeeper (KRaft); lines with "
                                f"ZooKeeper: {', '.join(versions.KAFKA_LINES_WITH_ZOOKEEPER)}")
        problems += [f"broker_config.{key}: the harness sets this for every broker (listeners, ids, log "
                     f"directories and the quorum are its own: network faults act through those listeners)"
                     for key in self.broker_config if key in HARNESS_BROKER_SETTINGS]
        timeout = self.broker_config.get("zookeeper.session.timeout.ms")
        whole = type(timeout) is int or (type(timeout) is str and timeout.isascii() and timeout.isdigit())
        if timeout is not None and not (whole and 1000 <= int(timeout) <= 600_000):
            problems.append("broker_config.zookeeper.session.timeout.ms: the harness times ZooKeeper faults by it: "
                            "a whole number of milliseconds, 1000..600000")
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def zookeeper_mode(self) -> bool:
        return self.kafka in versions.KAFKA_LINES_WITH_ZOOKEEPER

    @property
    def external(self) -> bool:
        return self.backend == EXTERNAL


class Producer(_Strict):
    topic: str | None = None  # default: the first topic
    rate: Annotated[float, Field(gt=0, le=50_000, description="records per second")] = 200
    value_bytes: Annotated[int, Field(ge=1, le=1_000_000)] = 100
    # How long a record waits for others of its partition (librdkafka's linger.ms; 5 is its
    # default). Longer: fewer, fuller produce requests — brokers do less per record — and later acks.
    linger_ms: Annotated[int, Field(ge=0, le=60_000)] = 5


class CoordinatorSettings(_Strict):
    """The project's coordinator service, for the ``coordinator-v*`` protocols."""

    instances: Annotated[int, Field(ge=1, le=3)] = 1  # more than one: leader election, failover
    initial_rebalance_delay_ms: Annotated[int, Field(ge=0, le=600_000)] = 3000  # v3 only (KIP-134)
    zookeeper_session_timeout_ms: Annotated[int, Field(ge=2000, le=600_000)] = 6000


class ConsumeUnassignedHook(_Strict):
    """Test-only: ``member`` also reads ``partition`` through a second handle as long as the group
    has never assigned it to that member — a non-owner consuming (workloads/consumer.py)."""

    member: Annotated[str, Field(pattern=r"^consumer-[1-9][0-9]*$")]
    partition: Annotated[int, Field(ge=0, le=999)]
    topic: str | None = None  # default: the produced topic


class SigtermAfterJoinHook(_Strict):
    """Test-only: ``member`` sends itself SIGTERM right after it sent its ``join``-th JoinGroup."""

    member: Annotated[str, Field(pattern=r"^consumer-[1-9][0-9]*$")]
    join: Annotated[int, Field(ge=1, le=1000)]


class DriverTestHooks(_Strict):
    """Test-only switches of the librdkafka driver, for tests of the oracle on real runs; off unless given."""

    consume_unassigned: ConsumeUnassignedHook | None = None
    sigterm_after_join: SigtermAfterJoinHook | None = None


class Workload(_Strict):
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
    def effective_assignor(self) -> str:
        return self.assignor or self.generation.assignors[0]

    def member_names(self) -> list[str]:
        """The members started with the workload."""
        return [f"consumer-{i}" for i in range(1, self.consumers + 1)]


# Every fault kind's entry, from the catalogue (faults/): the kind names the model.
Fault = Annotated[Union[tuple(catalogue.SPECS.values())], Field(discriminator="kind")]  # type: ignore[valid-type]
FAULT_KINDS = tuple(catalogue.SPECS)
RANDOM_KINDS = catalogue.DRAWABLE
_FAULT = TypeAdapter(Fault)


class RandomFaults(_Strict):
    """Faults drawn from the scenario's seed: which kind, which target, when, how long.
    The same seed always gives the same schedule (``rebalance-lab schedule`` prints it)."""

    count: Annotated[int, Field(ge=1, le=1000)]
    kinds: Annotated[list[Literal[RANDOM_KINDS]], Field(min_length=1)] = ["pause", "crash", "network"]  # type: ignore[valid-type]
    targets: Annotated[list[str] | None, Field(max_length=100)] = None  # default (or empty): every consumer
    start_s: Annotated[float, Field(ge=0, le=DAY_S)] = 5
    end_s: Annotated[float | None, Field(gt=0, le=DAY_S)] = None  # default: duration_s - 5
    duration_s: tuple[Annotated[float, Field(gt=0, le=DAY_S)], Annotated[float, Field(gt=0, le=DAY_S)]] = (2.0, 15.0)

class Recovery(_Strict):
    timeout_s: Annotated[float, Field(gt=0, le=DAY_S)] = 120
    stable_for_s: Annotated[float, Field(ge=0, le=3600)] = 3


Seed = Annotated[int, Field(ge=0, le=2**63 - 1, strict=True)]  # also a suite's, a sweep's, `schedule --seed`; `true` is none


def seed_problem(seed: object) -> str | None:
    """Why ``seed`` is no scenario's seed (a command-line option's value), or None."""
    try:
        TypeAdapter(Seed).validate_python(seed)
    except ValidationError as e:
        return e.errors()[0]["msg"]
    return None


class Scenario(_Strict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,80}$")]
    description: str = ""
    seed: Seed = 0
    duration_s: Annotated[float, Field(gt=0, le=DAY_S)]
    cluster: Cluster = Cluster()
    topics: Annotated[list[Topic], Field(min_length=1, max_length=100)]
    workload: Workload = Workload()
    faults: Annotated[list[Fault], Field(max_length=1000)] = []
    random_faults: RandomFaults | None = None
    checks: dict[str, dict | None] | None = None  # None: every check with its defaults
    recovery: Recovery = Recovery()
    # The group's size follows a profile run by Locust (workloads/load/); the warm-up's group is
    # workload.consumers, the profile starts from it.
    load: LoadProfile | None = None

    @model_validator(mode="after")
    def _references(self):
        problems = []
        topic_names = [t.name for t in self.topics]
        longest = TOPIC_NAME_MAX - len(self.isolation_prefix(longest_stamped_name(self.run_name)))
        for i, name in enumerate(topic_names):
            if len(name) > longest:
                problems.append(f"topics.{i}.name: {len(name)} characters; on a shared or external cluster a run "
                                f"names it rl-<run directory>-{{name}}, which Kafka allows only up to {longest}")
        problems += [f"topics.{i}.name: {reason}" for i, reason in topic_set_problems(topic_names)]
        for i, name in enumerate(self.workload.topics or []):
            if name not in topic_names:
                problems.append(f"workload.topics.{i}: topic {name!r} is not declared under topics")
        if self.workload.producer.topic and self.workload.producer.topic not in topic_names:
            problems.append(f"workload.producer.topic: topic {self.workload.producer.topic!r} is not declared under topics")
        generation, kafka = self.workload.generation, self.cluster.kafka
        # A generation's Kafka line says which kind of cluster it needs: with ZooKeeper, or without.
        if generation.kafka and (generation.kafka in versions.KAFKA_LINES_WITH_ZOOKEEPER) != self.cluster.zookeeper_mode:
            problems.append(f"workload.protocol: {generation.kafka_why}; " + (
                f"cluster.kafka is {kafka}" if self.cluster.zookeeper_mode
                else f"Kafka {kafka} runs without one (use {generation.kafka})"))
        if self.cluster.external:
            if generation.group_home != "kafka":
                problems.append(f"workload.protocol: {generation.kafka_why}, which the harness runs itself: "
                                f"not on an external cluster")
            if self.workload.driver != "librdkafka":
                problems.append("workload.driver: on an external cluster members use the librdkafka driver "
                                "(it is the one given cluster.client_config: the java driver reads its settings from a "
                                "file, which would hold the secret ones)")
            # What the harness would set on brokers it runs for the group's timing (broker_config()).
            timing = {"session_timeout_ms", "heartbeat_interval_ms"} & self.workload.model_fields_set
            if generation.member_epochs and timing:
                problems += [f"workload.{key}: KIP-848 groups take their timing from the brokers "
                             f"(group.consumer.*), which on an external cluster are not the scenario's"
                             for key in sorted(timing)]
            elif self.workload.session_timeout_ms < 6000:
                problems.append("workload.session_timeout_ms: below 6000 the brokers must allow it "
                                "(group.min.session.timeout.ms), which on an external cluster is not the scenario's")
        if self.workload.driver == "java":
            # What Kafka's VerifiableConsumer cannot do: one topic by name, commit after processing.
            if len(self.consumed_topics) != 1 or self.workload.topic_pattern:
                problems.append("workload.driver: the java driver (VerifiableConsumer) consumes exactly one topic by name")
            if self.workload.commit == "before-processing":
                problems.append("workload.commit: the java driver (VerifiableConsumer) cannot commit before processing")
        declared = facts = self._fault_facts()  # once: it takes passes over the faults
        # in the order they fire: timed ones by at_s, then the triggered ones (whenever their state comes)
        for i, f in sorted(enumerate(self.faults), key=lambda item: (item[1].on is not None, item[1].at_s)):
            problems += [f"faults.{i}.{key}: {reason}" for key, reason in self._fault_problems(f, facts)]
            facts = f.after(facts)  # what this fault creates or grows is there for the faults after it
        problems += self._timeline_problems(declared.members)
        if self.random_faults:
            problems += [f"random_faults.{p}" for p in self._random_problems(declared)]
        if self.load:
            problems += self._load_problems(declared.members)
        problems += self._test_hook_problems(list(declared.members))
        for name, options in (self.checks or {}).items():
            if name not in CHECK_NAMES:
                problems.append(f"checks.{name}: unknown check (known: {', '.join(CHECK_NAMES)})")
                continue
            try:
                resolve_checks({name: options})
            except CheckOptionError as e:
                problems.append(f"checks.{name}: {e.reason}")
        for t in self.topics if not self.cluster.external else ():  # how many brokers it has is not ours to know
            if (t.replication_factor or 0) > self.cluster.brokers:
                problems.append(f"topics.{t.name}.replication_factor: {t.replication_factor} exceeds the "
                                f"{self.cluster.brokers} brokers")
        if problems:
            raise ValueError("\n".join(problems))  # one per line: a reason may itself contain "; "
        return self

    def _timeline_problems(self, members: tuple[str, ...]) -> list[str]:
        """A written fault that acts on its target's process (`acts_on_process`) must find it up when
        it starts: a member the group has at that moment (not one a later scale-up or join storm
        starts, nor one a scale-down stopped or a crash ended), and no process a crash has down
        until its restart. Otherwise it would act on nothing and the run would not be the chaos
        it asks for. Members are numbered as WorkloadProcesses numbers them: new ones after the
        highest so far, the newest stop first, counting the live ones. Where that is not known
        here — after a triggered fault that changes the group (it fires whenever its state comes),
        or a scale while a crashed member waits for its restart — members are not judged."""
        problems, running, highest, known = [], list(range(1, self.workload.consumers + 1)), self.workload.consumers, True
        down: dict[str, tuple[float, float, int]] = {}  # target -> (crashed at, restarted at, its fault's index)
        for i, f in sorted(enumerate(self.faults), key=lambda item: item[1].at_s):
            target = getattr(f, "target", None)
            crashed, restarted, j = down.get(target, (math.inf, math.inf, -1))
            if f.on is None and f.acts_on_process:
                if crashed <= f.at_s <= restarted:  # a restart at the same instant comes after it
                    problems.append(f"faults.{i}.target: {target} is down at workload+{f.at_s:g}s: faults.{j} crashed it at "
                                    f"workload+{crashed:g}s" + (f" and restarts it at workload+{restarted:g}s" if restarted < math.inf
                                                       else ", for good"))
                elif target in members and known and int(target.rsplit("-", 1)[1]) not in running:
                    problems.append(f"faults.{i}.target: {target} is not running at workload+{f.at_s:g}s (the group's members "
                                    f"then: {', '.join(f'consumer-{n}' for n in running) or 'none'})")
            if f.effects.kills and f.on is None and target != COORDINATOR:  # that one is resolved when injected
                down[target] = (f.at_s, f.at_s + (f.effects.restart_after_s or math.inf), i)
            if not f.acts_on_members(()):  # only scale and join storms change who the members are
                continue
            waiting = any(c <= f.at_s < r < math.inf for t, (c, r, _) in down.items() if t in members)
            if f.on is not None or waiting:
                known = False
                continue
            gone = {t for t, (c, r, _) in down.items() if c <= f.at_s and r == math.inf}  # a scale counts live ones
            live = [n for n in running if f"consumer-{n}" not in gone]
            after = f.members_after(len(live))
            started = max(after - len(live), 0)  # new ones numbered after the highest; the newest stop first
            running = live[:after] + list(range(highest + 1, highest + 1 + started))
            highest += started
        return problems

    def _load_problems(self, members: tuple[str, ...]) -> list[str]:
        """A profile that fits the run and the group's bound; no fault that would fight it over members."""
        start, load, problems = self.workload.consumers, self.load, []
        if load.peak(start) > MAX_MEMBERS:
            problems.append(f"load.stages: the profile reaches {load.peak(start)} members; a group has at most {MAX_MEMBERS}")
        if load.length_s(start) > self.duration_s:
            problems.append(f"load.stages: the profile lasts {load.length_s(start):g}s, longer than duration_s "
                            f"({self.duration_s:g}s)")
        why = "the load profile decides the group's members; faults may act on the cluster and the producer only"
        problems += [f"faults.{i}.kind: {f.kind} on members: {why}" for i, f in enumerate(self.faults)
                     if f.acts_on_members(members)]
        if self.random_faults and (not self.random_faults.targets or set(self.random_faults.targets) & set(members)):
            problems.append(f"random_faults.targets: members (the default): {why}")
        return problems

    def _test_hook_problems(self, members: list[str]) -> list[str]:
        """A test hook names a member the run starts and, to read, a partition that exists."""
        hooks, problems = self.workload.test_hooks, []
        for key in ("consume_unassigned", "sigterm_after_join"):
            hook = getattr(hooks, key, None) if hooks else None
            if hook and hook.member not in members:
                problems.append(f"workload.test_hooks.{key}.member: {hook.member} is not a member this run starts "
                                f"({', '.join(members)})")
        reader = hooks.consume_unassigned if hooks else None
        if reader:
            topic = reader.topic or self.produced_topic
            declared = {t.name: t.partitions for t in self.topics}
            if topic not in declared:
                problems.append(f"workload.test_hooks.consume_unassigned.topic: topic {topic!r} is not declared under topics")
            elif reader.partition >= declared[topic]:
                problems.append(f"workload.test_hooks.consume_unassigned.partition: {topic} has {declared[topic]} "
                                f"partitions (0..{declared[topic] - 1})")
        return problems

    def with_backend(self, backend: str) -> Scenario:
        """The same scenario on another cluster backend (`run --backend`), validated again: the
        backend decides what the cluster section may say and which faults can be done."""
        data = self.model_dump(exclude_unset=True)
        data.setdefault("cluster", {})["backend"] = backend
        try:
            return Scenario.model_validate(data)
        except ValidationError as e:
            raise ScenarioError(f"{self.name} with --backend {backend}", validation_problems(e)) from None

    @property
    def run_name(self) -> str:
        """A run directory's name after its UTC stamp (and before a ``-2`` for a second in that second)."""
        return f"{self.name}-s{self.seed}"

    @staticmethod
    def isolation_prefix(run_dir_name: str) -> str:
        """What a run on a shared or external cluster puts before its topics' and group's names."""
        return f"rl-{run_dir_name}-"

    def isolated(self, prefix: str) -> Scenario:
        """The same scenario with every topic and the group named `prefix` + its name: a run on a
        shared (external) cluster touches only what it created, and deletes exactly that."""
        w = self.workload
        name = lambda topic: topic and prefix + topic  # noqa: E731
        hooks = w.test_hooks
        if hooks and hooks.consume_unassigned and hooks.consume_unassigned.topic:
            hooks = hooks.model_copy(update={"consume_unassigned": hooks.consume_unassigned.model_copy(
                update={"topic": name(hooks.consume_unassigned.topic)})})
        workload = w.model_copy(update={
            "group": prefix + w.group, "topics": [name(t) for t in w.topics] if w.topics else w.topics,
            "topic_pattern": "^" + re.escape(prefix) + w.topic_pattern[1:] if w.topic_pattern else None,
            "producer": w.producer.model_copy(update={"topic": name(w.producer.topic)}), "test_hooks": hooks})
        return self.model_copy(update={"topics": [t.model_copy(update={"name": name(t.name)}) for t in self.topics],
                                       "workload": workload})

    def member_slots(self) -> list[str]:
        """Every member name the run may start: the workload's, plus join storms and scale-ups.
        New members always get new numbers (never a stopped one's), as WorkloadProcesses does."""
        highest = running = self.workload.consumers
        for f in sorted(self.faults, key=lambda f: f.at_s):
            for _ in range(f.on.count if f.on else 1):  # a triggered join storm may fire count times
                after = f.members_after(running)
                highest += max(after - running, 0)
                running = after
        if self.load:  # a member the profile needs again is its slot's next incarnation: as many slots as its peak
            highest = max(highest, min(self.load.peak(self.workload.consumers), MAX_MEMBERS))
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
        if not self.workload.generation.project_coordinator:
            return []
        return [f"coordinator-{i}" for i in range(1, self.workload.coordinator.instances + 1)]

    def _fault_facts(self) -> ScenarioFacts:
        """What a fault entry is checked against, before any fault has run."""
        if self.cluster.external:  # the run's own processes, and nothing of the cluster
            return ScenarioFacts(
                targets=(*self.member_slots(), "producer"), members=tuple(self.member_slots()), brokers=(),
                coordinator_instances=(), kafka=self.cluster.kafka, zookeeper=False, driver=self.workload.driver,
                topics={t.name: t.partitions for t in self.topics}, external=True)
        return ScenarioFacts(
            targets=tuple(self.fault_targets()), members=tuple(self.member_slots()),
            brokers=tuple(f"broker-{i}" for i in range(1, self.cluster.brokers + 1)),
            coordinator_instances=tuple(self.coordinator_instances()), kafka=self.cluster.kafka,
            zookeeper=self.cluster.zookeeper_mode, driver=self.workload.driver,
            topics={t.name: t.partitions for t in self.topics})

    def _fault_problems(self, f: FaultSpec, facts: ScenarioFacts) -> list[tuple[str, str]]:
        """(key, reason) for one fault, whatever its kind."""
        if facts.external and f.external_refusal:
            return [("kind", f"the cluster is external: {f.external_refusal}")]
        out = f.problems(facts)
        if f.at_s >= self.duration_s:
            out.append(("at_s", f"{f.at_s}s is not within duration_s ({self.duration_s}s)"))
        if f.on and f.on.member is not None and f.on.member not in facts.members:
            out.append(("on.member", f"no member {f.on.member!r} in this scenario (members: {', '.join(facts.members)})"))
        if f.on and f.on.reads_coordinator_log and facts.external:
            out.append(("on", "the cluster is external: its brokers' log, where the group's states are read, "
                              "is not the harness's to read"))
        return out

    def _random_problems(self, facts: ScenarioFacts) -> list[str]:
        r = self.random_faults
        end = r.end_s if r.end_s is not None else self.duration_s - 5
        out = []
        if not r.start_s < end <= self.duration_s:
            out.append(f"end_s: the window {r.start_s}s..{end}s must be non-empty and within duration_s ({self.duration_s}s)")
        if r.duration_s[0] > r.duration_s[1]:
            out.append(f"duration_s: [{r.duration_s[0]}, {r.duration_s[1]}] is not a [min, max] range")
        elif r.duration_s[0] < random_schedule.RESOLUTION_S:  # a length drawn below it rounds to 0: no fault at all
            out.append(f"duration_s: [{r.duration_s[0]:g}, {r.duration_s[1]:g}]: a drawn length is rounded to the "
                       f"millisecond; the shortest must be at least {random_schedule.RESOLUTION_S:g}s")
        unknown = [t for t in r.targets or [] if t not in facts.targets or t == COORDINATOR]
        if unknown:
            out.append(f"targets: no process {', '.join(map(repr, unknown))} in this scenario")
        drawing = Drawing(members=facts.members, zookeeper=facts.zookeeper, brokers=len(facts.brokers))
        for kind in dict.fromkeys(r.kinds):
            spec = catalogue.SPECS[kind]
            if facts.external and spec.external_refusal:
                out.append(f"kinds: {kind}: the cluster is external: {spec.external_refusal}")
            if not all(spec.drawable_for(t, drawing) for t in r.targets or []):
                out.append(f"kinds: {kind} needs {spec.draw_targets} only")
        # Whatever the seed, every fault the draw can give a target must be one the run can inject.
        for target in dict.fromkeys(t for t in r.targets or [] if t not in unknown):
            for probe in self._random_shapes(target, drawing):
                out += [f"targets: a drawn {probe.kind} fault on {target}: {reason}"
                        for key, reason in self._fault_problems(probe, facts) if key != "at_s"]
        return list(dict.fromkeys(out))

    def _random_shapes(self, target: str, drawing: Drawing) -> list[FaultSpec]:
        """One fault of each shape faults.random_schedule.draw can give ``target``."""
        return [_FAULT.validate_python({"kind": kind, "target": target, "at_s": 0.0, **options})
                for kind in dict.fromkeys(self.random_faults.kinds)
                if catalogue.SPECS[kind].drawable_for(target, drawing)
                for options in catalogue.SPECS[kind].draw_shapes(target, drawing)]

    def schedule(self) -> list[dict]:
        """Every fault of the run in time order, the seeded random ones expanded, with ids."""
        faults = [f.model_dump() for f in self.faults]
        if self.random_faults:
            # Through the model: drawn faults carry every field, defaults included, as written ones do.
            drawn = random_schedule.draw(self.random_faults.model_dump(), seed=self.seed, duration_s=self.duration_s,
                         consumers=self.workload.member_names(),
                         zookeeper=self.cluster.zookeeper_mode and not self.cluster.external,
                         brokers=self.cluster.brokers, written=self.faults)
            faults += [_FAULT.validate_python(f).model_dump() for f in drawn]
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
_PATHED = re.compile(r"^(?P<key>[^\s:]+): (?P<reason>.*)$")  # a key is what the user wrote: "[/bold]" too


def _loc(loc: tuple) -> str:
    parts = [str(p) for p in loc if not str(p).startswith("function-after")]
    # A tagged union puts the tag in the location (faults.0.pause.duration_s): drop it.
    parts = [p for i, p in enumerate(parts) if not (i == 2 and parts[0] == "faults" and p in FAULT_KINDS)
             and not (i == 3 and parts[:2] == ["load", "stages"] and p in STAGE_KINDS)]
    return ".".join(parts)


def _kinds(loc: str) -> tuple[str, str]:
    """What a tagged union at ``loc`` holds, in words, and its kinds."""
    return ("stage kind", ", ".join(STAGE_KINDS)) if loc.startswith("load.") else ("fault kind", ", ".join(FAULT_KINDS))


def validation_problems(err: ValidationError) -> list[tuple[str, str]]:
    out = []
    for e in err.errors():
        loc = _loc(e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "union_tag_invalid":
            what, known = _kinds(loc)
            loc, msg = f"{loc}.kind", f"unknown {what} {e.get('input', {}).get('kind')!r} (known: {known})"
        elif e["type"] == "union_tag_not_found":
            loc, msg = f"{loc}.kind", f"missing (known kinds: {_kinds(loc)[1]})"
        if e["type"] == "value_error":
            for part in msg.split("\n"):
                m = _PATHED.match(part)
                key = m["key"] if m else ""
                out.append((".".join(filter(None, (loc, key))) or "(scenario)", m["reason"] if m else part))
        else:
            out.append((loc or "(scenario)", msg))
    return out


MAX_SCENARIO_BYTES = 2**20  # a scenario is a page of YAML
MAX_DEPTH = 20  # the deepest scenario key is 4 levels down
MAX_VALUES = 50_000  # after aliases are expanded (no alias bomb); a 1000-fault scenario has ~6000
MAX_PROBLEMS = 50  # reported at once; a file that is not a scenario at all would list thousands


class _Refused(yaml.MarkedYAMLError):
    """Valid YAML that a scenario does not accept (a tag, too deep, too large)."""


class _ScenarioLoader(yaml.SafeLoader):
    """PyYAML's safe loader minus what a scenario never needs and PyYAML handles badly: tags
    (``!!int x`` raises a bare ValueError), nesting deep enough to exhaust the stack, aliases that
    expand to millions of values. A value its constructor cannot build (``2020-99-99`` is read as
    a date, a 5000-digit integer) becomes a YAML error at its line."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = self._values = 0
        self._sizes: dict[int, int] = {}  # id(anchored node) -> values under it, aliases expanded

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self._count(self._sizes.get(id(self.anchors.get(event.anchor)), 1), event)
            return super().compose_node(parent, index)
        if event.tag is not None:
            tag = event.tag.replace("tag:yaml.org,2002:", "!!")
            raise _Refused(None, None, f"YAML tags ({tag}) are not accepted in a scenario: write the plain value",
                           event.start_mark)
        if self._depth >= MAX_DEPTH:
            raise _Refused(None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        before = self._values
        self._count(1, event)
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if event.anchor is not None:
            self._sizes[id(node)] = self._values - before
        return node

    def _count(self, values: int, event) -> None:
        self._values += values
        if self._values > MAX_VALUES:
            raise _Refused(None, None, f"more than {MAX_VALUES} values (aliases expanded)", event.start_mark)

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as e:
            value = node.value if isinstance(node.value, str) else node.tag
            raise yaml.constructor.ConstructorError(  # (Python's advice on its digit limit is not for users)
                None, None, f"cannot read {value[:40]!r}: {str(e).split('; use')[0]}", node.start_mark) from None


def _where(data: bytes, offset: int) -> str:
    line, line_start = data.count(b"\n", 0, offset) + 1, data.rfind(b"\n", 0, offset) + 1
    return f"line {line}, column {offset - line_start + 1}"


def read_scenario_data(path: str | Path, what: str = "a scenario is a mapping of keys such as name, duration_s, topics") -> dict:
    """The scenario file (or a suite file: `what` it should be) as plain data, before validation:
    UTF-8 YAML within the limits above."""
    path = Path(path)
    try:
        if path.exists() and not path.is_file():
            raise ScenarioError(path, [("(file)", "not a regular file")])
        with path.open("rb") as fh:
            data = fh.read(MAX_SCENARIO_BYTES + 1)
    except OSError as e:
        raise ScenarioError(path, [("(file)", e.strerror or str(e))]) from None
    if len(data) > MAX_SCENARIO_BYTES:
        raise ScenarioError(path, [("(file)", f"larger than {MAX_SCENARIO_BYTES >> 20} MiB: not a scenario")])
    data = data.removeprefix(codecs.BOM_UTF8)  # some editors start UTF-8 files with one
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(path, [(_where(data, e.start), f"not UTF-8 text (byte 0x{data[e.start]:02x})")]) from None
    try:
        parsed = yaml.load(text, Loader=_ScenarioLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(yaml)"
        reason = e.problem if isinstance(e, _Refused) else f"not valid YAML: {e.problem or e}"
        raise ScenarioError(path, [(where, reason)]) from None
    except yaml.YAMLError as e:  # the reader: a control character, say
        where = _where(text.encode(), len(text[:e.position].encode())) if isinstance(e, yaml.reader.ReaderError) else "(yaml)"
        raise ScenarioError(path, [(where, f"not valid YAML: {getattr(e, 'reason', None) or e}")]) from None
    if not isinstance(parsed, dict):
        raise ScenarioError(path, [("(top level)", what)])
    return parsed


def resolve_client_config(data: dict, path: str | Path) -> dict:
    """``data`` with the ``${NAME}`` references of its ``cluster.client_config`` string values resolved from
    the environment (each value that used one is a secret from then on: runtime.secrets); a variable
    not set is bad input naming the file, the key and the variable. Done once, on the file's data."""
    from runtime import secrets

    cluster = data.get("cluster")
    if not isinstance(cluster, dict) or not isinstance(cluster.get("client_config"), dict):
        return data
    resolved, problems = secrets.resolve_config(cluster["client_config"])
    if problems:
        raise ScenarioError(path, [(f"cluster.client_config.{key}", reason) for key, reason in problems])
    return {**data, "cluster": {**cluster, "client_config": resolved}}


def client_config_file(path: str | Path) -> dict:
    """``--client-config FILE``: client settings in Java properties format (as Kafka's own tools take
    them), ``${NAME}`` resolved from the environment; bad input names the file, the line and the key."""
    from runtime import secrets

    settings, problems = secrets.read_properties(path)
    for key, value in settings.items():
        if key in HARNESS_CLIENT_SETTINGS:
            problems.append((key, "the harness sets this for each client"))
        if re.search(r"[\r\n\x00]", value):
            problems.append((key, "a value is one line (no line breaks)"))
    if problems:
        raise ScenarioError(path, problems)
    return settings


def load_scenario(path: str | Path, client_config: str | Path | None = None, backend: str | None = None) -> Scenario:
    """The scenario file, validated. ``client_config``: a properties file of client settings merged over
    ``cluster.client_config`` (`--client-config`); ``backend``: the cluster backend it runs on (`--backend`)."""
    return load_scenario_data(read_scenario_data(path), path, client_config, backend)


def redact_scenario_data(data: dict) -> dict:
    """Scenario data as a file the harness writes may hold it: secret settings of
    ``cluster.client_config`` written as values become ``***`` (``${NAME}`` references stay)."""
    from runtime import secrets

    cluster = data.get("cluster")
    if not isinstance(cluster, dict) or not isinstance(cluster.get("client_config"), dict):
        return data
    config = {k: secrets.MASK if isinstance(k, str) and secrets.is_secret(k, v)
              and secrets.ENV_REF.sub("", str(v)).strip() else v for k, v in cluster["client_config"].items()}
    return {**data, "cluster": {**cluster, "client_config": config}}


def load_scenario_data(data: dict, path: str | Path, client_config: str | Path | None = None,
                       backend: str | None = None) -> Scenario:
    """As load_scenario, from the file's data (read_scenario_data); problems are ``path``'s."""
    data = resolve_client_config(data, path)
    if backend or client_config is not None:
        cluster = dict(data.get("cluster") or {}) if isinstance(data.get("cluster", {}), dict) else data.get("cluster")
        if isinstance(cluster, dict):
            if backend:
                cluster["backend"] = backend
            if client_config is not None:
                extra = client_config_file(client_config)
                if cluster.get("backend", "local") != EXTERNAL:
                    raise ScenarioError(client_config, [("(file)", f"client settings are for a cluster the harness does "
                                                         f"not run (backend: external); {path} runs its own")])
                base = cluster.get("client_config") if isinstance(cluster.get("client_config"), dict) else {}
                cluster["client_config"] = {**base, **extra}
            data = {**data, "cluster": cluster}
    return scenario_from_data(data, path)


def scenario_from_data(data: dict, path: str | Path) -> Scenario:
    """A scenario from its (resolved) data; problems are reported as ``path``'s."""
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        problems = validation_problems(e)
        if len(problems) > MAX_PROBLEMS:
            problems = problems[:MAX_PROBLEMS] + [("…", f"{len(problems) - MAX_PROBLEMS} more problems")]
        raise ScenarioError(path, problems) from None


def redacted_scenario_text(path: str | Path) -> str:
    """The scenario file as written, but with no secret value: each secret setting of
    ``cluster.client_config`` written as a value (not only ``${NAME}`` references) becomes ``"***"``
    in place — comments, layout and every other byte stay — and any secret value the harness knows
    (runtime.secrets) is masked wherever else it appears. What a run directory keeps as scenario.yaml."""
    from runtime import secrets

    text = Path(path).read_bytes().removeprefix(codecs.BOM_UTF8).decode("utf-8")
    spans = []
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        root = None
    cluster = _mapping_value(root, "cluster")
    config = _mapping_value(cluster, "client_config")
    for key, value in (config.value if isinstance(config, yaml.MappingNode) else []):
        if isinstance(key, yaml.ScalarNode) and isinstance(value, yaml.ScalarNode) \
                and secrets.is_secret(str(key.value), value.value) \
                and secrets.ENV_REF.sub("", str(value.value)).strip():  # only ${NAME} references: kept
            spans.append((value.start_mark.index, value.end_mark.index))
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + f'"{secrets.MASK}"' + text[end:]
    return secrets.redact_text(text)


def _mapping_value(node, key: str):
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
