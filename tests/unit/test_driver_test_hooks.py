"""workload.librdkafka.test_hooks: test-only switches of the librdkafka driver (docs/history.md,
"Test hooks"). Off by default, refused where the driver has none, and handed only to the member
they name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.run.clients import WorkloadProcesses
from harness.scenario import load_scenario
from runtime.errors import ScenarioError
from tests.lines import unlined

BASE = {
    "name": "t",
    "duration_s": 30,
    "cluster": {"kafka": "3.9", "brokers": 1},
    "topics": [{"name": "events", "partitions": 4}, {"name": "audit", "partitions": 2}],
    "workload": {"consumers": 3, "protocol": "classic-static"},
}


def scenario(tmp_path: Path, test_hooks: dict | None = None, **workload):
    if test_hooks is not None:
        workload["librdkafka"] = {"test_hooks": test_hooks}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({**BASE, "workload": {**BASE["workload"], **workload}}, sort_keys=False))
    return load_scenario(path)


def hooks_of(s, member: str):
    processes = WorkloadProcesses.__new__(WorkloadProcesses)  # only the scenario is needed to pick hooks
    processes.scenario = s
    return processes.test_hooks_of(member)


def test_off_unless_given(tmp_path):
    s = scenario(tmp_path)
    assert s.workload.librdkafka.test_hooks is None
    assert hooks_of(s, "consumer-1") is None


def test_each_member_gets_only_its_own_switches(tmp_path):
    s = scenario(
        tmp_path,
        test_hooks={
            "consume_unassigned": {"member": "consumer-2", "partition": 1},
            "sigterm_after_join": {"member": "consumer-3", "join": 2},
        },
    )
    assert hooks_of(s, "consumer-1") is None
    assert hooks_of(s, "consumer-2") == {
        "consume_unassigned": {"topic": "events", "partition": 1}
    }  # the produced topic
    assert hooks_of(s, "consumer-3") == {"sigterm_after_join": {"join": 2}}


def test_a_topic_can_be_named(tmp_path):
    s = scenario(
        tmp_path, test_hooks={"consume_unassigned": {"member": "consumer-1", "partition": 0, "topic": "audit"}}
    )
    assert hooks_of(s, "consumer-1") == {"consume_unassigned": {"topic": "audit", "partition": 0}}


@pytest.mark.parametrize(
    "workload, where",
    [
        (
            {"test_hooks": {"sigterm_after_join": {"member": "consumer-1", "join": 0}}},
            "workload.librdkafka.test_hooks.sigterm_after_join.join",
        ),
        (
            {"test_hooks": {"consume_unassigned": {"member": "c2", "partition": 0}}},
            "workload.librdkafka.test_hooks.consume_unassigned.member",
        ),
        (
            {"test_hooks": {"consume_unassigned": {"member": "consumer-1", "partition": -1}}},
            "workload.librdkafka.test_hooks.consume_unassigned.partition",
        ),
        ({"test_hooks": {"drop_everything": True}}, "workload.librdkafka.test_hooks.drop_everything"),
    ],
)
def test_bad_values_are_named(tmp_path, workload, where):
    with pytest.raises(ScenarioError) as info:
        scenario(tmp_path, **workload)
    assert where in unlined(str(info.value))


@pytest.mark.parametrize(
    "workload, reason",
    [
        ({"driver": "java", "protocol": "classic-eager"}, "(protocol: classic-eager, driver: java) take workload.java"),
        ({"protocol": "coordinator-v2"}, "(protocol: coordinator-v2, driver: librdkafka) take workload.coordinator"),
    ],
)
def test_hooks_only_where_the_driver_has_them(tmp_path, workload, reason):
    with pytest.raises(ScenarioError) as info:
        scenario(tmp_path, test_hooks={"consume_unassigned": {"member": "consumer-1", "partition": 0}}, **workload)
    ((key, why),) = unlined(info.value.problems)
    assert key == "workload.librdkafka" and reason in why


def test_sigterm_after_join_needs_a_joingroup(tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                **BASE,
                "cluster": {"kafka": "4.1", "brokers": 1},
                "workload": {
                    "protocol": "consumer",
                    "librdkafka": {"test_hooks": {"sigterm_after_join": {"member": "consumer-1", "join": 1}}},
                },
            }
        )
    )
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert "classic protocols only" in unlined(str(info.value))


def test_a_hook_names_a_member_the_run_starts_and_a_partition_that_exists(tmp_path):
    from harness.scenario import load_scenario
    from runtime.errors import LabError

    path = tmp_path / "hooks.yaml"
    path.write_text("""name: hooks
duration_s: 20
topics: [{name: events, partitions: 4}]
workload:
  consumers: 2
  librdkafka:
    test_hooks:
      consume_unassigned: {member: consumer-5, partition: 4}
""")
    with pytest.raises(LabError) as e:
        load_scenario(path)
    message = unlined(str(e.value))
    assert (
        "workload.librdkafka.test_hooks.consume_unassigned.member: consumer-5 is not a member this run starts"
        in message
    )
    assert "workload.librdkafka.test_hooks.consume_unassigned.partition: events has 4 partitions (0..3)" in message
