"""protocol-migration: what it refuses (and why, in Kafka's terms), and what it does to the
members — each stopped, its exit awaited, started again on the other generation."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import yaml

from faults import catalogue
from faults.base import MemberChanges
from harness.scenario import load_scenario
from runtime.errors import ScenarioError
from tests.fake_targets import FakeTargets
from tests.lines import unlined

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "protocol-migration.yaml"


def data() -> dict:
    return yaml.safe_load(SCENARIO.read_text())


def problems(tmp_path: Path, d: dict) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    try:
        load_scenario(path)
    except ScenarioError as e:
        return unlined(str(e))
    return ""


def test_the_scenario_there_and_back_is_valid_and_sets_the_brokers_for_both_protocols(tmp_path):
    s = load_scenario(SCENARIO)
    config = s.broker_config()
    # the policy said explicitly; KIP-848's timing, for the members that will run it
    assert config["group.consumer.migration.policy"] == "bidirectional"
    assert config["group.consumer.session.timeout.ms"] == s.workload.session_timeout_ms
    assert [f.to for f in s.faults] == ["consumer", "classic-eager"]


@pytest.mark.parametrize(
    "change, said",
    [
        ({"cluster": {"kafka": "3.9", "brokers": 1}}, "Kafka 3.9.2 in ZooKeeper mode cannot migrate a group online"),
        # the consumer protocol in early access: 3.8 has the migration code, off; 3.7 has none
        ({"cluster": {"kafka": "3.8.1", "metadata": "kraft", "brokers": 1}}, "Kafka 3.8.1 cannot migrate"),
        ({"cluster": {"kafka": "3.7.2", "metadata": "kraft", "brokers": 1}}, "Kafka 3.7.2 cannot migrate"),
        (
            {"workload": {"protocol": "classic-cooperative"}},
            "cooperative-sticky assignor (librdkafka) writes user data into their assignments",
        ),
        ({"faults": [{"kind": "protocol-migration", "at_s": 3, "to": "classic-static"}]}, "the members already run"),
        (
            {"faults": [{"kind": "protocol-migration", "at_s": 3, "to": "zk-eager"}]},
            "the brokers migrate only between Kafka's classic and consumer group protocols",
        ),
        (
            {"faults": [{"kind": "protocol-migration", "at_s": 3, "to": "consumer", "assignor": "range-x"}]},
            "faults[1].assignor: consumer assigns with uniform, range, not 'range-x'",
        ),
        (
            {"faults": [{"kind": "protocol-migration", "at_s": 3, "to": "consumer", "members": ["consumer-9"]}]},
            "no member 'consumer-9'",
        ),
    ],
)
def test_refused_with_the_reason(tmp_path, change, said):
    d = data()
    for key, value in change.items():
        d[key] = {**d[key], **value} if isinstance(value, dict) else value
    if "protocol" in change.get("workload", {}):
        d["workload"].pop("assignor")
    assert said in problems(tmp_path, d)


@pytest.mark.parametrize("kafka", ["4.0.2", "4.1", "4.4.0"])
def test_every_release_with_the_consumer_protocol_ga_migrates(tmp_path, kafka):
    d = data()
    d["cluster"]["kafka"] = kafka
    assert problems(tmp_path, d) == ""


def test_one_migration_at_a_time(tmp_path):
    d = data()
    d["faults"][1]["at_s"] = 10  # the first moves four members until workload+21s
    assert "faults[2].at_s: another protocol-migration moves the members until workload+21s" in problems(tmp_path, d)


def test_each_member_in_turn_is_stopped_and_started_on_the_other_generation():
    fault = catalogue.from_spec(
        {"fault_id": "f1", "kind": "protocol-migration", "at_s": 0, "to": "consumer", "interval_s": 0}
    )
    targets = FakeTargets(consumers=3)
    assert fault.inject(targets) == {"order": ["consumer-1", "consumer-2", "consumer-3"], "to": "consumer"}
    fault._thread.join(5)
    changes = MemberChanges(protocol="consumer")
    assert targets.actions() == [
        step
        for m in ("consumer-1", "consumer-2", "consumer-3")
        for step in (("kill", m, signal.SIGTERM), ("restart", m, changes))
    ]
    fault.heal(targets)  # every member runs: nothing to start again
    assert len(targets.actions()) == 6


def test_a_migration_that_breaks_on_a_member_is_said_by_its_heal_and_goes_no_further():
    class RestartBreaks(FakeTargets):
        def restart(self, name, changes=None):
            if name == "consumer-1":
                raise RuntimeError("its process exited at once")
            super().restart(name, changes)

    fault = catalogue.from_spec(
        {"fault_id": "f1", "kind": "protocol-migration", "at_s": 0, "to": "consumer", "interval_s": 0}
    )
    targets = RestartBreaks(consumers=3)
    fault.inject(targets)
    fault._thread.join(5)
    assert targets.actions() == [("kill", "consumer-1", signal.SIGTERM)]  # consumer-2 and consumer-3 untouched
    with pytest.raises(RuntimeError, match="the round stopped at consumer-1: RuntimeError: its process exited"):
        fault.heal(targets)


def test_a_migration_after_a_rolling_broker_upgrade_is_held_to_the_upgraded_release(tmp_path):
    # KRaft 3.8.1 has the consumer protocol in early access only: no online migration there; after
    # the upgrade to 4.4.0 every fact of the release (kafka, consumer_protocol …) is 4.4.0's.
    d = data()
    d["cluster"] = {**d["cluster"], "kafka": "3.8.1", "metadata": "kraft", "brokers": 1}
    d["duration_s"] = 300
    first, second = d["faults"]
    d["faults"] = [
        {"kind": "rolling-broker-upgrade", "at_s": 3, "to": "4.4.0", "interval_s": 0},
        {**first, "at_s": 120},
        {**second, "at_s": 180},
    ]
    assert problems(tmp_path, d) == ""
    d["faults"] = d["faults"][1:]  # without the upgrade, the same migrations are refused on 3.8.1
    assert "Kafka 3.8.1 cannot migrate a group online" in problems(tmp_path, d)


def test_the_refusal_says_the_catalogues_facts():
    from harness.components import versions

    for text in versions.TESTED_KAFKA_RELEASES:
        release = versions.kafka_release(text)
        assert (release.group_migration_problem("kraft") is None) == release.migrates_groups_online
        assert release.group_migration_problem("zookeeper") is not None
        if release.consumer_protocol is None:  # 3.9 included: it has none to migrate to
            assert "it has no consumer protocol" in release.group_migration_problem("kraft")
