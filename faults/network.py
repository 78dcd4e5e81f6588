"""Network faults through Toxiproxy: one link of one process degraded.

Which proxies make up a link (a member's lane to every broker, to its coordinator
only, a broker's ZooKeeper connections, a broker pair) is the cluster's business
(``Targets.proxies``); what happens on them is this module's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from faults.base import Fault, Targets
from faults.toxiproxy import toxics_for


@dataclass
class Network(Fault):
    kind = "network"
    proxies: list[str] = field(default_factory=list)

    @property
    def heal_after_s(self) -> float:
        return float(self.params["duration_s"])

    def inject(self, targets: Targets) -> dict:
        self.proxies = targets.proxies(self.resolved, self.params.get("link", "brokers"))
        degrade(targets.toxiproxy(), self.proxies, self.fault_id, self.params.get("effect", "blackhole"), self.params)
        return {"proxies": self.proxies}

    def heal(self, targets: Targets) -> None:
        restore(targets.toxiproxy(), self.proxies, self.fault_id, self.params.get("effect", "blackhole"), self.params)


def degrade(client, proxies: list[str], fault_id: str, effect: str, params: dict) -> None:
    for proxy in proxies:
        if effect == "refuse":
            client.set_enabled(proxy, False)
        else:
            for kind, stream, attributes in toxics_for(effect, params):
                client.add_toxic(proxy, f"{fault_id}-{kind}-{stream}", kind, stream, **attributes)


def restore(client, proxies: list[str], fault_id: str, effect: str, params: dict) -> None:
    for proxy in proxies:
        if effect == "refuse":
            client.set_enabled(proxy, True)
        else:
            for kind, stream, _ in toxics_for(effect, params):
                client.remove_toxic(proxy, f"{fault_id}-{kind}-{stream}")
