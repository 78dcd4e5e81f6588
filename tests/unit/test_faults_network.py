"""The network fault's builders (faults/network.py, faults/toxiproxy.py), without Toxiproxy:
which toxics an effect becomes, what degrade / restore ask of a Toxiproxy client, which
proxies carry a link in a real network plan, and the requests the client sends."""

from __future__ import annotations

import itertools
import json
from typing import get_args

import pytest
import requests

from faults import network
from faults.network import NetworkSpec, degrade, proxies, restore, toxics_for
from faults.toxiproxy import TIMEOUT_S, ToxiproxyClient, ToxiproxyError
from harness.cluster.network import NetworkPlan

BOTH = ("upstream", "downstream")
EFFECTS = get_args(NetworkSpec.model_fields["effect"].annotation)


class RecordingClient:
    """The part of ToxiproxyClient the builders call, as a list of calls."""

    def __init__(self):
        self.calls: list[tuple] = []

    def add_toxic(self, proxy, name, kind, stream, **attributes):
        self.calls.append(("add_toxic", proxy, name, kind, stream, attributes))

    def remove_toxic(self, proxy, name):
        self.calls.append(("remove_toxic", proxy, name))

    def set_enabled(self, proxy, enabled):
        self.calls.append(("set_enabled", proxy, enabled))


# --------------------------------------------------------------------- effect -> toxics


def test_the_effects_a_scenario_may_name():
    assert EFFECTS == ("blackhole", "refuse", "latency", "bandwidth", "reset")


@pytest.mark.parametrize(
    "effect, toxics",
    [
        ("blackhole", [("timeout", s, {"timeout": 0}) for s in BOTH]),  # data dropped, connections kept open
        ("latency", [("latency", s, {"latency": 500, "jitter": 0}) for s in BOTH]),
        ("bandwidth", [("bandwidth", s, {"rate": 64}) for s in BOTH]),
        ("reset", [("reset_peer", s, {"timeout": 0}) for s in BOTH]),
    ],
)
def test_each_effect_is_one_toxic_per_stream_with_the_models_defaults(effect, toxics):
    assert toxics_for(effect, {}) == toxics
    assert (
        toxics_for(
            effect, NetworkSpec(kind="network", target="consumer-1", at_s=1, duration_s=1, effect=effect).model_dump()
        )
        == toxics
    )


def test_a_scenarios_options_set_the_toxics_attributes_and_other_keys_are_ignored():
    spec = NetworkSpec(
        kind="network",
        target="consumer-1",
        at_s=1,
        duration_s=3,
        effect="latency",
        latency_ms=80,
        jitter_ms=20,
        rate_kbps=1000,
    )
    options = spec.model_dump()
    assert {"duration_s", "link", "target"} <= set(options)  # what Network.inject hands over, whole
    assert toxics_for("latency", options) == [("latency", s, {"latency": 80, "jitter": 20}) for s in BOTH]
    assert toxics_for("bandwidth", options) == [("bandwidth", s, {"rate": 1000}) for s in BOTH]
    assert toxics_for("blackhole", options) == [("timeout", s, {"timeout": 0}) for s in BOTH]


@pytest.mark.parametrize("effect", ["refuse", "partition", ""])
def test_an_effect_without_toxics_is_refused_by_name(effect):
    with pytest.raises(ValueError, match=f"no toxics for effect {effect!r}"):
        toxics_for(effect, {})


# --------------------------------------------------------------------- degrade / restore


@pytest.mark.parametrize("effect", EFFECTS)
def test_restore_undoes_exactly_what_degrade_did_on_every_proxy(effect):
    client = RecordingClient()
    cut = ["lane-1.broker-1", "lane-1.broker-2"]
    degrade(client, cut, "f3", effect, {})
    done, client.calls = client.calls, []
    restore(client, cut, "f3", effect, {})
    undone = client.calls
    assert done and undone
    if effect == "refuse":
        assert done == [("set_enabled", p, False) for p in cut]
        assert undone == [("set_enabled", p, True) for p in cut]
    else:
        assert [c[1] for c in done] == [p for p in cut for _ in BOTH]
        assert [(c[1], c[2]) for c in done] == [(c[1], c[2]) for c in undone]
        assert all(c[0] == "add_toxic" for c in done) and all(c[0] == "remove_toxic" for c in undone)


def test_overlapping_refusals_keep_the_proxy_disabled_until_the_last_one_heals():
    client, lane, link = RecordingClient(), ["lane-1.broker-1", "lane-1.broker-2"], ["lane-1.broker-2"]
    degrade(client, lane, "f1", "refuse", {})
    degrade(client, link, "f2", "refuse", {})  # inside f1: the proxy is off already
    restore(client, lane, "f1", "refuse", {})  # f2 still refuses lane-1.broker-2
    assert client.calls == [
        ("set_enabled", "lane-1.broker-1", False),
        ("set_enabled", "lane-1.broker-2", False),
        ("set_enabled", "lane-1.broker-1", True),
    ]
    restore(client, link, "f2", "refuse", {})
    assert client.calls[-1] == ("set_enabled", "lane-1.broker-2", True)
    # A reset (the run's heal check forcing it) forgets every refusal.
    degrade(client, link, "f3", "refuse", {})
    client.reset = lambda: client.calls.append(("reset",))
    network.reset(client)
    degrade(client, link, "f4", "refuse", {})
    restore(client, link, "f4", "refuse", {})
    assert client.calls[-4:] == [
        ("set_enabled", "lane-1.broker-2", False),
        ("reset",),
        ("set_enabled", "lane-1.broker-2", False),
        ("set_enabled", "lane-1.broker-2", True),
    ]
    # Another server's proxy of the same name is its own switch.
    other = RecordingClient()
    degrade(other, link, "f2", "refuse", {})
    assert other.calls == [("set_enabled", "lane-1.broker-2", False)]


def test_toxics_are_named_by_fault_kind_and_stream_so_two_faults_on_one_proxy_stay_apart():
    client = RecordingClient()
    degrade(client, ["broker-1.to.broker-2"], "f1", "latency", {"latency_ms": 80})
    degrade(client, ["broker-1.to.broker-2"], "f2", "blackhole", {})
    assert client.calls == [
        (
            "add_toxic",
            "broker-1.to.broker-2",
            "f1-latency-upstream",
            "latency",
            "upstream",
            {"latency": 80, "jitter": 0},
        ),
        (
            "add_toxic",
            "broker-1.to.broker-2",
            "f1-latency-downstream",
            "latency",
            "downstream",
            {"latency": 80, "jitter": 0},
        ),
        ("add_toxic", "broker-1.to.broker-2", "f2-timeout-upstream", "timeout", "upstream", {"timeout": 0}),
        ("add_toxic", "broker-1.to.broker-2", "f2-timeout-downstream", "timeout", "downstream", {"timeout": 0}),
    ]
    client.calls = []
    restore(client, ["broker-1.to.broker-2"], "f1", "latency", {"latency_ms": 80})
    assert client.calls == [
        ("remove_toxic", "broker-1.to.broker-2", "f1-latency-upstream"),
        ("remove_toxic", "broker-1.to.broker-2", "f1-latency-downstream"),
    ]


def test_no_proxy_no_call():
    client = RecordingClient()
    for effect in EFFECTS:
        degrade(client, [], "f1", effect, {})
        restore(client, [], "f1", effect, {})
    assert client.calls == []


# --------------------------------------------------------------------- link -> proxies, in a real plan


@pytest.fixture(scope="module")
def plan() -> NetworkPlan:
    ports = itertools.count(50_000)
    return NetworkPlan([1, 2, 3], 2, {"zookeeper-1": 2181}, lambda: next(ports), ["coordinator-1", "coordinator-2"])


@pytest.mark.parametrize(
    "target, link, cut",
    [
        ("consumer-2", "brokers", ["lane-2.broker-1", "lane-2.broker-2", "lane-2.broker-3"]),
        ("consumer-2", "broker-3", ["lane-2.broker-3"]),
        ("consumer-1", "zookeeper", ["lane-1.zookeeper-1"]),
        ("consumer-1", "coordinator-2", ["lane-1.coordinator-2"]),
        (
            "broker-2",
            "brokers",
            ["broker-2.to.broker-1", "broker-1.to.broker-2", "broker-2.to.broker-3", "broker-3.to.broker-2"],
        ),
        ("broker-2", "broker-3", ["broker-2.to.broker-3", "broker-3.to.broker-2"]),
        ("broker-1", "clients", ["lane-1.broker-1", "lane-2.broker-1"]),
        ("broker-1", "zookeeper", ["broker-1.to.zookeeper-1"]),
        ("coordinator-1", "zookeeper", ["coordinator-1.to.zookeeper-1"]),
        ("coordinator-2", "clients", ["lane-1.coordinator-2", "lane-2.coordinator-2"]),
    ],
)
def test_a_link_is_cut_at_exactly_its_proxies(plan, target, link, cut):
    assert proxies(plan, target, link) == cut
    assert set(cut) <= set(plan.routes)


@pytest.mark.parametrize(
    "target, link",
    [
        ("broker-1", "broker-1"),  # a broker has no link to itself
        ("consumer-1", "coordinator"),  # resolved to a broker or an instance before injection
        ("consumer-1", "clients"),
        ("coordinator-1", "brokers"),
        ("producer", "brokers"),
    ],
)
def test_a_link_a_process_does_not_have_is_refused(plan, target, link):
    with pytest.raises(ValueError, match=f"{link!r} is not a link of {target}"):
        proxies(plan, target, link)


# --------------------------------------------------------------------- the client's requests


class StubSession:
    """requests.Session.request, answered from a list; records what was asked."""

    def __init__(self, *answers: tuple[int, object]):
        self.answers = list(answers)
        self.asked: list[tuple] = []

    def request(self, method, url, timeout=None, **kwargs):
        self.asked.append((method, url, timeout, kwargs.get("json")))
        status, body = self.answers.pop(0)
        if isinstance(body, Exception):
            raise body
        response = requests.Response()
        response.status_code = status
        response._content = json.dumps(body).encode() if body is not None else b""
        return response


def client(*answers) -> tuple[ToxiproxyClient, StubSession]:
    c = ToxiproxyClient("http://127.0.0.1:8474/")
    c.session = StubSession(*answers)
    return c, c.session


def test_the_client_sends_toxics_and_proxies_as_toxiproxys_api_wants_them_with_a_timeout():
    c, session = client((200, {}), (204, None), (200, {}), (201, {}), (204, None))
    c.add_toxic("lane-1.broker-2", "f1-latency-upstream", "latency", "upstream", latency=80, jitter=0)
    c.remove_toxic("lane-1.broker-2", "f1-latency-upstream")
    c.set_enabled("lane-1.broker-2", False)
    c.create("lane-1.broker-2", "127.0.0.1:41002", "127.0.0.1:41001")
    c.reset()
    api = "http://127.0.0.1:8474"
    assert session.asked == [
        (
            "POST",
            f"{api}/proxies/lane-1.broker-2/toxics",
            TIMEOUT_S,
            {
                "name": "f1-latency-upstream",
                "type": "latency",
                "stream": "upstream",
                "toxicity": 1.0,
                "attributes": {"latency": 80, "jitter": 0},
            },
        ),
        ("DELETE", f"{api}/proxies/lane-1.broker-2/toxics/f1-latency-upstream", TIMEOUT_S, None),
        ("POST", f"{api}/proxies/lane-1.broker-2", TIMEOUT_S, {"enabled": False}),
        (
            "POST",
            f"{api}/proxies",
            TIMEOUT_S,
            {"name": "lane-1.broker-2", "listen": "127.0.0.1:41002", "upstream": "127.0.0.1:41001", "enabled": True},
        ),
        ("POST", f"{api}/reset", TIMEOUT_S, None),
    ]


def test_the_client_reads_proxies_with_their_toxics():
    c, _ = client(
        (
            200,
            {
                "lane-1.broker-1": {
                    "name": "lane-1.broker-1",
                    "listen": "127.0.0.1:41002",
                    "upstream": "127.0.0.1:41001",
                    "enabled": False,
                    "toxics": [{"name": "f1-timeout-upstream"}],
                }
            },
        )
    )
    [proxy] = c.proxies()
    assert (proxy.name, proxy.listen, proxy.upstream, proxy.enabled, proxy.toxics) == (
        "lane-1.broker-1",
        "127.0.0.1:41002",
        "127.0.0.1:41001",
        False,
        ("f1-timeout-upstream",),
    )


@pytest.mark.parametrize(
    "status, body, message",
    [
        (404, {"error": "proxy not found", "status": 404}, "Toxiproxy API DELETE /proxies/p/toxics/t: NotFound: "),
        (409, {"error": "toxic already exists", "status": 409}, "ProxyExists"),
        (500, {"error": "boom"}, "Toxiproxy API DELETE /proxies/p/toxics/t: HTTP 500: "),
        (0, requests.ConnectTimeout("timed out"), "Toxiproxy API DELETE /proxies/p/toxics/t failed: timed out"),
    ],
)
def test_an_api_error_is_one_toxiproxy_error_naming_the_call(status, body, message):
    c, _ = client((status, body))
    with pytest.raises(ToxiproxyError) as e:
        c.remove_toxic("p", "t")
    assert message in str(e.value)
    if isinstance(body, dict):
        assert body["error"] in str(e.value)
