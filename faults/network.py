"""network: one link of one process degraded through Toxiproxy for ``duration_s``.

``LINKS`` says which links each kind of process has and which proxies carry each; both
validation (``links``) and injection (``proxies``, behind ``Targets.proxies``) read it.
The proxies themselves are named by the cluster's network plan
(harness/cluster/network.py), handed in as ``net``.

The effects, in Toxiproxy terms (v2.12.0, harness/components/versions.py; toxics/*.go and
link.go of its source):

- blackhole: a ``timeout`` toxic with timeout 0 on both streams — connections are
  accepted, and what arrives on a stream is read and dropped (not held: none of it comes
  later); removing the toxic closes every connection it sat on, as the dropped bytes broke
  the stream.
- refuse: the proxy disabled — existing connections are closed, new ones refused. Refusals
  overlap (a cut of one broker link inside a longer cut of the whole lane): the proxy is
  enabled again only when the last fault refusing it heals.
- latency (+ jitter), bandwidth, reset (``reset_peer`` with timeout 0: the first bytes a
  stream carries are dropped and the connection is closed, both ways — with a RST where it
  was opened while the toxic sat on the proxy, else with a FIN).

One-way cuts (``direction``), from the member's side. Every proxy of a member's link has the
member (or the message proxy in front of its lane, acting for it) as its client, so
``outbound`` is Toxiproxy's ``upstream`` stream (what the member sends) and ``inbound`` its
``downstream`` (what it is sent); the toxics sit on that stream only. On a TCP connection:

- outbound blackhole: Toxiproxy reads and drops what the member sends, so its writes succeed
  and nothing reaches the broker — no request, hence no answer; the broker's side of the
  connection stays open and idle, and the coordinator hears nothing of the member from the
  first moment. A connection the member opens meanwhile is accepted and connected on to the
  broker, which gets none of its bytes (its ApiVersions request included).
- inbound blackhole: every request on a connection that is up reaches the broker and is
  processed — heartbeats, commits, joins — and every answer is dropped. The member times its
  requests out and closes the connection; a connection it opens then never gets its
  ApiVersions answer, so little more arrives.
  Its coordinator goes on hearing it until its client gives up on its own timers: librdkafka
  keeps one heartbeat in flight, so one more arrives (measured: evicted 6.7 s after the cut at
  session.timeout.ms 6000, heartbeat.interval.ms 1000, classic and consumer protocols); the
  Java classic consumer sends one every heartbeat.interval.ms until its own session timer runs
  out with no answer (evicted up to about two session timeouts after the cut: measured, 10.1 s
  at session.timeout.ms 6000, 18.9 s at 10000).
- latency one way: each chunk of that stream held ``latency_ms`` (± ``jitter_ms``): outbound,
  the broker gets (and acts on) every request late; inbound, on time, and the member hears late.
- bandwidth one way: that stream limited to ``rate_kbps`` — inbound is the one fetches feel.
- reset one way: outbound, the member's next request is dropped and its connection closed
  before the broker gets it; inbound, the broker gets and processes the request, and its
  answer's first bytes close the connection: the member sees it close before the answer.

Either way a close goes through: the member closing a connection closes the broker's side
too. A refusal disables the proxy, which has no direction.
"""

from __future__ import annotations

import random
import re
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field

from faults.base import COORDINATOR, NO_EFFECTS, Drawing, Effects, ScenarioFacts, Targets, TimedFault, TimedSpec
from faults.capabilities import Capability


def _number(name: str) -> int:
    return int(name.rsplit("-", 1)[1])


# Process kind ("broker-" for any broker) -> its links as a scenario names them, in the order
# messages list them -> the proxies carrying that link, given the plan, the process and the
# link (both resolved: ``coordinator`` is looked up at injection). ``broker-`` and
# ``coordinator-`` as links stand for each broker, each instance of the project's coordinator.
Carriers = Callable[[Any, str, str], list[str]]
LINKS: dict[str, dict[str, Carriers | None]] = {
    "consumer-": {  # a member's lane: ``me`` is its lane's number (proxies(): the run's lane plan)
        "brokers": lambda net, lane, _: net.lane_proxies(lane),
        COORDINATOR: None,  # the group's coordinator when injected: one of the links below
        "broker-": lambda net, lane, broker: net.lane_proxies(lane, _number(broker)),
        "coordinator-": lambda net, lane, instance: net.lane_coordinator_proxies(lane, instance),
        "zookeeper": lambda net, lane, _: net.lane_zookeeper_proxies(lane),
    },
    "broker-": {
        "zookeeper": lambda net, me, _: net.zookeeper_proxies(_number(me)),
        "brokers": lambda net, me, _: net.inter_broker_proxies(_number(me)),  # both ways
        "clients": lambda net, me, _: net.client_proxies(_number(me)),  # every member's lane into it
        "broker-": lambda net, me, other: net.inter_broker_proxies(_number(me), _number(other)),
    },
    "coordinator-": {  # an instance of the project's coordinator
        "zookeeper": lambda net, me, _: net.coordinator_zookeeper_proxies(me),
        "clients": lambda net, me, _: net.coordinator_client_proxies(me),
    },
}


def _process_kind(target: str, scenario: ScenarioFacts) -> str | None:
    instances = scenario.coordinator_instances
    if target in scenario.members:
        return "consumer-"
    if target in instances or (target == COORDINATOR and instances):
        return "coordinator-"
    if target in scenario.brokers or target == COORDINATOR:
        return "broker-"
    return None


def links(target: str, scenario: ScenarioFacts) -> list[str]:
    """Every link of ``target`` a network fault may name (none: not a process with links)."""
    kind = _process_kind(target, scenario)
    named = {
        "broker-": scenario.brokers,
        "coordinator-": scenario.coordinator_instances,
        "zookeeper": ("zookeeper",) if scenario.zookeeper else (),
        # the only broker has no other to be cut from
        "brokers": ("brokers",) if kind != "broker-" or len(scenario.brokers) > 1 else (),
    }
    return [name for link in LINKS.get(kind, {}) for name in named.get(link, (link,))]


def proxies(net, target: str, link: str, lane_of: Callable[[str], int] = _number) -> list[str]:
    """The proxies carrying ``link`` of ``target`` (both resolved), in the network plan ``net``;
    a member's are its lane's (``lane_of``: the run's lane plan, harness/scenario/lanes.py)."""
    kind = re.sub(r"\d+$", "", target)
    of_target = LINKS.get(kind, {})
    carriers = of_target.get(link) or of_target.get(re.sub(r"(?<=-)\d+$", "", link))
    if carriers is None or link == target:
        raise ValueError(f"{link!r} is not a link of {target}")
    return carriers(net, lane_of(target) if kind == "consumer-" else target, link)


DIRECTIONS = ("both", "outbound", "inbound")  # of a cut: from the target member's side


class NetworkSpec(TimedSpec):
    """A link of one process degraded through Toxiproxy for ``duration_s``.

    ``link`` for a consumer: ``brokers`` (all), ``coordinator`` (only its group
    coordinator broker) or ``broker-N``; for a broker: ``zookeeper``, ``brokers``
    (every other broker, both ways), ``broker-N`` or ``clients`` (every member).
    """

    needs = frozenset({Capability.NETWORK_LANES})

    kind: Literal["network"]
    link: str = "brokers"
    effect: Literal["blackhole", "refuse", "latency", "bandwidth", "reset"] = "blackhole"
    # A member's lane cut one way, from its side: outbound (what it sends), inbound (what it is sent)
    direction: Literal[DIRECTIONS] = "both"  # type: ignore[valid-type]
    latency_ms: Annotated[int, Field(ge=0, le=600_000)] = 500
    jitter_ms: Annotated[int, Field(ge=0, le=600_000)] = 0
    rate_kbps: Annotated[int, Field(ge=1, le=10_000_000)] = 64

    @property
    def effects(self) -> Effects:
        # Whatever the link and the effect, as the oracle has always read a network fault: a blackhole
        # or a refusal cuts the member off; latency, bandwidth and resets may, while they last. Cut
        # outbound, nothing it sends arrives: silent from the first moment, as both ways. Cut inbound,
        # its requests arrive, heartbeats too, until its client gives up on its own timers (above):
        # its coordinator hears it, so no silence — declared, the oracle would hold the coordinator
        # to evicting it within a session timeout of the cut, which it rightly does not (a Java member).
        if self.direction == "inbound":
            return NO_EFFECTS
        if self.direction == "outbound":
            return Effects(silences="heartbeats", silenced_as=f"cut off from {_link_words(self.link)}, outbound only")
        return Effects(silences="heartbeats", silenced_as="cut off")

    def target_problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        of_target = links(self.target, scenario)
        if not of_target:
            return [("target", f"network faults apply to consumers and brokers, not {self.target!r}")]
        if self.link not in of_target or self.link == self.target:
            listed = ", ".join(link for link in of_target if link != self.target)
            return [("link", f"{self.link!r} is not a link of {self.target} (links: {listed})")]
        if self.direction != "both" and self.target not in scenario.members:
            return [("direction", f"one-way cuts are of a member's lane, from its side; {self.target} is no member")]
        if self.direction != "both" and self.effect == "refuse":
            return [
                (
                    "direction",
                    "refuse disables the proxy, both ways at once: cut one way with blackhole, latency, bandwidth or reset",
                )
            ]
        return []

    draw_targets = "consumers, and brokers with another broker or ZooKeeper to be cut from,"

    @classmethod
    def drawable_for(cls, target: str, drawing: Drawing) -> bool:
        return bool(drawn_links(target, drawing))

    @classmethod
    def draw(cls, rng: random.Random, target: str, length_s: float, drawing: Drawing) -> dict:
        links = drawn_links(target, drawing)
        link = links[0] if len(links) == 1 else rng.choice(links)
        drawn = {cls.length_key: length_s, "link": link, "effect": rng.choice(DRAWN_EFFECTS)}
        # Drawn only where random_faults lists more than one direction: a schedule seeded before
        # one-way cuts existed (every cut both ways) draws what it always drew.
        directions = drawn_directions(target, drawn["effect"], drawing)
        if directions != ("both",):
            drawn["direction"] = directions[0] if len(directions) == 1 else rng.choice(directions)
        return drawn

    @classmethod
    def draw_shapes(cls, target: str, drawing: Drawing) -> list[dict]:
        return [
            {"duration_s": 1.0, "link": link, "effect": effect, "direction": direction}
            for link in drawn_links(target, drawing)
            for effect in DRAWN_EFFECTS
            for direction in drawn_directions(target, effect, drawing)
        ]


DRAWN_EFFECTS = ("blackhole", "refuse", "latency")


def _link_words(link: str) -> str:
    """A member's link as an explanation says it: 'the brokers', 'its coordinator', 'broker-2'."""
    return {"brokers": "the brokers", COORDINATOR: "its coordinator", "zookeeper": "ZooKeeper"}.get(link, link)


def drawn_directions(target: str, effect: str, drawing: Drawing) -> tuple[str, ...]:
    """The directions a drawn cut of ``target`` may take: random_faults.directions for a member's
    lane, but a refusal, which has none."""
    if target not in drawing.members or effect == "refuse":
        return ("both",)
    return tuple(drawing.directions)


def drawn_links(target: str, drawing: Drawing) -> list[str]:
    """The links a drawn network fault on ``target`` may cut: a member's link to the brokers;
    another process's (a broker's) to the other brokers where there are others, or to ZooKeeper
    where there is one."""
    if target in drawing.members:
        return ["brokers"]
    return ["brokers"] * (drawing.brokers > 1) + ["zookeeper"] * drawing.zookeeper


@dataclass
class Network(TimedFault[NetworkSpec]):
    Spec = NetworkSpec
    proxies: list[str] = field(default_factory=list)

    def inject(self, targets: Targets) -> dict:
        self.proxies = targets.proxies(self.resolved, self.spec.link)
        degrade(targets.toxiproxy(), self.proxies, self.fault_id, self.spec.effect, self.spec.model_dump())
        # The Toxiproxy streams its toxics sit on (a refusal disables the proxy: none).
        streams = [] if self.spec.effect == "refuse" else list(STREAMS[self.spec.direction])
        return {"proxies": self.proxies, "streams": streams}

    def heal(self, targets: Targets) -> None:
        restore(targets.toxiproxy(), self.proxies, self.fault_id, self.spec.effect, self.spec.model_dump())


def degrade(client, proxies: list[str], fault_id: str, effect: str, options: Mapping) -> None:
    """Apply ``effect`` to every proxy; ``options`` are a network entry's (defaults: its model's)."""
    for proxy in proxies:
        if effect == "refuse":
            _refuse(client, proxy, fault_id)
        else:
            for kind, stream, attributes in toxics_for(effect, options):
                client.add_toxic(proxy, f"{fault_id}-{kind}-{stream}", kind, stream, **attributes)


def restore(client, proxies: list[str], fault_id: str, effect: str, options: Mapping) -> None:
    for proxy in proxies:
        if effect == "refuse":
            _allow(client, proxy, fault_id)
        else:
            for kind, stream, _ in toxics_for(effect, options):
                client.remove_toxic(proxy, f"{fault_id}-{kind}-{stream}")


# The faults refusing each proxy, per Toxiproxy server (its client): toxics are named by fault and
# come and go independently, but a proxy has one switch. Faults heal from their own threads.
_refusing: weakref.WeakKeyDictionary[Any, dict[str, set[str]]] = weakref.WeakKeyDictionary()
_refusing_lock = threading.Lock()


def _refuse(client, proxy: str, fault_id: str) -> None:
    with _refusing_lock:
        holders = _refusing.setdefault(client, {}).setdefault(proxy, set())
        if not holders:
            client.set_enabled(proxy, False)
        holders.add(fault_id)


def _allow(client, proxy: str, fault_id: str) -> None:
    with _refusing_lock:
        holders = _refusing.get(client, {}).get(proxy, set())
        holders.discard(fault_id)
        if not holders:  # (also a proxy nobody is known to refuse: enabling it is what healing means)
            _refusing.get(client, {}).pop(proxy, None)
            client.set_enabled(proxy, True)


def reset(client) -> None:
    """Every proxy of that server enabled and free of toxics, whatever fault left what behind."""
    with _refusing_lock:
        client.reset()
        _refusing.pop(client, None)


_TOXIC_OPTIONS = ("latency_ms", "jitter_ms", "rate_kbps", "direction")
# A member's lane, from its side: Toxiproxy's upstream is what the proxy's client (the member) sends.
STREAMS = {"both": ("upstream", "downstream"), "outbound": ("upstream",), "inbound": ("downstream",)}


def toxics_for(effect: str, options: Mapping) -> list[tuple[str, str, dict]]:
    """The effect as Toxiproxy toxics: (toxic kind, stream, attributes) on the streams of its direction."""
    o = {name: options.get(name, NetworkSpec.model_fields[name].default) for name in _TOXIC_OPTIONS}
    streams = STREAMS[o["direction"]]
    if effect == "blackhole":
        return [("timeout", s, {"timeout": 0}) for s in streams]
    if effect == "latency":
        return [("latency", s, {"latency": o["latency_ms"], "jitter": o["jitter_ms"]}) for s in streams]
    if effect == "bandwidth":
        return [("bandwidth", s, {"rate": o["rate_kbps"]}) for s in streams]
    if effect == "reset":
        return [("reset_peer", s, {"timeout": 0}) for s in streams]
    raise ValueError(f"no toxics for effect {effect!r}")
