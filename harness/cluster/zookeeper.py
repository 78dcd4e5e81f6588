"""ZooKeeper sessions seen from outside: who owns an ephemeral znode, and how to
expire a session on the server.

Two ways to make the *server* expire a session (ephemeral znodes deleted at once,
the owner told "session expired" when it next talks to the ensemble — unlike a
client that merely closes its socket and reconnects):

- as a client, when the session password is known (our own kazoo clients): attach
  a second connection to the same session id and password, then close it; the
  close request ends the session for both (``expire_session_as_client``);
- as an operator, when it is not (a broker JVM's password never leaves the JVM):
  every ZooKeeper server registers one JMX MBean per client connection
  (``ConnectionMXBean``), named ``…,Connections,<client ip>,<session id hex>``
  below the server's own bean, whose operation ``terminateSession()`` closes that
  session through the server's request pipeline. The harness reaches JMX through
  the Jolokia JVM agent running inside each ZooKeeper server
  (``terminate_session``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import requests

from runtime.errors import ClusterError
from runtime.zookeeper import QUIET_ZK_LOG, session_hex

ZOOKEEPER_DOMAIN = "org.apache.ZooKeeperService"
JOLOKIA_TIMEOUT_S = 5.0

# --------------------------------------------------------------------------- Jolokia


# Jolokia runs inside the ZooKeeper JVM, where any JMX operation could be called
# (heap dumps, diagnostic commands, …). Allow exactly what the harness needs: find
# the connection MBeans and terminate a session, from 127.0.0.1 only. (In a container
# the harness's requests arrive from the Compose network's gateway, through the port
# published on 127.0.0.1 only: there the policy names no remote host.)
def jolokia_policy(remote_hosts: tuple[str, ...] = ("127.0.0.1",)) -> str:
    remote = "".join(f"<host>{h}</host>" for h in remote_hosts)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<restrict>
  {f"<remote>{remote}</remote>" if remote else ""}
  <commands><command>search</command></commands>
  <allow>
    <mbean><name>{ZOOKEEPER_DOMAIN}:*</name><operation>terminateSession</operation></mbean>
  </allow>
</restrict>
"""


JOLOKIA_POLICY = jolokia_policy()


def jolokia_javaagent(jar: Path | str, port: int, policy: Path, host: str = "127.0.0.1") -> str:
    """The JVM option that starts Jolokia's HTTP agent on ``host``:``port``, restricted
    by the policy file (``jolokia_policy``) at ``policy``. No multicast discovery."""
    return (
        f"-javaagent:{jar}=host={host},port={port},discoveryEnabled=false,"
        f"policyLocation={policy.as_uri() if policy.is_absolute() else policy.resolve().as_uri()}"
    )


class JolokiaError(ClusterError):
    """Jolokia reached the JVM but the JMX call failed (e.g. no such MBean)."""

    def __init__(self, url: str, request: dict, body: dict):
        self.status = body.get("status")
        self.error_type = body.get("error_type")
        target = request.get("mbean", "")
        super().__init__(
            f"Jolokia at {url}: {request['type']} {target} {request.get('operation', '')}".rstrip()
            + f" failed ({self.status} {self.error_type}): {body.get('error')}"
        )


def jolokia(url: str, request: dict):
    """One Jolokia request (POST, so MBean names need no escaping); returns its ``value``.

    Jolokia answers HTTP 200 even when the JMX call failed: the outcome is the
    ``status`` inside the JSON body.
    """
    try:
        # A paused ZooKeeper JVM accepts the connection and never answers: always a timeout.
        resp = requests.post(url, json=request, timeout=JOLOKIA_TIMEOUT_S)
        resp.raise_for_status()
    except requests.RequestException as e:
        raise ClusterError(f"Jolokia at {url} did not answer {request['type']!r}: {e}") from None
    try:
        body = resp.json()
    except ValueError:
        raise ClusterError(
            f"Jolokia at {url} answered {request['type']!r} with something that is not JSON: {resp.text[:200]!r}"
        ) from None
    if body.get("status") != 200:
        raise JolokiaError(url, request, body)
    return body.get("value")


def object_name_keys(name: str) -> dict[str, str]:
    """The key properties of a JMX ObjectName string. A quoted value (ZooKeeper quotes
    IPv6 client addresses) is kept with its quotes; it may hold commas and escapes."""
    _, _, rest = name.partition(":")
    keys: dict[str, str] = {}
    i = 0
    while i < len(rest):
        eq = rest.index("=", i)
        start = end = eq + 1
        if rest.startswith('"', start):
            end += 1
            while rest[end] != '"':
                end += 2 if rest[end] == "\\" else 1
            end += 1
        else:
            end = rest.find(",", start)
            end = len(rest) if end < 0 else end
        keys[rest[i:eq]] = rest[start:end]
        i = end + 1
    return keys


def zookeeper_path(name: str) -> list[str]:
    """ZooKeeper names its MBeans ``name0=…,name1=…,…`` from the root down; the path in order."""
    keys = object_name_keys(name)
    levels = sorted((int(k[4:]), v) for k, v in keys.items() if k.startswith("name") and k[4:].isdigit())
    return [v for _, v in levels]


def connection_mbeans(names: list[str], session_id: int) -> list[str]:
    """The connection MBeans of ``session_id`` among ``names``.

    Standalone: ``name0=StandaloneServer_port<p>,name1=Connections,name2=<ip>,name3=<sid>``;
    in an ensemble the same three levels sit below ``ReplicatedServer_id<n>,replica.<n>,
    Leader|Follower``. Normally one, but a session that just moved between
    connections can briefly have two.
    """
    wanted = session_hex(session_id)
    return [
        n
        for n in names
        if n.startswith(f"{ZOOKEEPER_DOMAIN}:")
        and (path := zookeeper_path(n))[-3:-2] == ["Connections"]
        and path[-1] == wanted
    ]


def find_connections(url: str, session_id: int) -> list[str]:
    """Connection MBeans of ``session_id`` on the ZooKeeper server behind ``url``."""
    return connection_mbeans(jolokia(url, {"type": "search", "mbean": f"{ZOOKEEPER_DOMAIN}:*"}) or [], session_id)


def terminate_session(url: str, session_id: int) -> str | None:
    """Expire ``session_id`` on the ZooKeeper server behind ``url`` if a connection of
    it is there; returns the MBean used, or None when this server does not hold it."""
    for mbean in find_connections(url, session_id):
        try:
            jolokia(url, {"type": "exec", "mbean": mbean, "operation": "terminateSession", "arguments": []})
        except JolokiaError as e:
            if e.status == 404:  # the connection closed between search and exec
                continue
            raise
        return mbean
    return None


# --------------------------------------------------------------------------- kazoo


def _started_client(hosts: str, timeout: float, **kwargs):
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException
    from kazoo.handlers.threading import KazooTimeoutError

    zk = KazooClient(hosts=hosts, timeout=6, logger=QUIET_ZK_LOG, **kwargs)
    try:
        zk.start(timeout=timeout)
    except (KazooTimeoutError, KazooException) as e:
        zk.stop()  # kazoo keeps retrying in the background otherwise
        zk.close()
        raise ClusterError(f"could not open a ZooKeeper session at {hosts} within {timeout:.0f}s: {e!r}") from None
    return zk


def ephemeral_owner(hosts: str, path: str, timeout: float = 10.0) -> int | None:
    """The session id owning the ephemeral znode at ``path``; None if there is no such
    znode (0 for a persistent one)."""
    zk = _started_client(hosts, timeout)
    try:
        stat = zk.exists(path)
        return stat.ephemeralOwner if stat else None
    finally:
        zk.stop()
        zk.close()


def expire_session_as_client(hosts: str, session_id: int, password: bytes, timeout: float = 10.0) -> None:
    """Expire a session whose password we know: attach a second client to it, then
    close that client. Closing sends closeSession, and the server ends the session
    for every connection attached to it — the original client sees it expired."""
    twin = _started_client(hosts, timeout, client_id=(session_id, password))
    try:
        if twin.client_id[0] != session_id:
            # The server had already expired it and handed out a new one.
            raise ClusterError(
                f"session {session_hex(session_id)} no longer exists; got {session_hex(twin.client_id[0])} instead"
            )
    finally:
        twin.stop()
        twin.close()


def wait_registration_gone(hosts: str, broker_id: int, session_timeout_ms: int) -> None:
    """Wait until broker ``broker_id``'s ephemeral /brokers/ids/<id> is gone (its old session
    expired). A ZooKeeper-mode broker killed without a clean shutdown leaves it behind, and
    started again before it goes, dies at once ("node already exists") — an operator waits too."""
    zk = _started_client(hosts, 10)
    try:
        deadline = time.monotonic() + session_timeout_ms / 1000 + 10
        while zk.exists(f"/brokers/ids/{broker_id}") and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        zk.stop()
        zk.close()


def expire_broker_session(
    name: str, broker_ids: dict[str, int], hosts: str | None, jolokia_urls: dict[str, str]
) -> dict:
    """Expire broker ``name``'s ZooKeeper session on the server, as a real expiry would: its
    /brokers/ids/<id> goes at once, the broker learns "session expired" and registers again.

    A broker's session password never leaves its JVM, so instead of the client-side trick
    (expire_session_as_client) this calls terminateSession() on the connection's MBean, on
    whichever ZooKeeper node (``jolokia_urls``: node -> its Jolokia) the broker is connected to.
    """
    if name not in broker_ids or not jolokia_urls:
        raise ClusterError(f"{name!r} is not a broker of a ZooKeeper-mode cluster; only those have a ZooKeeper session")
    path = f"/brokers/ids/{broker_ids[name]}"
    session_id = ephemeral_owner(hosts, path)
    if not session_id:
        raise ClusterError(f"{name} is not registered in ZooKeeper (no {path}): no session to expire")
    failures = []
    for node, url in jolokia_urls.items():  # the connection can be on any node of the ensemble
        try:
            if terminate_session(url, session_id):
                return {"session_id": session_hex(session_id), "zookeeper": node}
        except ClusterError as e:  # a paused or stopped node must not hide the one holding it
            failures.append(f"{node}: {e}")
    raise ClusterError(
        f"no ZooKeeper node has a connection of {name}'s session {session_hex(session_id)} "
        f"(owner of {path}); the broker may be reconnecting" + "".join(f"\n{f}" for f in failures)
    )


def expire_published_session(name: str, session_file: Path, hosts: str | None) -> dict:
    """Expire the session a process published (the project's coordinator does: its password
    is ours), with the client-side twin trick."""
    try:
        session = json.loads(Path(session_file).read_text())
    except (OSError, ValueError) as e:
        raise ClusterError(f"{name} has published no ZooKeeper session ({session_file}): {e}") from None
    expire_session_as_client(hosts, int(session["session_id"], 16), bytes.fromhex(session["password"]))
    return {"session_id": session["session_id"]}
