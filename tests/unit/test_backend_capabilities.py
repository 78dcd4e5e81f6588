"""What a backend can do is data on its class; what a fault kind needs, data on its spec; a
scenario asking its backend for what it lacks is refused at validation, the reason derived
from the capability it lacks (faults/capabilities.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from faults import catalogue
from faults.capabilities import Capability
from harness.cluster.backend import BACKENDS, backend_class
from harness.scenario import Scenario, validation_problems

SMOKE = yaml.safe_load((Path(__file__).resolve().parents[2] / "scenarios" / "smoke.yaml").read_text())

# One entry of each kind, on the local backend's smoke scenario (a topic pattern for create-topic).
ENTRIES = {
    "pause": {"target": "broker-1", "duration_s": 3},
    "crash": {"target": "consumer-3", "restart_after_s": 2},
    "network": {"target": "consumer-1", "duration_s": 3},
    "zk-session-expiry": {"target": "broker-1"},
    "poll-stall": {"target": "consumer-1", "duration_s": 3},
    "rolling-restart": {"targets": "brokers"},
    "join-storm": {"consumers": 2},
    "scale": {"consumers": 2},
    "add-partitions": {"topic": "events", "partitions": 12},
    "create-topic": {"topic": "events-2", "partitions": 3},
    "rolling-broker-upgrade": {"to": "3.9.2"},
    "rolling-client-upgrade": {"to": "confluent-kafka==2.99.0"},
    "protocol-migration": {"to": "consumer"},
    "message": {"target": "consumer-1", "duration_s": 3, "api": "Heartbeat", "action": "delay"},
}
# Kinds the smoke scenario's Kafka (3.9, ZooKeeper mode) cannot have, and the cluster that can.
ELSEWHERE = {"protocol-migration": {"kafka": "4.1"}}


def scenario(backend: str = "local", faults=(), **cluster) -> dict:
    data = copy.deepcopy(SMOKE)
    data["cluster"] = {"backend": backend, "kafka": "3.9.1", **cluster}
    if backend == "external":
        data["cluster"].pop("brokers", None)
        data["cluster"]["bootstrap_servers"] = "127.0.0.1:9092"
    data["workload"]["topics"] = None
    data["workload"]["topic_pattern"] = "^events.*"
    data["faults"] = [{"kind": kind, "at_s": 5, **ENTRIES[kind]} for kind in faults]
    return data


def problems(data: dict) -> list[str]:
    try:
        Scenario.model_validate(data)
    except ValidationError as e:
        return [f"{key}: {reason}" for key, reason in validation_problems(e)]
    return []


def test_each_backend_declares_its_capabilities():
    declared = {name: backend_class(name).capabilities for name in BACKENDS}
    assert all(isinstance(c, frozenset) and c <= frozenset(Capability) for c in declared.values())
    # The clusters the harness runs itself can do all a fault asks, but for a container's image holding
    # one release; someone else's, only its clients.
    assert declared["local"] == frozenset(Capability)
    assert declared["compose"] == frozenset(Capability) - {Capability.NODE_UPGRADES}
    assert declared["external"] == {Capability.RUN_PROCESSES}
    # Every backend acts on the processes a run starts: they are this machine's.
    assert all(Capability.RUN_PROCESSES in c for c in declared.values())


def test_every_kind_states_its_needs_in_the_vocabulary():
    assert set(ENTRIES) == set(catalogue.SPECS), "a new kind: add an entry above"
    for kind, spec in catalogue.SPECS.items():
        entry = spec.model_validate({"kind": kind, "at_s": 5, **ENTRIES[kind]})
        needs = entry.needs_by_key()
        assert needs["kind"] == spec.needs and all(n <= frozenset(Capability) for n in needs.values()), kind
        assert frozenset().union(*needs.values()), f"{kind} needs nothing at all"


def test_every_kind_runs_on_a_backend_with_every_capability():
    assert problems(scenario(faults=[kind for kind in ENTRIES if kind not in ELSEWHERE])) == []
    for kind, cluster in ELSEWHERE.items():
        assert problems(scenario(faults=[kind], **cluster)) == [], kind


@pytest.mark.parametrize(
    "kind", [k for k, spec in catalogue.SPECS.items() if spec.needs - backend_class("external").capabilities]
)
def test_a_kind_whose_needs_the_backend_lacks_is_refused_with_the_reason(kind):
    lacks = [c for c in Capability if c in catalogue.SPECS[kind].needs - backend_class("external").capabilities]
    said = problems(scenario("external", [kind]))
    assert said == [f"faults[1].kind: {c.refusal('external')}" for c in lacks]


def test_the_reason_comes_from_the_backend_not_from_its_name(monkeypatch):
    """A backend that cannot do something — whichever — is refused what needs it, in its own name."""
    local = backend_class("local")
    monkeypatch.setattr(
        local, "capabilities", local.capabilities - {Capability.NETWORK_LANES, Capability.CLUSTER_NODES}
    )
    said = problems(scenario("local", ["network", "rolling-restart", "pause", "crash"]))
    assert said[0] == (
        "faults[1].kind: the local backend cannot cut or degrade network links: its clients and brokers "
        "do not talk through the harness's own Toxiproxy"
    )
    assert said[1] == (
        "faults[2].targets: the local backend cannot pause, stop or restart the cluster's brokers, "
        "ZooKeeper or coordinator: it does not run them"
    )
    assert said[2].startswith("faults[3].target: the local backend cannot pause, stop or restart the cluster's brokers")
    assert said[2].endswith("not 'broker-1'") and len(said) == 3  # the crash is a member's: accepted


def test_an_option_can_need_more_than_its_kind():
    """A rolling bounce of consumers needs only the run's processes; one of brokers, the cluster's."""
    data = scenario("external")
    data["faults"] = [
        {"kind": "rolling-restart", "targets": "consumers", "at_s": 5},
        {"kind": "zk-session-expiry", "target": "broker-1", "method": "network", "at_s": 5},
    ]
    said = problems(data)
    assert said == [
        f"faults[2].kind: {Capability.ZOOKEEPER_SESSIONS.refusal('external')}",
        f"faults[2].method: {Capability.NETWORK_LANES.refusal('external')}",
    ]
