"""Protocol generations on real brokers: cooperative-sticky moves only what it must, and
KIP-848 (`consumer`) works on Kafka 4.x with both remote assignors."""

from __future__ import annotations

import pytest

from tests.integration.conftest import (
    assert_healed,
    assert_observer_ran_throughout,
    small_scenario,
)


def _tps(event):
    return {(p["topic"], p["partition"]) for p in event["partitions"]}


def test_cooperative_sticky_moves_only_what_must_move(module_run):
    """Two members own 6 partitions; a third joins. Only the partitions the newcomer gets
    are revoked from the others, who keep consuming the rest through the rebalance."""
    scenario = small_scenario("cooperative", duration_s=30, faults=[{"kind": "join-storm", "consumers": 1, "at_s": 10}])
    scenario["cluster"] = {"kafka": "4.4", "brokers": 1}
    scenario["topics"] = [{"name": "events", "partitions": 6}]
    scenario["workload"].update(protocol="classic-cooperative", assignor="cooperative-sticky")
    run = module_run("cooperative", scenario)
    [join] = run.named("fault_started")
    newcomer = [e for e in run.named("partitions_assigned") if e["member"] == "consumer-3" and _tps(e)]
    assert newcomer, "consumer-3 never got partitions"
    gained = _tps(newcomer[0])
    revoked = set().union(
        *(
            _tps(e)
            for e in run.named("partitions_revoked")
            if e["member"] != "consumer-3" and join["mono_ms"] < e["mono_ms"] <= newcomer[0]["mono_ms"]
        )
    )
    assert all(e["incremental"] for e in run.named("partitions_revoked") + run.named("partitions_assigned"))
    assert revoked == gained, (revoked, gained)  # nothing else moved
    assert len(gained) == 2
    # The partitions that stayed were consumed all through the rebalance.
    kept = {(run.topic("events"), p) for p in range(6)} - gained
    during = [e for e in run.named("records_consumed") if join["mono_ms"] < e["mono_ms"] < newcomer[0]["mono_ms"]]
    assert kept <= {(r["topic"], r["partition"]) for e in during for r in e["ranges"]}
    assert run.exit_code == 0, run.output[-3000:]
    assert_healed(run)
    assert_observer_ran_throughout(run)


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_kip848_consumer_protocol_on_kafka_4(module_run, assignor):
    scenario = small_scenario(
        f"kip848-{assignor}",
        duration_s=30,
        faults=[{"kind": "pause", "target": "consumer-2", "at_s": 8, "duration_s": 12}],
    )
    scenario["cluster"] = {"kafka": "4.4", "brokers": 1}
    scenario["workload"].update(protocol="consumer", assignor=assignor)
    run = module_run(f"kip848-{assignor}", scenario)
    joined = run.named("group_joined")
    assert joined and all(e["protocol_name"] == assignor for e in joined)
    # The broker fenced the paused member (session expired) and computed a new target assignment.
    fenced = [e for e in run.named("coordinator_member_removed") if e.get("detail") == "the member session expired"]
    assert fenced
    targets = run.named("coordinator_target_assignment")
    assert targets and all(e["assignor"] == assignor for e in targets)
    [pause] = run.named("fault_started")
    taken = [
        e
        for e in run.named("partitions_assigned")
        if e["member"] == "consumer-1" and _tps(e) and pause["mono_ms"] < e["mono_ms"]
    ]
    assert taken  # consumer-2's partitions moved to consumer-1
    assert run.exit_code == 0, run.output[-3000:]
    assert_healed(run)
    assert_observer_ran_throughout(run)
