"""The two shipped scenarios, run exactly as the README tells a user to."""

from __future__ import annotations

from tests.integration.conftest import REPO, assert_healed


def test_smoke_passes_with_measured_rebalances(run_scenario):
    run = run_scenario(REPO / "scenarios" / "smoke.yaml")
    assert run.exit_code == 0, run.output[-3000:]
    verdict = run.verdict
    assert verdict["ok"] and verdict["violations"] == []
    assert all(c["status"] == "passed" for c in verdict["checks"].values()), verdict["checks"]
    completed = [r for r in verdict["rebalances"] if r["status"] == "completed"]
    # At least the eviction of the paused member: a rebalance with a measured duration.
    assert len(completed) >= 2
    assert all(r["duration_ms"] is not None and r["duration_ms"] >= 0 for r in completed)
    # The paused member was evicted by the coordinator (session timeout), as the history shows.
    removed = [e for e in run.named("coordinator_member_removed") if e.get("reason") == "failed"]
    assert any(e["member_id"].startswith("consumer-2-") for e in removed), removed
    # The crashed broker came back.
    [crash] = [e for e in run.named("fault_started") if e["kind"] == "crash"]
    assert crash["target"] == "broker-2" and len(run.started_after("broker-2", crash)) == 1
    # Nothing the run started is left, nothing stayed stopped or faulted.
    assert_healed(run)
    assert (run.run_dir / "summary.md").read_text().startswith("# smoke — PASS")


def test_faulty_consumer_is_caught_losing_records(run_scenario):
    run = run_scenario(REPO / "scenarios" / "faulty-consumer.yaml")
    assert run.exit_code == 1, run.output[-3000:]
    lost = [v for v in run.verdict["violations"] if v["check"] == "no-loss"]
    assert lost, run.verdict["violations"]
    for v in lost:
        assert v["partition"].startswith(run.topic("events") + "-") and v["count"] > 0
        lo, _, hi = v["offsets"].partition("-")
        assert int(hi or lo) >= int(lo)
        # The lost offsets are exactly what consumer-1 committed past but never processed.
        assert "consumer-1" in v["members"]
        assert f"offsets {v['offsets']}" in v["message"]
    # And they really are absent from every member's consumed ranges in the history.
    consumed = {
        (r["topic"], r["partition"], o)
        for e in run.named("records_consumed")
        for r in e["ranges"]
        for o in range(r["min_offset"], r["max_offset"] + 1)
    }
    for v in lost:
        topic, _, partition = v["partition"].rpartition("-")
        lo, _, hi = v["offsets"].split(",")[0].partition("-")
        assert (topic, int(partition), int(lo)) not in consumed
    assert "FAIL" in run.output and "no-loss" in run.output
