"""A member blackholed from its group coordinator (Toxiproxy, its own lane only)."""

from __future__ import annotations

import pytest

from tests.integration.conftest import assert_healed

SESSION_MS = 6000


@pytest.fixture(scope="module")
def cut_off(module_run):
    return module_run(
        "cut-off",
        {
            "name": "cut-off",
            "seed": 3,
            "duration_s": 40,
            "cluster": {"kafka": "3.9", "brokers": 3},
            "topics": [{"name": "events", "partitions": 6}],
            "workload": {
                "group": "cut-off",
                "consumers": 3,
                "processing_ms": 1,
                "session_timeout_ms": SESSION_MS,
                "producer": {"rate": 150},
            },
            "faults": [
                {
                    "kind": "network",
                    "target": "consumer-1",
                    "link": "coordinator",
                    "effect": "blackhole",
                    "at_s": 8,
                    "duration_s": 15,
                }
            ],
            "recovery": {"timeout_s": 60},
        },
    )


def _between(run, name, lo, hi, member=None):
    return [e for e in run.named(name) if lo <= e["mono_ms"] <= hi and (member is None or e.get("member") == member)]


def test_only_the_members_lane_to_the_coordinator_is_cut(cut_off):
    [started] = cut_off.named("fault_started")
    coordinator = started["details"]["proxies"]
    assert len(coordinator) == 1 and coordinator[0].startswith("lane-1.broker-")
    # It was the group's coordinator at that moment, as the observer saw it.
    broker_id = int(coordinator[0].rsplit("-", 1)[1])
    seen = [e for e in cut_off.named("group_described") if e["mono_ms"] <= started["mono_ms"]]
    assert seen[-1]["coordinator"] == broker_id


def test_the_member_loses_its_partitions_while_the_others_keep_consuming(cut_off):
    [started] = cut_off.named("fault_started")
    [healed] = cut_off.named("fault_healed")
    before = [
        e
        for e in cut_off.named("partitions_assigned")
        if e["member"] == "consumer-1" and e["mono_ms"] < started["mono_ms"]
    ][-1]
    owned = {(p["topic"], p["partition"]) for p in before["partitions"]}
    moved = _between(cut_off, "partitions_assigned", started["mono_ms"], healed["mono_ms"])
    assert moved and all(e["member"] != "consumer-1" for e in moved)
    taken_at = moved[0]["mono_ms"]
    assert taken_at - started["mono_ms"] >= SESSION_MS - 1000  # evicted by the session timeout
    now_owned = {(p["topic"], p["partition"]) for e in moved for p in e["partitions"]}
    assert owned <= now_owned
    # The others kept consuming while consumer-1 was cut off — including its old partitions.
    others = _between(cut_off, "records_consumed", taken_at, healed["mono_ms"])
    assert {e["member"] for e in others} == {"consumer-2", "consumer-3"}
    assert owned <= {(r["topic"], r["partition"]) for e in others for r in e["ranges"]}


def test_after_the_heal_it_rejoins_and_its_stale_commits_failed(cut_off):
    [healed] = cut_off.named("fault_healed")
    rejoined = [
        e
        for e in cut_off.named("group_joined")
        if e["member"] == "consumer-1" and e["mono_ms"] > healed["started_mono_ms"]
    ]
    assert rejoined
    assigned = [
        e
        for e in cut_off.named("partitions_assigned")
        if e["member"] == "consumer-1" and e["mono_ms"] > healed["started_mono_ms"]
    ]
    assert assigned and assigned[0]["partitions"]
    # Every commit consumer-1 tried for partitions it had lost was refused by the broker.
    [started] = cut_off.named("fault_started")
    stale = [
        e
        for e in cut_off.named("offsets_committed")
        if e["member"] == "consumer-1"
        and started["mono_ms"] + SESSION_MS <= e.get("started_mono_ms", e["mono_ms"]) <= rejoined[0]["mono_ms"]
    ]
    assert all(not e["success"] for e in stale), stale
    assert cut_off.verdict["checks"]["fenced-commits"]["status"] == "passed"


def test_the_run_passes_and_heals(cut_off):
    assert cut_off.exit_code == 0, cut_off.output[-3000:]
    assert_healed(cut_off)
