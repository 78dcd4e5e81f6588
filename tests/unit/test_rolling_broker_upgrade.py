"""rolling-broker-upgrade: which node restarts when, on which release, with which settings, and
when the upgrade is finalized (against FakeTargets); what validation refuses (the scenario)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from faults.catalogue import from_spec
from faults.rolling_broker_upgrade import INTER_BROKER_PROTOCOL
from harness.scenario import Scenario, validation_problems
from tests.fake_targets import FakeTargets

SMOKE = yaml.safe_load((Path(__file__).resolve().parents[2] / "scenarios" / "smoke.yaml").read_text())


def upgraded(targets: FakeTargets, **options) -> list[tuple]:
    fault = from_spec({"fault_id": "f1", "kind": "rolling-broker-upgrade", "at_s": 0, "interval_s": 0, **options})
    details = fault.inject(targets)
    fault._thread.join(timeout=10)
    assert not fault.in_progress
    return details, targets.actions()


def test_zookeeper_mode_pins_the_protocol_during_the_roll_then_raises_it_with_a_second_roll():
    details, actions = upgraded(FakeTargets(brokers=2, kafka="3.8.1"), to="3.9.2")
    assert details == {
        "from": "3.8.1",
        "to": "3.9.2",
        "metadata": "zookeeper",
        "order": ["broker-1", "broker-2"],
        "pinned": {INTER_BROKER_PROTOCOL: "3.8"},
    }
    assert actions == [
        ("restart_node", "broker-1", "3.9.2", {INTER_BROKER_PROTOCOL: "3.8"}),
        ("restart_node", "broker-2", "3.9.2", {INTER_BROKER_PROTOCOL: "3.8"}),
        ("restart_node", "broker-1", None, {INTER_BROKER_PROTOCOL: "3.9"}),
        ("restart_node", "broker-2", None, {INTER_BROKER_PROTOCOL: "3.9"}),
        ("finalize_features", "3.9.2"),
    ]


def test_within_a_line_the_protocol_stays_and_finalizing_needs_no_second_roll():
    _, actions = upgraded(FakeTargets(brokers=2, kafka="3.9.1"), to="3.9.2")
    assert actions == [
        ("restart_node", "broker-1", "3.9.2", {INTER_BROKER_PROTOCOL: "3.9"}),
        ("restart_node", "broker-2", "3.9.2", {INTER_BROKER_PROTOCOL: "3.9"}),
        ("finalize_features", "3.9.2"),
    ]


def test_kraft_upgrades_the_controller_first_then_each_broker_then_the_metadata_version():
    details, actions = upgraded(FakeTargets(brokers=3, kafka="4.3.1", metadata="kraft"), to="4.4")
    assert details["order"] == ["controller-1", "broker-1", "broker-2", "broker-3"]
    assert "pinned" not in details and details["to"] == "4.4.0"
    assert actions == [
        ("restart_node", "controller-1", "4.4.0", {}),
        ("restart_node", "broker-1", "4.4.0", {}),
        ("restart_node", "broker-2", "4.4.0", {}),
        ("restart_node", "broker-3", "4.4.0", {}),
        ("finalize_features", "4.4.0"),
    ]


def test_without_finalize_the_cluster_stays_at_the_old_feature_level():
    _, actions = upgraded(FakeTargets(brokers=1, kafka="3.8.1"), to="3.9.2", finalize=False)
    assert actions == [("restart_node", "broker-1", "3.9.2", {INTER_BROKER_PROTOCOL: "3.8"})]


def test_a_heal_mid_round_stops_it_and_starts_any_node_left_down():
    targets = FakeTargets(brokers=3, kafka="3.8.1")
    fault = from_spec({"fault_id": "f1", "kind": "rolling-broker-upgrade", "at_s": 0, "to": "3.9", "interval_s": 30})
    fault.inject(targets)
    targets.stopped.add("broker-2")  # as if the heal came while broker-2 was down
    fault.heal(targets)
    assert [a for a in targets.actions() if a[0] == "restart_node"] == [
        ("restart_node", "broker-1", "3.9.2", {INTER_BROKER_PROTOCOL: "3.8"})
    ]
    assert ("restart", "broker-2") in targets.actions() and "finalize_features" not in {a[0] for a in targets.actions()}


# --- validation -----------------------------------------------------------------------------


def problems(kafka: str, to: str, backend: str = "local", **cluster) -> list[str]:
    data = copy.deepcopy(SMOKE)
    data["cluster"] = {"backend": backend, "kafka": kafka, **cluster}
    data["duration_s"] = 200
    data["faults"] = [{"kind": "rolling-broker-upgrade", "at_s": 5, "to": to}]
    try:
        Scenario.model_validate(data)
    except ValidationError as e:
        return [f"{key}: {reason}" for key, reason in validation_problems(e)]
    return []


def test_an_upgrade_to_a_newer_release_is_accepted():
    assert problems("3.8.1", "3.9.2") == []
    assert problems("4.3.1", "4.4.0") == []


@pytest.mark.parametrize(
    ("kafka", "to", "said"),
    [
        ("3.9.2", "3.8.1", "faults[1].to: Kafka 3.8.1 is a downgrade (Kafka 3.9.2); an upgrade goes to a newer one"),
        ("3.9.2", "3.9.2", "faults[1].to: Kafka 3.9.2 is the release the cluster runs (Kafka 3.9.2)"),
        ("3.9.2", "4.4.0", "faults[1].to: Kafka 4.4.0 runs without ZooKeeper: a ZooKeeper-mode cluster"),
    ],
)
def test_a_downgrade_a_standstill_and_leaving_zookeeper_are_refused(kafka, to, said):
    [problem] = problems(kafka, to)
    assert problem.startswith(said)


def test_a_release_the_catalogue_lacks_is_refused_with_its_reason():
    [problem] = problems("3.9.2", "9.9.9")
    assert problem.startswith("faults[1].to: ") and "9.9.9" in problem


def test_the_upgrade_owns_the_inter_broker_protocol():
    [problem] = problems("3.8.1", "3.9.2", broker_config={INTER_BROKER_PROTOCOL: "3.8"})
    assert problem.startswith(f"faults[1].to: cluster.broker_config sets {INTER_BROKER_PROTOCOL}")


def test_chained_upgrades_are_each_held_to_the_release_before_them():
    data = copy.deepcopy(SMOKE)
    data["cluster"] = {"kafka": "3.8.1"}
    data["duration_s"] = 400
    data["faults"] = [
        {"kind": "rolling-broker-upgrade", "at_s": 5, "to": "3.9.2"},
        {"kind": "rolling-broker-upgrade", "at_s": 200, "to": "3.9.1"},
    ]
    with pytest.raises(ValidationError) as e:
        Scenario.model_validate(data)
    assert [key for key, _ in validation_problems(e.value)] == ["faults[2].to"]


def test_the_compose_backend_cannot_restart_a_node_on_another_release():
    [problem] = problems("3.8.1", "3.9.2", backend="compose")
    assert problem == (
        "faults[1].kind: the compose backend cannot restart the cluster's nodes on another Kafka release: "
        "each of its images holds one Kafka release"
    )


# --- rolling-client-upgrade -----------------------------------------------------------------


def test_each_member_is_restarted_in_turn_on_the_new_client():
    from faults.base import MemberChanges

    targets = FakeTargets(consumers=2)
    fault = from_spec(
        {
            "fault_id": "f1",
            "kind": "rolling-client-upgrade",
            "at_s": 0,
            "to": "confluent-kafka==2.16.1",
            "interval_s": 0,
        }
    )
    assert fault.inject(targets) == {"order": ["consumer-1", "consumer-2"], "to": "confluent-kafka==2.16.1"}
    fault._thread.join(timeout=10)
    changes = MemberChanges(client="confluent-kafka==2.16.1")
    assert targets.actions() == [
        ("kill", "consumer-1", 15),
        ("restart", "consumer-1", changes),
        ("kill", "consumer-2", 15),
        ("restart", "consumer-2", changes),
    ]


def client_problems(to: str, client: str | None = "confluent-kafka==2.10.1", **workload) -> list[str]:
    data = copy.deepcopy(SMOKE)
    data["cluster"] = {"kafka": "3.9.2"}
    data["workload"] = {**data["workload"], **({"client": client} if client else {}), **workload}
    data["faults"] = [{"kind": "rolling-client-upgrade", "at_s": 5, "to": to}]
    try:
        Scenario.model_validate(data)
    except ValidationError as e:
        return [f"{key}: {reason}" for key, reason in validation_problems(e)]
    return []


def test_a_client_upgrade_goes_to_a_newer_release_the_driver_takes():
    assert client_problems("confluent-kafka==2.16.1") == []
    [older] = client_problems("confluent-kafka==2.6.1")
    assert older == (
        "faults[1].to: confluent-kafka==2.6.1 is a downgrade (confluent-kafka==2.10.1); an upgrade goes to a newer release"
    )
    [other] = client_problems("kafka-clients==3.9.2")
    assert other.startswith("faults[1].to: the librdkafka driver takes a release of confluent-kafka")
    [floor] = client_problems("confluent-kafka==1.9.2")
    assert floor.startswith("faults[1].to: confluent-kafka==1.9.2: below the floor")
    [same] = client_problems("confluent-kafka==2.16.1", client=None)  # the pinned default
    assert same.startswith("faults[1].to: confluent-kafka==2.16.1 is the client the members run")


def test_a_round_that_breaks_is_said_by_its_heal_not_lost_in_its_thread():
    class Breaking(FakeTargets):
        def finalize_features(self, kafka, started_mono_ms):
            raise RuntimeError("kafka-features describe did not say metadata.version's levels")

    targets = Breaking(brokers=1, kafka="4.3.1", metadata="kraft")
    fault = from_spec({"fault_id": "f1", "kind": "rolling-broker-upgrade", "at_s": 0, "to": "4.4.0", "interval_s": 0})
    fault.inject(targets)
    fault._thread.join(timeout=10)
    with pytest.raises(RuntimeError, match="the round stopped: RuntimeError: kafka-features describe"):
        fault.heal(targets)


class RestartBreaks(FakeTargets):
    """A member whose restart fails (its new incarnation does not start), as a real one may."""

    def __init__(self, breaks: str, **kwargs):
        super().__init__(**kwargs)
        self.breaks = breaks

    def restart(self, name, changes=None):
        if name == self.breaks:
            raise RuntimeError("its process exited at once")
        super().restart(name, changes)


def test_a_client_upgrade_that_breaks_on_a_member_is_said_by_its_heal_and_goes_no_further():
    targets = RestartBreaks("consumer-1", consumers=3)
    fault = from_spec(
        {
            "fault_id": "f1",
            "kind": "rolling-client-upgrade",
            "at_s": 0,
            "to": "confluent-kafka==2.16.1",
            "interval_s": 0,
        }
    )
    fault.inject(targets)
    fault._thread.join(timeout=10)
    assert targets.actions() == [("kill", "consumer-1", 15)]  # consumer-2 and consumer-3 untouched
    with pytest.raises(RuntimeError, match="the round stopped at consumer-1: RuntimeError: its process exited"):
        fault.heal(targets)
