"""harness/cluster/network.py: the cluster's network plan, without a cluster.

Ports are drawn from a counter, so every value below is the plan's own choice. The
invariants are the ones a network fault relies on: every address is on 127.0.0.1, no
port is bound twice, every proxy forwards to a listener that exists, and a client or a
broker that follows the advertised listeners goes through exactly its own proxies.
"""

from __future__ import annotations

import itertools
import re

import pytest

from harness.cluster.network import NetworkPlan, Route

ZK1 = {"zookeeper-1": 2181}
ZK3 = {"zookeeper-1": 2181, "zookeeper-2": 2182, "zookeeper-3": 2183}


def plan(brokers=(1, 2, 3), lanes=2, zookeeper_ports=ZK1, coordinators=(), first_port=30_000) -> NetworkPlan:
    ports = itertools.count(first_port)
    return NetworkPlan(list(brokers), lanes, dict(zookeeper_ports), lambda: next(ports), list(coordinators))


def parse_listeners(value: str) -> dict[str, tuple[str, int]]:
    """ "NAME://host:port,..." -> {name: (host, port)}; a name twice fails the test."""
    parsed = {}
    for entry in value.split(","):
        m = re.fullmatch(r"([A-Z0-9]+)://([^:]+):(\d+)", entry)
        assert m, entry
        assert m[1] not in parsed, f"listener {m[1]} twice in {value}"
        parsed[m[1]] = (m[2], int(m[3]))
    return parsed


def bound_ports(p: NetworkPlan) -> list[int]:
    """Every port something listens on: brokers' listeners, proxies, coordinator instances."""
    listeners = [port for b in p.brokers for _, port in parse_listeners(p.listener_properties(b)["listeners"]).values()]
    return listeners + [r.listen_port for r in p.routes.values()] + list(p.coordinator_ports.values())


# --------------------------------------------------------------------- a worked example


def test_one_broker_one_lane_in_kraft_mode_the_whole_plan():
    p = plan(brokers=[1], lanes=1, zookeeper_ports={}, first_port=100)
    # Port 100: CLIENT; 101: the lane's listener, 102: its proxy; 103: FROM1 (no proxy to itself).
    assert p.direct == {1: 100}
    assert p.routes == {"lane-1.broker-1": Route("lane-1.broker-1", listen_port=102, upstream_port=101)}
    assert p.listener_properties(1) == {
        "listeners": "CLIENT://127.0.0.1:100,LANE1://127.0.0.1:101,FROM1://127.0.0.1:103",
        "advertised.listeners": "CLIENT://127.0.0.1:100,LANE1://127.0.0.1:102,FROM1://127.0.0.1:103",
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,LANE1:PLAINTEXT,FROM1:PLAINTEXT",
        "inter.broker.listener.name": "FROM1",
    }
    assert (p.direct_bootstrap(), p.lane_bootstrap(1)) == ("127.0.0.1:100", "127.0.0.1:102")
    assert p.zookeeper_connect(1) == ""
    assert p.lane_zookeeper_connect(1) is None
    assert p.lane_zookeeper_proxies(1) == [] and p.zookeeper_proxies(1) == []
    assert p.inter_broker_proxies(1) == []


def test_two_brokers_talk_through_one_proxy_each_way():
    p = plan(brokers=[1, 2], lanes=1, zookeeper_ports={})
    assert sorted(p.routes) == ["broker-1.to.broker-2", "broker-2.to.broker-1", "lane-1.broker-1", "lane-1.broker-2"]
    # Broker 1 reaches broker 2 at the address broker 2 advertises on FROM1: the proxy's.
    advertised_by_2 = parse_listeners(p.listener_properties(2)["advertised.listeners"])
    listeners_of_2 = parse_listeners(p.listener_properties(2)["listeners"])
    route = p.routes["broker-1.to.broker-2"]
    assert advertised_by_2["FROM1"] == ("127.0.0.1", route.listen_port)
    assert listeners_of_2["FROM1"] == ("127.0.0.1", route.upstream_port)
    assert p.inter_broker_proxies(1) == ["broker-1.to.broker-2", "broker-2.to.broker-1"]
    assert p.inter_broker_proxies(2, 1) == ["broker-2.to.broker-1", "broker-1.to.broker-2"]


# --------------------------------------------------------------------- invariants, for many shapes


SHAPES = [
    # (brokers, lanes, ZooKeeper nodes, coordinator instances)
    ([1], 1, {}, []),
    ([1], 3, ZK1, []),
    ([1, 2, 3], 2, ZK1, []),
    ([1, 2, 3], 4, ZK3, []),
    ([1, 2, 3, 4, 5], 3, {}, []),
    ([1], 3, ZK1, ["coordinator-1"]),
    ([1, 2], 2, ZK3, ["coordinator-1", "coordinator-2", "coordinator-3"]),
]


@pytest.fixture(params=SHAPES, ids=lambda s: f"b{len(s[0])}-l{s[1]}-zk{len(s[2])}-c{len(s[3])}")
def shaped(request) -> NetworkPlan:
    brokers, lanes, zk, coordinators = request.param
    return plan(brokers, lanes, zk, coordinators)


def test_the_plan_has_exactly_the_proxies_its_links_need(shaped):
    p = shaped
    b, lanes, z, c = len(p.brokers), p.lanes, len(p.zookeeper_ports), len(p.coordinators)
    assert len(p.routes) == b * lanes + b * (b - 1) + b * z + lanes * z + c * lanes + c * z
    expected = {f"lane-{k}.broker-{x}" for k in range(1, lanes + 1) for x in p.brokers}
    expected |= {f"broker-{x}.to.broker-{y}" for x in p.brokers for y in p.brokers if x != y}
    expected |= {f"broker-{x}.to.{zk}" for x in p.brokers for zk in p.zookeeper_ports}
    expected |= {f"lane-{k}.{zk}" for k in range(1, lanes + 1) for zk in p.zookeeper_ports}
    expected |= {f"lane-{k}.{i}" for k in range(1, lanes + 1) for i in p.coordinators}
    expected |= {f"{i}.to.{zk}" for i in p.coordinators for zk in p.zookeeper_ports}
    assert set(p.routes) == expected
    assert all(route.proxy == name for name, route in p.routes.items())


def test_every_listener_and_every_advertised_address_is_on_loopback(shaped):
    for b in shaped.brokers:
        props = shaped.listener_properties(b)
        for key in ("listeners", "advertised.listeners"):
            assert {host for host, _ in parse_listeners(props[key]).values()} == {"127.0.0.1"}, (b, key)
    addresses = [shaped.direct_bootstrap(), shaped.zookeeper_connect(shaped.brokers[0])]
    for k in range(1, shaped.lanes + 1):
        addresses += [
            shaped.lane_bootstrap(k),
            shaped.lane_zookeeper_connect(k) or "",
            *shaped.lane_coordinators(k).values(),
        ]
    addresses += [shaped.coordinator_zookeeper_connect(c) for c in shaped.coordinators]
    hosts = {a.rsplit(":", 1)[0] for joined in addresses for a in joined.split(",") if a}
    assert hosts == {"127.0.0.1"}


def test_no_port_is_bound_twice(shaped):
    ports = bound_ports(shaped)
    assert len(ports) == len(set(ports))
    assert not set(ports) & set(shaped.zookeeper_ports.values())  # ZooKeeper's own ports are not the plan's


def test_every_proxy_forwards_to_a_listener_that_exists(shaped):
    listeners = {b: parse_listeners(shaped.listener_properties(b)["listeners"]) for b in shaped.brokers}
    for name, route in shaped.routes.items():
        if m := re.fullmatch(r"lane-(\d+)\.broker-(\d+)", name):
            assert listeners[int(m[2])][f"LANE{m[1]}"] == ("127.0.0.1", route.upstream_port), name
        elif m := re.fullmatch(r"broker-(\d+)\.to\.broker-(\d+)", name):
            assert listeners[int(m[2])][f"FROM{m[1]}"] == ("127.0.0.1", route.upstream_port), name
        elif m := re.fullmatch(r".*\.(zookeeper-\d+)", name):
            assert route.upstream_port == shaped.zookeeper_ports[m[1]], name
        else:
            instance = re.fullmatch(r"lane-\d+\.(coordinator-\d+)", name)[1]
            assert route.upstream_port == shaped.coordinator_ports[instance], name


def test_each_broker_has_the_direct_listener_one_per_lane_and_one_per_broker(shaped):
    for b in shaped.brokers:
        props = shaped.listener_properties(b)
        names = list(parse_listeners(props["listeners"]))
        assert names == [
            "CLIENT",
            *(f"LANE{k}" for k in range(1, shaped.lanes + 1)),
            *(f"FROM{a}" for a in shaped.brokers),
        ]
        assert list(parse_listeners(props["advertised.listeners"])) == names
        assert props["listener.security.protocol.map"] == ",".join(f"{n}:PLAINTEXT" for n in names)
        assert props["inter.broker.listener.name"] == f"FROM{b}"
        assert parse_listeners(props["listeners"])["CLIENT"] == ("127.0.0.1", shaped.direct[b])


def test_a_member_that_follows_the_advertised_listeners_only_uses_its_own_lane(shaped):
    """A client bootstrapped on lane k is answered with every broker's LANE<k> address: all of
    them are lane k's proxies, so cutting lane k cuts that member and no other."""
    for k in range(1, shaped.lanes + 1):
        lane_ports = {shaped.routes[p].listen_port for p in shaped.lane_proxies(k)}
        bootstrap = {int(a.rsplit(":", 1)[1]) for a in shaped.lane_bootstrap(k).split(",")}
        assert bootstrap == lane_ports
        metadata = {
            parse_listeners(shaped.listener_properties(b)["advertised.listeners"])[f"LANE{k}"][1]
            for b in shaped.brokers
        }
        assert metadata == lane_ports
        others = {
            shaped.routes[p].listen_port for j in range(1, shaped.lanes + 1) if j != k for p in shaped.lane_proxies(j)
        }
        assert not lane_ports & others


def test_a_broker_that_follows_the_advertised_listeners_reaches_each_other_broker_through_one_proxy(shaped):
    for a in shaped.brokers:
        name = shaped.listener_properties(a)["inter.broker.listener.name"]
        for b in shaped.brokers:
            _, port = parse_listeners(shaped.listener_properties(b)["advertised.listeners"])[name]
            if a == b:  # its own listener, no proxy
                assert port == parse_listeners(shaped.listener_properties(b)["listeners"])[name][1]
            else:
                assert port == shaped.routes[f"broker-{a}.to.broker-{b}"].listen_port


def test_zookeeper_is_reached_through_the_proxies_of_whoever_connects(shaped):
    for b in shaped.brokers:
        assert shaped.zookeeper_connect(b) == ",".join(
            f"127.0.0.1:{shaped.routes[p].listen_port}" for p in shaped.zookeeper_proxies(b)
        )
        assert shaped.zookeeper_proxies(b) == [f"broker-{b}.to.{z}" for z in shaped.zookeeper_ports]
    for k in range(1, shaped.lanes + 1):
        assert shaped.lane_zookeeper_proxies(k) == [f"lane-{k}.{z}" for z in shaped.zookeeper_ports]
        expected = ",".join(f"127.0.0.1:{shaped.routes[p].listen_port}" for p in shaped.lane_zookeeper_proxies(k))
        assert shaped.lane_zookeeper_connect(k) == (expected or None)
    for c in shaped.coordinators:
        assert shaped.coordinator_zookeeper_connect(c) == ",".join(
            f"127.0.0.1:{shaped.routes[p].listen_port}" for p in shaped.coordinator_zookeeper_proxies(c)
        )


def test_link_selections_name_only_proxies_of_the_plan(shaped):
    p = shaped
    for k in range(1, p.lanes + 1):
        assert p.lane_proxies(k) == [f"lane-{k}.broker-{b}" for b in p.brokers]
        assert p.lane_proxies(k, p.brokers[-1]) == [f"lane-{k}.broker-{p.brokers[-1]}"]
        assert p.lane_coordinator_proxies(k) == [f"lane-{k}.{c}" for c in p.coordinators]
        assert p.lane_coordinators(k) == {
            c: f"127.0.0.1:{p.routes[f'lane-{k}.{c}'].listen_port}" for c in p.coordinators
        }
    for b in p.brokers:
        assert p.client_proxies(b) == [f"lane-{k}.broker-{b}" for k in range(1, p.lanes + 1)]
        both_ways = p.inter_broker_proxies(b)
        assert len(both_ways) == 2 * (len(p.brokers) - 1) and len(set(both_ways)) == len(both_ways)
    for c in p.coordinators:
        assert p.coordinator_client_proxies(c) == [f"lane-{k}.{c}" for k in range(1, p.lanes + 1)]
    selected = [
        name
        for k in range(1, p.lanes + 1)
        for name in (*p.lane_proxies(k), *p.lane_zookeeper_proxies(k), *p.lane_coordinator_proxies(k))
    ]
    selected += [
        name for b in p.brokers for name in (*p.inter_broker_proxies(b), *p.zookeeper_proxies(b), *p.client_proxies(b))
    ]
    selected += [
        name for c in p.coordinators for name in (*p.coordinator_zookeeper_proxies(c), *p.coordinator_client_proxies(c))
    ]
    assert set(selected) == set(p.routes)  # every proxy is reachable by some link, and nothing else is named


def test_a_filter_that_matches_nothing_selects_nothing():
    p = plan()
    assert p.lane_proxies(1, broker=9) == []
    assert p.inter_broker_proxies(1, other=1) == []  # a broker has no link to itself
    assert p.lane_coordinator_proxies(1, "coordinator-9") == []


def test_broker_ids_need_not_start_at_one():
    p = plan(brokers=[4, 7], lanes=1, zookeeper_ports=ZK1)
    assert sorted(p.routes) == [
        "broker-4.to.broker-7",
        "broker-4.to.zookeeper-1",
        "broker-7.to.broker-4",
        "broker-7.to.zookeeper-1",
        "lane-1.broker-4",
        "lane-1.broker-7",
        "lane-1.zookeeper-1",
    ]
    assert list(parse_listeners(p.listener_properties(7)["listeners"])) == ["CLIENT", "LANE1", "FROM4", "FROM7"]
    assert p.listener_properties(7)["inter.broker.listener.name"] == "FROM7"


# --------------------------------------------------------------------- the message proxy's lanes


def test_a_message_lane_puts_the_message_proxy_in_front_of_its_toxiproxy_proxies():
    ports = itertools.count(100)
    p = NetworkPlan([1, 2], 2, {}, lambda: next(ports), message_lanes=frozenset({2}))
    without = plan(brokers=[1, 2], lanes=2, zookeeper_ports={}, first_port=100)
    assert p.routes == without.routes, "the other routes keep their ports: the message proxy's come last"
    for b in (1, 2):
        route = p.message_routes[f"message-lane-2.broker-{b}"]
        assert route.upstream_port == p.routes[f"lane-2.broker-{b}"].listen_port  # then Toxiproxy, then the broker
        advertised = parse_listeners(p.listener_properties(b)["advertised.listeners"])
        assert advertised["LANE2"] == ("127.0.0.1", route.listen_port)  # members follow it there
        assert advertised["LANE1"] == ("127.0.0.1", p.routes[f"lane-1.broker-{b}"].listen_port)  # lane 1: as before
    assert p.lane_bootstrap(2) == ",".join(
        f"127.0.0.1:{p.message_routes[f'message-lane-2.broker-{b}'].listen_port}" for b in (1, 2)
    )
    assert p.lane_bootstrap(1) == without.lane_bootstrap(1)
    assert p.message_lane_member("message-lane-2.broker-1") == ("consumer-2", "broker-1")
    listening = bound_ports(p) + [r.listen_port for r in p.message_routes.values()]
    assert len(listening) == len(set(listening)), "no port bound twice"
