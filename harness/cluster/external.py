"""`cluster.backend: external`: a cluster someone else runs (a staging cluster), as a backend.

Nothing to start or stop: the harness checks the cluster answers, creates the run's own
topics (every name prefixed with the run's id, as is the group: Scenario.isolated), drives
its producer and members against it, and at the end deletes exactly those topics and the
group. It has no services: faults act only on the processes the run starts itself, and a
scenario whose faults need the brokers, ZooKeeper or the network between them is refused
at validation (its ``capabilities`` lack what those fault kinds need). No broker logs are
read, so such a history has no broker-log clock.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from faults.capabilities import Capability
from harness.cluster.admin import ClusterAdmin, TopicSpec
from harness.cluster.backend import Cleanup, CleanupScope
from runtime.errors import ClusterError

if TYPE_CHECKING:
    from harness.cluster.spec import ClusterSpec, ExternalTarget
    from harness.supervision.processes import Supervisor

READY_TIMEOUT_S = 60.0


class ExternalCluster:
    name: ClassVar[str] = "external"
    service_kinds: ClassVar[tuple] = ()
    starts_cluster: ClassVar[bool] = False
    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.RUN_PROCESSES})  # its clients only
    sasl_plain_listeners: ClassVar[bool] = False  # its security is its own: cluster.client_config

    def __init__(
        self, spec: ClusterSpec, workdir: Path, supervisor: Supervisor, report: Callable[[str], None] = lambda _m: None
    ):
        if spec.external is None:
            raise ClusterError("backend external needs cluster.bootstrap_servers")
        self.spec, self.workdir, self.report = spec, workdir, report
        self.target: ExternalTarget = spec.external
        self.services: dict = {}
        self.network = None
        self.kafka_admin = ClusterAdmin(
            self.target.bootstrap_servers,
            [],
            f"the external cluster at {self.target.bootstrap_servers}",
            self.target.client_config,
        )
        self.created: list[str] = []  # topics this run created, deleted by stop()
        self.started = False

    def start(self) -> None:
        self.kafka_admin.wait_ready(READY_TIMEOUT_S)
        self.started = True  # from here on, stop() has something to delete
        self.report(f"external cluster at {self.target.bootstrap_servers}: {self.kafka_admin.brokers_seen} brokers")
        self.create_topics(self.spec.topics)

    def stop(self) -> None:
        """Delete what the run made: its group (its members have left), then its topics."""
        if not self.started:
            return
        problems = (
            self.kafka_admin.delete_group(self.target.group, self.target.group_empty_timeout_s)
            if self.target.group
            else []
        )
        problems += self.kafka_admin.delete_topics(self.created)
        if problems:
            raise ClusterError("could not clean up the external cluster: " + "; ".join(problems))
        self.report(f"deleted group {self.target.group} and topics {', '.join(self.created)} from the external cluster")

    def poll_exits(self) -> list[str]:
        return []

    @classmethod
    def clean_up(cls, scope: CleanupScope, report: Callable[[str], None]) -> Cleanup:
        """Nothing of its own: it starts no process (a run's clients are the process registry's,
        the local backend's to clean up), and what a run made in the cluster its teardown deletes.
        A harness killed mid-run leaves its topics and group there, named with the run's id."""
        return Cleanup()

    @property
    def brokers(self) -> dict:
        return {}  # not ours to act on

    @property
    def bootstrap_servers(self) -> str:
        return self.target.bootstrap_servers

    @property
    def zookeeper_connect(self) -> str | None:
        return self.target.zookeeper_connect

    @property
    def toxiproxy(self) -> None:
        return None

    def describe(self) -> dict:
        return {
            "backend": self.name,
            "kafka": self.spec.kafka,
            "bootstrap_servers": self.bootstrap_servers,
            "zookeeper_connect": self.zookeeper_connect,
            "topics": list(self.created),
            "group": self.target.group,
        }

    def broker_names(self) -> list[str]:
        return []  # not ours: no broker is a fault target, no broker log is read

    def lane_bootstrap_servers(self, lane: int) -> str:
        return self.bootstrap_servers  # no proxies: network faults are refused on an external cluster

    def coordinator_names(self) -> list[str]:
        return []

    def coordinator_addresses(self) -> dict[str, str]:
        return {}

    def coordinator_leader(self) -> str | None:
        return None

    def expire_zookeeper_session(self, name: str) -> dict:
        raise ClusterError("an external cluster's ZooKeeper sessions are not the harness's to expire")

    def zookeeper_session_timeout_s(self, name: str) -> float:
        raise ClusterError("an external cluster's ZooKeeper sessions are not the harness's to know")

    def create_topics(self, topics: list[TopicSpec], timeout: float = 60.0) -> None:
        # Named before they exist: a creation that fails half-way leaves nothing stop() forgets.
        self.created += [t.name for t in topics if t.name not in self.created]
        self.kafka_admin.create_topics(topics, timeout)

    def add_partitions(self, topic: str, total: int, timeout: float = 60.0) -> None:
        raise ClusterError(Capability.TOPIC_CHANGES.refusal(self.name))
