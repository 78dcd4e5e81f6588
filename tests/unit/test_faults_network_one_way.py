"""One-way cuts (faults/network.py ``direction``): a member's lane degraded in one direction only —
its toxics, what each declares it does and what the oracle makes of that, where it is refused, and
how random_faults draws it (every schedule seeded before one-way cuts drawing what it drew)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from faults import catalogue
from faults.base import NO_EFFECTS
from faults.network import toxics_for
from harness.scenario import Scenario
from oracle import History, check_history
from oracle.explain import explain_rebalances
from tests.fake_targets import FakeTargets
from tests.unit.test_backend_capabilities import SMOKE, problems

BEFORE = Path(__file__).resolve().parents[1] / "fixtures" / "schedules" / "before-one-way-cuts.json"


def scenario(**entry) -> dict:
    data = copy.deepcopy(SMOKE)
    data["faults"] = [{"kind": "network", "at_s": 5, "duration_s": 3, **entry}]
    return data


def cut(direction: str, **options):
    entry = {"fault_id": "f1", "kind": "network", "at_s": 0, "target": "consumer-2", "duration_s": 1}
    return catalogue.from_spec({**entry, "direction": direction, **options})


# -- the toxics --------------------------------------------------------------------------------


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


@pytest.mark.parametrize("direction, stream", [("outbound", "upstream"), ("inbound", "downstream")])
def test_injected_and_healed_on_the_members_proxies_one_stream_each(direction, stream):
    fault, targets = cut(direction), FakeTargets()
    details = fault.inject(targets)
    fault.heal(targets)
    assert details == {"proxies": ["consumer-2.to.brokers"], "streams": [stream]}
    assert targets.actions() == [
        ("add_toxic", "consumer-2.to.brokers", f"f1-timeout-{stream}", {"timeout": 0}),
        ("remove_toxic", "consumer-2.to.brokers", f"f1-timeout-{stream}"),  # the same toxic goes
    ]


def test_a_refusal_names_no_stream():
    assert cut("both", effect="refuse").inject(FakeTargets())["streams"] == []


# -- what each direction declares it does ------------------------------------------------------


def test_what_a_cut_declares_it_does_each_way():
    assert (cut("both").effects.silences, cut("both").effects.silenced_as) == ("heartbeats", "cut off")
    # Nothing it sends arrives: its coordinator hears nothing of it from the first moment.
    assert (cut("outbound").effects.silences, cut("outbound").effects.silenced_as) == (
        "heartbeats",
        "cut off from the brokers, outbound only",
    )
    assert cut("outbound", link="coordinator").effects.silenced_as == "cut off from its coordinator, outbound only"
    assert cut("outbound", link="broker-1").effects.silenced_as == "cut off from broker-1, outbound only"
    # Its requests arrive, heartbeats too, until its own client gives up: its coordinator hears it.
    assert cut("inbound").effects == NO_EFFECTS


def eviction_story(b, effects: dict, evicted_after_ms: float):
    """consumer-1 and consumer-2 (session.timeout.ms 10000) form generation 1; consumer-2's lane is cut
    at 5 s and healed at 40 s; its coordinator evicts it ``evicted_after_ms`` after the cut."""
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start(session_timeout_ms=10_000)
    b.formed(c1, c2)
    b.at(5000).emit(
        "fault_started", "fault", fault_id="f1", kind="network", target="consumer-2", params={}, effects=effects
    )
    evicted = 5000 + evicted_after_ms
    b.evicted("consumer-2", evicted, "consumer-1", 0, 1, 2, 3, 4)
    b.at(40_000).healed("network", "consumer-2")
    b.at(45_000).done()
    return b.build()


def late_evictions(events: list[dict]) -> list:
    result = check_history(events, {"convergence": {"within_s": 600}}).checks["convergence"]
    return [v for v in result.violations if v.kind == "late-eviction"]


def test_a_java_member_cut_inbound_is_evicted_two_sessions_later_and_that_is_no_late_eviction(history_builder):
    """Measured on real brokers: the Java classic consumer heartbeats on every heartbeat.interval.ms
    until its own session timer runs out unanswered, so its coordinator evicted it 18.9 s after an
    inbound cut at session.timeout.ms 10000. Declared as a silence, that was a late-eviction."""
    inbound = eviction_story(history_builder(), cut("inbound").effects.to_event(), 18_900)
    assert late_evictions(inbound) == []
    [trigger] = [w for w in explain_rebalances(History(inbound))[2].waits if w.phase == "trigger"]
    assert (trigger.cause, trigger.member, trigger.ms) == ("session-timeout", "consumer-2", pytest.approx(18_900))
    assert trigger.detail == (
        "consumer-2 went silent during fault f1 (network) and the coordinator evicted it when its session "
        "timed out (session.timeout.ms 10000), 18.9 s after the fault began"
    )
    # Cut outbound, nothing it sent arrived: a coordinator that waited that long held it too long.
    [late] = late_evictions(eviction_story(history_builder(), cut("outbound").effects.to_event(), 18_900))
    assert late.message.startswith("consumer-2 was cut off from the brokers, outbound only (fault f1, network)")
    assert late_evictions(eviction_story(history_builder(), cut("outbound").effects.to_event(), 10_300)) == []


# -- where it is refused -----------------------------------------------------------------------


def test_a_one_way_cut_is_a_members_and_never_a_refusal():
    assert problems(scenario(target="consumer-1", direction="outbound")) == []
    assert problems(scenario(target="consumer-1", link="coordinator", effect="reset", direction="inbound")) == []
    assert problems(scenario(target="broker-1", link="zookeeper", direction="inbound")) == [
        "faults[1].direction: one-way cuts are of a member's lane, from its side; broker-1 is no member"
    ]
    assert problems(scenario(target="coordinator", link="clients", direction="outbound")) == [
        "faults[1].direction: one-way cuts are of a member's lane, from its side; coordinator is no member"
    ]
    assert problems(scenario(target="consumer-1", effect="refuse", direction="inbound")) == [
        "faults[1].direction: refuse disables the proxy, both ways at once: cut one way with blackhole, latency, "
        "bandwidth or reset"
    ]
    said = problems(scenario(target="consumer-1", direction="sideways"))
    assert len(said) == 1 and said[0].startswith("faults[1].direction:")


# -- how random_faults draws it ----------------------------------------------------------------


def drawn(directions=None, seed=1) -> list[dict]:
    data = copy.deepcopy(SMOKE)
    data["seed"] = seed
    data["faults"] = []
    data["random_faults"] = {"count": 12, "start_s": 5, "duration_s": [1, 3], "kinds": ["network"]}
    if directions:
        data["random_faults"]["directions"] = directions
    return Scenario.model_validate(data).schedule()


@pytest.mark.parametrize("case", json.loads(BEFORE.read_text())["cases"], ids=lambda case: case["name"])
def test_a_schedule_seeded_before_one_way_cuts_draws_what_it_drew(case):
    """The fixture holds what a66ff3e drew; every fault the same, but a network fault's
    ``direction``, which a schedule now spells out as every default (``both``)."""
    now = Scenario.model_validate(case["scenario"]).schedule()
    network = [f for f in now if f["kind"] == "network"]
    assert all(f.pop("direction") == "both" for f in network)
    assert now == case["schedule"]


def test_directions_are_drawn_only_where_random_faults_lists_more_than_one():
    mixed = drawn(["both", "outbound", "inbound"])
    assert mixed == drawn(["both", "outbound", "inbound"])
    assert {f["direction"] for f in mixed if f["effect"] != "refuse"} == {"both", "outbound", "inbound"}
    assert {f["direction"] for f in mixed if f["effect"] == "refuse"} == {"both"}  # a refusal has none
    # One listed direction takes no draw of its own: the same faults, each (but a refusal) that way.
    inbound = drawn(["inbound"])
    assert [{**f, "direction": "both"} for f in inbound] == drawn()
    assert {f["direction"] for f in inbound if f["effect"] != "refuse"} == {"inbound"}
    # More than one takes one draw per cut that may have one: what follows the first is drawn anew.
    assert [f["at_s"] for f in mixed] != [f["at_s"] for f in drawn()]
