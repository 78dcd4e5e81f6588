"""The run's clients as services: the producer, the consumer group's members, the observer.

Each is a Python child (a ``workloads`` module) started with a spec file in the run
directory (``workload/<name>-<incarnation>.json``) and writing to the shared history
itself. Member ``consumer-k`` always uses client lane k: its connections pass its own
proxies, so a network fault can cut exactly that member off. A member started again
is a new incarnation of the same slot: same name and lane (and, with static
membership, same group.instance.id), new process, new member id.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

from faults.base import MemberChanges
from harness.cluster.backend import ClusterBackend
from harness.cluster.config import JVM_OPTS
from harness.cluster.ports import free_port
from harness.components import client_envs
from harness.scenario import Scenario
from harness.scenario.lanes import member_number
from harness.scenario.workload import client_problem
from harness.supervision.processes import Supervisor
from harness.supervision.service import LocalProcess, StopTier
from oracle.protocols import GENERATIONS, Generation, driver_plugin
from runtime import secrets
from runtime.history import HistoryWriter
from runtime.host_link import HostLinkServer
from workloads.client_versions import ClientRequirement, parse_client
from workloads.consumer import LibrdkafkaSettings
from workloads.coordinated import CoordinatedSettings
from workloads.driver import MemberSpec, driver_of, protocol_fields
from workloads.load import LoadSpec
from workloads.load import member_hosts as load_hosts
from workloads.observer import ObserverSpec, ObserverStatus
from workloads.producer import ProducerSpec
from workloads.verifiable import JavaSettings
from workloads.zk_settings import ZkEagerMemberSettings

LEAVE_TIMEOUT_S = 30.0  # a member told to leave by the load profile is killed if it has not exited by then


def run_client(scenario: Scenario) -> ClientRequirement | None:
    """The client release the scenario's members run: ``workload.client``, else the default of the
    distribution their driver takes (the pinned confluent-kafka; for the java driver, the Kafka tools of
    the cluster's release). None for a driver that takes none (it runs on the harness's own)."""
    w = scenario.workload
    if w.client_requirement is not None:
        return w.client_requirement
    distribution = w.driver_class.client_distribution
    if distribution is None:
        return None
    return client_envs.default_client(distribution, scenario.cluster.release.version)


class Client(LocalProcess):
    """A ``workloads`` module run as ``python -m <module> <spec file>``; the spec is made anew
    at each start (a new incarnation may differ: a member's incarnation number)."""

    tier = StopTier.CLIENTS
    module: str

    def __init__(self, name: str, supervisor: Supervisor, run_dir: Path):
        super().__init__(name, supervisor, run_dir / "logs")
        self.run_dir = run_dir
        self.incarnation = 0

    def spec(self):
        """The dataclass the module reads (workloads.*Spec)."""
        raise NotImplementedError

    @property
    def spec_file(self) -> Path:
        return self.run_dir / "workload" / f"{self.name}-{max(self.incarnation, 1)}.json"

    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, str(self.spec_file)]

    def start(self) -> None:
        self.incarnation += 1
        self.write_spec()
        super().start()

    def write_spec(self) -> None:
        """This incarnation's spec file; its secret settings go to its environment instead."""
        spec = asdict(self.spec())
        # Secret client settings never reach the spec file: `***` there, their values in the environment.
        settings = spec.get("client_settings") or {}
        self._environment = secrets.child_env(settings)
        if settings:
            spec["client_settings"] = secrets.split_client_config(settings)[0]
        self.spec_file.write_text(json.dumps(secrets.redact(spec), indent=2))

    def environment(self) -> dict | None:
        return getattr(self, "_environment", None) or None


class Producer(Client):
    role, module = "producer", "workloads.producer"

    def __init__(self, name: str, supervisor: Supervisor, run_dir: Path, workload: WorkloadProcesses):
        super().__init__(name, supervisor, run_dir)
        self.workload = workload

    @property
    def spec_file(self) -> Path:
        return self.run_dir / "workload" / f"{self.name}-1.json"  # one spec, whatever the incarnation

    def spec(self) -> ProducerSpec:
        s = self.workload.scenario
        topic = next(t for t in s.topics if t.name == s.produced_topic)
        return ProducerSpec(
            history=self.workload.history,
            bootstrap_servers=self.workload.cluster.bootstrap_servers,
            topic=topic.name,
            partitions=topic.partitions,
            rate=s.workload.producer.rate,
            value_bytes=s.workload.producer.value_bytes,
            linger_ms=s.workload.producer.linger_ms,
            client_settings=dict(s.cluster.client_config),
            incarnation=self.incarnation,
        )


class Member(Client):
    """One slot of the consumer group, run by the scenario's driver (oracle.protocols)."""

    role = "consumer"

    def __init__(
        self, name: str, supervisor: Supervisor, run_dir: Path, workload: WorkloadProcesses, subscription=None
    ):
        super().__init__(name, supervisor, run_dir)
        self.workload = workload
        self.number = member_number(name)
        self.lane = workload.scenario.lane_plan.lane_of(name)  # its client lane (harness/scenario/lanes.py)
        # Its workload.subscriptions entry (None: the group's topics), the same for every incarnation.
        self.subscription = workload.scenario.workload.subscription_of(self.number, subscription)
        self.changes = MemberChanges()  # what its incarnations run differently from the workload's members

    def change(self, changes: MemberChanges) -> None:
        """Its next incarnations run these changes (faults' ``Targets.restart``), on top of earlier ones.
        ValueError, with the reason, for a client release its driver cannot run."""
        changed = self.changes.then(changes)
        if changes.client:
            w = self.workload.scenario.workload
            generation = GENERATIONS[changed.protocol] if changed.protocol else w.generation
            module = generation.drivers[w.driver]
            problem = client_problem(parse_client(changes.client), driver_of(module), w.driver, generation)
            if problem:
                raise ValueError(f"{self.name}: {problem}")
        self.changes = changed

    @property
    def generation(self) -> Generation:
        """The protocol generation it runs: the workload's, unless a fault changed it."""
        w = self.workload.scenario.workload
        return GENERATIONS[self.changes.protocol] if self.changes.protocol else w.generation

    @property
    def assignor(self) -> str:
        w = self.workload.scenario.workload
        if self.changes.assignor:
            return self.changes.assignor
        return w.effective_assignor if self.generation is w.generation else self.generation.assignors[0]

    @property
    def module(self) -> str:
        return self.generation.drivers[self.workload.scenario.workload.driver]

    @property
    def client(self) -> ClientRequirement | None:
        """The client release its next incarnation runs on: a fault's change (a rolling client
        upgrade), else the workload's."""
        return parse_client(self.changes.client) if self.changes.client else run_client(self.workload.scenario)

    def command(self) -> list[str]:
        """Its driver, in the interpreter of its client release (client_envs.member_python)."""
        return [client_envs.member_python(self.client, self.workload.report), "-m", self.module, str(self.spec_file)]

    def environment(self) -> dict | None:
        return {**(super().environment() or {}), **client_envs.member_environment(self.client)} or None

    @property
    def control_file(self) -> Path:
        """The harness's commands to it (poll stalls), announced by SIGUSR1."""
        return self.run_dir / "control" / f"{self.name}.json"

    def spec(self) -> MemberSpec:
        s, cluster, lane = self.workload.scenario, self.workload.cluster, self.lane
        w = s.workload
        return MemberSpec(
            member=self.name,
            incarnation=self.incarnation,
            history=self.workload.history,
            bootstrap_servers=cluster.lane_bootstrap_servers(lane),
            group=w.group,
            topics=list(self.subscription.topics)
            if self.subscription
            else [w.topic_pattern]
            if w.topic_pattern
            else s.consumed_topics,
            subscription=self.subscription.name if self.subscription else None,
            client_rack=w.client_rack_of(self.number),
            **protocol_fields(self.generation),
            assignor=self.assignor,
            commit=w.commit,
            processing_ms=w.processing_ms,
            session_timeout_ms=self.changes.session_timeout_ms or w.session_timeout_ms,
            heartbeat_interval_ms=w.heartbeat_interval_ms,
            max_poll_interval_ms=self.changes.max_poll_interval_ms or w.max_poll_interval_ms,
            auto_commit_interval_ms=w.auto_commit_interval_ms,
            control_file=str(self.control_file),
            metadata_refresh_ms=w.metadata_refresh_ms,
            client_settings=dict(s.cluster.client_config),
            settings=self.settings(),
            client=str(self.client) if self.client else None,
        )

    def settings(self):
        """The driver family's own part of the spec (``Settings`` of the driver it runs)."""
        s, cluster = self.workload.scenario, self.workload.cluster
        w = s.workload
        kind = driver_of(self.module).Settings
        if kind is JavaSettings:
            release = self.client.version if self.client else s.cluster.kafka
            return JavaSettings(
                kafka_line=release, kafka_tools=self.workload.java_tools(self.client), jvm_options=JVM_OPTS
            )
        if kind is ZkEagerMemberSettings:
            return ZkEagerMemberSettings(
                zookeeper_connect=cluster.network.lane_zookeeper_connect(self.lane),
                session_file=str(self.run_dir / "control" / f"{self.name}.zk-session.json"),
                rebalance=w.zk_eager.model_dump(),
            )
        if kind is CoordinatedSettings:
            return CoordinatedSettings(coordinators=cluster.network.lane_coordinators(self.lane))
        if kind is LibrdkafkaSettings:
            return LibrdkafkaSettings(
                processing=w.librdkafka.processing,
                revoke_hold_ms=w.librdkafka.revoke_hold_ms,
                test_hooks=self.workload.test_hooks_of(self.name),
            )
        if driver_plugin(w.driver):  # a plugin's driver has no workload section (yet): its settings' defaults
            return kind()
        raise NotImplementedError(f"{self.module}: the harness does not fill in {kind.__name__}")

    def exit_unrecorded(self) -> bool:
        """Its last process has exited but its process_exited is not written yet: the slot is not free."""
        return bool(self.process and self.process.registration.exists())

    def tell(self, command: dict) -> None:
        """Tell it what to do: the command file, then SIGUSR1 to look at it."""
        tmp = self.control_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(command))
        os.replace(tmp, self.control_file)
        os.kill(self.pid, signal.SIGUSR1)


class Observer(Client):
    """The run's witness of the group (workloads.observer): its status file tells the run
    when the group formed, is stable and has drained. It may give up (see there); the run
    starts it again."""

    role, module = "observer", "workloads.observer"

    def __init__(self, name: str, supervisor: Supervisor, run_dir: Path, spec: ObserverSpec):
        super().__init__(name, supervisor, run_dir)
        self._spec = spec
        self.status = ObserverStatus(spec.status_file)

    @property
    def spec_file(self) -> Path:
        return self.run_dir / "workload" / "observer.json"

    def spec(self) -> ObserverSpec:
        return replace(self._spec, incarnation=self.incarnation)


class LoadDriver(Client):
    """Locust running the scenario's load profile (workloads/load/): its user count is the member
    count the run follows (``members_wanted``), its CSV files go to ``load/locust_*.csv``. With
    ``load.workers``, this is Locust's master (bound to 127.0.0.1) and LoadWorkers connect to it."""

    role = "load"

    def __init__(self, name: str, supervisor: Supervisor, run_dir: Path, workload: WorkloadProcesses):
        super().__init__(name, supervisor, run_dir)
        self.workload = workload
        self.master_port = free_port() if workload.scenario.load.workers else None
        (run_dir / "load").mkdir(exist_ok=True)

    @property
    def spec_file(self) -> Path:
        return self.run_dir / "workload" / "load.json"

    @property
    def control_file(self) -> Path:
        return self.run_dir / "control" / "load.json"

    @property
    def csv_prefix(self) -> Path:
        return self.run_dir / "load" / "locust"

    def spec(self) -> LoadSpec:
        s = self.workload.scenario
        return LoadSpec(
            history=self.workload.history,
            control_file=str(self.control_file),
            profile=s.load.model_dump(),
            initial_members=s.workload.consumers,
            protocol=s.workload.protocol,
            link=self.workload.host_link.address if self.workload.host_link else None,
            host_driver=s.workload.generation.drivers[s.workload.driver] if self.workload.host_link else None,
        )

    def locust(self, *options: str, spec: bool = True) -> list[str]:
        """Locust's command line; ``spec``: with the run's LoadSpec (a worker with a member host has none)."""
        locustfile = importlib.util.find_spec("workloads.load.locustfile").origin  # found, not imported: gevent
        return [
            sys.executable,
            "-m",
            "locust",
            "-f",
            locustfile,
            *(["--lab-spec", str(self.spec_file)] if spec else []),
            *options,
            "--loglevel",
            "INFO",
        ]

    def command(self) -> list[str]:
        load = self.workload.scenario.load
        web = (
            ["--autostart", "--web-host", "127.0.0.1", "--web-port", str(load.web_port)]
            if load.web_port
            else ["--headless"]
        )
        master = (
            [
                "--master",
                "--master-bind-host",
                "127.0.0.1",
                "--master-bind-port",
                str(self.master_port),
                "--expect-workers",
                str(load.workers),
            ]
            if load.workers
            else []
        )
        return self.locust(
            *master, *web, "--csv", str(self.csv_prefix), "--csv-full-history", "--exit-code-on-error", "0"
        )

    def members_wanted(self) -> int | None:
        """The member count Locust last wrote, or None before it wrote one."""
        return self._said().get("members")

    def profile_over(self) -> bool:
        """Locust ran the whole profile (its clock starts when Locust does, after the warm-up)."""
        return bool(self._said().get("profile_over"))

    def _said(self) -> dict:
        try:
            said = json.loads(self.control_file.read_text())
            return {"members": int(said["members"]), "profile_over": bool(said.get("profile_over"))}
        except (OSError, ValueError, KeyError, TypeError):
            return {}


class LoadWorker(Client):
    """One of Locust's workers in a distributed load run, connected to the master on 127.0.0.1. With
    ``load.member_hosts: on-workers`` it is given no file of the run: its master tells it where the
    host link is, and it starts a member host (workloads/load/member_hosts.py)."""

    role = "load"

    def __init__(self, name: str, supervisor: Supervisor, run_dir: Path, master: LoadDriver):
        super().__init__(name, supervisor, run_dir)
        self.master = master

    @property
    def spec_file(self) -> Path:
        return self.master.spec_file

    def spec(self) -> LoadSpec:
        return self.master.spec()

    def command(self) -> list[str]:
        return self.master.locust(
            "--worker",
            "--master-host",
            "127.0.0.1",
            "--master-port",
            str(self.master.master_port),
            spec=not self.master.workload.on_workers,
        )


class WorkloadProcesses:
    """The scenario's producer and members: which run, which start next, what they are told."""

    service_kinds = (Producer, Member, Observer)

    def __init__(
        self,
        scenario: Scenario,
        run_dir: Path,
        cluster: ClusterBackend,
        supervisor: Supervisor,
        report: Callable[[str], None] = lambda _m: None,
        history_writer: HistoryWriter | None = None,
    ):
        self.scenario = scenario
        self.report = report  # progress of what a start installs (a client release's first use)
        self.history_writer = history_writer  # the harness's own: a remote host's process events, its relayed ones
        self.host_link: HostLinkServer | None = None  # load.member_hosts on-workers: where their hosts connect
        self.run_dir = run_dir
        self.cluster = cluster
        self.supervisor = supervisor
        self.services: dict[str, Producer | Member | LoadDriver | LoadWorker] = {}
        self._leaving: dict[str, float] = {}  # members told to leave that have not exited yet, and since when
        self._java_tools: dict[ClientRequirement, str | None] = {}
        for sub in ("workload", "control"):
            (run_dir / sub).mkdir(exist_ok=True)

    @property
    def history(self) -> str:
        return str(self.run_dir / "history.jsonl")

    @property
    def producer(self) -> Producer:
        if "producer" not in self.services:
            self.services["producer"] = Producer("producer", self.supervisor, self.run_dir, self)
        return self.services["producer"]

    @property
    def on_workers(self) -> bool:
        """The members live in member hosts on Locust's workers (load.member_hosts: on-workers)."""
        return bool(self.scenario.load and self.scenario.load.member_hosts == "on-workers")

    @property
    def hosted(self) -> bool:
        return self.scenario.workload.hosted or self.on_workers

    def host_of(self, member: str) -> str:
        """The member host of ``member``: on workers, by turns (consumer-1 on the first worker's host,
        consumer-2 on the second's, …), so a group of any size has members from every worker."""
        if self.on_workers:
            return load_hosts.host_name((member_number(member) - 1) % self.scenario.load.workers)
        return self.scenario.workload.host_of(member)

    def member(self, name: str, subscription: str | None = None) -> Member:
        if name not in self.services:
            kind = Member
            if self.hosted:
                from harness.run.member_hosts import HostedMember as kind  # (a module built on this one)
            self.services[name] = member = kind(name, self.supervisor, self.run_dir, self, subscription)
            if member.subscription:
                self._tell_observer_subscriptions()
        return self.services[name]

    def member_host(self, name: str):
        """The member host ``name`` (harness/run/member_hosts.py), made on first use, started by its first member."""
        if name not in self.services and self.on_workers:
            from harness.run.remote_hosts import RemoteHost  # (a module built on this one)

            self.services[name] = RemoteHost(name, self, self.history_writer)
        elif name not in self.services:
            from harness.run.member_hosts import MemberHost  # (a module built on this one)

            self.services[name] = MemberHost(name, self.supervisor, self.run_dir, self)
        return self.services[name]

    def java_tools(self, client: ClientRequirement | None) -> str | None:
        """The java driver's classpath: Kafka's tools of the client's release. `run` checked they are
        installed; if not, the member reports it in the history (NOT_INSTALLED)."""
        if client is None:
            return None
        if client not in self._java_tools:
            self._java_tools[client] = client_envs.java_tools(client)
        return self._java_tools[client]

    def test_hooks_of(self, name: str) -> dict | None:
        """The scenario's test-only switches aimed at this member (workload.librdkafka.test_hooks), or None."""
        hooks = self.scenario.workload.librdkafka.test_hooks
        mine = {}
        if hooks and hooks.consume_unassigned and hooks.consume_unassigned.member == name:
            hook = hooks.consume_unassigned
            mine["consume_unassigned"] = {
                "topic": hook.topic or self.scenario.produced_topic,
                "partition": hook.partition,
            }
        if hooks and hooks.sigterm_after_join and hooks.sigterm_after_join.member == name:
            mine["sigterm_after_join"] = {"join": hooks.sigterm_after_join.join}
        return mine or None

    @property
    def subscriptions_file(self) -> Path:
        """Member name -> its topics, for the observer (workloads.observer.ObserverSpec.subscriptions_file)."""
        return self.run_dir / "control" / "subscriptions.json"

    def _tell_observer_subscriptions(self) -> None:
        said = {n: list(m.subscription.topics) for n, m in self.services.items() if isinstance(m, Member)}
        tmp = self.subscriptions_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(said))
        os.replace(tmp, self.subscriptions_file)  # the observer never reads half of it

    def start_all(self) -> None:
        self.producer.start()
        w = self.scenario.workload
        if self.hosted:  # every host at once: each takes a second or two to import its client
            for host in dict.fromkeys(self.host_of(m) for m in w.member_names()):
                self.member_host(host).start()
        for name in self.scenario.workload.member_names():
            self.member(name).start()

    # --- churn -----------------------------------------------------------------------

    def running_consumers(self) -> list[str]:
        names = [n for n, s in self.services.items() if isinstance(s, Member) and s.running()]
        return sorted(names, key=lambda n: self.services[n].number)

    def members_staying(self) -> list[str]:
        """The members running and not on their way out: the group at rest has every one of them."""
        return [n for n in self.running_consumers() if n not in self._leaving]

    def start_new(self, count: int, subscription: str | None = None) -> list[str]:
        """``count`` new member slots, started back to back (a join storm), with the
        workload.subscriptions entry named (default: Workload.subscription_of's turn)."""
        first = max((s.number for s in self.services.values() if isinstance(s, Member)), default=0) + 1
        names = [f"consumer-{i}" for i in range(first, first + count)]
        for name in names:
            self.member(name, subscription).start()
        return names

    @property
    def load(self) -> LoadDriver:
        if "load" not in self.services:
            self.services["load"] = LoadDriver("load", self.supervisor, self.run_dir, self)
        return self.services["load"]

    def start_load(self) -> None:
        """Locust: one process, or a master and ``load.workers`` workers; with member hosts on the
        workers, the host link they connect to first."""
        if self.on_workers and self.host_link is None:
            from harness.run.remote_hosts import serve_hosts  # (a module built on this one)

            self.host_link = serve_hosts(self, self.history_writer, free_port())
        self.load.start()
        for i in range(1, self.scenario.load.workers + 1):
            worker = self.services[f"load-worker-{i}"] = LoadWorker(
                f"load-worker-{i}", self.supervisor, self.run_dir, self.load
            )
            worker.start()

    def follow(self, count: int, announce: Callable[[list[str], list[str]], None]) -> None:
        """The group at ``count`` members, as a load profile wants it. The newest leave cleanly
        (SIGTERM: LeaveGroup); a member needed again is the lowest free slot's next incarnation,
        so there are never more slots (client lanes) than the profile's peak. A slot is free once
        its last process has exited. ``announce(started, stopped)`` is called, when there are any,
        before anything is done: what the changes cause comes after it in the history."""
        members = [s for s in self.services.values() if isinstance(s, Member)]
        staying = self.members_staying()  # by lane: the newest last
        self.reap_leavers()
        stopped = staying[count:]
        # A slot is free once its last process has exited and been reaped (its process_exited written).
        busy = {m.number for m in members if m.running() or m.exit_unrecorded()}
        free = [k for k in range(1, len(self.scenario.member_slots()) + 1) if k not in busy]
        started = [f"consumer-{k}" for k in free[: max(count - len(staying), 0)]]
        if started or stopped:
            announce(started, stopped)
        for name in stopped:  # all at once, not waiting for each: "8 leave at once" is one burst of LeaveGroups
            self._leaving[name] = time.monotonic()
            self.services[name].terminate()
        for name in started:
            self.member(name).start()

    def reap_leavers(self) -> None:
        """Forget the members that have left; kill one stuck in its close past LEAVE_TIMEOUT_S: no
        longer a member anyone waits for (the group is rid of it when its session expires)."""
        for name, since in list(self._leaving.items()):
            if not self.services[name].running():
                del self._leaving[name]
            elif time.monotonic() - since > LEAVE_TIMEOUT_S:
                self.services[name].kill(signal.SIGKILL)

    def close(self) -> None:
        """After the teardown stopped every service: the host link, once every host's last line came."""
        if self.host_link is not None:
            self.host_link.close()

    def scale_to(self, count: int, subscription: str | None = None) -> list[str]:
        running = self.running_consumers()
        if count >= len(running):
            return self.start_new(count - len(running), subscription)
        leaving = running[count:]
        for name in leaving:  # the newest leave first, cleanly (LeaveGroup)
            self.services[name].kill(signal.SIGTERM)
        return leaving
