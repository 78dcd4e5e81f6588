"""SIGSTOP of a consumer: longer than session.timeout.ms evicts it, much shorter does not.

One run, two pauses: consumer-1 for 2 s (a third of the 6 s session timeout),
later consumer-2 for 12 s (twice the session timeout).
"""

from __future__ import annotations

import pytest

from tests.integration.conftest import SUITE_LINGER_MS, alive_pids, small_scenario

SESSION_MS = 6000


@pytest.fixture(scope="module")
def paused_run(tmp_path_factory):
    from tests.integration.conftest import RunOutcome, lab, only_run_dir, write_scenario

    tmp = tmp_path_factory.mktemp("pause")
    scenario = small_scenario(
        "pauses",
        duration_s=34,
        faults=[
            {"kind": "pause", "target": "consumer-1", "at_s": 6, "duration_s": 2},
            {"kind": "pause", "target": "consumer-2", "at_s": 16, "duration_s": 12},
        ],
    )
    proc = lab("run", str(write_scenario(tmp / "pauses.yaml", scenario)), "--runs-dir", str(tmp / "runs"))
    run = RunOutcome(proc.returncode, proc.stdout + proc.stderr, only_run_dir(tmp / "runs"))
    assert run.run_dir and (run.run_dir / "verdict.json").exists(), run.output[-3000:]
    return run


def _fault(run, target):
    started = next(e for e in run.named("fault_started") if e["target"] == target)
    healed = next(e for e in run.named("fault_healed") if e["fault_id"] == started["fault_id"])
    return started, healed


def test_short_pause_causes_no_rebalance(paused_run):
    started, healed = _fault(paused_run, "consumer-1")
    window_end = healed["mono_ms"] + SESSION_MS
    in_window = [
        e
        for e in paused_run.events
        if started["mono_ms"] <= e["mono_ms"] <= window_end
        and e["name"] in ("partitions_revoked", "partitions_lost", "group_joined", "coordinator_preparing_rebalance")
    ]
    assert in_window == [], in_window


def test_long_pause_evicts_the_member_and_moves_its_partitions(paused_run):
    started, healed = _fault(paused_run, "consumer-2")
    events = paused_run.events
    before = [
        e
        for e in events
        if e["name"] == "partitions_assigned" and e["member"] == "consumer-2" and e["mono_ms"] < started["mono_ms"]
    ]
    owned = {(p["topic"], p["partition"]) for p in before[-1]["partitions"]}
    assert owned, "consumer-2 owned nothing before its pause"
    # While consumer-2 is stopped, consumer-1 is given consumer-2's partitions ...
    taken_over = [
        e
        for e in events
        if e["name"] == "partitions_assigned"
        and e["member"] == "consumer-1"
        and started["mono_ms"] < e["mono_ms"] < healed["mono_ms"]
    ]
    assert taken_over, "no reassignment while consumer-2 was paused"
    moved_at = taken_over[0]
    assert owned <= {(p["topic"], p["partition"]) for p in moved_at["partitions"]}
    # ... not before the session timeout ran out (the coordinator waited for heartbeats) ...
    assert moved_at["mono_ms"] - started["mono_ms"] >= SESSION_MS - 1000
    # ... because the coordinator removed it for missing heartbeats.
    removed = [e for e in events if e["name"] == "coordinator_member_removed" and e.get("reason") == "failed"]
    assert removed and all(e["member_id"].startswith("consumer-2-") for e in removed)
    # Explained: the rebalance that moved them waited for consumer-2's session to time out.
    [evicted] = [r for r in paused_run.verdict["rebalances"] if r["generation"] == moved_at["generation"]]
    [trigger] = [w for w in evicted["critical_path"] if w["phase"] == "trigger"]
    assert (trigger["cause"], trigger["member"]) == ("session-timeout", "consumer-2"), evicted["critical_path"]
    assert SESSION_MS - 1000 <= trigger["ms"] <= SESSION_MS + 2000, trigger
    assert "consumer-2 was paused" in evicted["explanation"]
    # After SIGCONT, consumer-2 learns it lost them, then rejoins with a new generation.
    lost = [
        e
        for e in events
        if e["name"] in ("partitions_lost", "partitions_revoked")
        and e["member"] == "consumer-2"
        and e["mono_ms"] > moved_at["mono_ms"]
    ]
    assert lost
    rejoined = [
        e
        for e in events
        if e["name"] == "group_joined" and e["member"] == "consumer-2" and e["mono_ms"] > moved_at["mono_ms"]
    ]
    assert rejoined and rejoined[0]["generation"] > moved_at["generation"]
    # Any commit the zombie sent between losing its partitions and rejoining was rejected.
    zombie_commits = [
        e
        for e in events
        if e["name"] == "offsets_committed"
        and e["member"] == "consumer-2"
        and moved_at["mono_ms"] <= e["started_mono_ms"] < rejoined[0]["mono_ms"]
    ]
    assert all(not e["success"] for e in zombie_commits), zombie_commits


def test_pause_run_passes_the_oracle_and_leaves_nothing(paused_run):
    assert paused_run.exit_code == 0, paused_run.output[-3000:]
    assert alive_pids(paused_run.events) == []
    # the producer says how it batched (write_scenario's linger): produce latencies include it
    assert [e["linger_ms"] for e in paused_run.named("producer_started")] == [SUITE_LINGER_MS]
