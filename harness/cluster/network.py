"""Who talks to whom through which proxy: the cluster's network plan.

Kafka clients follow the brokers' advertised listeners, so a proxy only sees a
client's traffic if the broker advertises the proxy's address. Every broker
therefore gets:

- ``CLIENT``: a direct listener, used by the harness, the observer and the
  producer — never faulted, so the run can always see and feed the cluster;
- ``LANE<k>`` for every client lane k: bound on its own port, advertised at the
  port of the Toxiproxy proxy ``lane-<k>.broker-<b>``. A member bootstrapping
  through lane k is told lane-k addresses for every broker, so all its
  connections pass its own proxies, and cutting member k leaves the others alone;
- ``FROM<a>`` for every broker a: broker a uses ``FROM<a>`` as its inter-broker
  listener name, so a→b traffic (replica fetches, controller requests) passes
  the proxy ``broker-<a>.to.broker-<b>`` and any one pair can be cut.

In ZooKeeper mode broker b reaches each ZooKeeper node z through
``broker-<b>.to.<z>``, and member lane k through ``lane-<k>.<z>`` (the zk-eager
consumer keeps its group in ZooKeeper).

The project's coordinator instance c listens on its own port (used directly by
the harness and the observer); member lane k reaches it through
``lane-<k>.<c>`` and it reaches ZooKeeper node z through ``<c>.to.<z>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Route:
    proxy: str
    listen_port: int
    upstream_port: int


@dataclass
class NetworkPlan:
    brokers: list[int]
    lanes: int
    zookeeper_ports: dict[str, int]  # node name -> client port (empty in KRaft mode)
    port: Callable[[], int]
    coordinators: list[str] = field(default_factory=list)  # the project's coordinator instances
    direct: dict[int, int] = field(default_factory=dict)
    coordinator_ports: dict[str, int] = field(default_factory=dict)
    routes: dict[str, Route] = field(default_factory=dict)
    _bound: dict[tuple[int, str], int] = field(default_factory=dict)  # (broker, listener) -> bound port

    def __post_init__(self):
        for b in self.brokers:
            self.direct[b] = self.port()
            for k in range(1, self.lanes + 1):
                self._route(f"lane-{k}.broker-{b}", b, f"LANE{k}")
            for a in self.brokers:
                if a != b:
                    self._route(f"broker-{a}.to.broker-{b}", b, f"FROM{a}")
                else:  # a broker talking to itself needs no proxy, but the listener must exist
                    self._bound[(b, f"FROM{a}")] = self.port()
            for z, zk_port in self.zookeeper_ports.items():
                self.routes[f"broker-{b}.to.{z}"] = Route(f"broker-{b}.to.{z}", self.port(), zk_port)
        for k in range(1, self.lanes + 1):
            for z, zk_port in self.zookeeper_ports.items():
                self.routes[f"lane-{k}.{z}"] = Route(f"lane-{k}.{z}", self.port(), zk_port)
        for c in self.coordinators:
            port = self.coordinator_ports[c] = self.port()
            for k in range(1, self.lanes + 1):
                self.routes[f"lane-{k}.{c}"] = Route(f"lane-{k}.{c}", self.port(), port)
            for z, zk_port in self.zookeeper_ports.items():
                self.routes[f"{c}.to.{z}"] = Route(f"{c}.to.{z}", self.port(), zk_port)

    def _route(self, proxy: str, broker: int, listener: str) -> None:
        bound = self._bound[(broker, listener)] = self.port()
        self.routes[proxy] = Route(proxy, self.port(), bound)

    # --- broker configuration -------------------------------------------------------------

    def _advertised_port(self, broker: int, listener: str) -> int:
        if listener.startswith("LANE"):
            return self.routes[f"lane-{listener[4:]}.broker-{broker}"].listen_port
        source = int(listener[4:])
        if source == broker:
            return self._bound[(broker, listener)]
        return self.routes[f"broker-{source}.to.broker-{broker}"].listen_port

    def listener_properties(self, broker: int) -> dict:
        names = [n for (b, n) in self._bound if b == broker]
        listeners = [f"CLIENT://127.0.0.1:{self.direct[broker]}"]
        advertised = list(listeners)
        for n in names:
            listeners.append(f"{n}://127.0.0.1:{self._bound[(broker, n)]}")
            advertised.append(f"{n}://127.0.0.1:{self._advertised_port(broker, n)}")
        return {
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "listener.security.protocol.map": ",".join(f"{n}:PLAINTEXT" for n in ["CLIENT", *names]),
            "inter.broker.listener.name": f"FROM{broker}",
        }

    def zookeeper_connect(self, broker: int) -> str:
        return ",".join(f"127.0.0.1:{self.routes[f'broker-{broker}.to.{z}'].listen_port}" for z in self.zookeeper_ports)

    # --- addresses and link selection -----------------------------------------------------

    def direct_bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.direct[b]}" for b in self.brokers)

    def lane_bootstrap(self, lane: int) -> str:
        return ",".join(f"127.0.0.1:{self.routes[f'lane-{lane}.broker-{b}'].listen_port}" for b in self.brokers)

    def lane_zookeeper_connect(self, lane: int) -> str | None:
        return ",".join(f"127.0.0.1:{self.routes[f'lane-{lane}.{z}'].listen_port}" for z in self.zookeeper_ports) or None

    def lane_zookeeper_proxies(self, lane: int) -> list[str]:
        return [f"lane-{lane}.{z}" for z in self.zookeeper_ports]

    def lane_proxies(self, lane: int, broker: int | None = None) -> list[str]:
        return [f"lane-{lane}.broker-{b}" for b in self.brokers if broker in (None, b)]

    def inter_broker_proxies(self, broker: int, other: int | None = None) -> list[str]:
        """Both directions between ``broker`` and ``other`` (or every other broker)."""
        others = [o for o in self.brokers if o != broker and other in (None, o)]
        return [p for o in others for p in (f"broker-{broker}.to.broker-{o}", f"broker-{o}.to.broker-{broker}")]

    def zookeeper_proxies(self, broker: int) -> list[str]:
        return [f"broker-{broker}.to.{z}" for z in self.zookeeper_ports]

    # --- the project's coordinator ----------------------------------------------------------

    def coordinator_zookeeper_connect(self, coordinator: str) -> str:
        return ",".join(f"127.0.0.1:{self.routes[f'{coordinator}.to.{z}'].listen_port}" for z in self.zookeeper_ports)

    def coordinator_zookeeper_proxies(self, coordinator: str) -> list[str]:
        return [f"{coordinator}.to.{z}" for z in self.zookeeper_ports]

    def lane_coordinators(self, lane: int) -> dict[str, str]:
        """Instance name -> the address member ``lane`` reaches it at."""
        return {c: f"127.0.0.1:{self.routes[f'lane-{lane}.{c}'].listen_port}" for c in self.coordinators}

    def lane_coordinator_proxies(self, lane: int, coordinator: str | None = None) -> list[str]:
        return [f"lane-{lane}.{c}" for c in self.coordinators if coordinator in (None, c)]

    def coordinator_client_proxies(self, coordinator: str) -> list[str]:
        return [f"lane-{k}.{coordinator}" for k in range(1, self.lanes + 1)]

    def client_proxies(self, broker: int) -> list[str]:
        """Every lane into one broker: all members cut off from it."""
        return [f"lane-{k}.broker-{broker}" for k in range(1, self.lanes + 1)]
