"""Message faults on real brokers: single group-protocol answers of one member delayed, withheld,
cut after the broker processed the request, or replaced by an error, through the message proxy.

Two grouped runs on one Kafka 4.x broker (KRaft): classic-cooperative, and the consumer protocol
(KIP-848), each with several message faults in turn on different members, APIs and actions. Every
assertion reads the history: the proxy's `message_faulted` events (which message, which answer)
and what the member's client did next. The full protocol x API x action matrix is a command
(benchmarks/message_matrix.py), not a test: it takes an hour.
"""

from __future__ import annotations

import re

import pytest

from faults.message_proxy.apis import APIS
from tests.integration.conftest import (
    BROKER_CLOCK_MS,
    CLIENT_CLOCK_MS,
    FAULTED_WORKLOAD,
    HEARTBEAT_INTERVAL_MS,
    SESSION_MS,
    assert_healed,
)

DELAY_MS = 2500


def message(target: str, api: str, action: str, at_s: float, duration_s: float, **options) -> dict:
    return {
        "kind": "message",
        "target": target,
        "api": api,
        "action": action,
        "at_s": at_s,
        "duration_s": duration_s,
        **options,
    }


CLASSIC_FAULTS = [
    # f1: consumer-1's next two heartbeat answers come 2.5 s late
    message("consumer-1", "Heartbeat", "delay", 1, 5, delay_ms=DELAY_MS, count=2),
    # f2: consumer-2's next commit answered REBALANCE_IN_PROGRESS
    message("consumer-2", "OffsetCommit", "error", 2, 4, error="REBALANCE_IN_PROGRESS", count=1),
    # f3, f4: in the rebalance a third member starts (f5), consumer-2's SyncGroup answer says
    # REBALANCE_IN_PROGRESS and consumer-1's connection closes once the broker has its SyncGroup
    message("consumer-2", "SyncGroup", "error", 6, 8, error="REBALANCE_IN_PROGRESS", count=1),
    message("consumer-1", "SyncGroup", "cut-after-request", 6, 8, count=1),
    {"kind": "scale", "consumers": 3, "at_s": 7},
    # f6: one heartbeat answer of consumer-2 never comes
    message("consumer-2", "Heartbeat", "withhold", 11, 6, count=1),
]

CONSUMER_FAULTS = [
    # f1: consumer-1's next ConsumerGroupHeartbeat answer comes 2.5 s late
    message("consumer-1", "ConsumerGroupHeartbeat", "delay", 1, 4, delay_ms=DELAY_MS, count=1),
    # f2: consumer-2's next commit answered STALE_MEMBER_EPOCH
    message("consumer-2", "OffsetCommit", "error", 2, 3, error="STALE_MEMBER_EPOCH", count=1),
    # f3: consumer-2 fenced by its heartbeat's answer; f4: its rejoin (epoch 0) reaches the broker,
    # but its connection closes before the answer
    message("consumer-2", "ConsumerGroupHeartbeat", "error", 5, 5, error="FENCED_MEMBER_EPOCH", count=1),
    message("consumer-2", "ConsumerGroupHeartbeat", "cut-after-request", 5, 5, match={"member_epoch": 0}, count=1),
    # f5: one commit answer of consumer-1 never comes
    message("consumer-1", "OffsetCommit", "withhold", 10, 4, count=1),
]

# What the consumer run's brokers get for its members' timing (the consumer protocol's are the
# brokers' settings), given to the classic run as well: both borrow one shared cluster.
SHARED_BROKER_CONFIG = {
    "group.consumer.session.timeout.ms": SESSION_MS,
    "group.consumer.min.session.timeout.ms": SESSION_MS,
    "group.consumer.heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
    "group.consumer.min.heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
}
CLASSIC_S, CONSUMER_S = 20, 15  # workload seconds: the last fault healed, the member back


def scenario(name: str, protocol: str, faults: list[dict], duration_s: int) -> dict:
    return {
        "name": name,
        "seed": 7,
        "duration_s": duration_s,
        "cluster": {"kafka": "4.4", "brokers": 1, "broker_config": SHARED_BROKER_CONFIG},
        "topics": [{"name": "events", "partitions": 4}],
        "workload": {"group": name, "protocol": protocol, **FAULTED_WORKLOAD},
        "faults": faults,
        "recovery": {"timeout_s": 60, "stable_for_s": 2},
    }


@pytest.fixture(scope="module")
def classic(module_run):
    return module_run("msg-classic", scenario("msg-classic", "classic-cooperative", CLASSIC_FAULTS, CLASSIC_S))


@pytest.fixture(scope="module")
def consumer(module_run):
    return module_run("msg-consumer", scenario("msg-consumer", "consumer", CONSUMER_FAULTS, CONSUMER_S))


# --- reading the history -------------------------------------------------------------------


def faulted(run, fault_id: str) -> list[dict]:
    return [e for e in run.named("message_faulted") if e["fault_id"] == fault_id]


def of(run, member: str, name: str, after: float, before: float = float("inf")) -> list[dict]:
    """``member``'s ``name`` events from ``after`` (less the client clock's step) to ``before``."""
    return [
        e for e in run.named(name) if e.get("member") == member and after - CLIENT_CLOCK_MS <= e["mono_ms"] <= before
    ]


def commit_spanning(run, member: str, event: dict) -> dict:
    """The member's commit whose request was out when the proxy acted on its answer."""
    [commit] = [
        e
        for e in run.named("offsets_committed")
        if e["member"] == member and e["started_mono_ms"] <= event["mono_ms"] <= e["mono_ms"] + CLIENT_CLOCK_MS
    ]
    return commit


def assert_acted_as_asked(run, faults: list[dict]) -> None:
    """Each message fault acted on as many messages as its count, each of its target's, of its API,
    at a version the API has, with its action and what that action carries."""
    ids = {f["fault_id"]: f for f in run.named("fault_started") if f["kind"] == "message"}
    assert len(ids) == sum(f["kind"] == "message" for f in faults)
    for fault_id, started in ids.items():
        params, target = started["params"], started["target"]
        acted = faulted(run, fault_id)
        assert len(acted) == params["count"], (fault_id, acted)
        for e in acted:
            assert (e["member"], e["broker"], e["api"], e["action"]) == (
                target,
                "broker-1",
                params["api"],
                params["action"],
            ), e
            assert e["api_version"] in APIS[params["api"]].versions, e
            assert e["mono_ms"] >= started["mono_ms"], e  # never before its rule was given
            if params["action"] == "delay":
                assert e["delay_ms"] == params["delay_ms"]
            if params["action"] == "withhold":
                assert e["close_after_ms"] == started["details"]["rule"]["close_after_ms"] > 0
            if params["action"] == "error":
                assert (e["error"], e["replaced_error"]) == (params["error"], "NONE"), e
            assert isinstance(e["correlation_id"], int) and e["correlation_id"] >= 0, e


# --- classic-cooperative -------------------------------------------------------------------


def test_classic_each_fault_acted_on_the_messages_it_names(classic):
    assert_acted_as_asked(classic, CLASSIC_FAULTS)


def test_classic_delayed_heartbeat_answers_hold_the_connection(classic):
    first, second = faulted(classic, "f1")
    # librdkafka sends its next heartbeat only once the last one is answered: the answer came late.
    assert second["mono_ms"] - first["mono_ms"] >= DELAY_MS
    assert second["correlation_id"] > first["correlation_id"]
    # Every answer behind the held one waited too (responses keep their order): no commit of
    # consumer-1, on its coordinator connection, was answered while the heartbeat's answer was
    # held, and the one out then was answered as it was let go. That one may have been sent
    # before the proxy saw the heartbeat's answer (a sync commit between the heartbeat's request
    # and its answer): it is told by its end, not by its start. The first 50 ms let an answer
    # that came before the heartbeat's reach the member.
    released_ms = first["mono_ms"] + DELAY_MS
    commits = [e for e in classic.named("offsets_committed") if e["member"] == "consumer-1"]
    answered_while_held = [e for e in commits if first["mono_ms"] + 50 < e["mono_ms"] < released_ms - CLIENT_CLOCK_MS]
    assert not answered_while_held, answered_while_held
    held = [
        e
        for e in commits
        if e["started_mono_ms"] < released_ms - 100
        and released_ms - CLIENT_CLOCK_MS <= e["mono_ms"] <= released_ms + 1000
    ]
    assert held, "consumer-1 had no commit out while its heartbeat's answer was held"
    assert all(e["success"] for e in held), held  # late, not failed
    assert not of(classic, "consumer-1", "heartbeat_failed", first["mono_ms"], second["mono_ms"] + DELAY_MS)


def test_classic_commit_answered_with_an_error_fails_with_that_code(classic):
    [e] = faulted(classic, "f2")
    commit = commit_spanning(classic, "consumer-2", e)
    assert (commit["success"], commit["error"], commit["error_code"]) == (False, "REBALANCE_IN_PROGRESS", 27)
    later = [
        c for c in of(classic, "consumer-2", "offsets_committed", commit["mono_ms"]) if c["mono_ms"] > commit["mono_ms"]
    ]
    assert later and later[0]["success"], later[:1]  # its next commit went through


def test_classic_sync_group_error_makes_the_member_rejoin(classic):
    [e] = faulted(classic, "f3")
    [failed, *_] = of(classic, "consumer-2", "group_sync_failed", e["mono_ms"], e["mono_ms"] + 1000)
    assert "rebalance in progress" in failed["error"].lower()
    rejoin = of(classic, "consumer-2", "group_join_sent", failed["mono_ms"])
    assert rejoin, "consumer-2 never rejoined after its SyncGroup failed"
    joined = of(classic, "consumer-2", "group_joined", rejoin[0]["mono_ms"])
    synced = of(classic, "consumer-2", "group_synced", rejoin[0]["mono_ms"])
    assert joined and synced and joined[0]["generation"] >= failed["generation"]
    # The explanation of the next rebalance names the answer and the fault as its trigger. Both
    # SyncGroup answers of that generation were faulted (f3, f4) and both members rejoin: the
    # coordinator names whichever rejoined first. The trigger is on the critical path even when a
    # longer join phase, not the trigger, is what the sentence tells.
    said = (
        "consumer-2's SyncGroup response was replaced by REBALANCE_IN_PROGRESS (fault f3)",
        "consumer-1's SyncGroup response was cut: the broker processed the request, the connection "
        "closed before the answer (fault f4)",
    )
    triggers = [
        w
        for r in classic.verdict["rebalances"]
        for w in r["critical_path"]
        if (w["phase"], w["cause"]) == ("trigger", "message")
    ]
    assert any(s in w["detail"] for w in triggers for s in said), [
        r["critical_path"][:1] for r in classic.verdict["rebalances"]
    ]


def test_classic_sync_group_cut_after_the_broker_had_it(classic):
    [e] = faulted(classic, "f4")
    # The generation consumer-1 was syncing: the one it had joined.
    joined = [j for j in classic.named("group_joined") if j["member"] == "consumer-1" and j["mono_ms"] <= e["mono_ms"]]
    generation = joined[-1]["generation"]
    if joined[-1]["is_leader"]:  # its SyncGroup carried the assignment: the broker took it before the cut
        received = [r for r in classic.named("coordinator_assignment_received") if r["generation"] == generation]
        assert received and received[0]["mono_ms"] <= e["mono_ms"] + BROKER_CLOCK_MS
    # The member saw its SyncGroup step end without an answer: it synced again (librdkafka retries on
    # a new connection) or rejoined, and was in a synced generation afterwards.
    after = of(classic, "consumer-1", "group_synced", e["mono_ms"]) + of(
        classic, "consumer-1", "group_sync_failed", e["mono_ms"]
    )
    assert after, "consumer-1's SyncGroup step never ended after its connection was cut"
    assert min(a["mono_ms"] for a in after) - e["mono_ms"] >= 10  # not the answer: a retry on a new connection
    assert any(s["generation"] >= generation for s in of(classic, "consumer-1", "group_synced", e["mono_ms"]))


def test_classic_withheld_heartbeat_times_out_and_the_member_comes_back(classic):
    [e] = faulted(classic, "f6")
    # No answer, so no next heartbeat: the coordinator evicts consumer-2 a session after the one it had.
    [removed] = [
        r
        for r in classic.named("coordinator_member_removed")
        if r["reason"] == "failed" and r["mono_ms"] > e["mono_ms"]
    ]
    assert removed["mono_ms"] - e["mono_ms"] >= SESSION_MS - HEARTBEAT_INTERVAL_MS
    # The connection stalled until the request's timeout: the proxy closed it then (close_after_ms,
    # the client's own wait for that request) unless the client gave the request up first.
    [failed, *_] = of(classic, "consumer-2", "heartbeat_failed", e["mono_ms"])
    assert re.search("transport failure|timed out", failed["error"], re.I), failed
    assert failed["mono_ms"] - e["mono_ms"] >= min(e["close_after_ms"], SESSION_MS) - 200, failed
    lost = of(classic, "consumer-2", "partitions_lost", e["mono_ms"])
    assert lost, "consumer-2 never learnt it had been evicted"
    back = of(classic, "consumer-2", "partitions_assigned", lost[0]["mono_ms"])
    assert any(b["partitions"] for b in back), "consumer-2 never got partitions back"


def test_classic_run_passes_and_heals(classic):
    assert classic.exit_code == 0, classic.output[-3000:]
    assert classic.verdict["status"] == "pass"
    assert_healed(classic)
    [check] = classic.named("heal_checked")
    assert check["message_rules"] == []


# --- consumer (KIP-848) --------------------------------------------------------------------


def test_consumer_each_fault_acted_on_the_messages_it_names(consumer):
    assert_acted_as_asked(consumer, CONSUMER_FAULTS)


def test_consumer_delayed_heartbeat_answer_outlasts_the_clients_wait(consumer):
    [e] = faulted(consumer, "f1")
    # librdkafka waits less than 2.5 s for a ConsumerGroupHeartbeat answer: it gave the request up
    # (and the connection the answer was held on) before the answer would have come.
    gave_up = [
        c
        for c in of(consumer, "consumer-1", "client_log", e["mono_ms"], e["mono_ms"] + DELAY_MS)
        if "Timed out 1 in-flight" in c["message"]
    ]
    assert gave_up, "consumer-1 never gave the held heartbeat up"
    # It kept its membership and its partitions: the next heartbeat, on a new connection, went through.
    assert not [p for p in consumer.before_recovery("partitions_lost") if p["member"] == "consumer-1"]


def test_consumer_commit_answered_stale_member_epoch_fails_with_that_code(consumer):
    [e] = faulted(consumer, "f2")
    commit = commit_spanning(consumer, "consumer-2", e)
    assert (commit["success"], commit["error"], commit["error_code"]) == (False, "STALE_MEMBER_EPOCH", 113)


def test_consumer_fenced_member_rejoins_and_its_cut_join_reached_the_broker(consumer):
    [fenced] = faulted(consumer, "f3")
    [cut] = faulted(consumer, "f4")
    # Fenced by the answer: it lost its partitions and rejoined (an epoch-0 heartbeat: the one cut).
    lost = of(consumer, "consumer-2", "partitions_lost", fenced["mono_ms"], fenced["mono_ms"] + 1000)
    rejoin = of(consumer, "consumer-2", "group_join_sent", fenced["mono_ms"], cut["mono_ms"])
    assert lost and rejoin, (lost, rejoin)
    assert cut["correlation_id"] > fenced["correlation_id"]
    # The broker processed the cut join, then the retry on a new connection: it logged the member
    # joining twice before the member learnt its epoch.
    joined = of(consumer, "consumer-2", "group_joined", cut["mono_ms"])
    assert joined, "consumer-2 never joined again after its join was cut"
    member_id = joined[0]["member_id"]
    joins = [
        j
        for j in consumer.named("coordinator_member_joined")
        if j.get("member_id") == member_id
        and fenced["mono_ms"] - BROKER_CLOCK_MS <= j["mono_ms"] <= joined[0]["mono_ms"] + BROKER_CLOCK_MS
    ]
    assert len(joins) >= 2, joins
    assert joins[0]["mono_ms"] <= cut["mono_ms"] + BROKER_CLOCK_MS
    assigned = of(consumer, "consumer-2", "partitions_assigned", cut["mono_ms"])
    assert any(a["partitions"] for a in assigned)


def test_consumer_withheld_commit_answer_is_retried_on_a_new_connection(consumer):
    [e] = faulted(consumer, "f5")
    commit = commit_spanning(consumer, "consumer-1", e)
    # The answer never came; the client gave the connection up and its commit went through again.
    assert commit["success"], commit
    assert commit["mono_ms"] - e["mono_ms"] >= 1000
    gave_up = [
        c
        for c in of(consumer, "consumer-1", "client_log", e["mono_ms"], commit["mono_ms"])
        if "Timed out" in c["message"]
    ]
    assert gave_up, "consumer-1's commit came through without its connection given up"


def test_consumer_run_passes_and_heals(consumer):
    assert consumer.exit_code == 0, consumer.output[-3000:]
    assert consumer.verdict["status"] == "pass"
    assert_healed(consumer)
