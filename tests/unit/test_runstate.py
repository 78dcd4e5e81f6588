"""run.json's phases read back as how long each lasted."""

from __future__ import annotations

from harness.supervision.run_state import SCENARIO_PHASES, phase_seconds


def test_each_phase_lasts_until_the_next_began_and_done_is_a_mark():
    state = {
        "phases": {
            "start": 0,
            "cluster_ready": 5,
            "warmup": 5.5,
            "workload": 7.5,
            "recovery": 37.5,
            "drain": 40,
            "done": 41,
        }
    }
    assert phase_seconds(state) == {
        "start": 5,
        "cluster_ready": 0.5,
        "warmup": 2,
        "workload": 30,
        "recovery": 2.5,
        "drain": 1,
    }
    assert sum(phase_seconds(state)[p] for p in SCENARIO_PHASES) == 41 - 5.5  # the scenario's own time


def test_phases_that_began_at_once_keep_the_harness_order():
    # No warm-up: the workload began as the clients were ready (the harness wrote cluster_ready first).
    assert phase_seconds({"phases": {"start": 0, "cluster_ready": 1, "workload": 1, "done": 3}}) == {
        "start": 1,
        "cluster_ready": 0,
        "workload": 2,
    }


def test_a_run_without_phases_has_none():
    assert phase_seconds({"state": "running"}) == {} == phase_seconds({"phases": None})
