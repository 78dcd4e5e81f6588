"""The oracle on real runs rigged with the librdkafka driver's test-only switches
(workload.librdkafka.test_hooks, docs/history.md):

- a member that consumes a partition it was never assigned, while the owner consumes the
  same records, fails exclusive-ownership (issue 9, defect 1);
- a static member stopped with SIGTERM right after it sent its JoinGroup is still counted
  by the coordinator, which gives it partitions until its session expires: every check
  passes, those partitions are reported as a finding (defect 9).

A paused zombie (SIGSTOP past the session timeout, classic-eager) still passing with
findings only is test_pause.py's run (`test_pause_run_passes_the_oracle_and_leaves_nothing`).
"""

from __future__ import annotations

import pytest

from tests.integration.conftest import small_scenario

SESSION_MS = 6000


@pytest.fixture(scope="module")
def non_owner(module_run):
    """consumer-3 joins a formed group of two: range over three gives it events-3 (member ids sort
    by name), never events-0 — which it reads all the same, alongside consumer-1."""
    scenario = small_scenario("non-owner", duration_s=20, faults=[{"kind": "scale", "at_s": 1, "consumers": 3}])
    scenario["workload"]["librdkafka"] = {
        "test_hooks": {"consume_unassigned": {"member": "consumer-3", "partition": 0}}
    }
    return module_run("non-owner", scenario)


@pytest.fixture(scope="module")
def absent_static(module_run):
    """Two static members, a third joins (its first JoinGroup), a fourth joins: the third's
    second JoinGroup is a rejoin, and it stops right after sending it. consumer-1 is stalled in
    its poll loop meanwhile, so the coordinator answers that JoinGroup only when the stall ends
    — to nobody."""
    scenario = small_scenario(
        "absent-static",
        duration_s=26,
        topics=[{"name": "events", "partitions": 6}],
        faults=[
            {"kind": "scale", "at_s": 1, "consumers": 3},
            {"kind": "poll-stall", "target": "consumer-1", "at_s": 6, "duration_s": 6},
            {"kind": "scale", "at_s": 7, "consumers": 4},
        ],
    )
    scenario["workload"].update(
        protocol="classic-static",
        session_timeout_ms=SESSION_MS,
        librdkafka={"test_hooks": {"sigterm_after_join": {"member": "consumer-3", "join": 2}}},
    )
    return module_run("absent-static", scenario)


def _partitions(event: dict) -> set[tuple[str, int]]:
    return {(p["topic"], p["partition"]) for p in event["partitions"]}


# --------------------------------------------------------------------- a non-owner consuming


def test_the_rigged_member_consumed_a_partition_the_group_never_gave_it(non_owner):
    [armed] = non_owner.named("test_hook_armed")
    assert (armed["member"], armed["hook"]) == ("consumer-3", "consume_unassigned")
    given = set().union(
        *(_partitions(e) for e in non_owner.before_recovery("partitions_assigned") if e["member"] == "consumer-3")
    )
    events = non_owner.topic("events")
    assert given and (events, 0) not in given
    by = {
        member: {
            o
            for e in non_owner.named("records_consumed")
            if e["member"] == member
            for r in e["ranges"]
            if (r["topic"], r["partition"]) == (events, 0)
            for o in range(r["min_offset"], r["max_offset"] + 1)
        }
        for member in ("consumer-1", "consumer-2", "consumer-3")
    }
    assert by["consumer-3"] & (by["consumer-1"] | by["consumer-2"]), "the owner processed the same records"


def test_consuming_without_ownership_fails_exclusive_ownership_naming_member_partition_offsets_generation(non_owner):
    verdict = non_owner.verdict
    assert non_owner.exit_code != 0 and not verdict["ok"]
    assert verdict["checks"]["exclusive-ownership"]["status"] == "failed"
    violations = [v for v in verdict["violations"] if v["check"] == "exclusive-ownership"]
    assert violations and all(v["kind"] == "consumed-without-ownership" for v in violations), violations
    violation, partition = violations[0], non_owner.topic("events") + "-0"
    assert violation["partition"] == partition and "consumer-3" in violation["members"]
    assert violation["offsets"] and violation["count"] > 0
    assert violation["generation"] is not None
    assert "consumer-3" in violation["message"] and partition in violation["message"]


# --------------------------------------------------------------------- a static member gone mid-join


def _absent(run) -> tuple[dict, dict, dict]:
    """(the hook firing, the generation the coordinator stabilized next, consumer-3's removal)."""
    fired = run.named("test_hook_fired")
    assert len(fired) == 1, f"the hook fired {len(fired)} times: the scenario did not play out\n{run.output[-2000:]}"
    stabilized = [e for e in run.named("coordinator_stabilized") if e["mono_ms"] > fired[0]["mono_ms"]]
    removed = [e for e in run.named("coordinator_member_removed") if e["member_id"] == fired[0]["member_id"]]
    assert stabilized and removed, "no generation stabilized after the hook fired, or consumer-3 was never removed"
    return fired[0], stabilized[0], removed[0]


def test_the_static_member_stopped_right_after_its_rejoin_without_leaving(absent_static):
    fired, _, removed = _absent(absent_static)
    assert (fired["member"], fired["hook"], fired["join"]) == ("consumer-3", "sigterm_after_join", 2)
    assert fired["generation"] is not None  # a rejoin: it was in a generation before
    sent = [e for e in absent_static.named("group_join_sent") if e["member"] == "consumer-3"]
    assert len(sent) == 2 and sent[-1]["clock"] == "client" and sent[-1]["mono_ms"] <= fired["mono_ms"]
    exited = next(e for e in absent_static.named("process_exited") if e["process"] == "consumer-3")
    assert exited["returncode"] == 0 and exited["mono_ms"] < removed["mono_ms"]
    assert removed["reason"] == "failed"  # its session expired: no LeaveGroup came


def test_the_coordinator_counted_the_absent_member_and_its_partitions_were_unowned_until_its_session_expired(
    absent_static,
):
    fired, stabilized, removed = _absent(absent_static)
    generation = stabilized["generation"]
    joined = {e["member"] for e in absent_static.named("group_joined") if e["generation"] == generation}
    assert "consumer-3" not in joined
    assert stabilized["members"] == len(joined) + 1 == 4
    held = set().union(
        *(_partitions(e) for e in absent_static.named("partitions_assigned") if e["generation"] == generation)
    )
    unowned = {(absent_static.topic("events"), p) for p in range(6)} - held
    assert unowned, "the leader's range assignment gave the absent member partitions"
    # Nobody took them over before the coordinator removed consumer-3 for its expired session: its
    # session timer restarted when the coordinator stabilized the generation (every member's does).
    assert fired["mono_ms"] < stabilized["mono_ms"] < removed["mono_ms"]
    assert SESSION_MS - 1000 <= removed["mono_ms"] - stabilized["mono_ms"] <= SESSION_MS + 3000
    taken = [
        e
        for e in absent_static.named("partitions_assigned")
        if e["mono_ms"] > fired["mono_ms"] and _partitions(e) & unowned
    ]
    assert taken and min(e["mono_ms"] for e in taken) > removed["mono_ms"]
    assert all(e["generation"] > generation for e in taken)
    consumed = [
        e
        for e in absent_static.named("records_consumed")
        if fired["mono_ms"] < e["mono_ms"] < removed["mono_ms"]
        and {(r["topic"], r["partition"]) for r in e["ranges"]} & unowned
    ]
    assert consumed == []


def test_the_absent_members_partitions_are_a_finding_and_every_check_passes(absent_static):
    verdict = absent_static.verdict
    assert absent_static.exit_code == 0 and verdict["ok"], absent_static.output[-3000:]
    assert all(c["status"] == "passed" for c in verdict["checks"].values()), verdict["checks"]
    findings = [
        f
        for f in verdict["findings"]
        if f["check"] in ("assignment-validity", "convergence") and "consumer-3" in f["message"]
    ]
    assert findings, verdict["findings"]
