"""Clusters kept up between runs: a suite's consecutive variants on one cluster.

Starting ZooKeeper, three brokers and Toxiproxy costs a run 5–15 s, stopping them a few
more; a scenario's own workload may be shorter. A ``ClusterPool`` keeps the cluster a run
used and lends it to the next run whose cluster spec matches (same backend, Kafka line,
node counts and broker settings — ``share_key``). What makes it safe:

- each run's topics and group carry its run id (``Scenario.isolated``), so two runs'
  histories never mix, on the brokers or in their logs (the broker-log events are read
  by group);
- when a run gives the cluster back, its faults have been healed (the run's teardown) and
  the cluster is checked: every service up and not stopped, no proxy with a toxic or
  disabled, every broker in metadata, a controller, every partition led and fully in
  sync. A cluster that is not healthy within ``HEALTH_TIMEOUT_S`` is stopped, and the
  next run gets a fresh one;
- what a run cannot share, it does not: the project's coordinator (it writes into the
  run's history), and faults that create topics or grow them (their names are the
  scenario's, not the run's) — ``unshareable`` says why.

The pooled cluster's processes belong to the pool's Supervisor; while a run holds it,
their starts and exits (a crashed broker, its restart) are recorded in that run's history.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from faults.catalogue import CLUSTER_CHANGING_KINDS, TOPIC_KINDS
from harness.cluster.backend import ClusterBackend, open_cluster, started_backends
from harness.supervision.processes import Supervisor
from harness.supervision.stop_signals import like_ctrl_c

if TYPE_CHECKING:
    from harness.cluster.spec import ClusterSpec

Report = Callable[[str], None]

HEALTH_TIMEOUT_S = 60.0  # a restarted broker catches up its replicas well within this on a 2-core machine


def share_key(backend: str, spec: ClusterSpec) -> str:
    """What two runs must agree on to share a cluster (topics and lanes are per run)."""
    racks = [list(spec.broker_racks)] if spec.broker_racks else []  # brokers in other racks are another cluster
    return json.dumps(
        [backend, spec.kafka, spec.brokers, spec.zookeeper_nodes, spec.broker_config, spec.broker_heap_mb, *racks],
        sort_keys=True,
    )


def unshareable(backend: str, spec: ClusterSpec, fault_kinds: set[str]) -> str | None:
    """Why a run needs a cluster of its own, or None if it can borrow one."""
    if backend not in started_backends():
        return f"backend {backend} is a cluster the harness does not start"
    if spec.coordinator is not None:
        return "the project's coordinator writes into one run's history"
    if spec.message_proxy is not None:
        return "its message faults' proxy writes into one run's history"
    if kinds := sorted(fault_kinds & TOPIC_KINDS):
        return f"its {', '.join(kinds)} faults name topics of the scenario, not of the run"
    if kinds := sorted(fault_kinds & CLUSTER_CHANGING_KINDS):
        return f"its {', '.join(kinds)} faults leave the cluster on another Kafka release"
    return None


@dataclass
class PooledCluster:
    key: str
    cluster: ClusterBackend
    supervisor: Supervisor
    lanes: int
    runs: int = 0  # how many runs have had it
    started_s: float = 0.0  # how long it took to start


@dataclass
class ClusterPool:
    """Keeps up to ``keep`` clusters between runs, the least recently used stopped first."""

    workdir: Path
    owner: str  # the processes' registered owner: `cleanup` stops them if the harness dies
    report: Report = lambda _m: None
    lanes: int = 0  # start every cluster with at least this many client lanes (a suite's widest run)
    # Two specs kept up at once: a matrix alternates protocols whose broker settings differ
    # (3.9 and 4.4, say), and stopping one to start the other each time would undo the sharing.
    keep: int = 2
    clusters: dict[str, PooledCluster] = field(default_factory=dict)  # by share_key, least recently used first
    started: int = 0
    replaced: list[str] = field(default_factory=list)  # why a cluster was stopped before its time

    def lease(self, backend: str, spec: ClusterSpec, run_supervisor: Supervisor, report: Report) -> SharedCluster:
        """The pool's cluster for ``spec``, started if need be, as one run sees it."""
        key = share_key(backend, spec)
        pooled = self.clusters.pop(key, None)
        if pooled and pooled.lanes < spec.lanes:
            self._stop(pooled, f"the next run needs {spec.lanes} client lanes, it has {pooled.lanes}")
            pooled = None
        if pooled is None:
            while self.clusters and len(self.clusters) >= self.keep:  # room for one more
                self._stop(self.clusters.pop(next(iter(self.clusters))), "")  # the least recently used
            pooled = self._start(backend, spec)
        self.clusters[key] = pooled  # now the most recently used
        pooled.runs += 1
        return SharedCluster(self, pooled, spec, run_supervisor, report)

    def give_back(self, pooled: PooledCluster, interrupted: bool = False) -> None:
        """A run is done with the cluster: keep it if it is healthy, else stop it. After a Ctrl-C
        nothing runs next: it is stopped at once (a health check could wait a minute)."""
        problems = ["the run was interrupted"] if interrupted else health_problems(pooled.cluster)
        if problems:
            self.replaced.append("; ".join(problems))
            self.clusters.pop(pooled.key, None)
            self._stop(pooled, ("" if interrupted else "unhealthy after the run: ") + "; ".join(problems))

    def close(self) -> None:
        while self.clusters:
            self._stop(self.clusters.popitem()[1], "")

    def _start(self, backend: str, spec: ClusterSpec) -> PooledCluster:
        self.started += 1
        workdir = self.workdir / f"cluster-{self.started}"
        # A directory of that name is an earlier harness's (a resumed sweep numbers its clusters
        # from 1 again), and that cluster is gone: its brokers' meta.properties would name another
        # cluster.id and they would refuse to start on it.
        shutil.rmtree(workdir, ignore_errors=True)
        supervisor = Supervisor(owner=f"{self.owner}/cluster-{self.started}")
        lanes = max(spec.lanes, self.lanes)
        # No topics: each run brings its own. No coordinator, no external target (unshareable).
        cluster = open_cluster(backend, replace(spec, topics=[], lanes=lanes), workdir, supervisor, self.report)
        pooled = PooledCluster(share_key(backend, spec), cluster, supervisor, lanes)
        t0 = time.monotonic()
        try:
            cluster.start()
        except BaseException:
            stop_cluster(pooled)
            raise
        pooled.started_s = time.monotonic() - t0
        return pooled

    def _stop(self, pooled: PooledCluster, why: str) -> None:
        if why:
            self.report(f"stopping a shared cluster ({why})")
        stop_cluster(pooled)


def stop_cluster(pooled: PooledCluster) -> None:
    try:
        pooled.cluster.stop()
    finally:
        pooled.supervisor.stop_all()


def health_problems(cluster: ClusterBackend) -> list[str]:
    """Why the cluster is not as good as new after a run ([] if it is): see the module's doc."""
    problems = [f"{name} is not running" for name, s in cluster.services.items() if not s.running()]
    problems += [f"{name} is stopped" for name, s in cluster.services.items() if s.running() and s.paused()]
    if cluster.toxiproxy:
        try:
            problems += [
                f"proxy {p.name} " + ("disabled" if not p.enabled else f"keeps toxics {sorted(p.toxics)}")
                for p in cluster.toxiproxy.proxies()
                if p.toxics or not p.enabled
            ]
        except Exception as e:  # Toxiproxy itself may be what broke
            problems.append(f"Toxiproxy does not answer: {e}")
    return problems or cluster.kafka_admin.health_problems(HEALTH_TIMEOUT_S)


class SharedCluster:
    """A pooled cluster as one run sees it (a ClusterBackend): the same services and
    addresses; start() creates the run's topics on it, stop() gives it back to the pool."""

    def __init__(
        self, pool: ClusterPool, pooled: PooledCluster, spec: ClusterSpec, run_supervisor: Supervisor, report: Report
    ):
        self.pool, self.pooled, self.spec, self.report = pool, pooled, spec, report
        self.run_supervisor = run_supervisor
        self.reused = pooled.runs > 1  # a run before this one had it

    def __getattr__(self, name: str):
        # Everything else — addresses, services, proxies, ZooKeeper sessions, topics — is the cluster's own.
        return getattr(self.pooled.cluster, name)

    def start(self) -> None:
        cluster, t0 = self.pooled.cluster, time.monotonic()
        # Its processes' starts and exits while this run holds it belong in this run's history.
        self.pooled.supervisor.on_start = self.run_supervisor.on_start
        self.pooled.supervisor.on_exit = self.run_supervisor.on_exit
        deadline = t0 + 60
        cluster.kafka_admin.create_topics(self.spec.topics, deadline - time.monotonic())
        cluster.kafka_admin.wait_every_broker_knows(
            {n: b.address for n, b in cluster.brokers.items()}, self.spec.topics, deadline
        )
        self.report(
            f"{'reusing' if self.reused else 'started'} a shared cluster "
            f"({self.pooled.runs} run{'s' if self.pooled.runs > 1 else ''} on it): topics ready in "
            f"{time.monotonic() - t0:.1f}s"
        )

    def stop(self, interrupted: bool = False) -> None:
        """Not stopped: handed back (checked healthy, else replaced); the run's clients are gone by now."""
        # First: stopping an unhealthy cluster is not an event of this run.
        self.pooled.supervisor.on_start = self.pooled.supervisor.on_exit = None
        self.pool.give_back(self.pooled, interrupted)

    def poll_exits(self) -> list[str]:
        return [*self.pooled.cluster.poll_exits(), *(p.name for p in self.pooled.supervisor.poll_exits())]

    def describe(self) -> dict:
        return {**self.pooled.cluster.describe(), "shared": {"runs": self.pooled.runs, "pool": str(self.pool.workdir)}}


@contextmanager
def runs_in_a_row(pool: ClusterPool | None) -> Iterator[None]:
    """Runs one after another (a suite's variants, a compare's protocols, a sweep's points): between them SIGTERM / SIGHUP
    stop like Ctrl-C (each Run handles them itself while it runs), and the shared clusters are
    stopped at the end, whatever happened."""
    with like_ctrl_c():
        try:
            yield
        finally:
            if pool:
                pool.close()
