"""The project's own coordinator (coordinator/) over real ZooKeeper, with members
fetching from real Kafka 3.9 brokers.

- The protocol itself, against two real instances: stale-generation commits refused with
  ILLEGAL_GENERATION, a paused leader and an expired leader session both hand leadership
  over, and the old leader answers NOT_COORDINATOR once it is back.
- Whole runs: a join/leave cycle of 4 members per variant passes every check with one
  generation per rebalance; members follow the leader across a pause, a session expiry
  and a crash without losing records; a member cut off from the coordinator is evicted; v3 keeps a member whose poll stalls past its session timeout, v1 evicts it;
  a join storm into an empty group is one generation with v3's initial delay, several
  without.
"""

from __future__ import annotations

import threading
import time

import pytest

from coordinator.protocol import (
    ILLEGAL_GENERATION,
    NOT_COORDINATOR,
    Address,
    Connection,
    CoordinatorError,
)
from harness.cluster import ClusterSpec, TopicSpec, local_cluster
from harness.cluster.spec import ProjectCoordinator
from tests.integration.conftest import assert_healed, small_scenario

SESSION_MS = 6000
RANGE = [{"name": "range", "topics": ["events"]}]


def coordinator_scenario(
    name: str, variant: str, instances: int = 1, initial_delay_ms: int = 3000, **overrides
) -> dict:
    scenario = small_scenario(name, **overrides)
    scenario["workload"].update(
        protocol=f"coordinator-{variant}",
        coordinator={"instances": instances, "initial_rebalance_delay_ms": initial_delay_ms},
    )
    return scenario


def stabilized_generations(run) -> list[int]:
    return [e["generation"] for e in run.named("coordinator_stabilized")]


def sync_refusals(run) -> list[dict]:
    """A member's SyncGroup refused REBALANCE_IN_PROGRESS (the event carries the generation it
    joined): the next rebalance began before that member asked for its assignment."""
    return [e for e in run.named("group_sync_failed") if e["error"] == "REBALANCE_IN_PROGRESS"]


# --------------------------------------------------------------------- the protocol, raw


@pytest.fixture(scope="module")
def two_instances(tmp_path_factory):
    """ZooKeeper, one broker, two v2 coordinator instances."""
    workdir = tmp_path_factory.mktemp("coordinators")
    spec = ClusterSpec(
        kafka="3.9",
        brokers=1,
        topics=[TopicSpec("events", 4)],
        coordinator=ProjectCoordinator(variant="v2", instances=2, zookeeper_session_timeout_ms=SESSION_MS),
    )
    with local_cluster(spec, workdir) as cluster:
        yield cluster


def connect(cluster, instance: str) -> Connection:
    return Connection(Address.parse(cluster.coordinator_addresses()[instance]))


def join(connection: Connection, group: str, client: str, member_id: str = "") -> dict:
    return connection.request(
        "JoinGroup",
        30,
        group=group,
        member_id=member_id,
        client_id=client,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=SESSION_MS,
        protocols=RANGE,
    )


@pytest.fixture(scope="module", params=["v1", "v2", "v3"])
def one_instance(request, tmp_path_factory):
    """ZooKeeper, one broker, one coordinator instance of each variant."""
    workdir = tmp_path_factory.mktemp(f"coordinator-{request.param}")
    spec = ClusterSpec(
        kafka="3.9",
        brokers=1,
        topics=[TopicSpec("events", 4)],
        coordinator=ProjectCoordinator(variant=request.param, initial_rebalance_delay_ms=1000),
    )
    with local_cluster(spec, workdir) as cluster:
        yield request.param, cluster


def sync_if_leading(connection: Connection, group: str, joined: dict) -> None:
    """v2/v3: the leader hands out the assignment (everything to itself will do here)."""
    if joined["leader_id"] == joined["member_id"]:
        mine = [{"topic": "events", "partition": p} for p in range(4)]
        connection.request(
            "SyncGroup",
            10,
            group=group,
            member_id=joined["member_id"],
            generation_id=joined["generation_id"],
            assignments={joined["member_id"]: mine},
        )


def test_a_commit_with_a_stale_generation_is_refused(one_instance):
    variant, cluster = one_instance
    leader = connect(cluster, "coordinator-1")
    a = join(leader, "stale", "a")
    if variant != "v1":
        sync_if_leading(leader, "stale", a)
    second = {}
    t = threading.Thread(target=lambda: second.update(join(connect(cluster, "coordinator-1"), "stale", "b")))
    t.start()
    # b's join begins the next generation; a learns it from its heartbeat, then rejoins.
    deadline = time.monotonic() + 10
    with pytest.raises(CoordinatorError) as hb:
        while time.monotonic() < deadline:  # until b's JoinGroup has reached the coordinator
            leader.request("Heartbeat", 5, group="stale", member_id=a["member_id"], generation_id=a["generation_id"])
            time.sleep(0.1)
    assert hb.value.name == ("ILLEGAL_GENERATION" if variant == "v1" else "REBALANCE_IN_PROGRESS")
    a2 = join(leader, "stale", "a", a["member_id"])
    t.join(30)
    assert a2["generation_id"] == second["generation_id"] == a["generation_id"] + 1
    with pytest.raises(CoordinatorError) as stale:
        leader.request(
            "OffsetCommit",
            5,
            group="stale",
            member_id=a["member_id"],
            generation_id=a["generation_id"],
            offsets=[{"topic": "events", "partition": 0, "offset": 10}],
        )
    assert stale.value.code == ILLEGAL_GENERATION
    fetched = leader.request("OffsetFetch", 5, group="stale", partitions=[{"topic": "events", "partition": 0}])
    assert fetched["offsets"] == [{"topic": "events", "partition": 0, "offset": -1}]  # nothing was written


def wait_until_both_contend(cluster, timeout_s: float = 30) -> None:
    """Both instances queued for the election lock: the previous case's old leader, stepped
    down, must have reconnected and queued again, or it simply takes the lock back."""
    from kazoo.client import KazooClient

    from coordinator.store import ROOT
    from runtime.zookeeper import QUIET_ZK_LOG

    zk = KazooClient(hosts=cluster.zookeeper_connect, logger=QUIET_ZK_LOG)
    zk.start(timeout=10)
    try:
        deadline = time.monotonic() + timeout_s
        while len(zk.Lock(f"{ROOT}/election").contenders()) < 2:
            assert time.monotonic() < deadline, "the standby instance never queued for the election"
            time.sleep(0.2)
    finally:
        zk.stop()
        zk.close()


@pytest.mark.parametrize("how", ["pause", "expire"])
def test_leadership_moves_and_the_old_leader_answers_not_coordinator(two_instances, how):
    cluster = two_instances
    wait_until_both_contend(cluster)
    old = cluster.coordinator_leader()
    group = f"failover-{how}"
    conn = connect(cluster, old)
    member = join(conn, group, "a")
    mine = [{"topic": "events", "partition": p} for p in range(4)]
    conn.request(
        "SyncGroup",
        5,
        group=group,
        member_id=member["member_id"],
        generation_id=member["generation_id"],
        assignments={member["member_id"]: mine},
    )
    conn.request(
        "OffsetCommit",
        5,
        group=group,
        member_id=member["member_id"],
        generation_id=member["generation_id"],
        offsets=[{"topic": "events", "partition": 1, "offset": 42}],
    )
    if how == "pause":
        cluster.supervisor.pause(old)
        time.sleep(SESSION_MS / 1000 + 4)  # past its ZooKeeper session
        cluster.supervisor.resume(old)
    else:
        cluster.expire_coordinator_session(old)
    deadline = time.monotonic() + 20
    while (new := cluster.coordinator_leader()) in (old, None) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert new not in (old, None)
    with pytest.raises(CoordinatorError) as refused:
        conn.request("Heartbeat", 5, group=group, member_id=member["member_id"], generation_id=member["generation_id"])
    assert refused.value.code == NOT_COORDINATOR
    # The new leader has the group and its offsets from ZooKeeper.
    fetched = connect(cluster, new).request(
        "OffsetFetch", 5, group=group, partitions=[{"topic": "events", "partition": 1}]
    )
    assert fetched["offsets"][0]["offset"] == 42


# --------------------------------------------------------------------- whole runs


@pytest.mark.parametrize("variant", ["v1", "v2", "v3"])
def test_a_join_leave_cycle_of_four_members(module_run, variant):
    scenario = coordinator_scenario(
        f"cycle-{variant}",
        variant,
        duration_s=24,
        faults=[
            {"kind": "scale", "consumers": 4, "at_s": 5},
            # One leaver at a time: a member stopped while it waits for its SyncGroup answer would
            # leave a generation the coordinator stabilized but nobody was assigned in.
            {"kind": "scale", "consumers": 3, "at_s": 14},
            {"kind": "scale", "consumers": 2, "at_s": 17},
            {"kind": "scale", "consumers": 1, "at_s": 20},
        ],
    )
    run = module_run(f"cycle-{variant}", scenario)
    assert run.exit_code == 0, run.output[-3000:]
    # One generation per rebalance, none skipped: each completed (stabilized by the coordinator)
    # or superseded: a join arrived before the leader's assignment (generation 1 of v2), or after
    # it but before a slower member's SyncGroup (the members scaled up start seconds apart), which
    # the coordinator then refused REBALANCE_IN_PROGRESS.
    rebalances = run.verdict["rebalances"]
    assert [r["generation"] for r in rebalances] == list(range(1, len(rebalances) + 1)), rebalances
    completed = [r["generation"] for r in rebalances if r["status"] == "completed"]
    stabilized, refusals = stabilized_generations(run), sync_refusals(run)
    refused = {e["generation"] for e in refusals}
    assert completed == [g for g in stabilized if g not in refused], (stabilized, refused, rebalances)
    # Each refusal answered a SyncGroup that came once the coordinator was preparing the next rebalance.
    preparing = {e["old_generation"]: e["mono_ms"] for e in reversed(run.named("coordinator_preparing_rebalance"))}
    assert all(e["mono_ms"] >= preparing[e["generation"]] for e in refusals), (refusals, preparing)
    assert {e["generation"] for e in run.named("group_joined")} == {r["generation"] for r in rebalances}
    assert {e["member"] for e in run.named("partitions_assigned")} >= {f"consumer-{i}" for i in range(1, 5)}
    last = [e for e in run.named("partitions_assigned") if e["member"] == "consumer-1"][-1]
    assert len(last["partitions"]) == 4  # alone again at the end
    assert run.verdict["ok"] and not run.verdict["violations"]
    assert len(completed) >= 3  # the start, scaling up, scaling down
    assert_healed(run)


def test_members_follow_the_leader_across_pause_and_session_expiry(module_run):
    scenario = coordinator_scenario(
        "failover",
        "v2",
        instances=2,
        duration_s=34,
        faults=[
            {"kind": "pause", "target": "coordinator", "at_s": 6, "duration_s": 10},
            {"kind": "zk-session-expiry", "target": "coordinator", "at_s": 24},
        ],
    )
    run = module_run("failover", scenario)
    assert run.exit_code == 0, run.output[-3000:]
    pause, expiry = run.named("fault_started")
    elected = run.named("coordinator_elected")
    first, after_pause, after_expiry = elected[0], None, None
    for e in elected[1:]:
        if e["mono_ms"] > pause["mono_ms"] and after_pause is None:
            after_pause = e
        elif e["mono_ms"] > expiry["mono_ms"] and after_expiry is None:
            after_expiry = e
    assert pause["target"] == first["instance"] != after_pause["instance"]
    assert after_expiry is not None and after_expiry["instance"] != after_pause["instance"]
    resigned = {(e["instance"], e["reason"].split(":")[0]) for e in run.named("coordinator_resigned")}
    assert any(i == first["instance"] for i, _ in resigned)
    # Every member ended up talking to the last leader, and nothing was lost.
    found = {}
    for e in run.named("coordinator_found"):
        found[e["member"]] = e["instance"]
    assert set(found.values()) == {after_expiry["instance"]}
    assert run.verdict["checks"]["no-loss"]["status"] == "passed"
    assert_healed(run)


def test_a_crashed_leader_and_a_member_cut_off_from_the_coordinator(module_run):
    # The crash comes once v3's initial delay has formed the group, the cut once the new leader leads.
    scenario = coordinator_scenario(
        "crash-cut",
        "v3",
        instances=2,
        duration_s=36,
        faults=[
            {"kind": "crash", "target": "coordinator", "at_s": 8, "restart_after_s": 3},
            {"kind": "network", "target": "consumer-1", "link": "coordinator", "at_s": 20, "duration_s": 10},
        ],
    )
    run = module_run("crash-cut", scenario)
    assert run.exit_code == 0, run.output[-3000:]
    crash, cut = run.named("fault_started")
    elected = [e["instance"] for e in run.named("coordinator_elected")]
    assert elected[0] == crash["target"] and elected[1] != crash["target"]  # SIGKILL: the other takes over
    restarted = [e for e in run.named("coordinator_started") if e["instance"] == crash["target"]]
    assert len(restarted) == 2  # and the crashed one came back (as a follower)
    assert cut["target"] == "consumer-1" and cut["details"]["proxies"] == [f"lane-1.{elected[1]}"]
    # Cut off past its session timeout: the coordinator evicts it, it loses its partitions and rejoins.
    [healed] = [e for e in run.named("fault_healed") if e["fault_id"] == cut["fault_id"]]
    removed = [e for e in run.named("coordinator_member_removed") if cut["mono_ms"] < e["mono_ms"] < healed["mono_ms"]]
    assert removed and "session timeout" in removed[0]["cause"]
    lost = [e for e in run.named("partitions_lost") if e["member"] == "consumer-1" and e["mono_ms"] > cut["mono_ms"]]
    assert lost
    assert [
        e
        for e in run.named("partitions_assigned")
        if e["member"] == "consumer-1" and e["mono_ms"] > healed["started_mono_ms"]
    ]
    assert run.verdict["checks"]["no-loss"]["status"] == "passed"
    assert_healed(run)


@pytest.mark.parametrize("variant, evicted", [("v3", False), ("v1", True)])
def test_a_poll_stall_past_the_session_timeout(module_run, variant, evicted):
    """KIP-62: v3 heartbeats from a background thread and waits max.poll.interval.ms; v1
    heartbeats from the poll loop, so the stalled member misses its session."""
    scenario = coordinator_scenario(
        f"stall-{variant}",
        variant,
        duration_s=24,
        faults=[{"kind": "poll-stall", "target": "consumer-1", "at_s": 6, "duration_s": 10}],
    )
    scenario["workload"]["max_poll_interval_ms"] = 20000
    run = module_run(f"stall-{variant}", scenario)
    assert run.exit_code == 0, run.output[-3000:]
    [stall] = run.named("poll_stall_started")
    [recovery] = [e for e in run.named("phase") if e["phase"] == "recovery"]  # members leave at the end
    removed = [
        e for e in run.named("coordinator_member_removed") if stall["mono_ms"] < e["mono_ms"] < recovery["mono_ms"]
    ]
    if evicted:
        assert removed and "session timeout" in removed[0]["cause"], removed
    else:
        assert removed == []
        assert not [
            e
            for e in run.named("coordinator_preparing_rebalance")
            if stall["mono_ms"] < e["mono_ms"] < recovery["mono_ms"]
        ]
    assert_healed(run)


@pytest.mark.parametrize("delay_ms", [3000, 0])
def test_a_join_storm_into_an_empty_group(module_run, delay_ms):
    scenario = coordinator_scenario(f"storm-{delay_ms}", "v3", initial_delay_ms=delay_ms, duration_s=12)
    scenario["workload"]["consumers"] = 4
    run = module_run(f"storm-{delay_ms}", scenario)
    assert run.exit_code == 0, run.output[-3000:]
    # Generations the coordinator formed (members got a JoinGroup answer for), whether or not
    # they reached Stable: without the delay a join arriving before SyncGroup ends one early.
    formed = sorted({e["generation"] for e in run.before_recovery("group_joined")})
    stabilized = [e["generation"] for e in run.before_recovery("coordinator_stabilized")]
    if delay_ms:
        assert formed == [1] and stabilized == [1], (formed, stabilized)
    else:
        assert len(formed) > 1 and stabilized[-1] == formed[-1], (formed, stabilized)  # the last one held
    assert_healed(run)
