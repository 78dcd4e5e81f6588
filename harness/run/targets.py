"""What faults act on in a run: its services, its proxies, its members, its topics
(the run's implementation of ``faults.base.Targets``)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from faults import network
from faults.base import COORDINATOR, MemberChanges
from harness.cluster.admin import TopicSpec
from harness.cluster.backend import ClusterBackend
from harness.cluster.kinds import KRaftControllerKind
from harness.components.versions import kafka_release
from harness.run.clients import Member, Observer, WorkloadProcesses
from harness.supervision.service import Service
from oracle import vocabulary as ev
from runtime.errors import ClusterError
from runtime.history import HistoryWriter


class RunTargets:
    def __init__(
        self, cluster: ClusterBackend, workload: WorkloadProcesses, observer: Observer, history: HistoryWriter
    ):
        self.cluster, self.workload, self.observer, self.history = cluster, workload, observer, history
        self.subscribes = workload.scenario.subscribes
        self.pauses: dict[str, int] = {}  # pause faults acting on a service now: it runs again when none is left

    def service(self, name: str) -> Service:
        """The service a fault names: a node of the cluster or a client of the workload."""
        service = self.cluster.services.get(name) or self.workload.services.get(name)
        if service is None:
            known = sorted([*self.cluster.services, *self.workload.services])
            raise ClusterError(f"no service named {name!r} in this run; known: {', '.join(known)}")
        return service

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
                coordinator = self.observer.status.coordinator()
                coordinator = f"broker-{coordinator}" if coordinator is not None else None
            if coordinator is not None:
                return coordinator
            time.sleep(0.2)
        raise ClusterError("the group's coordinator is unknown (no fresh answer from the cluster)")

    def group_names(self, which: str) -> list[str]:
        if which == "controllers":  # KRaft's controller quorum, as the cluster runs it
            return [name for name, s in self.cluster.services.items() if s.role == KRaftControllerKind.role]
        return self.cluster.broker_names() if which == "brokers" else self.workload.running_consumers()

    def is_running(self, name: str) -> bool:
        return (name in self.cluster.services or name in self.workload.services) and self.service(name).running()

    # --- services -----------------------------------------------------------------------

    def pause(self, name: str) -> dict | None:
        # Overlapping pauses of one service stop it for their union: one that finds it running stops
        # it (a process started again meanwhile too), and only the last one's heal resumes it (a
        # shorter pause inside a longer one used to end both).
        service = self.service(name)
        details = None if service.paused() else service.pause()
        self.pauses[name] = self.pauses.get(name, 0) + 1
        return details

    def resume(self, name: str) -> None:
        self.pauses[name] = max(0, self.pauses.get(name, 0) - 1)
        if not self.pauses[name]:
            self.service(name).resume()

    def kill(self, name: str, sig: int) -> None:
        self.service(name).kill(sig)

    def restart(self, name: str, changes: MemberChanges | None = None) -> None:
        service = self.service(name)
        if changes is not None:
            if not isinstance(service, Member):
                raise ClusterError(f"{name} is not a member of the group; only a member restarts changed")
            service.change(changes)
        service.start()

    # --- rolling upgrades ----------------------------------------------------------------

    def cluster_kafka(self):
        return self.cluster.release(), self.cluster.metadata_mode

    def kafka_release(self, text: str):
        return kafka_release(text)

    def restart_node(self, name: str, kafka: str | None, settings: Mapping) -> dict:
        """A node restarted on another release or with changed settings (the cluster's ``restart_node``),
        recorded as ``node_restarted``: its ``process_exited`` and ``process_started`` (which says the
        release it now runs) come from the restart itself."""
        done = self.cluster.restart_node(name, kafka, dict(settings))
        self.history.emit(ev.NODE_RESTARTED, **done)
        return done

    def finalize_features(self, kafka: str, started_mono_ms: float) -> dict:
        done = {"kafka": kafka_release(kafka).version, **self.cluster.finalize_features(kafka)}
        self.history.emit(
            ev.CLUSTER_FINALIZED, metadata=self.cluster.metadata_mode, started_mono_ms=round(started_mono_ms, 3), **done
        )
        return done

    # --- network ------------------------------------------------------------------------

    def toxiproxy(self):
        return self.cluster.toxiproxy

    def message_proxy(self):
        return self.cluster.message_proxy

    def request_timeout_ms(self, member: str, api: str) -> int:
        w = self.workload.scenario.workload
        return w.driver_class.answer_timeout_ms(
            api, w.session_timeout_ms, w.max_poll_interval_ms, w.heartbeat_interval_ms
        )

    def proxies(self, target: str, link: str) -> list[str]:
        return network.proxies(
            self.cluster.network, target, self.resolve(link), self.workload.scenario.lane_plan.lane_of
        )

    # --- ZooKeeper ----------------------------------------------------------------------

    def expire_zookeeper_session(self, name: str) -> dict:
        return self.cluster.expire_zookeeper_session(name)

    def zookeeper_session_timeout_s(self, name: str) -> float:
        return self.cluster.zookeeper_session_timeout_s(name)

    # --- members ------------------------------------------------------------------------

    def command(self, member: str, command: dict) -> None:
        service = self.service(member)
        if not isinstance(service, Member):
            raise ClusterError(f"{member} is not a member of the group; only members take commands")
        service.tell(command)

    def start_consumers(self, count: int, subscription: str | None = None) -> list[str]:
        return self.workload.start_new(count, subscription)

    def scale_consumers(self, count: int, subscription: str | None = None) -> list[str]:
        return self.workload.scale_to(count, subscription)

    # --- topics -------------------------------------------------------------------------

    def add_partitions(self, topic: str, total: int) -> None:
        self.cluster.add_partitions(topic, total)
        self.history.emit(ev.PARTITIONS_ADDED, topic=topic, partitions=total, subscribed=self.subscribes(topic))

    def create_topic(self, topic: str, partitions: int) -> None:
        self.cluster.create_topics([TopicSpec(topic, partitions)])
        self.history.emit(ev.TOPIC_CREATED, topic=topic, partitions=partitions, subscribed=self.subscribes(topic))
