"""cluster.broker_heap_mb: a big group's broker gets the heap its scenario gives, nothing else does."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml

from harness.cluster.config import DEFAULT_HEAP_MB
from harness.cluster.nodes import Broker, KRaftController
from harness.cluster.shared import share_key
from harness.run.loop import cluster_spec
from harness.scenario import load_scenario
from harness.supervision.processes import Supervisor
from runtime.errors import ScenarioError


def scenario(tmp_path, **cluster):
    data = {
        "name": "heap",
        "duration_s": 30,
        "cluster": {"kafka": "4.1", **cluster},
        "topics": [{"name": "events", "partitions": 8}],
        "workload": {"consumers": 2},
    }
    path = tmp_path / "heap.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


def heaps(node) -> list[str]:
    return [o for o in node.command() if o.startswith("-Xmx")]


def test_the_brokers_get_the_scenario_s_heap_and_the_controller_keeps_the_default(tmp_path):
    spec = cluster_spec(scenario(tmp_path, broker_heap_mb=1024))
    assert spec.broker_heap_mb == 1024
    (tmp_path / "config").mkdir()
    dist = SimpleNamespace(release=SimpleNamespace(log4j="log4j2"), classpath=lambda: "kafka.jar")
    args = (Supervisor(owner="test:heap"), tmp_path, dist, tmp_path / "config" / "node.properties")
    assert heaps(Broker("broker-1", *args, 1, 9092, heap_mb=spec.broker_heap_mb)) == ["-Xmx1024m"]
    assert heaps(Broker("broker-1", *args, 1, 9092)) == [f"-Xmx{DEFAULT_HEAP_MB}m"]
    assert heaps(KRaftController("controller-1", *args)) == [f"-Xmx{DEFAULT_HEAP_MB}m"]
    # another heap is another cluster: a pool does not lend one for the other
    assert share_key("local", spec) != share_key("local", cluster_spec(scenario(tmp_path)))


def test_someone_else_s_brokers_are_not_ours_to_size(tmp_path):
    with pytest.raises(ScenarioError) as e:
        scenario(tmp_path, backend="external", bootstrap_servers="127.0.0.1:9092", broker_heap_mb=1024)
    assert "cluster.broker_heap_mb (line 4): an external cluster is not started by the harness" in str(e.value)
