"""What fault kinds are told about a scenario: ``ScenarioFacts`` (faults/base.py).

A fault kind checks its entry against these facts only — the processes it may name, the
brokers, the Kafka line, the topics — never the Scenario itself, so faults/ never imports
the harness.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from faults.base import ScenarioFacts, release_facts
from faults.capabilities import Capability
from harness.cluster.backend import backend_class
from harness.components import client_envs, versions
from harness.scenario.workload import client_problem
from workloads.client_versions import parse_client

if TYPE_CHECKING:
    from harness.scenario.model import Scenario


def fault_facts(scenario: Scenario) -> ScenarioFacts:
    """What a fault entry is checked against, before any fault has run."""
    backend = scenario.cluster.backend
    capabilities = backend_class(backend).capabilities
    runs_nodes = Capability.CLUSTER_NODES in capabilities  # else: the run's own processes, nothing of the cluster
    return ScenarioFacts(
        targets=tuple(scenario.fault_targets()) if runs_nodes else (*scenario.member_slots(), "producer"),
        members=tuple(scenario.member_slots()),
        brokers=tuple(f"broker-{i}" for i in range(1, scenario.cluster.brokers + 1)) if runs_nodes else (),
        coordinator_instances=tuple(scenario.coordinator_instances()) if runs_nodes else (),
        zookeeper=scenario.cluster.zookeeper_mode and runs_nodes,
        driver=scenario.workload.driver,
        driver_stalls_polls=scenario.workload.driver_class.stalls_polls(),
        topics={t.name: t.partitions for t in scenario.topics},
        backend=backend,
        capabilities=capabilities,
        release=scenario.cluster.release if runs_nodes else None,
        kafka_release=versions.kafka_release,
        broker_config=dict(scenario.cluster.broker_config),
        client=_members_client(scenario),
        client_release=lambda text: _client_release(scenario, text),
        protocol=scenario.workload.protocol,
        assignor=scenario.workload.effective_assignor,
        driver_assignment_user_data=scenario.workload.driver_class.assignment_user_data,
        heartbeat_interval_ms=scenario.workload.heartbeat_interval_ms,
        hosted=scenario.workload.hosted,
        # the release's facts in the cluster's real mode (an external one's too: its members run on it)
        **release_facts(scenario.cluster.release, scenario.cluster.zookeeper_mode),
    )


def _members_client(scenario: Scenario):
    """The client release the members run: workload.client, else its distribution's default."""
    w = scenario.workload
    if w.client_requirement is not None:
        return w.client_requirement
    distribution = w.driver_class.client_distribution
    return client_envs.default_client(distribution, scenario.cluster.release.version) if distribution else None


def _client_release(scenario: Scenario, text: str):
    """Another client release for the members, or ValueError with why they cannot run it at all.
    Whether it runs the protocol the members run by then, against the brokers, is the schedule's
    check (faults.moved_members_problems), which knows what the faults before it changed."""
    w = scenario.workload
    requirement = parse_client(text)
    problem = client_problem(requirement, w.driver_class, w.driver, None)
    if problem:
        raise ValueError(problem)
    return requirement
