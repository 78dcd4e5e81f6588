"""zk-eager: the Kafka 0.8 high-level consumer rebalancing itself through ZooKeeper (seed 000),
against a real ZooKeeper and real Kafka 3.9 brokers.

- The seed's example (5 partitions, 2 consumers -> 0,1,2 and 3,4), read from the history and
  from the owner znodes themselves; a real server-side session expiry (the published session
  id and password) makes the member lose everything and come back with a new session.
- A SIGKILLed consumer's partitions move once its ZooKeeper session expires, not before.
- Churn with few rebalance retries: claims collide with owners that have not let go yet, some
  consumers give up (rebalance_failed) and partitions stay unowned; with more retries and a
  longer backoff the same churn settles (the seed's remedy).
- No fencing: a consumer paused past its session timeout writes offsets for partitions it lost,
  and ZooKeeper takes them. The classic protocol's coordinator rejects the same zombie's
  commits (tests/integration/test_pause.py, test_long_pause_evicts_the_member_and_moves_its_partitions).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import asdict

import pytest
from confluent_kafka import Producer
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from harness.cluster import ClusterSpec, TopicSpec, local_cluster
from harness.cluster.zookeeper import expire_session_as_client
from oracle import load_history
from oracle.protocols import GENERATIONS
from tests.integration.conftest import REPO, assert_healed, small_scenario, wait_for_event
from workloads.driver import MemberSpec, protocol_fields
from workloads.zk_eager.layout import GroupPaths
from workloads.zk_settings import ZkEagerMemberSettings

SESSION_MS = 6000


def zk_scenario(
    name: str, partitions: int, zk_eager: dict | None = None, workload: dict | None = None, **overrides
) -> dict:
    scenario = small_scenario(name, topics=[{"name": "events", "partitions": partitions}], **overrides)
    w = scenario["workload"]
    w.update(
        protocol="zk-eager",
        zk_eager={"zookeeper_session_timeout_ms": SESSION_MS, **(zk_eager or {})},
        **(workload or {}),
    )
    w.pop("assignor")  # zk-eager has one: range over the sorted consumer threads
    return scenario


def last_assignment(events: list[dict], before_ms: float = float("inf")) -> dict[str, list[int]]:
    """Member -> partitions it was last assigned before an instant."""
    out = {}
    for e in events:
        if e["name"] == "partitions_assigned" and e["mono_ms"] < before_ms:
            out[e["member"]] = sorted(p["partition"] for p in e["partitions"])
    return out


# --------------------------------------------------------------------- the seed's example


def test_seed_example_in_the_history_and_the_oracle(module_run):
    """5 partitions, 2 consumers: range over the sorted consumer ids gives 0,1,2 and 3,4 —
    and the oracle, checking range layouts independently, agrees for every generation."""
    run = module_run("zk-seed", zk_scenario("zk-seed", 5, duration_s=15))
    assert run.exit_code == 0, run.output[-3000:]
    events = run.events
    recovery = next(e["mono_ms"] for e in run.named("phase") if e["phase"] == "recovery")
    final = last_assignment(events, before_ms=recovery)  # the end of the run stops members one by one
    ids = {e["member"]: e["consumer_id"] for e in run.named("consumer_started")}
    first, second = sorted(ids, key=ids.get)
    assert final == {first: [0, 1, 2], second: [3, 4]}
    validity = run.verdict["checks"]["assignment-validity"]["detail"]
    assert validity["layouts_checked"], validity  # range layout compared, not just coverage
    # The generation is the cversion of /consumers/<g>/ids, the same for both consumers.
    last_joined = {e["member"]: e["generation"] for e in run.named("group_joined") if e["mono_ms"] < recovery}
    assert len(set(last_joined.values())) == 1
    assert_healed(run)


@pytest.fixture(scope="module")
def seed_cluster(tmp_path_factory):
    with local_cluster(
        ClusterSpec(kafka="3.9", brokers=1, topics=[TopicSpec("events", 5)]),
        tmp_path_factory.mktemp("zk-seed-cluster") / "cluster",
    ) as cluster:
        yield cluster


class Members:
    """zk-eager member processes started by hand on a bare cluster (no harness run)."""

    def __init__(self, cluster, workdir, group: str):
        self.cluster, self.workdir, self.group = cluster, workdir, group
        self.history = workdir / "history.jsonl"
        self.procs: dict[str, subprocess.Popen] = {}

    def spec(self, name: str) -> MemberSpec:
        return MemberSpec(
            member=name,
            incarnation=1,
            history=str(self.history),
            bootstrap_servers=self.cluster.bootstrap_servers,
            group=self.group,
            topics=["events"],
            **protocol_fields(GENERATIONS["zk-eager"]),
            assignor="range",
            commit="sync",
            processing_ms=0,
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=1000,
            max_poll_interval_ms=300000,
            settings=ZkEagerMemberSettings(
                zookeeper_connect=self.cluster.zookeeper_connect,
                session_file=str(self.workdir / f"{name}.zk-session.json"),
                rebalance={"zookeeper_session_timeout_ms": SESSION_MS},
            ),
        )

    def start(self, name: str) -> None:
        path = self.workdir / f"{name}.json"
        path.write_text(json.dumps(asdict(self.spec(name))))
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "workloads.zk_eager", str(path)],
            cwd=REPO,
            stdout=(self.workdir / f"{name}.stdout").open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def events(self, name: str | None = None) -> list[dict]:
        return [e for e in load_history(self.history) if name is None or e.get("member") == name]


def owners(zk: KazooClient, paths: GroupPaths, partitions: int) -> dict[int, tuple[str, int]]:
    """Partition -> (owner thread, owning session id) as the owner znodes say."""
    out = {}
    for p in range(partitions):
        try:
            data, stat = zk.get(paths.owner("events", p))
        except NoNodeError:
            continue
        out[p] = (data.decode(), stat.ephemeralOwner)
    return out


def wait_until(what: str, probe, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := probe():
            return value
        time.sleep(0.2)
    raise AssertionError(f"{what} within {timeout:.0f}s")


def seed_layout(zk, paths, ids) -> dict[int, tuple[str, int]] | None:
    """The owner znodes once they read 0,1,2 -> the first consumer thread and 3,4 -> the second."""
    first, second = sorted(ids.values())
    now = owners(zk, paths, 5)
    expected = {p: f"{first if p < 3 else second}-0" for p in range(5)}
    return now if {p: thread for p, (thread, _) in now.items()} == expected else None


def test_seed_example_in_zookeeper_and_a_real_session_expiry(seed_cluster, tmp_path):
    """Two members on a bare cluster: the owner znodes read 0,1,2 and 3,4. Then consumer-1's
    session is expired on the server with its own id and password: its ephemerals go at once,
    it writes partitions_lost, registers again with a new session and both rebalance back to
    the same layout. SIGTERM releases everything; the offsets stay."""
    producer = Producer({"bootstrap.servers": seed_cluster.bootstrap_servers})
    for p in range(5):
        for _i in range(20):
            producer.produce("events", value=b"x", partition=p)
    assert producer.flush(30) == 0
    members = Members(seed_cluster, tmp_path, "zk-seed-direct")
    paths = GroupPaths(members.group)
    zk = KazooClient(hosts=seed_cluster.zookeeper_connect, timeout=10)
    zk.start(timeout=10)
    try:
        members.start("consumer-1")
        members.start("consumer-2")
        ids = wait_until(
            "both registered",
            lambda: (
                {e["member"]: e["consumer_id"] for e in members.events() if e["name"] == "consumer_started"}
                if len(zk.get_children(paths.ids) if zk.exists(paths.ids) else []) == 2
                else None
            ),
        )
        before = wait_until("owner znodes read 0,1,2 and 3,4", lambda: seed_layout(zk, paths, ids))
        wait_until(
            "all 100 records consumed and committed",
            lambda: all(
                zk.exists(paths.offset("events", p)) and zk.get(paths.offset("events", p))[0] == b"20" for p in range(5)
            ),
        )

        session = json.loads((tmp_path / "consumer-1.zk-session.json").read_text())
        old_session = int(session["session_id"], 16)
        assert session["consumer_id"] == ids["consumer-1"]
        assert {s for _, s in before.values()} >= {old_session}
        expire_session_as_client(seed_cluster.zookeeper_connect, old_session, bytes.fromhex(session["password"]))

        lost = wait_for_event(
            members.history, lambda e: e["name"] == "partitions_lost" and e["member"] == "consumer-1", timeout=20
        )
        assert sorted(p["partition"] for p in lost["partitions"]) == [0, 1, 2] or sorted(
            p["partition"] for p in lost["partitions"]
        ) == [3, 4]
        after = wait_until(
            "the same layout under consumer-1's new session",
            lambda: (now := seed_layout(zk, paths, ids)) and old_session not in {s for _, s in now.values()} and now,
        )
        new_session = int(json.loads((tmp_path / "consumer-1.zk-session.json").read_text())["session_id"], 16)
        assert new_session != old_session
        assert new_session in {s for _, s in after.values()}
        rejoined = [
            e for e in members.events("consumer-1") if e["name"] == "group_joined" and e["mono_ms"] > lost["mono_ms"]
        ]
        assert rejoined and rejoined[0]["generation"] > lost["generation"]
    finally:
        members.stop_all()
        try:
            ids_left = zk.get_children(paths.ids)
            owners_left = owners(zk, paths, 5)
            offsets = {p: zk.get(paths.offset("events", p))[0] for p in range(5)}
        finally:
            zk.stop()
            zk.close()
    assert ids_left == [] and owners_left == {}  # registrations closed, owners released on SIGTERM
    assert offsets == dict.fromkeys(range(5), b"20")  # persistent: where a new consumer starts
    stopped = [e for e in members.events() if e["name"] == "consumer_stopped"]
    assert sorted(e["member"] for e in stopped) == ["consumer-1", "consumer-2"]


# --------------------------------------------------------------------- crash


def test_killed_consumer_partitions_move_once_its_session_expires(module_run):
    """SIGKILL: no release, no close. The owner and ids znodes stay until ZooKeeper expires the
    session (6 s), then the survivor's watch fires and it takes everything."""
    run = module_run(
        "zk-crash",
        zk_scenario("zk-crash", 4, duration_s=20, faults=[{"kind": "crash", "target": "consumer-2", "at_s": 6}]),
    )
    assert run.exit_code == 0, run.output[-3000:]
    [crash] = run.named("fault_started")
    owned_before = last_assignment(run.events, crash["mono_ms"])
    assert owned_before["consumer-2"], owned_before
    taken_over = next(
        e
        for e in run.named("partitions_assigned")
        if e["member"] == "consumer-1"
        and e["mono_ms"] > crash["mono_ms"]
        and {p["partition"] for p in e["partitions"]} >= set(owned_before["consumer-2"])
    )
    # ZooKeeper expires a session its timeout after the last request it heard from the client, not
    # after the kill: no earlier than consumer-2's last offset write began (a ping may have followed).
    last_write = max(
        e["started_mono_ms"]
        for e in run.named("offsets_committed")
        if e["member"] == "consumer-2" and e["mono_ms"] < crash["mono_ms"]
    )
    expired_by = last_write + SESSION_MS
    assert taken_over["mono_ms"] >= expired_by - 500, (last_write, taken_over)
    after_s = (taken_over["mono_ms"] - crash["mono_ms"]) / 1000
    assert after_s <= SESSION_MS / 1000 + 4, after_s
    # Nothing moved in between: no rebalance before the session could have expired.
    early = [
        e for e in run.events if e["name"] == "group_join_sent" and crash["mono_ms"] < e["mono_ms"] < expired_by - 1000
    ]
    assert early == []
    assert_healed(run)


# --------------------------------------------------------------------- herd effect


def churn(name: str, retries: int, backoff_ms: int) -> dict:
    """Three consumers, then five more at once: every join is a rebalance of everyone, and each
    newcomer claims its share before the current owners have let go."""
    return zk_scenario(
        name,
        8,
        zk_eager={"rebalance_max_retries": retries, "rebalance_backoff_ms": backoff_ms},
        # The herd is the whole story, the first joins included: with one retry
        # the first three may never settle, so the fault clock does not wait for them.
        duration_s=16,
        workload={"consumers": 3, "processing_ms": 5, "warmup": "none"},
        faults=[{"kind": "join-storm", "at_s": 5, "consumers": 5}],
        recovery={"timeout_s": 12, "stable_for_s": 2},
    )


def last_rebalance_outcomes(events: list[dict]) -> dict[str, str]:
    """Member -> how its last rebalance ended by the instant convergence judges (`phase: done`,
    or the first end-of-run stop if earlier: one member leaving makes the others rebalance):
    partitions_assigned or rebalance_failed (gave up, owning nothing until the next change)."""
    horizon = min(
        e["mono_ms"]
        for e in events
        if (e["name"], e.get("phase")) == ("phase", "done")
        or (e["name"], e.get("reason")) == ("consumer_stopped", "end-of-run")
    )
    return {
        e["member"]: e["name"]
        for e in sorted(events, key=lambda e: e["mono_ms"])
        if e["name"] in ("partitions_assigned", "rebalance_failed") and e["mono_ms"] < horizon
    }


def test_few_retries_give_up_and_leave_partitions_unowned(module_run):
    run = module_run("zk-churn-1", churn("zk-churn-1", retries=1, backoff_ms=200))
    failed = run.named("rebalance_failed")
    assert failed, "no consumer ran out of rebalance retries"
    assert all(e["attempts"] == 1 for e in failed)
    assert any("is owned by" in e["reason"] for e in failed)  # a claim met an owner that had not let go
    # Whether the partitions stay unowned is decided by the storm's last round: a consumer that
    # gave up in an earlier round tries again on the next join. Most runs end with someone given
    # up; now and then the last round goes through for all (CI saw one). The history says which.
    gave_up_last = sorted(
        m for m, outcome in last_rebalance_outcomes(run.events).items() if outcome == "rebalance_failed"
    )
    convergence = [v for v in run.verdict["violations"] if v["check"] == "convergence"]
    unowned = [v for v in convergence if v["kind"] == "not-converged" and "unowned" in v["message"]]
    if gave_up_last:
        assert unowned, (gave_up_last, convergence)
        assert run.exit_code == 1
    else:
        assert not unowned, convergence
    assert_healed(run)


def test_more_retries_and_backoff_ride_out_the_same_churn(module_run):
    run = module_run("zk-churn-8", churn("zk-churn-8", retries=8, backoff_ms=2000))
    assert run.named("rebalance_failed") == []
    assert run.named("group_sync_failed"), "no claim collided: the churn did not exercise the retries"
    assert run.exit_code == 0, run.output[-3000:]
    assert_healed(run)


# --------------------------------------------------------------------- no fencing


def test_paused_consumer_overwrites_offsets_of_partitions_it_lost(module_run):
    """Each consumer in turn is paused past its session timeout while busy (90 % of its time
    processing). On SIGCONT it finishes the batch in hand and commits it: ZooKeeper accepts,
    nothing fences it. The oracle's fenced-commits flags those commits."""
    run = module_run(
        "zk-zombie",
        zk_scenario(
            "zk-zombie",
            4,
            duration_s=32,
            workload={"processing_ms": 18},
            faults=[
                {"kind": "pause", "target": "consumer-2", "at_s": 5, "duration_s": 9},
                {"kind": "pause", "target": "consumer-1", "at_s": 20, "duration_s": 9},
            ],
            recovery={"timeout_s": 30, "stable_for_s": 2},
        ),
    )
    fenced = [v for v in run.verdict["violations"] if v["check"] == "fenced-commits"]
    assert fenced, run.output[-3000:]
    for v in fenced:
        zombie = v["members"][0]
        [pause] = [e for e in run.named("fault_started") if e["target"] == zombie]
        healed = next(e for e in run.named("fault_healed") if e["fault_id"] == pause["fault_id"])
        # Sent after SIGCONT, for a partition another member took over while it was stopped.
        assert v["times"]["sent"]["mono_ms"] >= healed["started_mono_ms"]
        assert v["kind"] in ("commit-after-handover", "commit-without-ownership")
    commits = [e for e in run.named("offsets_committed") if e["member"] in {v["members"][0] for v in fenced}]
    assert all(e["success"] for e in commits)  # ZooKeeper takes every write
    assert_healed(run)
