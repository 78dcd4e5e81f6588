"""The scenario as a whole: its sections, and what can only be checked across them.

Each section validates itself (cluster.py, workload.py, faults.py, checks.py, the load
profile in workloads/load/); here is what needs two of them at once — a topic the workload
names is declared, a generation's Kafka line is the cluster's, a fault finds its target,
a test hook's member is started — and what the run asks of the whole scenario: the member
slots and fault targets, the schedule, the broker settings the group's timing implies, the
same scenario isolated on a shared cluster or on another backend.
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Annotated, ClassVar

from pydantic import Field, TypeAdapter, ValidationError, model_validator

from faults import catalogue
from faults.base import COORDINATOR, DAY_S, MAX_MEMBER_PROCESSES, MAX_MEMBERS, MAX_MEMBERS_PER_HOST
from faults.capabilities import Capability
from faults.strict import Strict
from faults.topic_names import TOPIC_NAME_MAX, topic_set_problems
from harness.components import client_envs, versions
from harness.paths import longest_stamped_name
from harness.scenario import faults as fault_entries
from harness.scenario.checks import check_problems
from harness.scenario.cluster import GROUP_SIZE_LIMIT_DEFAULT, GROUP_SIZE_LIMITS, Cluster, Topic, group_size_needed
from harness.scenario.errors import validation_problems
from harness.scenario.expect import Expect, expect_check_problems
from harness.scenario.facts import fault_facts
from harness.scenario.faults import Fault, RandomFaults
from harness.scenario.kinds import FILE_KINDS, FileKind
from harness.scenario.lanes import MAX_OWN_LANES, LanePlan, member_number
from harness.scenario.workload import Workload, client_problem
from oracle.protocols import GENERATIONS
from runtime import secrets
from runtime.errors import ScenarioError
from workloads.load.profile import LoadProfile  # the load profile's own model


class Recovery(Strict):
    timeout_s: Annotated[float, Field(gt=0, le=DAY_S)] = 120
    stable_for_s: Annotated[float, Field(ge=0, le=3600)] = 3


Seed = Annotated[
    int, Field(ge=0, le=2**63 - 1, strict=True)
]  # also a suite's, a sweep's, `schedule --seed`; `true` is none


def seed_problem(seed: object) -> str | None:
    """Why ``seed`` is no scenario's seed (a command-line option's value), or None."""
    try:
        TypeAdapter(Seed).validate_python(seed)
    except ValidationError as e:
        return validation_problems(e)[0][1]
    return None


class Scenario(Strict):
    FILE_KIND: ClassVar[FileKind] = FILE_KINDS["scenario"]  # the keys that tell a scenario file from others

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
    # What the run must fail with for `suite` and the pytest plugin to pass it (harness/scenario/expect.py);
    # `run` judges as ever and says whether this one run met it.
    expect: Expect | None = None

    @model_validator(mode="after")
    def _references(self):
        problems = self._topic_problems() + self._generation_problems() + self._driver_problems()
        facts = fault_facts(self)  # once: it takes passes over the faults
        problems += fault_entries.written_problems(self, facts)
        if self.random_faults:
            problems += [f"random_faults.{p}" for p in fault_entries.random_problems(self, facts)]
        if self.load:
            problems += self._load_problems(facts.members)
        problems += self._test_hook_problems(list(facts.members))
        problems += self._scale_problems(facts.members)
        problems += self._group_size_problems(facts.members)
        problems += check_problems(self.checks)
        problems += expect_check_problems(self.expect, self.checks)
        for t in self.topics if not self.cluster.external else ():  # how many brokers it has is not ours to know
            if (t.replication_factor or 0) > self.cluster.brokers:
                problems.append(
                    f"topics.{t.name}.replication_factor: {t.replication_factor} exceeds the "
                    f"{self.cluster.brokers} brokers"
                )
        if problems:
            raise ValueError("\n".join(problems))  # one per line: a reason may itself contain "; "
        return self

    def _topic_problems(self) -> list[str]:
        """Topic names a run can stamp and Kafka takes; the workload's topics among them."""
        problems = []
        topic_names = [t.name for t in self.topics]
        longest = TOPIC_NAME_MAX - len(self.isolation_prefix(longest_stamped_name(self.run_name)))
        for i, name in enumerate(topic_names):
            if len(name) > longest:
                problems.append(
                    f"topics.{i}.name: {len(name)} characters; on a shared or external cluster a run "
                    f"names it rl-<run directory>-{{name}}, which Kafka allows only up to {longest}"
                )
        problems += [f"topics.{i}.name: {reason}" for i, reason in topic_set_problems(topic_names)]
        for i, name in enumerate(self.workload.topics or []):
            if name not in topic_names:
                problems.append(f"workload.topics.{i}: topic {name!r} is not declared under topics")
        for i, entry in enumerate(self.workload.subscriptions or []):
            problems += [
                f"workload.subscriptions.{i}.topics.{j}: topic {name!r} is not declared under topics"
                for j, name in enumerate(entry.topics)
                if name not in topic_names
            ]
        problems += self._named_subscription_problems()
        if self.workload.producer.topic and self.workload.producer.topic not in topic_names:
            problems.append(
                f"workload.producer.topic: topic {self.workload.producer.topic!r} is not declared under topics"
            )
        return problems

    def _named_subscription_problems(self) -> list[str]:
        """A fault that starts members may name the subscription they get: one of the workload's."""
        names = [e.name for e in self.workload.subscriptions or ()]
        problems = []
        for i, f in enumerate(self.faults):
            named = getattr(f, "subscription", None)  # the kinds that start members have it
            if named is None or named in names:
                continue
            problems.append(
                f"faults.{i}.subscription: {named!r} is not one of workload.subscriptions ({', '.join(names)})"
                if names
                else f"faults.{i}.subscription: the workload has no subscriptions (workload.subscriptions) to name"
            )
        return problems

    def _generation_problems(self) -> list[str]:
        """The generation against the cluster: its Kafka line, and what an external cluster cannot give it."""
        problems = []
        generation, kafka = self.workload.generation, self.cluster.kafka
        # What the generation needs of the brokers (ZooKeeper mode, the consumer protocol), against
        # what this release in this metadata mode gives: the release catalogue decides.
        problem = self.cluster.release.need_problem(generation.needs, self.cluster.metadata)
        if problem:
            fits = versions.release_meeting(generation.needs)
            problems.append(
                f"workload.protocol: {generation.kafka_why}; cluster.kafka {kafka} "
                f"(metadata: {self.cluster.metadata}): {problem}" + (f" (e.g. cluster.kafka: {fits!r})" if fits else "")
            )
        # KIP-848's ConsumerGroupHeartbeat: the members' client speaks one version (client_versions.py), the
        # brokers answer one (3.7/3.8's early access v0, 4.x v1). Apart, a member never finds its coordinator
        # ("ConsumerGroupHeartbeatRequest not supported by broker"): the run could only time out.
        if not problem and generation.needs == "consumer-protocol":
            problems += self._heartbeat_problems()
        if self.cluster.external:
            if generation.group_home != "kafka":
                problems.append(
                    f"workload.protocol: {generation.kafka_why}, which the harness runs itself: "
                    f"not on an external cluster"
                )
            if not self.workload.driver_class.takes_client_config:
                problems.append(
                    f"workload.driver: on an external cluster members use a driver given cluster.client_config "
                    f"(librdkafka): the {self.workload.driver} driver reads its settings from a file, which "
                    f"would hold the secret ones"
                )
            # What the harness would set on brokers it runs for the group's timing (broker_config()).
            timing = {"session_timeout_ms", "heartbeat_interval_ms"} & self.workload.model_fields_set
            if self.workload.generation.broker_timing and timing:
                problems += [
                    f"workload.{key}: KIP-848 groups take their timing from the brokers "
                    f"(group.consumer.*), which on an external cluster are not the scenario's"
                    for key in sorted(timing)
                ]
            elif self.workload.session_timeout_ms < 6000:
                problems.append(
                    "workload.session_timeout_ms: below 6000 the brokers must allow it "
                    "(group.min.session.timeout.ms), which on an external cluster is not the scenario's"
                )
        return problems

    def _heartbeat_problems(self) -> list[str]:
        """The members' client against the brokers' ConsumerGroupHeartbeat (client_problem's rule, the
        one every client and generation a fault moves members to is checked by too)."""
        w = self.workload
        requirement, distribution = w.client_requirement, w.driver_class.client_distribution
        client = requirement or (client_envs.default_client(distribution) if distribution else None)
        if client is None:
            return []
        problem = client_problem(client, w.driver_class, w.driver, w.generation, self.cluster.release)
        if not problem:
            return []
        if requirement:
            return [f"workload.client: {problem}"]
        # (a default client's other problems cannot be: only the brokers' answer is left)
        return [f"workload.protocol: the members' default client, {client},{problem.removeprefix(str(client))}"]

    def _driver_problems(self) -> list[str]:
        """What the members' driver says it cannot do (Kafka's VerifiableConsumer: one topic by name,
        commit after processing)."""
        driver, problems = self.workload.driver_class, []
        name = f"the {self.workload.driver} driver" + (" (VerifiableConsumer)" if driver.needs_kafka_tools else "")
        if driver.one_topic_by_name and (len(self.consumed_topics) != 1 or self.workload.topic_pattern):
            problems.append(f"workload.driver: {name} consumes exactly one topic by name")
        if not driver.commits_before_processing and self.workload.commit == "before-processing":
            problems.append(f"workload.commit: {name} cannot commit before processing")
        return problems

    def _load_problems(self, members: tuple[str, ...]) -> list[str]:
        """A profile that fits the run and the group's bound; no fault that would fight it over members."""
        start, load, problems = self.workload.consumers, self.load, []
        if load.peak(start) > MAX_MEMBERS:
            problems.append(
                f"load.stages: the profile reaches {load.peak(start)} members; a group has at most {MAX_MEMBERS}"
            )
        if load.length_s(start) > self.duration_s:
            problems.append(
                f"load.stages: the profile lasts {load.length_s(start):g}s, longer than duration_s "
                f"({self.duration_s:g}s)"
            )
        why = (
            "the load profile decides the group's members; faults may act on the cluster and the producer, "
            "and on a member the profile never stops without stopping or starting it (a poll stall, a network fault)"
        )
        problems += [
            f"faults.{i}.kind: {f.kind} on members: {why}"
            for i, f in enumerate(self.faults)
            if f.acts_on_members(members) and not self._spares_the_profile(f, load.trough(start))
        ]
        if load.member_hosts == "on-workers":
            problems += self._on_workers_problems()
        if self.random_faults and (not self.random_faults.targets or set(self.random_faults.targets) & set(members)):
            problems.append(f"random_faults.targets: members (the default): {why}")
        return problems

    @staticmethod
    def _spares_the_profile(fault, trough: int) -> bool:
        """A fault on one member that neither stops nor starts it (its process goes on), a member
        below the profile's lowest count: the profile never stops it (the newest leave first)."""
        target = getattr(fault, "target", None)
        return (
            fault.effects.down is None
            and isinstance(target, str)
            and re.fullmatch(r"consumer-\d+", target) is not None
            and member_number(target) <= trough
        )

    def _on_workers_problems(self) -> list[str]:
        """Members in a member host beside each Locust worker (runtime/host_link.py): hosted members,
        on the harness's own client, their settings sent over the link."""
        w, load, problems = self.workload, self.load, []
        if not load.workers:
            problems.append("load.member_hosts: on-workers needs Locust's workers (load.workers: 1 or more)")
        if not w.driver_class.hosts_many:
            problems.append(
                f"load.member_hosts: on-workers hosts the members; the {w.driver} driver runs one member per process"
            )
        if w.librdkafka.test_hooks:
            problems.append("workload.librdkafka.test_hooks: a test hook acts on a member's whole process")
        if w.members_per_host > 1:
            problems.append(
                "workload.members_per_host: with load.member_hosts: on-workers each worker's host takes its "
                "share of the members, by turns: leave it out"
            )
        share = -(-load.peak(w.consumers) // max(load.workers, 1))
        if share > MAX_MEMBERS_PER_HOST:
            problems.append(
                f"load.workers: the profile's {load.peak(w.consumers)} members make {share} in each worker's host; "
                f"a host takes at most {MAX_MEMBERS_PER_HOST}"
            )
        if w.client_requirement is not None and client_envs.needs_env(w.client_requirement):
            problems.append(
                f"workload.client: a member host on a worker runs the worker's own confluent-kafka, "
                f"not {w.client_requirement}"
            )
        if secrets.split_client_config(dict(self.cluster.client_config))[1]:
            problems.append(
                "cluster.client_config: secret settings would cross the network to the workers' member hosts "
                "(load.member_hosts: on-workers)"
            )
        return problems

    def _scale_problems(self, members: tuple[str, ...]) -> list[str]:
        """What a group this big needs: member hosts past MAX_MEMBER_PROCESSES processes, shared lanes
        past MAX_OWN_LANES lanes (harness/scenario/lanes.py), a driver that can be hosted."""
        w, problems = self.workload, []
        if w.hosted and not w.driver_class.hosts_many:
            problems.append(
                f"workload.members_per_host: the {w.driver} driver runs one member per process "
                f"(only a driver whose members can share a process may be hosted)"
            )
        if w.hosted and w.librdkafka.test_hooks:
            problems.append(
                "workload.librdkafka.test_hooks: a test hook acts on a member's whole process; "
                "hosted members share one (members_per_host: 1)"
            )
        if not w.hosted and len(members) > MAX_MEMBER_PROCESSES:
            problems.append(
                f"workload.members_per_host: {len(members)} members each in a process of its own; at most "
                f"{MAX_MEMBER_PROCESSES} (~30 MB each): host them (members_per_host: 2 or more)"
            )
        plan = self.lane_plan
        if len(plan.own) > MAX_OWN_LANES:
            why = "members" if w.lanes == "per-member" else "members named by faults"
            problems.append(
                f"workload.lanes: {len(plan.own)} {why} with a lane of their own; at most {MAX_OWN_LANES} "
                f"(each is a listener on every broker)"
                + (": lanes: on-demand shares them" if w.lanes == "per-member" else "")
            )
        if w.lanes == "on-demand" and self.needs(Capability.MESSAGE_LANES):
            problems.append(
                "workload.lanes: message faults need every member on a lane of its own (per-member): "
                "the message proxy tells a lane's member by its lane"
            )
        return problems

    def _group_size_problems(self, members: tuple[str, ...]) -> list[str]:
        """A broker bound on the group's size (GROUP_SIZE_LIMITS) the scenario sets is a whole
        number, and its group cannot outgrow it: its members would be refused (GROUP_MAX_SIZE_REACHED)
        by the scenario's own setting, not by anything the run meant to test."""
        problems = []
        used = self._group_protocols()
        for protocol, key in GROUP_SIZE_LIMITS.items():
            if key not in self.cluster.broker_config:
                continue
            limit = _whole(self.cluster.broker_config[key])
            if limit is None or limit < 1:
                problems.append(
                    f"cluster.broker_config.{key}: {self.cluster.broker_config[key]!r} is not a whole number >= 1"
                )
            elif protocol in used and (needed := group_size_needed(len(members), used[protocol])) > limit:
                why = ", and a static member that restarts is counted before it replaces itself" * used[protocol]
                problems.append(
                    f"cluster.broker_config.{key}: {limit}, but the group may have {len(members)} members "
                    f"({protocol} protocol{why}): raise it to {needed} or more"
                )
        return problems

    def _group_protocols(self) -> dict[str, bool]:
        """The group protocols the run's members speak to Kafka's coordinator (a migration adds
        one), each with whether any of its members is static (KIP-345)."""
        w = self.workload
        generations = [w.generation, *(GENERATIONS[p] for f in self.faults for p in f.member_protocols())]
        used: dict[str, bool] = {}
        for g in generations:
            if g.group_home == "kafka" and g.group_protocol:
                used[g.group_protocol] = used.get(g.group_protocol, False) or g.static_membership
        return used

    def group_size_limits(self) -> dict[str, int] | None:
        """The brokers' bounds on the group's size in effect (run_started.group_settings): each of
        GROUP_SIZE_LIMITS as cluster.broker_config sets it, else Kafka's default. None on someone
        else's brokers (their settings are not ours to know)."""
        if self.cluster.external:
            return None
        return {
            key: _whole(self.cluster.broker_config.get(key, GROUP_SIZE_LIMIT_DEFAULT)) or GROUP_SIZE_LIMIT_DEFAULT
            for key in GROUP_SIZE_LIMITS.values()
        }

    @cached_property
    def lane_plan(self) -> LanePlan:
        """Which client lane each member slot rides (workload.lanes)."""
        slots = self.member_slots()
        if self.workload.lanes == "per-member":
            return LanePlan.per_member(slots)
        named = {f.get("target") for f in self.schedule()}
        return LanePlan.on_demand(slots, {m for m in slots if m in named})

    def _test_hook_problems(self, members: list[str]) -> list[str]:
        """A test hook names a member the run starts and, to read, a partition that exists."""
        hooks, problems, where = self.workload.librdkafka.test_hooks, [], "workload.librdkafka.test_hooks"
        for key in ("consume_unassigned", "sigterm_after_join"):
            hook = getattr(hooks, key, None) if hooks else None
            if hook and hook.member not in members:
                problems.append(
                    f"{where}.{key}.member: {hook.member} is not a member this run starts ({', '.join(members)})"
                )
        reader = hooks.consume_unassigned if hooks else None
        if reader:
            topic = reader.topic or self.produced_topic
            declared = {t.name: t.partitions for t in self.topics}
            if topic not in declared:
                problems.append(f"{where}.consume_unassigned.topic: topic {topic!r} is not declared under topics")
            elif reader.partition >= declared[topic]:
                problems.append(
                    f"{where}.consume_unassigned.partition: {topic} has {declared[topic]} "
                    f"partitions (0..{declared[topic] - 1})"
                )
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
        name = lambda topic: topic and prefix + topic
        update = {
            "group": prefix + w.group,
            "topics": [name(t) for t in w.topics] if w.topics else w.topics,
            "topic_pattern": "^" + re.escape(prefix) + w.topic_pattern[1:] if w.topic_pattern else None,
            "subscriptions": [e.model_copy(update={"topics": [name(t) for t in e.topics]}) for e in w.subscriptions]
            if w.subscriptions
            else w.subscriptions,
            "producer": w.producer.model_copy(update={"topic": name(w.producer.topic)}),
        }
        hooks = w.librdkafka.test_hooks
        if hooks and hooks.consume_unassigned and hooks.consume_unassigned.topic:
            # Only then: a copy's update counts as written, and another family's section is refused.
            reader = hooks.consume_unassigned.model_copy(update={"topic": name(hooks.consume_unassigned.topic)})
            update["librdkafka"] = w.librdkafka.model_copy(
                update={"test_hooks": hooks.model_copy(update={"consume_unassigned": reader})}
            )
        workload = w.model_copy(update=update)
        return self.model_copy(
            update={"topics": [t.model_copy(update={"name": name(t.name)}) for t in self.topics], "workload": workload}
        )

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

    def needs(self, capability: Capability) -> bool:
        """Whether a fault entry, or a kind ``random_faults`` may draw, needs ``capability`` of the cluster."""
        kinds = [catalogue.SPECS[f.kind] for f in self.faults]
        kinds += [catalogue.SPECS[k] for k in self.random_faults.kinds] if self.random_faults else []
        return any(capability in spec.needs for spec in kinds)

    def schedule(self) -> list[dict]:
        """Every fault of the run in time order, the seeded random ones expanded, with ids."""
        return fault_entries.schedule(self)

    def subscribes(self, topic: str) -> bool:
        """Whether the group consumes ``topic`` (listed, or matched by the pattern)."""
        if self.workload.topic_pattern:
            return re.match(self.workload.topic_pattern, topic) is not None
        return topic in self.consumed_topics

    @property
    def consumed_topics(self) -> list[str]:
        """The group's topics: every member's, or with subscriptions any member's (declared order)."""
        if self.workload.subscriptions:
            subscribed = {t for e in self.workload.subscriptions for t in e.topics}
            return [t.name for t in self.topics if t.name in subscribed]
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
        # What faults need of the brokers (a protocol migration's policy), and the generations they
        # start members on: KIP-848's timing is the brokers' as soon as any member runs it.
        for f in self.faults:
            implied.update(f.broker_config())
        generations = [w.generation, *(GENERATIONS[p] for f in self.faults for p in f.member_protocols())]
        if any(g.needs == "consumer-protocol" for g in generations):  # 3.7/3.8's early access switched on
            implied.update(self.cluster.release.consumer_protocol_config())
        if any(g.broker_timing for g in generations):
            # The minimums are 45 s and 5 s: lowered as far as the scenario's timing needs.
            implied.update(
                {
                    "group.consumer.session.timeout.ms": w.session_timeout_ms,
                    "group.consumer.min.session.timeout.ms": min(45_000, w.session_timeout_ms),
                    "group.consumer.heartbeat.interval.ms": w.heartbeat_interval_ms,
                    "group.consumer.min.heartbeat.interval.ms": min(5_000, w.heartbeat_interval_ms),
                }
            )
        return {**implied, **self.cluster.broker_config}


def _whole(value: object) -> int | None:
    """A broker setting's value as a whole number (YAML gives 1000 or "1000"), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\d{1,10}", value.strip()):
        return int(value.strip())
    return None
