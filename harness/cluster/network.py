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

Local processes all live on 127.0.0.1. In containers (the compose backend) each node
listens on its own Compose service name, a broker reaches the proxies at ``toxiproxy``,
and what the harness and the members use is published on 127.0.0.1 with the same
port number: ``Hosts`` says which name each end has.

In ZooKeeper mode broker b reaches each ZooKeeper node z through
``broker-<b>.to.<z>``, and member lane k through ``lane-<k>.<z>`` (the zk-eager
consumer keeps its group in ZooKeeper).

The project's coordinator instance c listens on its own port (used directly by
the harness and the observer); member lane k reaches it through
``lane-<k>.<c>`` and it reaches ZooKeeper node z through ``<c>.to.<z>``.

A lane in ``message_lanes`` has one more hop in front of its Toxiproxy proxies: the
message proxy (faults/message_proxy/), which reads the Kafka protocol. Its listener
``message-lane-<k>.broker-<b>`` is what broker b advertises on ``LANE<k>``, and it forwards
to ``lane-<k>.broker-<b>``, so member → message proxy → Toxiproxy → broker, and every
Toxiproxy fault still acts on that lane. The message proxy runs on this machine whatever
the backend: members reach it, and it reaches Toxiproxy's published ports, on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Hosts:
    """Where the nodes are, by name. Clients of the harness (members, producer, observer)
    always reach the cluster at 127.0.0.1."""

    containers: bool = False  # True: each node is a container reached by its service name

    def of(self, node: str) -> str:
        return node if self.containers else LOOPBACK

    @property
    def proxy(self) -> str:
        return self.of("toxiproxy")


@dataclass(frozen=True)
class Route:
    proxy: str
    listen_port: int
    upstream_port: int
    listen_host: str = LOOPBACK  # where Toxiproxy listens for it
    upstream_host: str = LOOPBACK  # the node it leads to

    @property
    def listen(self) -> str:
        return f"{self.listen_host}:{self.listen_port}"

    @property
    def upstream(self) -> str:
        return f"{self.upstream_host}:{self.upstream_port}"


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
    hosts: Hosts = Hosts()
    message_lanes: frozenset[int] = frozenset()  # lanes through the message proxy
    message_routes: dict[str, Route] = field(default_factory=dict)  # its listeners, by lane name
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
                self._add(f"broker-{b}.to.{z}", z, zk_port)
        for k in range(1, self.lanes + 1):
            for z, zk_port in self.zookeeper_ports.items():
                self._add(f"lane-{k}.{z}", z, zk_port)
        for c in self.coordinators:
            port = self.coordinator_ports[c] = self.port()
            for k in range(1, self.lanes + 1):
                self._add(f"lane-{k}.{c}", c, port)
            for z, zk_port in self.zookeeper_ports.items():
                self._add(f"{c}.to.{z}", z, zk_port)
        for k in sorted(self.message_lanes):  # last, so the ports above do not depend on it
            for b in self.brokers:
                toxiproxy = self.routes[f"lane-{k}.broker-{b}"]
                name = f"message-lane-{k}.broker-{b}"
                self.message_routes[name] = Route(name, self.port(), toxiproxy.listen_port)

    def _route(self, proxy: str, broker: int, listener: str) -> None:
        self._bound[(broker, listener)] = self.port()
        self._add(proxy, f"broker-{broker}", self._bound[(broker, listener)])

    def _add(self, proxy: str, node: str, upstream_port: int) -> None:
        self.routes[proxy] = Route(proxy, self.port(), upstream_port, self.hosts.proxy, self.hosts.of(node))

    def published_ports(self, node: str) -> list[int]:
        """The ports of ``node`` the harness and the members reach from 127.0.0.1."""
        if node == "toxiproxy":
            return [r.listen_port for r in self.routes.values() if r.proxy.startswith("lane-")]
        if node.startswith("broker-"):
            return [self.direct[int(node.removeprefix("broker-"))]]
        if node in self.coordinator_ports:
            return [self.coordinator_ports[node]]
        return [self.zookeeper_ports[node]] if node in self.zookeeper_ports else []

    # --- broker configuration -------------------------------------------------------------

    def _advertised_port(self, broker: int, listener: str) -> int:
        if listener.startswith("LANE"):
            return self._lane_route(int(listener[4:]), broker).listen_port
        source = int(listener[4:])
        if source == broker:
            return self._bound[(broker, listener)]
        return self.routes[f"broker-{source}.to.broker-{broker}"].listen_port

    def _advertised_host(self, broker: int, listener: str) -> str:
        if listener.startswith("LANE"):
            return LOOPBACK  # members are processes of the harness's machine
        return self.hosts.of(f"broker-{broker}") if int(listener[4:]) == broker else self.hosts.proxy

    def listener_properties(self, broker: int) -> dict:
        names = [n for (b, n) in self._bound if b == broker]
        here = self.hosts.of(f"broker-{broker}")
        listeners = [f"CLIENT://{here}:{self.direct[broker]}"]
        advertised = [f"CLIENT://{LOOPBACK}:{self.direct[broker]}"]
        for n in names:
            listeners.append(f"{n}://{here}:{self._bound[(broker, n)]}")
            advertised.append(f"{n}://{self._advertised_host(broker, n)}:{self._advertised_port(broker, n)}")
        return {
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "listener.security.protocol.map": ",".join(f"{n}:PLAINTEXT" for n in ["CLIENT", *names]),
            "inter.broker.listener.name": f"FROM{broker}",
        }

    def zookeeper_connect(self, broker: int) -> str:
        return ",".join(self.routes[f"broker-{broker}.to.{z}"].listen for z in self.zookeeper_ports)

    # --- addresses and link selection -----------------------------------------------------

    def direct_bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.direct[b]}" for b in self.brokers)

    def _lane_route(self, lane: int, broker: int) -> Route:
        """Where member ``lane`` reaches ``broker``: its message proxy's listener, else its Toxiproxy proxy."""
        return (
            self.message_routes.get(f"message-lane-{lane}.broker-{broker}")
            or self.routes[f"lane-{lane}.broker-{broker}"]
        )

    def lane_bootstrap(self, lane: int) -> str:
        return ",".join(f"127.0.0.1:{self._lane_route(lane, b).listen_port}" for b in self.brokers)

    def message_lane_member(self, name: str) -> tuple[str, str]:
        """(member, broker) of a message proxy's listener: member consumer-k rides lane k."""
        lane, broker = name.removeprefix("message-lane-").split(".", 1)
        return f"consumer-{lane}", broker

    def lane_zookeeper_connect(self, lane: int) -> str | None:
        return (
            ",".join(f"127.0.0.1:{self.routes[f'lane-{lane}.{z}'].listen_port}" for z in self.zookeeper_ports) or None
        )

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
        return ",".join(self.routes[f"{coordinator}.to.{z}"].listen for z in self.zookeeper_ports)

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
