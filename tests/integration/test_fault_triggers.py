"""`on:` faults on real brokers: a member killed inside its revoke callback (held there by
workload.librdkafka.revoke_hold_ms), and pauses fired by the group entering CompletingRebalance
as the brokers' log tells it; the history says which event fired each fault and how long after
it. A member whose revoke callback waits for its processing thread
(workload.librdkafka.processing: worker), killed in that wait: what it committed before
processing is lost, what it did not is not."""

from __future__ import annotations

import pytest
import yaml

from tests.integration.conftest import REPO, assert_healed, small_scenario

HOLD_MS = 3000


def test_a_member_is_killed_inside_its_revoke_callback_and_state_triggers_follow_the_brokers_log(module_run):
    scenario = small_scenario(
        "triggers",
        duration_s=24,
        faults=[
            {"kind": "join-storm", "consumers": 1, "at_s": 3},  # an eager rebalance: every member revokes
            {
                "kind": "crash",
                "target": "consumer-2",
                "restart_after_s": 3,
                "on": {"event": "partitions_revoked", "member": "consumer-2"},
            },
            {
                "kind": "pause",
                "target": "consumer-1",
                "duration_s": 0.2,
                "on": {"state": "CompletingRebalance", "count": 3},
            },
        ],
    )
    scenario["workload"]["librdkafka"] = {"revoke_hold_ms": HOLD_MS}
    run = module_run("triggers", scenario)
    assert run.exit_code == 0, run.output[-3000:]  # synchronous commits: a kill mid-revoke loses nothing
    started = run.named("fault_started")
    fired = [e for e in started if "trigger" in e]

    # The crash: fired by consumer-2's revoke, while consumer-2 was still inside the callback.
    [crash] = [e for e in fired if e["kind"] == "crash"]
    revoke = run.fired_by(crash)
    assert (revoke["name"], revoke["member"]) == ("partitions_revoked", "consumer-2"), revoke
    assert crash["trigger_latency_ms"] == round(crash["mono_ms"] - revoke["mono_ms"], 3)
    assert 0 <= crash["trigger_latency_ms"] < 1000, crash  # 5 ms reads; the note has the distribution
    # the first SIGKILL after the revoke (the restarted consumer-2 could be one at the end of the run, if slow to stop)
    killed = next(
        e
        for e in run.named("process_exited")
        if e["process"] == "consumer-2" and e["returncode"] == -9 and e["mono_ms"] > revoke["mono_ms"]
    )
    assert revoke["mono_ms"] < killed["mono_ms"] < revoke["mono_ms"] + HOLD_MS, (revoke, killed)
    after_revoke = [
        e["name"]
        for e in run.events
        if e.get("member") == "consumer-2"
        and e.get("incarnation", 1) == 1
        and revoke["mono_ms"] < e["mono_ms"]
        and e["name"] != "client_log"
    ]
    assert after_revoke == [], after_revoke  # it never left the callback: no JoinGroup, no records

    # The pauses: each fired by the brokers' "Stabilized group" line of this run's group.
    pauses = [e for e in fired if e["kind"] == "pause"]
    first = pauses[0]["fault_id"]
    assert (
        1 <= len(pauses) <= 3 and [e["fault_id"] for e in pauses] == [first, f"{first}.2", f"{first}.3"][: len(pauses)]
    )
    for p in pauses:
        line = run.fired_by(p)
        assert line["name"] == "coordinator_stabilized" and line["source"].startswith("broker-"), line
        assert 0 <= p["trigger_latency_ms"] < 1000, p
    assert_healed(run)


@pytest.mark.parametrize("commit", ["before-processing", "sync", "auto"])
def test_a_member_killed_while_its_revoke_callback_waits_for_its_worker(module_run, commit):
    """processing: worker — the poll loop hands batches to a thread of its own, and the revoke
    callback waits for that thread (`revoke_started`, then `partitions_revoked`). Killed in that
    wait, a commit-before-processing member loses what its worker held: committed, never
    processed. With commit after processing (sync, or auto's stores) the same kill loses nothing."""
    scenario = yaml.safe_load((REPO / "scenarios" / "kill-in-revoke-worker.yaml").read_text())
    name = f"worker-{commit}"
    scenario.update(name=name, duration_s=16)
    scenario["workload"].update(group=name, commit=commit)
    run = module_run(name, scenario)
    [crash] = [e for e in run.named("fault_started") if e["kind"] == "crash"]
    revoke = run.fired_by(crash)
    assert (revoke["name"], revoke["member"], revoke.get("incarnation", 1)) == ("revoke_started", "consumer-2", 1), (
        revoke
    )
    assert revoke["in_flight"] > 0, revoke  # busy members: the worker held records when the callback began
    # It died inside the callback: it never got to give the partitions up.
    assert not [
        e
        for e in run.named("partitions_revoked")
        if e["member"] == "consumer-2" and e.get("incarnation", 1) == 1 and e["mono_ms"] > revoke["mono_ms"]
    ]
    lost = [v for v in run.verdict["violations"] if v["check"] == "no-loss"]
    if commit == "before-processing":
        assert lost and all("consumer-2 committed offset" in v["message"] for v in lost), lost
        assert run.exit_code == 1
    else:
        assert lost == [] and run.exit_code == 0, run.output[-3000:]
    if commit == "auto":
        # The member that lived got through every revoke (before the fix its worker's
        # store_offsets waited for the revoke callback, which waited for the worker).
        survivor = [e for e in run.events if e.get("member") == "consumer-1"]
        started = [e["mono_ms"] for e in survivor if e["name"] == "revoke_started"]
        revoked = [e for e in survivor if e["name"] == "partitions_revoked"]
        assert (
            started
            and len(revoked) == len(started)
            and all(a < b["mono_ms"] for a, b in zip(started, revoked, strict=False))
        ), survivor
        assert [e["reason"] for e in survivor if e["name"] == "consumer_stopped"] == ["end-of-run"]
        # librdkafka commits a revoked partition's stored offsets as it unassigns it, after the
        # callback, in the generation it was revoked in (an auto commit's send time is not
        # known: the oracle takes its answer's); fenced-commits passed them (exit 0 above).
        assert [
            (r["seq"], e["seq"])
            for r in revoked
            for e in survivor
            if e["name"] == "offsets_committed"
            and e["success"]
            and e["trigger"] == "auto"
            and e["generation"] == r["generation"]
            and (e["started_mono_ms"] or e["mono_ms"]) >= r["mono_ms"]
        ], survivor
    assert_healed(run)
