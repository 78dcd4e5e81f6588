"""The java driver (Kafka's VerifiableConsumer) under the smoke scenario's chaos.

The same scenario the librdkafka driver passes, with ``workload.driver: java``:
a member paused past its session timeout is evicted and its partitions move,
a broker crashes and comes back, and the oracle judges the Java client's
history exactly as it judges librdkafka's. Once on Kafka 3.9 (ZooKeeper mode,
eager range), once on 4.4 (KRaft) with cooperative-sticky, where the Java
rebalance callbacks carry deltas.
"""

from __future__ import annotations

import pytest
import yaml

from harness.supervision.processes import process_state
from tests.integration.conftest import REPO, RunOutcome, assert_healed

CONSUMER_EVENTS = ("consumer_started", "group_joined", "partitions_assigned", "records_consumed", "offsets_committed")


def java_smoke(kafka: str, **workload) -> dict:
    scenario = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    scenario["name"] = f"smoke-java-{kafka.replace('.', '')}"
    scenario["cluster"]["kafka"] = kafka
    # Three JVMs take 10-17 s to form the group here when the machine is busy; room to spare.
    scenario["workload"].update(driver="java", warmup_timeout_s=180, **workload)
    return scenario


@pytest.fixture(scope="module")
def eager_39(module_run) -> RunOutcome:
    return module_run("java-39", java_smoke("3.9"))


@pytest.fixture(scope="module")
def cooperative_44(module_run) -> RunOutcome:
    return module_run("java-44", java_smoke("4.4", protocol="classic-cooperative", assignor="cooperative-sticky"))


def _assert_passes_smoke(run: RunOutcome) -> None:
    assert run.exit_code == 0, run.output[-3000:]
    verdict = run.verdict
    assert verdict["ok"] and verdict["violations"] == [], verdict["violations"]
    assert all(c["status"] == "passed" for c in verdict["checks"].values()), verdict["checks"]
    completed = [r for r in verdict["rebalances"] if r["status"] == "completed"]
    assert completed and all(r["duration_ms"] is not None and r["duration_ms"] >= 0 for r in completed), completed
    # A JVM joins seconds later than librdkafka on a loaded machine (seen: 8.5 s, up to 20 s in
    # CI): the fault clock waited for the warm-up, so the pause hit a member of the formed group.
    [warmup] = [e for e in run.named("phase") if e["phase"] == "warmup"]
    [workload] = [e for e in run.named("phase") if e["phase"] == "workload"]
    assert "reason" not in workload, workload
    first_fault = min(e["mono_ms"] for e in run.named("fault_started"))
    joined = {e["member"] for e in run.named("partitions_assigned") if warmup["mono_ms"] < e["mono_ms"] < first_fault}
    assert joined >= set(warmup["members"]) == {"consumer-1", "consumer-2", "consumer-3"}, joined
    # The paused member was evicted by the coordinator for missing heartbeats.
    removed = [e for e in run.named("coordinator_member_removed") if e.get("reason") == "failed"]
    assert any(e["member_id"].startswith("consumer-2-") for e in removed), removed
    assert_healed(run)


def _assert_java_history(run: RunOutcome) -> None:
    events = run.events
    members = [e for e in events if e.get("member")]
    assert members and all(e.get("driver") == "java" for e in members)
    for name in CONSUMER_EVENTS:
        assert any(e["name"] == name for e in members), name
    started = [e for e in members if e["name"] == "consumer_started"]
    assert all(e["jvm_pid"] and e["jvm_pid"] != e["pid"] and e["processing_ms_ignored"] == 1 for e in started)
    # Every JVM is gone with its wrapper (it shares the wrapper's process group).
    assert all(process_state(e["jvm_pid"]) in (None, "Z") for e in started)
    # Generations and member ids come from the Java client's log, before the callbacks that follow them.
    joined = [e for e in members if e["name"] == "group_joined"]
    assert all(isinstance(e["generation"], int) and e["member_id"].startswith(e["member"] + "-") for e in joined)
    assert sum(e["is_leader"] for e in joined) >= 1
    assigned = [e for e in members if e["name"] == "partitions_assigned"]
    assert all(e["generation"] is not None and e["member_id"] for e in assigned)
    # Commits: VerifiableConsumer's commitSync after each poll, judged at the poll's time.
    commits = [e for e in members if e["name"] == "offsets_committed"]
    assert all(e["trigger"] == "after-processing" and e["started_mono_ms"] <= e["mono_ms"] for e in commits)
    assert all(e["error"] and e["error_message"] for e in commits if not e["success"])
    # Both members stopped cleanly at the end of the run (SIGTERM → JVM shutdown_complete).
    stopped = [e for e in members if e["name"] == "consumer_stopped"]
    assert {e["member"] for e in stopped} == {"consumer-1", "consumer-2", "consumer-3"}
    assert all(e["reason"] == "end-of-run" for e in stopped)


def _paused_member_comes_back(run: RunOutcome) -> None:
    """After SIGCONT the zombie is told UNKNOWN_MEMBER_ID, what it owned is reported
    lost (not revoked: no commit allowed), and it rejoins under a new member id in a
    later generation."""
    events = run.events
    pause = next(e for e in events if e["name"] == "fault_started" and e["kind"] == "pause")
    healed = next(e for e in events if e["name"] == "fault_healed" and e["fault_id"] == pause["fault_id"])
    c2 = [e for e in events if e.get("member") == "consumer-2"]
    before = [e for e in c2 if e["mono_ms"] < pause["mono_ms"]]
    after = [e for e in c2 if e["mono_ms"] > healed["started_mono_ms"]]  # SIGCONT: it may write before fault_healed
    owned: set[tuple[str, int]] = set()
    for e in before:
        tps = {(p["topic"], p["partition"]) for p in e.get("partitions", [])}
        if e["name"] == "partitions_assigned":
            owned = owned | tps if e["incremental"] else tps
        elif e["name"] in ("partitions_revoked", "partitions_lost"):
            owned -= tps
    old_id = next(e["member_id"] for e in reversed(before) if e.get("member_id"))
    # A JoinGroup answered while it was stopped is read at SIGCONT: it may first "join" that
    # stale generation under its old id; what matters is the rejoin under a new one.
    rejoined = next(e for e in after if e["name"] == "group_joined" and e["member_id"] != old_id)
    stale = [
        e["generation"] for e in before + after if e.get("generation") is not None and e.get("member_id") == old_id
    ]
    assert rejoined["generation"] > max(stale)
    # It learns it was evicted from a heartbeat, a rejected commit or its stale SyncGroup,
    # whichever is answered first.
    fenced = [
        e
        for e in after
        if e["mono_ms"] <= rejoined["mono_ms"]
        and (
            e["name"] in ("heartbeat_failed", "group_sync_failed")
            and e["error"] in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION")
            or e["name"] == "offsets_committed"
            and e["error_code"] in (22, 25)
        )
    ]
    assert fenced and all(not e.get("success", False) for e in fenced)
    if owned:  # (a cooperative member may own nothing yet when the pause hits)
        lost = next(e for e in after if e["name"] == "partitions_lost")
        assert (
            lost["mono_ms"] < rejoined["mono_ms"]
            and {(p["topic"], p["partition"]) for p in lost["partitions"]} == owned
        )
        assert not any(e["name"] == "partitions_revoked" for e in after if e["mono_ms"] < rejoined["mono_ms"])


def test_java_driver_passes_the_smoke_scenario_on_39(eager_39):
    _assert_passes_smoke(eager_39)
    [crash] = [e for e in eager_39.named("fault_started") if e["kind"] == "crash"]
    assert crash["target"] == "broker-2" and len(eager_39.started_after("broker-2", crash)) == 1  # it came back


def test_java_driver_history_on_39(eager_39):
    _assert_java_history(eager_39)
    assert all(not e["incremental"] for e in eager_39.named("partitions_assigned") if e.get("member"))
    _paused_member_comes_back(eager_39)


def test_java_driver_passes_the_smoke_scenario_on_44_cooperative(cooperative_44):
    _assert_passes_smoke(cooperative_44)


def test_java_driver_history_on_44_cooperative(cooperative_44):
    _assert_java_history(cooperative_44)
    assigned = [e for e in cooperative_44.named("partitions_assigned") if e.get("member")]
    assert all(e["incremental"] for e in assigned)
    # Deltas: the Java client calls onPartitionsAssigned after every rebalance, empty when nothing was added.
    assert any(e["partitions"] == [] for e in assigned)
    _paused_member_comes_back(cooperative_44)
