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

from pathlib import Path

import requests

from runtime.errors import ClusterError
from runtime.zookeeper import QUIET_ZK_LOG, session_hex

ZOOKEEPER_DOMAIN = "org.apache.ZooKeeperService"
JOLOKIA_TIMEOUT_S = 5.0

# --------------------------------------------------------------------------- Jolokia

# Jolokia runs inside the ZooKeeper JVM, where any JMX operation could be called
# (heap dumps, diagnostic commands, …). Allow exactly what the harness needs: find
# the connection MBeans and terminate a session, from 127.0.0.1 only.
JOLOKIA_POLICY = f"""<?xml version="1.0" encoding="UTF-8"?>
<restrict>
  <remote><host>127.0.0.1</host></remote>
  <commands><command>search</command></commands>
  <allow>
    <mbean><name>{ZOOKEEPER_DOMAIN}:*</name><operation>terminateSession</operation></mbean>
  </allow>
</restrict>
"""


def jolokia_javaagent(jar: Path, port: int, policy: Path) -> str:
    """The JVM option that starts Jolokia's HTTP agent on 127.0.0.1:``port``, restricted
    by the policy file (``JOLOKIA_POLICY``) at ``policy``. No multicast discovery."""
    return (f"-javaagent:{jar}=host=127.0.0.1,port={port},discoveryEnabled=false,"
            f"policyLocation={policy.resolve().as_uri()}")


class JolokiaError(ClusterError):
    """Jolokia reached the JVM but the JMX call failed (e.g. no such MBean)."""

    def __init__(self, url: str, request: dict, body: dict):
        self.status = body.get("status")
        self.error_type = body.get("error_type")
        target = request.get("mbean", "")
        super().__init__(f"Jolokia at {url}: {request['type']} {target} {request.get('operation', '')}".rstrip()
                         + f" failed ({self.status} {self.error_type}): {body.get('error')}")


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
        raise ClusterError(f"Jolokia at {url} answered {request['type']!r} with something that is not JSON: "
                           f"{resp.text[:200]!r}") from None
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
    return [n for n in names if n.startswith(f"{ZOOKEEPER_DOMAIN}:")
            and (path := zookeeper_path(n))[-3:-2] == ["Connections"] and path[-1] == wanted]


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
            raise ClusterError(f"session {session_hex(session_id)} no longer exists; got "
                               f"{session_hex(twin.client_id[0])} instead")
    finally:
        twin.stop()
        twin.close()
