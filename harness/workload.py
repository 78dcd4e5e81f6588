"""Starting the scenario's producer and consumer members as OS processes.

Each member gets a spec file in the run directory (``workload/<name>-<incarnation>.json``)
and writes to the shared history itself. A restarted member is a new incarnation
of the same slot: same name (and, with static membership, same group.instance.id),
new process, new member id.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

from harness.processes import Supervisor
from harness.scenario import Scenario
from workloads.consumer import ConsumerSpec
from workloads.producer import ProducerSpec


class WorkloadProcesses:
    def __init__(self, scenario: Scenario, run_dir: Path, bootstrap_servers: str, supervisor: Supervisor):
        self.scenario = scenario
        self.run_dir = run_dir
        self.bootstrap_servers = bootstrap_servers
        self.supervisor = supervisor
        self.incarnations: dict[str, int] = {}
        (run_dir / "workload").mkdir(exist_ok=True)

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
            history=self.history, bootstrap_servers=self.bootstrap_servers, topic=topic.name,
            partitions=topic.partitions, rate=w.producer.rate, value_bytes=w.producer.value_bytes))

    def start_consumer(self, name: str) -> None:
        w = self.scenario.workload
        self.incarnations[name] = self.incarnations.get(name, 0) + 1
        self._launch(name, "consumer", "workloads.consumer", ConsumerSpec(
            member=name, incarnation=self.incarnations[name], history=self.history,
            bootstrap_servers=self.bootstrap_servers, group=w.group, topics=self.scenario.consumed_topics,
            protocol=w.protocol, assignor=w.effective_assignor, commit=w.commit, processing_ms=w.processing_ms,
            session_timeout_ms=w.session_timeout_ms, heartbeat_interval_ms=w.heartbeat_interval_ms,
            max_poll_interval_ms=w.max_poll_interval_ms, auto_commit_interval_ms=w.auto_commit_interval_ms))

    def start_all(self) -> None:
        self.start_producer()
        for name in self.scenario.workload.member_names():
            self.start_consumer(name)

    def consumers(self) -> list[str]:
        return [n for n, p in self.supervisor.processes.items() if p.role == "consumer"]
