"""Starting the scenario's producer and consumer members as OS processes.

Each member gets a spec file in the run directory (``workload/<name>-<incarnation>.json``)
and writes to the shared history itself. Member ``consumer-k`` always uses client
lane k: its connections pass its own proxies, so a network fault can cut exactly
that member off. A restarted member is a new incarnation of the same slot: same
name and lane (and, with static membership, same group.instance.id), new process,
new member id.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import asdict
from functools import cached_property
from pathlib import Path

from harness import install
from harness.cluster.config import JVM_OPTS
from harness.cluster.local import LocalCluster
from harness.processes import Supervisor
from harness.scenario import Scenario
from runtime.errors import SetupError
from workloads.consumer import ConsumerSpec
from workloads.producer import ProducerSpec


class WorkloadProcesses:
    def __init__(self, scenario: Scenario, run_dir: Path, cluster: LocalCluster, supervisor: Supervisor):
        self.scenario = scenario
        self.run_dir = run_dir
        self.cluster = cluster
        self.supervisor = supervisor
        self.incarnations: dict[str, int] = {}
        for sub in ("workload", "control"):
            (run_dir / sub).mkdir(exist_ok=True)

    @property
    def history(self) -> str:
        return str(self.run_dir / "history.jsonl")

    def _launch(self, name: str, role: str, module: str, spec) -> None:
        path = self.run_dir / "workload" / f"{name}-{self.incarnations.get(name, 1)}.json"
        path.write_text(json.dumps(asdict(spec), indent=2))
        self.supervisor.start(name, role, [sys.executable, "-m", module, str(path)],
                              self.run_dir / "logs" / f"{name}.stdout")

    def start_producer(self) -> None:
        w = self.scenario.workload
        topic = next(t for t in self.scenario.topics if t.name == self.scenario.produced_topic)
        self._launch("producer", "producer", "workloads.producer", ProducerSpec(
            history=self.history, bootstrap_servers=self.cluster.bootstrap_servers, topic=topic.name,
            partitions=topic.partitions, rate=w.producer.rate, value_bytes=w.producer.value_bytes))

    def start_consumer(self, name: str) -> None:
        w = self.scenario.workload
        lane = int(name.rsplit("-", 1)[1])
        self.incarnations[name] = self.incarnations.get(name, 0) + 1
        self._launch(name, "consumer", w.generation.drivers[w.driver], ConsumerSpec(
            member=name, incarnation=self.incarnations[name], history=self.history,
            bootstrap_servers=self.cluster.lane_bootstrap_servers(lane), group=w.group,
            topics=[w.topic_pattern] if w.topic_pattern else self.scenario.consumed_topics,
            protocol=w.protocol, assignor=w.effective_assignor, commit=w.commit, processing_ms=w.processing_ms,
            session_timeout_ms=w.session_timeout_ms, heartbeat_interval_ms=w.heartbeat_interval_ms,
            max_poll_interval_ms=w.max_poll_interval_ms, auto_commit_interval_ms=w.auto_commit_interval_ms,
            control_file=str(self.run_dir / "control" / f"{name}.json"), metadata_refresh_ms=w.metadata_refresh_ms,
            kafka_line=self.scenario.cluster.kafka,
            kafka_tools=self.kafka_tools if w.driver == "java" else None,
            jvm_options=JVM_OPTS if w.driver == "java" else [],
            zookeeper_connect=self.cluster.network.lane_zookeeper_connect(lane) if self.cluster.zookeeper_connect else None,
            zk_eager=w.zk_eager.model_dump() if w.generation.group_home == "zookeeper" else None,
            session_file=str(self.run_dir / "control" / f"{name}.zk-session.json"),
            coordinators=self.cluster.network.lane_coordinators(lane) or None,
            test_hooks=self.test_hooks_of(name)))

    @cached_property
    def kafka_tools(self) -> str | None:
        """The java driver's classpath: Kafka's tools for the cluster's Kafka line. `run` checked
        they are installed; if not, the member reports it in the history (NOT_INSTALLED)."""
        try:
            return install.kafka_tools(self.scenario.cluster.kafka).classpath()
        except SetupError:
            return None

    def test_hooks_of(self, name: str) -> dict | None:
        """The scenario's test-only switches aimed at this member (workload.test_hooks), or None."""
        hooks = self.scenario.workload.test_hooks
        mine = {}
        if hooks and hooks.consume_unassigned and hooks.consume_unassigned.member == name:
            hook = hooks.consume_unassigned
            mine["consume_unassigned"] = {"topic": hook.topic or self.scenario.produced_topic,
                                          "partition": hook.partition}
        if hooks and hooks.sigterm_after_join and hooks.sigterm_after_join.member == name:
            mine["sigterm_after_join"] = {"join": hooks.sigterm_after_join.join}
        return mine or None

    def start_all(self) -> None:
        self.start_producer()
        for name in self.scenario.workload.member_names():
            self.start_consumer(name)

    # --- churn -----------------------------------------------------------------------

    def running_consumers(self) -> list[str]:
        names = [n for n, p in self.supervisor.processes.items() if p.role == "consumer" and p.running()]
        return sorted(names, key=lambda n: int(n.rsplit("-", 1)[1]))

    def start_new(self, count: int) -> list[str]:
        """``count`` new member slots, started back to back (a join storm)."""
        used = [int(n.rsplit("-", 1)[1]) for n in self.supervisor.processes if n.startswith("consumer-")]
        first = max(used, default=0) + 1
        names = [f"consumer-{i}" for i in range(first, first + count)]
        for name in names:
            self.start_consumer(name)
        return names

    def scale_to(self, count: int) -> list[str]:
        running = self.running_consumers()
        if count >= len(running):
            return self.start_new(count - len(running))
        leaving = running[count:]
        for name in leaving:  # the newest leave first, cleanly (LeaveGroup)
            self.supervisor.kill(name, signal.SIGTERM)
        return leaving

    def command(self, member: str, command: dict) -> None:
        """Tell a member what to do: the command file, then SIGUSR1 to look at it."""
        path = self.run_dir / "control" / f"{member}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(command))
        os.replace(tmp, path)
        os.kill(self.supervisor.get(member).pid, signal.SIGUSR1)
