"""ZooKeeper session expiry, for real, against ZooKeeper 3.8 and Kafka 3.9 brokers.

A broker's session is ended on the server (terminateSession() of its connection
MBean, through Jolokia): its /brokers/ids/<id> is gone at once, the broker is told
its session expired, and it registers again with a new session. Our own kazoo
clients can be expired the canonical way (a second session with their id and
password, then closed). Both with one ZooKeeper node and with an ensemble of three,
where the broker's connection can be on any node.
"""

from __future__ import annotations

import time

import pytest
from kazoo.client import KazooClient, KazooState

from harness.cluster import ClusterSpec, TopicSpec, local_cluster
from harness.cluster.zookeeper import (
    JolokiaError,
    expire_session_as_client,
    jolokia,
    session_hex,
)
from runtime.errors import ClusterError

BROKER, BROKER_ID = "broker-2", 2
REGISTRATION = f"/brokers/ids/{BROKER_ID}"


@pytest.fixture(scope="module", params=[1, 3], ids=["zookeeper-standalone", "zookeeper-ensemble"])
def cluster(request, tmp_path_factory):
    spec = ClusterSpec(kafka="3.9", brokers=3, zookeeper_nodes=request.param, topics=[TopicSpec("events", 6)])
    with local_cluster(spec, tmp_path_factory.mktemp("zk-expiry") / "cluster") as c:
        yield c


@pytest.fixture
def zk(cluster):
    """An observer with its own session, on the ZooKeeper nodes directly (not through proxies)."""
    client = KazooClient(hosts=cluster.zookeeper_connect, timeout=6)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def wait_for(what: str, probe, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := probe():
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} within {timeout:.0f}s")


def owner(zk: KazooClient, path: str) -> int | None:
    # Another client's writes reach this client's server in their own time (an ensemble member
    # may lag the leader): sync first, as ZooKeeper's guarantees say a reader must.
    zk.sync(path)
    stat = zk.exists(path)
    return stat.ephemeralOwner if stat else None


def test_broker_session_expired_on_the_server_and_broker_registers_again(cluster, zk):
    old = owner(zk, REGISTRATION)
    assert old, f"{BROKER} is not registered"
    broker_log = cluster.workdir / "logs" / f"{BROKER}.log"
    seen_before = len(broker_log.read_text(errors="replace"))

    result = cluster.expire_zookeeper_session(BROKER)

    assert result == {"session_id": session_hex(old), "zookeeper": result["zookeeper"]}
    assert result["zookeeper"] in cluster.zk_ports
    # Gone at once, not after the 6 s session timeout: the server ended the session.
    wait_for("old registration gone", lambda: owner(zk, REGISTRATION) != old, timeout=4)
    zk_log = (cluster.workdir / "logs" / f"{result['zookeeper']}.log").read_text(errors="replace")
    assert f"Closing session {session_hex(old)}" in zk_log

    new = wait_for("broker-2 registered with a new session", lambda: owner(zk, REGISTRATION), timeout=15)
    assert new != old

    # The broker's own account. Its ZooKeeper client's I/O thread reports the expired session,
    # Kafka's watcher reacts on another thread (so those two lines come in either order), then
    # one chain: new session, znode created (logged while the session is still being set up),
    # broker registered once the session is established.
    expired = f"WARN Unable to reconnect to ZooKeeper service, session {session_hex(old)} has expired"
    established = f"session id = {session_hex(new)}"
    chain = [
        "INFO [ZooKeeperClient Kafka server] Session expired. (kafka.zookeeper.ZooKeeperClient)",
        "INFO [ZooKeeperClient Kafka server] Initializing a new session to",
        f"INFO Creating {REGISTRATION} (is it secure? false) (kafka.zk.KafkaZkClient)",
        f"INFO Registered broker {BROKER_ID} at path {REGISTRATION} with addresses:",
    ]
    log = wait_for(
        "broker-2's log to show its re-registration",
        lambda: text if chain[-1] in (text := broker_log.read_text(errors="replace")[seen_before:]) else None,
        timeout=10,
    )
    positions = [log.find(line) for line in chain]
    missing = [line for line in [expired, established, *chain] if line not in log]
    assert not missing, missing
    assert positions == sorted(positions), list(zip(chain, positions, strict=False))
    assert log.find(established) < log.find(chain[-1])

    brokers = wait_for(
        "metadata lists every broker",
        lambda: b if (b := set(cluster.admin().list_topics(timeout=5).brokers)) == {1, 2, 3} else None,
        timeout=30,
    )
    assert brokers == {1, 2, 3}


def test_only_registered_brokers_have_a_session_to_expire(cluster):
    with pytest.raises(ClusterError, match="not a broker of a ZooKeeper-mode cluster"):
        cluster.expire_zookeeper_session("zookeeper-1")


def test_jolokia_in_zookeeper_does_nothing_else(cluster):
    """The agent's policy: searching ZooKeeper's MBeans and terminateSession, nothing more."""
    for url in cluster.zk_jolokia.values():
        assert jolokia(url, {"type": "search", "mbean": "org.apache.ZooKeeperService:*"})
        for request in (
            {"type": "read", "mbean": "java.lang:type=Runtime", "attribute": "Name"},
            {
                "type": "exec",
                "mbean": "com.sun.management:type=DiagnosticCommand",
                "operation": "vmVersion",
                "arguments": [],
            },
        ):
            with pytest.raises(JolokiaError) as info:
                jolokia(url, request)
            assert info.value.status == 403


def test_own_client_session_expired_by_a_second_session_with_its_password(cluster, zk):
    states: list[str] = []
    member = KazooClient(hosts=cluster.zookeeper_connect, timeout=6)
    member.add_listener(states.append)
    member.start(timeout=10)
    try:
        path = member.create("/rebalance-lab-test/member-", ephemeral=True, sequence=True, makepath=True)
        session_id, password = member.client_id
        assert owner(zk, path) == session_id

        expire_session_as_client(cluster.zookeeper_connect, session_id, password)

        # The server dropped the session and its ephemeral znode at once (well inside 6 s) ...
        wait_for("the member's ephemeral znode gone", lambda: zk.exists(path) is None, timeout=4)
        # ... and the member's listener learns it: its session is LOST, not just SUSPENDED.
        wait_for("the member's listener to see LOST", lambda: KazooState.LOST in states, timeout=5)
        wait_for(
            "the member reconnected with a new session",
            lambda: member.connected and member.client_id[0] != session_id,
            timeout=10,
        )
        assert zk.exists(path) is None  # kazoo does not re-create ephemerals for a new session
    finally:
        member.stop()
        member.close()
