"""What faults act on in a run: its processes, its proxies, its members, its topics
(the run's implementation of ``faults.base.Targets``)."""

from __future__ import annotations

import time

from faults import network
from faults.base import COORDINATOR
from harness.cluster.config import BROKER_ZK_SESSION_TIMEOUT_MS
from harness.cluster.local import LocalCluster, TopicSpec
from harness.processes import Supervisor
from harness.workload import WorkloadProcesses
from oracle import vocabulary as ev
from runtime.errors import ClusterError
from runtime.history import HistoryWriter
from workloads.observer import ObserverStatus


class RunTargets:
    def __init__(self, supervisor: Supervisor, cluster: LocalCluster, workload: WorkloadProcesses,
                 observer: ObserverStatus, history: HistoryWriter):
        self.supervisor, self.cluster, self.workload = supervisor, cluster, workload
        self.observer, self.history = observer, history
        self.subscribes = workload.scenario.subscribes

    # --- names --------------------------------------------------------------------------

    def resolve(self, name: str) -> str:
        """``coordinator`` is what coordinates the group right now: the project's coordinator
        leader (as its instances say), else the broker the observer last saw coordinating."""
        if name != COORDINATOR:
            return name
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.cluster.coordinator_names():
                coordinator = self.cluster.coordinator_leader()
            else:
                coordinator = self.observer.coordinator()
                coordinator = f"broker-{coordinator}" if coordinator is not None else None
            if coordinator is not None:
                return coordinator
            time.sleep(0.2)
        raise ClusterError("the group's coordinator is unknown (no fresh answer from the cluster)")

    def group_names(self, which: str) -> list[str]:
        return self.cluster.broker_names() if which == "brokers" else self.workload.running_consumers()

    def is_running(self, name: str) -> bool:
        return name in self.supervisor.processes and self.supervisor.get(name).running()

    # --- processes ----------------------------------------------------------------------

    def pause(self, name: str) -> None:
        self.supervisor.pause(name)

    def resume(self, name: str) -> None:
        self.supervisor.resume(name)

    def kill(self, name: str, sig: int) -> None:
        self.supervisor.kill(name, sig)

    def restart(self, name: str) -> None:
        if name.startswith("consumer-"):
            self.workload.start_consumer(name)
        elif name == "producer":
            self.workload.start_producer()
        else:
            self.cluster.restart(name)

    # --- network ------------------------------------------------------------------------

    def toxiproxy(self):
        return self.cluster.toxiproxy

    def proxies(self, target: str, link: str) -> list[str]:
        return network.proxies(self.cluster.network, target, self.resolve(link))

    # --- ZooKeeper ----------------------------------------------------------------------

    def expire_zookeeper_session(self, name: str) -> dict:
        return self.cluster.expire_zookeeper_session(name)

    def zookeeper_session_timeout_s(self, name: str) -> float:
        if name in self.cluster.coordinator_names():
            return self.cluster.spec.coordinator.zookeeper_session_timeout_ms / 1000
        return int(self.cluster.spec.broker_config.get("zookeeper.session.timeout.ms",
                                                       BROKER_ZK_SESSION_TIMEOUT_MS)) / 1000

    # --- members ------------------------------------------------------------------------

    def command(self, member: str, command: dict) -> None:
        self.workload.command(member, command)

    def start_consumers(self, count: int) -> list[str]:
        return self.workload.start_new(count)

    def scale_consumers(self, count: int) -> list[str]:
        return self.workload.scale_to(count)

    # --- topics -------------------------------------------------------------------------

    def add_partitions(self, topic: str, total: int) -> None:
        self.cluster.add_partitions(topic, total)
        self.history.emit(ev.PARTITIONS_ADDED, topic=topic, partitions=total, subscribed=self.subscribes(topic))

    def create_topic(self, topic: str, partitions: int) -> None:
        self.cluster.create_topics([TopicSpec(topic, partitions)])
        self.history.emit(ev.TOPIC_CREATED, topic=topic, partitions=partitions, subscribed=self.subscribes(topic))
