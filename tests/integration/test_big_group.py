"""A group far bigger than the chaos scenarios': forty members (one process each) on one broker,
a crash among them. The small form of benchmarks/member_cost.py --members 100 (which ran a
hundred): lanes, proxies and ports for every member, and the oracle over all of them."""

from __future__ import annotations

from tests.integration.conftest import assert_healed, small_scenario

MEMBERS = 40


def test_forty_members_share_eighty_partitions_and_one_crash_moves_only_its_own(run_scenario):
    scenario = small_scenario(
        "forty", duration_s=20, faults=[{"kind": "crash", "target": "consumer-7", "at_s": 6}]
    )  # SIGKILL, not restarted: gone for the rest
    scenario["topics"] = [{"name": "events", "partitions": 2 * MEMBERS}]
    scenario["workload"].update(consumers=MEMBERS, producer={"rate": 800}, warmup_timeout_s=120)
    run = run_scenario(scenario)
    assert run.exit_code == 0, run.output[-3000:]
    assert all(c["status"] == "passed" for c in run.verdict["checks"].values()), run.verdict["checks"]
    started = {e["member"] for e in run.named("consumer_started")}
    assert len(started) == MEMBERS
    # The group formed with every member (the first ones to start formed smaller generations
    # first): range over forty gives each two partitions.
    [crash] = [e for e in run.named("fault_started") if e["kind"] == "crash"]
    completed = [r for r in run.verdict["rebalances"] if r["status"] == "completed"]
    formed = [r for r in completed if len(r["members"]) == MEMBERS and r["end_mono_ms"] < crash["mono_ms"]]
    assert formed, [(r["generation"], len(r["members"])) for r in completed]
    whole = [e for e in run.named("partitions_assigned") if e["generation"] == formed[-1]["generation"]]
    assert len(whole) == MEMBERS and all(len(e["partitions"]) == 2 for e in whole)
    # The crash: the coordinator evicted consumer-7 and the next generation had the other 39.
    after = [r for r in completed if r["start_mono_ms"] > crash["mono_ms"]]
    assert after and len(after[0]["members"]) == MEMBERS - 1 and "consumer-7" not in after[0]["members"], after
    assert_healed(run)
