"""What a run needs of a cluster, whichever way it is brought up — and the backends there are.

A backend starts ZooKeeper (or a KRaft controller), brokers, Toxiproxy and, when the
protocol asks for it, the project's coordinator, as services (harness.supervision.service); it says
where they listen on 127.0.0.1 and does the few things only it can (expire a ZooKeeper
session, grow a topic). Fault kinds, drivers and the oracle never see which backend ran:
faults act on services by name, drivers get addresses, the oracle reads the history.

What a backend can do for faults is data on its class, ``capabilities``, in the vocabulary
the fault kinds state their needs in (faults/capabilities.py): validation refuses a fault
its backend cannot do, with the reason, before anything starts. What a backend's clusters
may leave behind when their harness dies (processes, compose projects) it removes itself,
``clean_up``; harness/cluster/cleanup.py asks every backend in turn.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from faults.capabilities import Capability

if TYPE_CHECKING:
    from faults.toxiproxy import ToxiproxyClient
    from harness.cluster.admin import ClusterAdmin, TopicSpec
    from harness.cluster.network import NetworkPlan
    from harness.cluster.spec import ClusterSpec
    from harness.supervision.processes import Supervisor
    from harness.supervision.service import Service

# name -> "module:class"; imported on use (a backend may need what another does not). A clean-up
# goes through them backwards: the process registry, local's, last (harness/cluster/cleanup.py).
BACKENDS: dict[str, str] = {
    "local": "harness.cluster.local:LocalCluster",
    "compose": "harness.cluster.compose:ComposeCluster",
    "external": "harness.cluster.external:ExternalCluster",  # someone else's cluster: the harness runs its clients
}


@dataclass(frozen=True)
class CleanupScope:
    """Which of what harnesses left behind a clean-up takes (``ClusterBackend.clean_up``)."""

    by: str  # who cleans up, as the runs it marks killed say
    detached: bool = False  # also what outlives its command by design: `cluster up` clusters, the project's engine
    owner_pid: int | None = None  # only what this (dead) harness process started: its watchdog's share
    owner: str | None = None  # only this owner's, live or not, stopped in order: `cluster down`


@dataclass(frozen=True)
class Cleaned:
    """One thing a backend found left behind and stopped or removed."""

    counted_as: str  # how a summary counts it: "processes", "compose projects"
    name: str
    run_dir: Path | None = None  # the run it was started for, if a run's harness started it


@dataclass
class Cleanup:
    """What a clean-up removed, and what it could not: said, never fatal (a later clean-up retries)."""

    cleaned: list[Cleaned] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class ClusterBackend(Protocol):
    name: ClassVar[str]
    starts_cluster: ClassVar[bool]  # else it is someone else's cluster: `cluster.bootstrap_servers` says where
    capabilities: ClassVar[frozenset[Capability]]  # what faults may ask of it
    sasl_plain_listeners: ClassVar[bool]  # its brokers can also listen with SASL/PLAIN (`cluster up --sasl-plain`)
    service_kinds: ClassVar[tuple[type[Service], ...]]  # what it may run (their stop tiers: `cluster down`)
    spec: ClusterSpec
    workdir: Path  # configs, data and logs of its services
    services: dict[str, Service]  # every service, by name, in start order
    network: NetworkPlan | None  # the proxies between clients, brokers and ZooKeeper (faults.network reads it)
    kafka_admin: ClusterAdmin | None  # the Admin API on its brokers, once they have addresses

    def start(self) -> None: ...
    def stop(self) -> None: ...  # every service, in stop-tier order
    def poll_exits(self) -> list[str]: ...  # services that stopped on their own since the last call (recorded)

    # What its clusters left behind in ``scope`` (their harness died: no cluster is open), each
    # thing said through ``report`` as it goes.
    @classmethod
    def clean_up(cls, scope: CleanupScope, report: Callable[[str], None]) -> Cleanup: ...

    @property
    def brokers(self) -> dict[str, Service]: ...  # each broker's service; ``.address``: its direct listener
    @property
    def bootstrap_servers(self) -> str: ...
    @property
    def zookeeper_connect(self) -> str | None: ...
    @property
    def toxiproxy(self) -> ToxiproxyClient | None: ...

    def describe(self) -> dict: ...
    def broker_names(self) -> list[str]: ...
    def lane_bootstrap_servers(self, lane: int) -> str: ...
    def coordinator_names(self) -> list[str]: ...
    def coordinator_addresses(self) -> dict[str, str]: ...
    def coordinator_leader(self) -> str | None: ...
    def expire_zookeeper_session(self, name: str) -> dict: ...
    def zookeeper_session_timeout_s(self, name: str) -> float: ...
    def create_topics(self, topics: list[TopicSpec], timeout: float = 60.0) -> None: ...
    def add_partitions(self, topic: str, total: int, timeout: float = 60.0) -> None: ...


class UpgradableBackend(ClusterBackend, Protocol):
    """What a backend with Capability.NODE_UPGRADES does besides (a rolling-broker-upgrade; validation
    refuses one anywhere else)."""

    def release(self, name: str | None = None) -> Any: ...  # the catalogue's facts of what a node (the brokers) runs
    @property
    def metadata_mode(self) -> str: ...  # "zookeeper" | "kraft"
    def restart_node(self, name: str, kafka: str | None, settings: dict) -> dict: ...
    def finalize_features(self, kafka: str) -> dict: ...


def backend_class(name: str) -> type[ClusterBackend]:
    module, _, cls = BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module), cls)


@functools.cache
def started_backends() -> tuple[str, ...]:
    """The backends that start a cluster of their own (`cluster up`, a suite's shared clusters)."""
    return tuple(name for name in BACKENDS if backend_class(name).starts_cluster)


def open_cluster(
    backend: str,
    spec: ClusterSpec,
    workdir: Path,
    supervisor: Supervisor,
    report: Callable[[str], None] = lambda _m: None,
) -> ClusterBackend:
    """The cluster a scenario's ``cluster.backend`` names, not started yet."""
    return backend_class(backend)(spec, workdir, supervisor, report)
