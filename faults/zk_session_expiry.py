"""zk-session-expiry: a ZooKeeper-mode broker's session expired for real: on the server.

The server drops the session and its ephemeral znodes at once (/brokers/ids/<id>
goes, the controller sees the broker leave); the broker is told its session
expired, opens a new one and registers again by itself. A client that only loses
its connection would keep its session, which is why a client-side fake does not
count. How the session is ended is the cluster's business
(``Targets.expire_zookeeper_session``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from faults.base import COORDINATOR, NO_EFFECTS, Effects, Fault, ScenarioFacts, TargetedSpec, Targets
from faults.capabilities import Capability
from faults.network import degrade, restore

# How much longer than the session timeout the network way keeps the link cut.
NETWORK_MARGIN_S = 3.0


class ZkSessionExpirySpec(TargetedSpec):
    """A broker's ZooKeeper session expired for real: on the server (``server``), or by
    cutting the broker's ZooKeeper link longer than its session timeout (``network``)."""

    acts_on_process = True

    kind: Literal["zk-session-expiry"]
    needs = frozenset({Capability.ZOOKEEPER_SESSIONS})
    method: Literal["server", "network"] = "server"

    def needs_by_key(self) -> dict[str, frozenset[Capability]]:
        needs = super().needs_by_key()
        if self.method == "network":  # the target's ZooKeeper link, cut through Toxiproxy
            needs["method"] = frozenset({Capability.NETWORK_LANES})
        return needs

    @property
    def effects(self) -> Effects:
        return NO_EFFECTS  # the broker leaves ZooKeeper and registers again by itself; no member is silenced

    def target_problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        if not scenario.zookeeper:
            return [("kind", f"Kafka {scenario.kafka} runs in KRaft mode: brokers have no ZooKeeper session")]
        if self.target not in (*scenario.brokers, *scenario.coordinator_instances, COORDINATOR):
            return [
                ("target", f"ZooKeeper sessions expire for brokers and coordinator instances here, not {self.target!r}")
            ]
        return []


@dataclass
class ZkSessionExpiry(Fault[ZkSessionExpirySpec]):
    """``method: server`` (default): the ZooKeeper server ends the session at once.
    ``method: network``: the broker's ZooKeeper link is blackholed for longer than its
    session timeout, so the server expires the session the way a real partition does;
    healing the link lets the broker in again, with a new session."""

    Spec = ZkSessionExpirySpec
    proxies: list[str] = field(default_factory=list)
    cut_s: float = 0.0

    @property
    def heal_after_s(self) -> float:
        return self.cut_s  # 0 for the server way: nothing to undo, the broker re-registers itself

    def inject(self, targets: Targets) -> dict:
        """Returns which session was expired (server) or which link was cut (network), for the history."""
        if self.spec.method == "server":
            return targets.expire_zookeeper_session(self.resolved)
        self.proxies = targets.proxies(self.resolved, "zookeeper")
        self.cut_s = targets.zookeeper_session_timeout_s(self.resolved) + NETWORK_MARGIN_S
        degrade(targets.toxiproxy(), self.proxies, self.fault_id, "blackhole", {})
        return {"proxies": self.proxies, "cut_s": self.cut_s}

    def heal(self, targets: Targets) -> None:
        if self.proxies:
            restore(targets.toxiproxy(), self.proxies, self.fault_id, "blackhole", {})
