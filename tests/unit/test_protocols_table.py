"""oracle/protocols.py: the one table of protocol generations, and everything that reads it
agreeing with it — the drivers, the assignor layouts, validation, compare, the oracle's policy."""

from __future__ import annotations

import importlib
from dataclasses import fields as dataclass_fields
from dataclasses import is_dataclass
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from harness.components import versions
from harness.scenario import Scenario, Workload
from harness.scenario.variants import Axes, variant
from oracle.assignors import LAYOUTS
from oracle.checks import CHECKS, not_applicable
from oracle.protocols import (
    ASSIGNORS,
    GENERATIONS,
    INCREMENTAL_PROTOCOLS,
    LACKING,
    LAYOUT_PROTOCOLS,
    PROTOCOLS,
    STICKY_ASSIGNORS,
    Generation,
    where,
)
from workloads.driver import Driver, MemberSpec, driver_of, protocol_fields

BASE = yaml.safe_load((Path(__file__).resolve().parents[2] / "scenarios" / "compare-pause.yaml").read_text())
EVERY = list(GENERATIONS.values())


def test_the_table_is_keyed_by_name_in_a_fixed_order():
    assert all(name == g.name for name, g in GENERATIONS.items())
    assert PROTOCOLS == (
        "zk-eager",
        "classic-eager",
        "classic-static",
        "classic-cooperative",
        "consumer",
        "consumer-static",
        "coordinator-v1",
        "coordinator-v2",
        "coordinator-v3",
    )
    assert where(classic=True) == ("classic-eager", "classic-static", "classic-cooperative")
    assert where(project_coordinator=True) == ("coordinator-v1", "coordinator-v2", "coordinator-v3")
    assert {"classic-cooperative", "consumer", "consumer-static"} == INCREMENTAL_PROTOCOLS


@pytest.mark.parametrize("generation", EVERY, ids=PROTOCOLS)
def test_every_driver_module_imports_and_runs_as_a_program(generation: Generation):
    assert next(iter(generation.drivers)) == "librdkafka"  # the scenario's default driver runs every generation
    for module in generation.drivers.values():
        assert callable(getattr(importlib.import_module(module), "main", None)), module
        driver = driver_of(module)  # a Driver, with the settings the harness fills in
        assert issubclass(driver, Driver) and is_dataclass(driver.Settings), module


def test_the_capabilities_say_what_the_generations_are():
    assert where(static_membership=True) == ("classic-static", "consumer-static")
    assert (
        where(group_protocol="consumer")
        == where(broker_timing=True)
        == where(member_epochs=True)
        == ("consumer", "consumer-static")
    )
    assert {g.name: g.assignor_runs_on for g in EVERY if g.assignor_runs_on != "group-leader"} == {
        "zk-eager": "each-member",
        "consumer": "broker",
        "consumer-static": "broker",
        "coordinator-v1": "project-coordinator",
    }
    for g in EVERY:
        assert g.classic == (g.group_protocol == "classic")
        assert (g.group_protocol is not None) == (g.group_home == "kafka"), g.name  # a Kafka client's group
        assert (g.coordinator_variant is not None) == g.project_coordinator, g.name


@pytest.mark.parametrize("generation", EVERY, ids=PROTOCOLS)
def test_a_members_spec_carries_its_generations_capabilities(generation: Generation):
    fields = protocol_fields(generation)
    assert fields["protocol"] == generation.name
    assert set(fields) == {f.name for f in dataclass_fields(MemberSpec)} & (
        {"protocol"} | {f.name for f in dataclass_fields(Generation)}
    )
    for name, value in fields.items():
        assert value == getattr(generation, "name" if name == "protocol" else name)


def test_only_the_classic_generations_run_on_the_java_driver():
    assert {g.name for g in EVERY if "java" in g.drivers} == set(where(classic=True))


@pytest.mark.parametrize("generation", EVERY, ids=PROTOCOLS)
def test_every_assignor_has_a_layout_or_is_declared_sticky(generation: Generation):
    assert generation.assignors and len(set(generation.assignors)) == len(generation.assignors)
    for assignor in generation.assignors:
        assert (assignor in LAYOUTS) != (assignor in STICKY_ASSIGNORS), assignor
    if generation.layouts:  # held to the layouts: at least one assignor it can use has one
        assert any(a in LAYOUTS for a in generation.assignors)


def test_kip848_epochs_are_no_layout_and_incremental():
    for g in EVERY:
        assert not (g.member_epochs and g.layouts) and (not g.member_epochs or g.incremental), g.name
    assert {g.name for g in EVERY if g.layouts} == LAYOUT_PROTOCOLS


@pytest.mark.parametrize("generation", [g for g in EVERY if g.needs], ids=[g.name for g in EVERY if g.needs])
def test_a_generations_need_is_met_by_a_default_release_and_says_why(generation: Generation):
    release = versions.kafka_release(versions.release_meeting(generation.needs))
    assert generation.kafka_why
    assert release.need_problem(generation.needs, release.default_metadata) is None


def test_validation_accepts_exactly_the_tables_protocols_and_assignors():
    for protocol in PROTOCOLS:
        workload = Workload(protocol=protocol)
        assert workload.generation is GENERATIONS[protocol]
        assert workload.effective_assignor == GENERATIONS[protocol].assignors[0]
    assert ASSIGNORS == ("range", "roundrobin", "cooperative-sticky", "uniform")
    with pytest.raises(ValidationError):
        Workload(protocol="classic-eagerly")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_compare_runs_every_generation_on_its_kafka_line(protocol: str):
    data, skipped = variant(BASE, Axes(protocol=protocol))
    scenario = Scenario.model_validate(data)
    generation = GENERATIONS[protocol]
    release = scenario.cluster.release
    assert release.need_problem(generation.needs, scenario.cluster.metadata) is None
    if generation.needs and versions.kafka_release(BASE["cluster"]["kafka"]).need_problem(
        generation.needs, versions.kafka_release(BASE["cluster"]["kafka"]).default_metadata
    ):
        assert release.version == versions.release_meeting(generation.needs)
    else:
        assert release.version == versions.kafka_release(BASE["cluster"]["kafka"]).version
    assert scenario.workload.effective_assignor == generation.assignors[0]
    assert skipped == not_applicable(protocol) and not set(skipped) & set(data["checks"])


def test_kip848_timing_goes_to_the_brokers_by_the_generations_row():
    """The consumer group protocol (KIP-848) moves session and heartbeat timing to the brokers:
    the harness sets it there. Decided by the row's broker_timing, not by a protocol's name."""
    base = {"name": "t", "duration_s": 30, "topics": [{"name": "events", "partitions": 4}]}
    timing = {"session_timeout_ms": 10_000, "heartbeat_interval_ms": 2000}
    for protocol, generation in GENERATIONS.items():
        assert generation.classic == (generation.group_protocol == "classic"), protocol
        scenario = Scenario.model_validate(
            {
                **base,
                "cluster": {"kafka": versions.release_meeting(generation.needs) or "3.9"},
                "workload": {"protocol": protocol, **timing},
            }
        )
        expected = {
            "group.consumer.session.timeout.ms": 10_000,
            "group.consumer.min.session.timeout.ms": 10_000,
            "group.consumer.heartbeat.interval.ms": 2000,
            "group.consumer.min.heartbeat.interval.ms": 2000,
        }
        assert scenario.broker_config() == (expected if generation.broker_timing else {}), protocol


def test_the_coordinator_generations_name_known_designs():
    from coordinator.group import variant as design

    for protocol in where(project_coordinator=True):
        generation = GENERATIONS[protocol]
        variant = design(generation.coordinator_variant)  # raises on an unknown design
        # Two tables, one fact: who runs the assignor.
        assert variant.coordinator_assigns == (generation.assignor_runs_on == "project-coordinator"), protocol


def test_checks_resting_on_a_fact_do_not_apply_where_a_generation_lacks_it():
    for check in CHECKS.values():
        fact, _ = getattr(check, "PREMISE", (None, ""))
        assert fact is None or (fact in Generation.__dataclass_fields__ and fact in LACKING), check.NAME
    assert not_applicable("zk-eager") == {
        "fenced-commits": "the ZooKeeper-era consumer has no commit fencing: a zombie's stale commits are accepted "
        "(its finding)",
        "commit-monotonicity": "the ZooKeeper-era consumer has no commit fencing: a zombie's stale commits are "
        "accepted (its finding), so committed offsets can move back",
    }
    assert all(not_applicable(p) == {} for p in PROTOCOLS if GENERATIONS[p].fenced_commits)
    assert not_applicable(None) == {} and not_applicable("a protocol of the future") == {}
