"""The kinds of service a cluster runs, whatever runs them (a process here, a container in
Compose): what each is, when it stops, and what it needs around a start.

A backend's service is a kind plus a mechanism: ``class Broker(BrokerKind, LocalProcess)``.
"""

from __future__ import annotations

from harness.cluster import zookeeper
from harness.supervision.service import StopTier


class ZooKeeperKind:
    role, tier = "zookeeper", StopTier.QUORUM


class KRaftControllerKind:
    role, tier = "controller", StopTier.QUORUM


class BrokerKind:
    role, tier = "broker", StopTier.BROKERS
    broker_id: int
    zookeeper_connect: str | None  # ZooKeeper mode: where its registration is (reached directly)
    zookeeper_session_timeout_ms: int | None

    def start(self) -> None:
        """A ZooKeeper-mode broker killed without a clean shutdown leaves its /brokers/ids/<id>
        until its session expires; started again before that, it dies at once."""
        if getattr(self, "_started", False) and self.zookeeper_connect:
            zookeeper.wait_registration_gone(self.zookeeper_connect, self.broker_id, self.zookeeper_session_timeout_ms)
        super().start()
        self._started = True


class ToxiproxyKind:
    """The proxies every connection of a run passes (network.py): network faults act there."""

    role, tier = "toxiproxy", StopTier.NETWORK


class MessageProxyKind:
    """The Kafka-protocol-aware proxy in front of the member lanes' Toxiproxy proxies (network.py):
    message faults act there. Stopped with the other proxies, after every client is gone."""

    role, tier = "message-proxy", StopTier.NETWORK


class CoordinatorKind:
    """An instance of the project's own group coordinator (the ``coordinator`` package)."""

    role, tier = "coordinator", StopTier.COORDINATOR
    session_file: object  # where it publishes its ZooKeeper session (how a fault expires it), on this machine


def coordinator_leader(addresses: dict[str, str]) -> str | None:
    """The instance leading right now, as the instances themselves say (FindCoordinator)."""
    from coordinator.protocol import Address, Connection, CoordinatorError

    for address in addresses.values():
        connection = Connection(Address.parse(address), connect_timeout_s=1.0)
        try:
            return connection.request("FindCoordinator", 2.0)["leader"]
        except (ConnectionError, CoordinatorError):
            continue
        finally:
            connection.close()
    return None


CLUSTER_KINDS = (ToxiproxyKind, MessageProxyKind, ZooKeeperKind, KRaftControllerKind, BrokerKind, CoordinatorKind)
