"""The shared-cluster pool (harness.cluster.shared) with a recording stand-in for a backend:
which runs share, when a cluster is kept, replaced or evicted, what a run's lease does."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.cluster import shared
from harness.cluster.admin import TopicSpec
from harness.cluster.shared import ClusterPool, health_problems, share_key, unshareable
from harness.cluster.spec import ClusterSpec, MessageProxySpec, ProjectCoordinator
from harness.supervision.processes import Supervisor


@dataclass
class FakeService:
    up: bool = True
    stopped: bool = False

    def running(self) -> bool:
        return self.up

    def paused(self) -> bool:
        return self.stopped


@dataclass
class FakeAdmin:
    problems: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)

    def create_topics(self, topics, timeout):
        self.created += [t.name for t in topics]

    def wait_every_broker_knows(self, addresses, topics, deadline):
        pass

    def health_problems(self, timeout):
        return self.problems


@dataclass
class FakeProxy:
    name: str
    enabled: bool = True
    toxics: list = field(default_factory=list)


class FakeToxiproxy:
    def __init__(self):
        self.list = [FakeProxy("lane-1.broker-1")]

    def proxies(self):
        return self.list


class FakeCluster:
    def __init__(self, spec: ClusterSpec, workdir: Path, supervisor: Supervisor, report):
        self.spec, self.workdir, self.supervisor = spec, workdir, supervisor
        self.services = {"broker-1": FakeService(), "zookeeper-1": FakeService()}
        self.kafka_admin = FakeAdmin()
        self.toxiproxy = FakeToxiproxy()
        self.brokers: dict = {}
        self.state = "new"

    def start(self):
        self.state = "started"

    def stop(self):
        self.state = "stopped"

    def poll_exits(self):
        return []

    @property
    def bootstrap_servers(self):
        return "127.0.0.1:9092"


@pytest.fixture
def pool(tmp_path, monkeypatch):
    started: list[FakeCluster] = []

    def open_cluster(backend, spec, workdir, supervisor, report):
        started.append(FakeCluster(spec, workdir, supervisor, report))
        return started[-1]

    monkeypatch.setattr(shared, "open_cluster", open_cluster)
    p = ClusterPool(tmp_path, "test:pool", lanes=2)
    p.started_clusters = started
    return p


def spec(**kw) -> ClusterSpec:
    return ClusterSpec(**{"kafka": "3.9", "brokers": 3, "topics": [TopicSpec("rl-x-events", 6)], "lanes": 3, **kw})


def test_topics_and_lanes_are_per_run_the_rest_of_the_spec_must_match():
    assert share_key("local", spec()) == share_key("local", spec(topics=[], lanes=7))
    assert share_key("local", spec()) != share_key("compose", spec())
    assert share_key("local", spec()) != share_key("local", spec(kafka="4.1"))
    assert share_key("local", spec()) != share_key("local", spec(broker_config={"group.min.session.timeout.ms": 500}))


def test_what_cannot_share_says_why():
    assert unshareable("local", spec(), {"pause", "crash"}) is None
    assert "does not start" in unshareable("external", spec(), set())
    assert "coordinator" in unshareable("local", spec(coordinator=ProjectCoordinator("v1")), set())
    message_lanes = MessageProxySpec(frozenset({1, 2}))
    assert "message faults' proxy" in unshareable("local", spec(message_proxy=message_lanes), {"message"})
    assert "create-topic" in unshareable("local", spec(), {"create-topic", "pause"})
    assert "add-partitions" in unshareable("local", spec(), {"add-partitions"})


def test_consecutive_runs_of_one_spec_share_one_cluster_started_without_topics(pool):
    run = Supervisor(owner="run:a")
    first = pool.lease("local", spec(), run, print)
    first.start()
    first.stop()
    second = pool.lease("local", spec(topics=[TopicSpec("rl-y-events", 6)]), run, print)
    second.start()
    [cluster] = pool.started_clusters
    assert cluster.spec.topics == [] and cluster.spec.lanes == 3  # max(the run's 3, the pool's 2)
    assert cluster.kafka_admin.created == ["rl-x-events", "rl-y-events"]
    assert (first.reused, second.reused) == (False, True) and pool.clusters[share_key("local", spec())].runs == 2
    assert second.bootstrap_servers == "127.0.0.1:9092"  # the cluster's own, through the lease


def test_a_cluster_directory_an_earlier_harness_left_is_not_started_on(pool, tmp_path):
    # A resumed capacity sweep's pool numbers its clusters from 1 again: the old broker's
    # meta.properties names another cluster.id, and Kafka refuses to start on it.
    left = tmp_path / "cluster-1" / "broker-1"
    left.mkdir(parents=True)
    (left / "meta.properties").write_text("cluster.id=an-earlier-cluster\n")
    pool.lease("local", spec(), Supervisor(owner="run:a"), print)
    [cluster] = pool.started_clusters
    assert cluster.workdir == tmp_path / "cluster-1" and not left.exists()


def test_a_run_holding_the_cluster_gets_its_process_events_and_gives_them_back(pool):
    run = Supervisor(owner="run:a", on_start=lambda p: None, on_exit=lambda p, c: None)
    lease = pool.lease("local", spec(), run, print)
    lease.start()
    assert lease.pooled.supervisor.on_start is run.on_start and lease.pooled.supervisor.on_exit is run.on_exit
    lease.stop()
    assert lease.pooled.supervisor.on_start is None and lease.pooled.supervisor.on_exit is None


def test_an_unhealthy_cluster_is_stopped_and_the_next_run_gets_a_fresh_one(pool):
    lease = pool.lease("local", spec(), Supervisor(), print)
    lease.start()
    lease.services["broker-1"].up = False  # a crash fault without a restart
    lease.stop()
    (first,) = pool.started_clusters
    assert first.state == "stopped" and pool.clusters == {} and "broker-1 is not running" in pool.replaced[0]
    pool.lease("local", spec(), Supervisor(), print).start()
    assert len(pool.started_clusters) == 2 and pool.started_clusters[1].workdir.name == "cluster-2"


def test_after_a_ctrl_c_the_cluster_is_stopped_without_a_health_check(pool, monkeypatch):
    monkeypatch.setattr(shared, "health_problems", lambda cluster: pytest.fail("checked an interrupted run's cluster"))
    lease = pool.lease("local", spec(), Supervisor(), print)
    lease.start()
    lease.stop(interrupted=True)
    [cluster] = pool.started_clusters
    assert cluster.state == "stopped" and pool.clusters == {} and pool.replaced == ["the run was interrupted"]


def test_a_run_needing_more_lanes_replaces_the_cluster(pool):
    pool.lease("local", spec(), Supervisor(), print).stop()
    pool.lease("local", spec(lanes=5), Supervisor(), print)
    first, second = pool.started_clusters
    assert first.state == "stopped" and second.spec.lanes == 5


def test_the_least_recently_used_cluster_goes_when_the_pool_is_full(pool):
    a, b, c = spec(), spec(kafka="4.1"), spec(brokers=1)
    for s in (a, b, a, c):  # a is used again after b: b is the least recently used when c comes
        pool.lease("local", s, Supervisor(), print).stop()
    ca, cb, cc = pool.started_clusters
    assert (ca.state, cb.state, cc.state) == ("started", "stopped", "started")
    pool.close()
    assert ca.state == cc.state == "stopped" and pool.clusters == {}


def test_health_names_what_a_run_left_behind():
    cluster = FakeCluster(spec(), Path("/nonexistent"), Supervisor(), print)
    assert health_problems(cluster) == []
    cluster.services["zookeeper-1"].stopped = True
    cluster.toxiproxy.list = [FakeProxy("lane-1.broker-1", enabled=False), FakeProxy("lane-2.broker-1", toxics=["t"])]
    assert health_problems(cluster) == [
        "zookeeper-1 is stopped",
        "proxy lane-1.broker-1 disabled",
        "proxy lane-2.broker-1 keeps toxics ['t']",
    ]
    cluster.services["zookeeper-1"].stopped = False
    cluster.toxiproxy.list = []
    cluster.kafka_admin.problems = ["__consumer_offsets-3: in-sync replicas [1] of [1, 2]"]
    assert health_problems(cluster) == ["__consumer_offsets-3: in-sync replicas [1] of [1, 2]"]


def test_a_run_borrows_only_when_it_can_and_then_names_its_topics_and_group_by_its_id(pool, tmp_path):
    from harness.run.loop import Run
    from harness.scenario import Scenario

    data = {
        "name": "s",
        "seed": 1,
        "duration_s": 10,
        "cluster": {"kafka": "3.9", "brokers": 3},
        "topics": [{"name": "events", "partitions": 6}],
        "workload": {"group": "g", "consumers": 2, "topic_pattern": "^ev.*"},
        "faults": [],
    }
    borrowing = Run(Scenario.model_validate(data), tmp_path / "s.yaml", tmp_path / "runs", print, pool=pool)
    prefix = f"rl-{borrowing.run_dir.name}-"
    w = borrowing.scenario.workload
    assert borrowing.pool is pool and borrowing.scenario.topics[0].name == prefix + "events"
    assert w.group == prefix + "g" and w.topic_pattern.startswith("^" + prefix.replace("-", r"\-"))
    topic_fault = {**data, "faults": [{"kind": "create-topic", "at_s": 2, "topic": "evolved", "partitions": 2}]}
    own = Run(Scenario.model_validate(topic_fault), tmp_path / "s.yaml", tmp_path / "runs", print, pool=pool)
    assert own.pool is None and own.scenario.workload.group == "g"
