"""workload: each driver family's own section (harness/scenario/workload.py).

A scenario writes only the section of the family its members are; another's is refused with
the reason. The keys that moved into a section are refused where they were, naming where they
are now. A variant of another protocol keeps its own family's section only. The shipped
scenarios and the docs' examples are written the new way and validate.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from harness.components import versions
from harness.scenario import Scenario, Workload, load_scenario, validation_problems
from harness.scenario.variants import Axes, variant
from harness.scenario.workload import FAMILIES, MOVED_TO_SECTIONS, family_of
from oracle.protocols import GENERATIONS
from runtime.errors import ScenarioError
from tests.lines import unlined

REPO = Path(__file__).resolve().parents[2]

BASE = {
    "name": "t",
    "duration_s": 30,
    "cluster": {"kafka": "3.9", "brokers": 1},
    "topics": [{"name": "events", "partitions": 4}],
    "workload": {"consumers": 2},
}

# Which family runs a generation's members on each driver, written out here rather than derived:
# the table in workload.py must agree with it.
FAMILY = {
    ("zk-eager", "librdkafka"): "zk_eager",
    ("classic-eager", "librdkafka"): "librdkafka",
    ("classic-eager", "java"): "java",
    ("classic-static", "librdkafka"): "librdkafka",
    ("classic-static", "java"): "java",
    ("classic-cooperative", "librdkafka"): "librdkafka",
    ("classic-cooperative", "java"): "java",
    ("consumer", "librdkafka"): "librdkafka",
    ("consumer-static", "librdkafka"): "librdkafka",
    ("coordinator-v1", "librdkafka"): "coordinator",
    ("coordinator-v2", "librdkafka"): "coordinator",
    ("coordinator-v3", "librdkafka"): "coordinator",
}
SETTINGS = {  # a setting of each section, not its default
    "librdkafka": {"revoke_hold_ms": 250},
    "java": {},
    "coordinator": {"instances": 2},
    "zk_eager": {"rebalance_max_retries": 2},
}


def data_for(protocol: str, driver: str = "librdkafka", **workload) -> dict:
    data = copy.deepcopy(BASE)
    data["cluster"]["kafka"] = versions.release_meeting(GENERATIONS[protocol].needs) or "3.9"
    data["workload"].update(protocol=protocol, driver=driver, **workload)
    return data


def problems(data: dict) -> list[tuple[str, str]]:
    try:
        Scenario.model_validate(data)
    except Exception as e:  # a pydantic ValidationError
        return validation_problems(e)
    return []


def test_every_generation_and_driver_has_exactly_the_expected_family():
    pairs = {(g.name, driver) for g in GENERATIONS.values() for driver in g.drivers}
    assert pairs == set(FAMILY)
    assert {pair: family_of(GENERATIONS[pair[0]], pair[1]).section for pair in pairs} == FAMILY
    assert set(FAMILIES) == set(SETTINGS) == set(FAMILY.values())
    for family in FAMILIES.values():  # each is a section of the workload, and runs some generation
        assert family.section in Workload.model_fields and family.protocols


@pytest.mark.parametrize("section", list(SETTINGS))
@pytest.mark.parametrize("protocol, driver", list(FAMILY), ids=[f"{p}-{d}" for p, d in FAMILY])
def test_only_the_members_familys_section_is_accepted(protocol, driver, section):
    data = data_for(protocol, driver, **{section: SETTINGS[section]})
    own = FAMILY[protocol, driver]
    if section == own:
        scenario = Scenario.model_validate(data)
        assert getattr(scenario.workload, section).model_dump(exclude_unset=True) == SETTINGS[section]
        assert scenario.workload.family.section == own
        return
    ((key, reason),) = problems(data)
    assert key == f"workload.{section}"
    other = FAMILIES[section]
    assert reason == (
        f"settings for {', '.join(other.protocols)} ({other.about}); this workload's members "
        f"(protocol: {protocol}, driver: {driver}) take workload.{own}"
    )


def test_the_refusal_reads_as_the_docs_say(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data_for("classic-eager", zk_eager={"rebalance_backoff_ms": 500})))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = (
        "workload.zk_eager: settings for zk-eager (the ZooKeeper-era consumer); this workload's members "
        "(protocol: classic-eager, driver: librdkafka) take workload.librdkafka"
    )
    assert unlined(str(info.value)) == f"{path}: {message}"
    assert message in (REPO / "docs" / "inputs.md").read_text()


MOVED = {
    "revoke_hold_ms": 3000,
    "processing": "worker",
    "test_hooks": {"consume_unassigned": {"member": "consumer-1", "partition": 0}},
}


@pytest.mark.parametrize("key", list(MOVED))
def test_a_key_that_moved_is_refused_naming_where_it_is_now(tmp_path, key):
    assert set(MOVED) == set(MOVED_TO_SECTIONS)
    old = data_for("classic-eager", **{key: MOVED[key]})
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(old))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert unlined(info.value.problems) == [
        (
            f"workload.{key}",
            f"moved: write it as workload.librdkafka.{key} (a setting only librdkafka members have, in their section)",
        )
    ]
    documented = "workload.processing: moved: write it as workload.librdkafka.processing (a setting only"
    assert documented in (REPO / "docs" / "inputs.md").read_text()
    # Written where the message says, it loads, and means what it meant.
    new = data_for("classic-eager", librdkafka={key: MOVED[key]})
    path.write_text(yaml.safe_dump(new))
    assert getattr(load_scenario(path).workload.librdkafka, key) is not None


def test_a_moved_key_is_one_problem_among_the_others(tmp_path):
    data = data_for("classic-eager", revoke_hold_ms=5, consumerz=1, processing="worker")
    data["topics"][0]["partitions"] = 0
    assert sorted(key for key, _ in problems(data)) == [
        "topics[1].partitions",
        "workload.consumerz",
        "workload.processing",
        "workload.revoke_hold_ms",
    ]
    assert dict(problems(data))["workload.consumerz"] == "unknown key"


def test_a_moved_key_is_only_moved_where_it_was():
    data = data_for("classic-eager")
    data["workload"]["producer"] = {"processing": "worker"}  # never a producer's key
    assert problems(data) == [("workload.producer.processing", "unknown key")]


@pytest.mark.parametrize(
    "base_protocol, base_driver, section",
    [
        ("classic-eager", "librdkafka", "librdkafka"),
        ("classic-static", "java", "java"),
        ("coordinator-v3", "librdkafka", "coordinator"),
        ("zk-eager", "librdkafka", "zk_eager"),
    ],
)
def test_a_variant_keeps_its_own_familys_section_and_drops_the_others(base_protocol, base_driver, section):
    base = data_for(base_protocol, base_driver, **{section: SETTINGS[section]})
    Scenario.model_validate(base)
    for protocol, generation in GENERATIONS.items():
        data, _ = variant(base, Axes(protocol=protocol))
        scenario = Scenario.model_validate(data)  # every generation runs the variant
        own = scenario.workload.family.section
        assert [s for s in FAMILIES if s in data["workload"]] == ([section] if own == section else []), protocol
        assert scenario.workload.driver in generation.drivers


def test_a_variant_leaves_a_driver_no_generation_has_to_validation():
    base = data_for("classic-eager", driver="javaa")
    data, _ = variant(base, Axes(protocol="classic-cooperative"))
    assert data["workload"]["driver"] == "javaa"
    assert [key for key, _ in problems(data)] == ["workload.driver"]


def test_an_isolated_scenario_writes_no_section_it_did_not_have():
    """A run on a shared cluster renames the topics a test hook reads; a copy's update counts as
    written, so no other family's scenario may gain a librdkafka section on the way."""
    for protocol, driver in FAMILY:
        isolated = Scenario.model_validate(data_for(protocol, driver)).isolated("rl-x-")
        Scenario.model_validate(isolated.model_dump(exclude_unset=True))
    hooks = {"test_hooks": {"consume_unassigned": {"member": "consumer-1", "partition": 0, "topic": "events"}}}
    isolated = Scenario.model_validate(data_for("classic-eager", librdkafka=hooks)).isolated("rl-x-")
    assert isolated.workload.librdkafka.test_hooks.consume_unassigned.topic == "rl-x-events"
    Scenario.model_validate(isolated.model_dump(exclude_unset=True))


@pytest.mark.parametrize("path", sorted((REPO / "scenarios").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_scenario_loads(path):
    load_scenario(path)


def _workload_examples() -> list[tuple[str, dict]]:
    """Every YAML example of the README and docs/ that says something under `workload:` — but
    docs/extending.md's, the toy extension's, which need it installed (test_docs_extending.py)."""
    found = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        if doc.name == "extending.md":
            continue
        for i, block in enumerate(re.findall(r"```yaml\n(.*?)```", doc.read_text(), flags=re.S)):
            data = yaml.safe_load(block)
            if isinstance(data, dict) and isinstance(data.get("workload"), dict):
                found.append((f"{doc.name}#{i}", data))
    return found


@pytest.mark.parametrize("where, example", _workload_examples(), ids=[w for w, _ in _workload_examples()])
def test_the_docs_workload_examples_validate(where, example):
    """A fragment is completed with what any scenario needs: a name, a length, a topic, and the
    Kafka line its generation runs on."""
    protocol = example["workload"].get("protocol", "classic-eager")
    data = {
        "name": "example",
        "duration_s": 60,
        "topics": [{"name": "events", "partitions": 6}],
        "cluster": {"kafka": versions.release_meeting(GENERATIONS[protocol].needs) or "3.9"},
        **example,
    }
    assert problems(data) == [], where
