"""Cluster backends. ``local`` (plain processes on 127.0.0.1) is the default.

From Python::

    from harness.cluster import ClusterSpec, TopicSpec, local_cluster
    with local_cluster(ClusterSpec(kafka="3.9", brokers=3, topics=[TopicSpec("events", 6)]), workdir) as cluster:
        cluster.bootstrap_servers
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from harness.cluster.local import ClusterSpec, LocalCluster, TopicSpec
from harness.processes import Supervisor

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
        cluster.stop()
        supervisor.stop_all()
