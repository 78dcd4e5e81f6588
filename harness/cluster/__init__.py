"""Cluster backends (harness.cluster.backend). ``local`` (plain processes on 127.0.0.1) is the default.

From Python::

    from harness.cluster import ClusterSpec, TopicSpec, local_cluster
    with local_cluster(ClusterSpec(kafka="3.9", brokers=3, topics=[TopicSpec("events", 6)]), workdir) as cluster:
        cluster.bootstrap_servers
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.cluster.admin import TopicSpec
from harness.cluster.local import LocalCluster
from harness.cluster.spec import ClusterSpec
from harness.supervision.processes import Supervisor

__all__ = ["ClusterSpec", "LocalCluster", "TopicSpec", "local_cluster"]


@contextmanager
def local_cluster(spec: ClusterSpec, workdir: Path, report=lambda _m: None) -> Iterator[LocalCluster]:
    """Start a cluster and stop every process of it on the way out, however it is left."""
    supervisor = Supervisor(owner=f"api:{workdir}")
    cluster = LocalCluster(spec, Path(workdir), supervisor, report)
    try:
        cluster.start()
        yield cluster
    finally:
        for name in [n for n in supervisor.processes if n not in cluster.services]:
            supervisor.kill(name, signal.SIGTERM)  # what the caller started beside it (clients) goes first
        cluster.stop()
        supervisor.stop_all()
