"""`on:` faults (faults/trigger.py, faults/watch.py, faults/schedule.py): the condition, the
live history read as it is written, the firing with its delay and count, and what the history
records of it. The latency on real brokers is tests/integration/test_fault_triggers.py's."""

from __future__ import annotations

import json
import time

import pytest
from pydantic import ValidationError

from faults.catalogue import SPECS, from_spec
from faults.schedule import FaultScheduler
from faults.trigger import Trigger
from faults.watch import TriggerWatcher
from runtime.history import HistoryWriter


def test_a_trigger_names_exactly_one_condition_the_run_can_see():
    assert Trigger(event="partitions_revoked", member="consumer-2").names == ("partitions_revoked",)
    for bad, why in [
        ({}, "exactly one"),
        ({"event": "group_joined", "state": "Stable"}, "exactly one"),
        ({"event": "records_seen"}, "not an event the run writes"),
        ({"state": "Stable", "member": "consumer-1"}, "only with event"),
        ({"state": "Preparing"}, "PreparingRebalance"),
    ]:
        with pytest.raises(ValidationError, match=why):
            Trigger(**bad)


def test_a_triggered_fault_is_armed_from_the_start_unless_at_s_says_when():
    spec = SPECS["crash"].model_validate(
        {"kind": "crash", "target": "consumer-2", "on": {"event": "partitions_revoked"}}
    )
    assert spec.at_s == 0.0 and spec.on.event == "partitions_revoked"
    later = SPECS["pause"].model_validate(
        {"kind": "pause", "target": "consumer-2", "duration_s": 2, "at_s": 5, "on": {"state": "CompletingRebalance"}}
    )
    assert later.at_s == 5.0
    assert "on" not in from_spec({"fault_id": "f1", **spec.model_dump()}).params  # the trigger is recorded apart


@pytest.mark.parametrize(
    "on, event, hit",
    [
        (
            {"event": "partitions_revoked", "member": "consumer-2"},
            {"name": "partitions_revoked", "member": "consumer-2"},
            True,
        ),
        (
            {"event": "partitions_revoked", "member": "consumer-2"},
            {"name": "partitions_revoked", "member": "consumer-1"},
            False,
        ),
        (
            {"state": "PreparingRebalance"},
            {"name": "coordinator_preparing_rebalance", "group": "g", "clock": "broker-log"},
            True,
        ),
        (
            {"state": "PreparingRebalance"},
            {"name": "coordinator_preparing_rebalance", "group": "another run's", "clock": "broker-log"},
            False,
        ),
        (
            {"state": "CompletingRebalance"},
            {"name": "coordinator_stabilized", "group": "g", "clock": "broker-log"},
            True,
        ),
        # the project's coordinator writes coordinator_stabilized at Stable: only its state changes count
        ({"state": "CompletingRebalance"}, {"name": "coordinator_stabilized", "generation": 2}, False),
        ({"state": "CompletingRebalance"}, {"name": "coordinator_state_changed", "to": "CompletingRebalance"}, True),
        ({"state": "CompletingRebalance"}, {"name": "coordinator_state_changed", "to": "Stable"}, False),
        ({"lag_above": 100}, {"name": "lag_sampled", "partitions": [{"lag": 60}, {"lag": 41}]}, True),
        ({"lag_above": 100}, {"name": "lag_sampled", "partitions": [{"lag": 60}, {"lag": 40}]}, False),
    ],
)
def test_what_matches(on, event, hit):
    assert Trigger(**on).matches(event, group="g") is hit


class Targets:
    def __init__(self):
        self.calls: list[tuple[str, str, float]] = []

    def resolve(self, name):
        return name

    def pause(self, name):
        self.calls.append(("pause", name, time.monotonic()))

    def resume(self, name):
        self.calls.append(("resume", name, time.monotonic()))


def run_triggers(tmp_path, faults: list[dict], story, settle_s: float = 0.3):
    """Faults armed on a real history file that ``story(member_writer)`` appends to."""
    history = tmp_path / "history.jsonl"
    member = HistoryWriter(history, "consumer-2", member="consumer-2")
    fault_log = HistoryWriter(history, "fault")
    built = [
        from_spec({"fault_id": f"f{i}", **SPECS[f["kind"]].model_validate(f).model_dump()})
        for i, f in enumerate(faults, 1)
    ]
    targets = Targets()
    scheduler = FaultScheduler(built, targets, fault_log.emit)
    watcher = TriggerWatcher(history, scheduler, built, group="g", every_s=0.002)
    scheduler.start()
    watcher.start()
    story(member)
    time.sleep(settle_s)
    watcher.stop()
    scheduler.heal_all("end-of-run")
    events = [json.loads(line) for line in history.read_text().splitlines()]
    return targets, events


def test_a_member_event_fires_the_fault_within_milliseconds_and_the_history_says_which(tmp_path):
    faults = [
        {
            "kind": "pause",
            "target": "consumer-2",
            "duration_s": 0.05,
            "on": {"event": "partitions_revoked", "member": "consumer-2", "nth": 2},
        }
    ]

    def story(member):
        member.emit("records_consumed", ranges=[])
        member.emit("partitions_revoked", partitions=[])  # the first: not its turn
        time.sleep(0.05)
        member.emit("partitions_revoked", partitions=[])

    targets, events = run_triggers(tmp_path, faults, story)
    revokes = [e for e in events if e["name"] == "partitions_revoked"]
    [started] = [e for e in events if e["name"] == "fault_started"]
    assert started["trigger"] == {
        "name": "partitions_revoked",
        "source": "consumer-2",
        "seq": revokes[1]["seq"],
        "mono_ms": revokes[1]["mono_ms"],
        "member": "consumer-2",
    }  # no incarnation here
    assert 0 <= started["trigger_latency_ms"] == pytest.approx(started["mono_ms"] - revokes[1]["mono_ms"], abs=0.01)
    assert started["trigger_latency_ms"] < 100  # read every 2 ms here
    assert [c[0] for c in targets.calls] == ["pause", "resume"]


def test_a_delay_and_a_count_fire_it_again_but_never_over_itself(tmp_path):
    faults = [
        {
            "kind": "pause",
            "target": "consumer-2",
            "duration_s": 0.1,
            "on": {"event": "rebalance_started", "delay_s": 0.05, "count": 2},
        }
    ]

    def story(member):
        member.emit("rebalance_started")
        member.emit("rebalance_started")  # while the first firing waits for its delay: ignored
        time.sleep(0.4)
        member.emit("rebalance_started")  # the second firing
        time.sleep(0.4)
        member.emit("rebalance_started")  # count reached

    targets, events = run_triggers(tmp_path, faults, story)
    started = [e for e in events if e["name"] == "fault_started"]
    assert [e["fault_id"] for e in started] == ["f1", "f1.2"]
    signs = [e for e in events if e["name"] == "rebalance_started"]
    assert [e["trigger"]["seq"] for e in started] == [signs[0]["seq"], signs[2]["seq"]]
    for e in started:  # the latency leaves the configured delay out; the injection came after it
        assert e["mono_ms"] - e["trigger"]["mono_ms"] >= 50 and e["trigger_latency_ms"] < 100
    assert [c[0] for c in targets.calls] == ["pause", "resume", "pause", "resume"]


def test_events_before_the_trigger_is_armed_do_not_count(tmp_path):
    faults = [
        {"kind": "pause", "target": "consumer-2", "duration_s": 0.05, "at_s": 1.0, "on": {"event": "rebalance_started"}}
    ]

    def story(member):
        # at_s leaves a second of margin: on a loaded machine (CI) this thread can be held up for
        # a few hundred ms between the scheduler's start and its first event
        member.emit("rebalance_started")  # before at_s
        time.sleep(1.1)  # after at_s, whenever the first came: it came after the scheduler's start
        member.emit("rebalance_started")

    _, events = run_triggers(tmp_path, faults, story)
    [started] = [e for e in events if e["name"] == "fault_started"]
    assert started["trigger"]["seq"] == [e for e in events if e["name"] == "rebalance_started"][1]["seq"]


def test_a_bare_on_key_in_yaml_is_the_trigger_not_a_boolean():
    import yaml

    entry = yaml.safe_load("kind: crash\ntarget: consumer-2\non: {event: partitions_revoked}\n")
    assert True in entry  # YAML 1.1: `on` is a boolean
    assert SPECS["crash"].model_validate(entry).on.event == "partitions_revoked"


def test_a_join_storm_fired_again_and_again_has_a_slot_for_every_member_it_starts():
    from harness.scenario import Scenario

    s = Scenario.model_validate(
        {
            "name": "s",
            "duration_s": 30,
            "topics": [{"name": "t", "partitions": 4}],
            "workload": {"consumers": 2},
            "faults": [{"kind": "join-storm", "consumers": 2, "on": {"state": "Stable", "count": 3}}],
        }
    )
    assert s.member_slots() == [f"consumer-{i}" for i in range(1, 9)]
