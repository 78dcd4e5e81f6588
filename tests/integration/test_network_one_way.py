"""One-way cuts on real brokers: consumer-1's lane blackholed inbound (its requests arrive, no
answer comes back), then consumer-2's outbound (nothing it sends arrives). What tells them apart is
what the brokers got: the inbound member's commit reached the group's offsets though it never
heard back, and it timed its requests out; the outbound member's did not reach them. The outbound
one is evicted within a session timeout of its cut (silenced, as its fault declares); the inbound
one too, here (librdkafka keeps one heartbeat in flight: one more arrives), but its fault declares
no silence — its coordinator heard it after the cut — so the explanation names it as a fault the
member fell silent during."""

from __future__ import annotations

import pytest

from tests.integration.conftest import (
    BROKER_CLOCK_MS,
    FAULTED_WORKLOAD,
    HEARTBEAT_INTERVAL_MS,
    SESSION_MS,
    assert_healed,
)


@pytest.fixture(scope="module")
def one_way(module_run):
    return module_run(
        "one-way",
        {
            "name": "one-way",
            "seed": 1,
            "duration_s": 32,
            "cluster": {"kafka": "3.9", "brokers": 1},
            "topics": [{"name": "events", "partitions": 4}],
            "workload": {
                "group": "one-way",
                "protocol": "classic-cooperative",
                **FAULTED_WORKLOAD,
            },
            "faults": [
                {"kind": "network", "target": "consumer-1", "at_s": 2, "duration_s": 10, "direction": "inbound"},
                {"kind": "network", "target": "consumer-2", "at_s": 16, "duration_s": 10, "direction": "outbound"},
            ],
            "recovery": {"timeout_s": 60},
        },
    )


def cut(run, fault_id: str) -> tuple[dict, dict]:
    [started] = [e for e in run.named("fault_started") if e["fault_id"] == fault_id]
    [healed] = [e for e in run.named("fault_healed") if e["fault_id"] == fault_id]
    return started, healed


def acknowledged_before(run, member: str, at: float) -> dict[int, int]:
    """The offsets ``member`` was told the group had committed for it, before ``at``: partition -> offset."""
    acked: dict[int, int] = {}
    for e in run.named("offsets_committed"):
        if e["member"] == member and e["mono_ms"] < at and e.get("success"):
            acked.update({o["partition"]: o["offset"] for o in e["offsets"]})
    return acked


def owned_at(run, member: str, at: float) -> set[int]:
    owned: set[int] = set()
    for e in run.events:
        if e.get("member") != member or e["mono_ms"] > at:
            continue
        if e["name"] == "partitions_assigned":
            owned |= {p["partition"] for p in e["partitions"]}
        elif e["name"] in ("partitions_revoked", "partitions_lost"):
            owned -= {p["partition"] for p in e["partitions"]}
    return owned


def committed_by_group(run, lo: float, hi: float) -> dict[int, int]:
    """The highest committed offset per partition the observer saw between ``lo`` and ``hi``."""
    seen: dict[int, int] = {}
    for e in run.named("lag_sampled"):
        if lo <= e["mono_ms"] <= hi:
            for p in e["partitions"]:
                if p.get("committed") is not None:
                    seen[p["partition"]] = max(seen.get(p["partition"], -1), p["committed"])
    return seen


def evicted(run, member: str, after: float) -> dict:
    return next(
        e
        for e in run.named("coordinator_preparing_rebalance")
        if e["mono_ms"] >= after and member in (e.get("reason") or "") and "heartbeat expiration" in e["reason"]
    )


def test_each_cut_is_one_stream_of_the_members_lane_and_is_healed(one_way):
    for fault_id, member, direction, stream in (
        ("f1", "consumer-1", "inbound", "downstream"),
        ("f2", "consumer-2", "outbound", "upstream"),
    ):
        started, _ = cut(one_way, fault_id)
        assert started["target"] == member and started["params"]["direction"] == direction
        assert started["details"] == {"proxies": [f"lane-{member[-1]}.broker-1"], "streams": [stream]}
    assert cut(one_way, "f1")[0]["effects"]["silences"] is None  # its coordinator hears it
    assert cut(one_way, "f2")[0]["effects"]["silenced_as"] == "cut off from the brokers, outbound only"
    assert_healed(one_way)


def test_cut_inbound_its_commit_reaches_the_group_though_no_answer_comes_back(one_way):
    started, healed = cut(one_way, "f1")
    member, at = "consumer-1", started["mono_ms"]
    gone = evicted(one_way, member, at)["mono_ms"]
    owned = owned_at(one_way, member, at)
    acked = acknowledged_before(one_way, member, at)
    heard = [e for e in one_way.named("offsets_committed") if e["member"] == member and at <= e["mono_ms"] <= gone]
    assert owned and not [e for e in heard if e.get("success")], heard  # no commit answer came back
    committed = committed_by_group(one_way, at, gone)
    assert any(committed.get(p, -1) > acked.get(p, -1) for p in owned), (owned, acked, committed)
    # ... and it timed its heartbeat out.
    failed = [e for e in one_way.named("heartbeat_failed") if e["member"] == member and at <= e["mono_ms"]]
    assert any("timed out" in e["error"].lower() for e in failed if e["mono_ms"] <= healed["mono_ms"]), failed


def test_cut_outbound_nothing_it_sends_arrives(one_way):
    started, _ = cut(one_way, "f2")
    member, at = "consumer-2", started["mono_ms"]
    gone = evicted(one_way, member, at)["mono_ms"]
    owned, acked = owned_at(one_way, member, at), acknowledged_before(one_way, member, at)
    committed = committed_by_group(one_way, at, gone - BROKER_CLOCK_MS)
    assert owned and all(committed.get(p, acked.get(p)) == acked.get(p) for p in owned), (owned, acked, committed)
    # Its last heartbeat was sent before the cut: the coordinator let it go within a session of it.
    assert gone - at <= SESSION_MS + BROKER_CLOCK_MS


def test_both_members_were_evicted_at_their_session_timeout_and_the_explanation_says_which_cut(one_way):
    for fault_id, member in (("f1", "consumer-1"), ("f2", "consumer-2")):
        started, _ = cut(one_way, fault_id)
        gone = evicted(one_way, member, started["mono_ms"])
        assert (
            gone["mono_ms"] - started["mono_ms"] >= SESSION_MS - HEARTBEAT_INTERVAL_MS - BROKER_CLOCK_MS
        )  # a heartbeat before
    said = [r.get("explanation", "") for r in one_way.verdict["rebalances"]]
    assert any("consumer-1 went silent during fault f1 (network)" in s for s in said), said
    assert any("consumer-2 was cut off from the brokers, outbound only (fault f2, network)" in s for s in said), said
    assert one_way.exit_code == 0, one_way.output[-2000:]
