"""One-way cuts (faults/network.py ``direction``): a member's lane degraded in one direction only —
its toxics, what each declares it does, where it is refused, and how random_faults draws it."""

from __future__ import annotations

import copy

import pytest

from faults import catalogue
from faults.network import toxics_for
from harness.scenario import Scenario
from tests.fake_targets import FakeTargets
from tests.unit.test_backend_capabilities import SMOKE, problems


def scenario(**entry) -> dict:
    data = copy.deepcopy(SMOKE)
    data["faults"] = [{"kind": "network", "at_s": 5, "duration_s": 3, **entry}]
    return data


@pytest.mark.parametrize(
    "direction, streams",
    [("both", ["upstream", "downstream"]), ("outbound", ["upstream"]), ("inbound", ["downstream"])],
)
@pytest.mark.parametrize("effect", ["blackhole", "latency", "bandwidth", "reset"])
def test_a_direction_is_the_streams_its_toxics_sit_on(effect, direction, streams):
    """From the member's side: Toxiproxy's upstream is what its client, the member, sends."""
    toxics = toxics_for(effect, {"direction": direction})
    assert [stream for _, stream, _ in toxics] == streams
    assert {kind for kind, _, _ in toxics} == {kind for kind, _, _ in toxics_for(effect, {})}


def test_what_a_one_way_cut_declares_it_does():
    def effects(direction):
        return catalogue.from_spec(
            {
                "fault_id": "f1",
                "kind": "network",
                "at_s": 0,
                "target": "consumer-1",
                "duration_s": 1,
                "direction": direction,
            }
        ).effects

    assert (effects("both").silences, effects("both").silenced_as) == ("heartbeats", "cut off")
    assert (effects("outbound").silences, effects("outbound").silenced_as) == ("heartbeats", "cut off outbound")
    # One heartbeat in flight at a time: unanswered, the member sends no more, and is evicted all the same.
    assert (effects("inbound").silences, effects("inbound").silenced_as) == ("heartbeats", "cut off inbound")


def test_injected_and_healed_on_the_members_proxies_one_stream_each():
    fault = catalogue.from_spec(
        {
            "fault_id": "f1",
            "kind": "network",
            "at_s": 0,
            "target": "consumer-2",
            "duration_s": 1,
            "direction": "inbound",
        }
    )
    targets = FakeTargets()
    details = fault.inject(targets)
    fault.heal(targets)
    assert details["direction"] == "inbound"
    assert targets.actions() == [
        ("add_toxic", "consumer-2.to.brokers", "f1-timeout-downstream", {"timeout": 0}),
        ("remove_toxic", "consumer-2.to.brokers", "f1-timeout-downstream"),
    ]


def test_a_one_way_cut_is_a_members_and_never_a_refusal():
    assert problems(scenario(target="consumer-1", direction="outbound")) == []
    assert problems(scenario(target="broker-1", link="zookeeper", direction="inbound")) == [
        "faults[1].direction: one-way cuts are of a member's lane, from its side; broker-1 is no member"
    ]
    assert problems(scenario(target="consumer-1", effect="refuse", direction="inbound")) == [
        "faults[1].direction: refuse disables the proxy, both ways at once: cut one way with blackhole, latency, "
        "bandwidth or reset"
    ]
    said = problems(scenario(target="consumer-1", direction="sideways"))
    assert len(said) == 1 and said[0].startswith("faults[1].direction:")


def drawn(directions=None, seed=1) -> list[dict]:
    data = copy.deepcopy(SMOKE)
    data["seed"] = seed
    data["faults"] = []
    data["random_faults"] = {"count": 12, "start_s": 5, "duration_s": [1, 3], "kinds": ["network"]}
    if directions:
        data["random_faults"]["directions"] = directions
    return Scenario.model_validate(data).schedule()


def test_directions_are_drawn_only_where_random_faults_lists_them():
    assert {f["direction"] for f in drawn()} == {"both"}
    # A schedule seeded before one-way cuts existed draws what it drew (as a66ff3e drew seed 1):
    assert [(f["at_s"], f["target"], f["effect"], f["duration_s"]) for f in drawn()][:5] == [
        (11.507, "consumer-2", "blackhole", 2.985),
        (22.075, "consumer-2", "refuse", 2.787),
        (22.34, "consumer-3", "blackhole", 1.899),
        (24.922, "consumer-1", "refuse", 2.605),
        (29.354, "consumer-3", "latency", 1.533),
    ]
    mixed = drawn(["both", "outbound", "inbound"])
    assert mixed == drawn(["both", "outbound", "inbound"])
    assert {f["direction"] for f in mixed if f["effect"] != "refuse"} == {"both", "outbound", "inbound"}
    assert {f["direction"] for f in mixed if f["effect"] == "refuse"} <= {"both"}
    assert {f["direction"] for f in drawn(["inbound"]) if f["effect"] != "refuse"} == {"inbound"}
