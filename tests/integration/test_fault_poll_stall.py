"""Poll stalls (KIP-62): heartbeats continue from librdkafka's thread while the
application does not poll. Session timeout 6 s, max.poll.interval.ms 20 s."""

from __future__ import annotations

import pytest

from tests.integration.conftest import assert_healed, small_scenario

SESSION_MS, MAX_POLL_MS = 6000, 20000


@pytest.fixture(scope="module")
def stalls(module_run):
    scenario = small_scenario(
        "stalls",
        duration_s=60,
        faults=[
            {"kind": "poll-stall", "target": "consumer-1", "at_s": 5, "duration_s": 12},  # > session, < max poll
            {"kind": "poll-stall", "target": "consumer-2", "at_s": 22, "duration_s": 28},  # > max poll
        ],
    )
    scenario["workload"]["max_poll_interval_ms"] = MAX_POLL_MS
    return module_run("stalls", scenario)


def _window(run, fault_id):
    start = next(e for e in run.named("poll_stall_started") if e["fault_id"] == fault_id)
    end = next(e for e in run.named("poll_stall_ended") if e["fault_id"] == fault_id)
    return start, end


def test_a_stall_longer_than_the_session_but_shorter_than_max_poll_keeps_the_member(stalls):
    start, end = _window(stalls, "f1")
    assert end["mono_ms"] - start["mono_ms"] >= SESSION_MS + 2000  # it outlived the session timeout
    changes = [
        e
        for e in stalls.events
        if start["mono_ms"] <= e["mono_ms"] <= end["mono_ms"] + 2000
        and e["name"] in ("partitions_revoked", "partitions_lost", "group_joined", "coordinator_member_removed")
    ]
    assert changes == [], changes


def test_a_stall_longer_than_max_poll_makes_the_member_leave_and_rejoin(stalls):
    start, end = _window(stalls, "f2")
    # The other member takes everything over while consumer-2 is still stalled ...
    taken = [
        e
        for e in stalls.named("partitions_assigned")
        if e["member"] == "consumer-1" and start["mono_ms"] < e["mono_ms"] < end["mono_ms"]
    ]
    assert taken and len(taken[-1]["partitions"]) == 4
    assert taken[0]["mono_ms"] - start["mono_ms"] >= MAX_POLL_MS - 2000
    # ... because consumer-2 left the group (librdkafka: max.poll.interval.ms exceeded).
    left = [
        e
        for e in stalls.named("coordinator_member_removed")
        if start["mono_ms"] < e["mono_ms"] < end["mono_ms"] and e["member_id"].startswith("consumer-2-")
    ]
    assert left
    # After the stall it learns so, and joins again with a new generation.
    rejoined = [
        e for e in stalls.named("group_joined") if e["member"] == "consumer-2" and e["mono_ms"] > end["mono_ms"]
    ]
    assert rejoined and rejoined[0]["generation"] > taken[0]["generation"]


def test_the_stall_run_passes_and_heals(stalls):
    assert stalls.exit_code == 0, stalls.output[-3000:]
    assert_healed(stalls)
