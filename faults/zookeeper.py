"""ZooKeeper session expiry of a ZooKeeper-mode broker, for real: on the server.

The server drops the session and its ephemeral znodes at once (/brokers/ids/<id>
goes, the controller sees the broker leave); the broker is told its session
expired, opens a new one and registers again by itself. A client that only loses
its connection would keep its session, which is why a client-side fake does not
count. How the session is ended is the cluster's business
(``Targets.expire_zookeeper_session``).
"""

from __future__ import annotations

from dataclasses import dataclass

from faults.base import Fault, Targets


@dataclass
class ZkSessionExpiry(Fault):
    kind = "zk-session-expiry"

    # heal_after_s stays 0: nothing to undo, the broker re-registers on its own.

    def inject(self, targets: Targets) -> dict:
        """Returns which session was expired and on which ZooKeeper node, for the history."""
        return targets.expire_zookeeper_session(self.resolved)
