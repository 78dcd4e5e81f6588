"""The protocol generations the lab runs, and what each one is: the one table of them.

A generation is a way a consumer group rebalances — from the ZooKeeper-era
consumer (0.8) through Kafka's classic group protocol to KIP-848, plus the
project's own coordinator (``coordinator/``, docs/coordinator.md). Scenario
validation, ``compare``, the harness that starts the members, the oracle and the
analysis all read their facts here; adding a generation is one entry below (and
its driver).

A generation is a row of facts and capabilities, and nothing outside this module compares
a generation's name: the oracle reads the facts it judges by, the harness copies the
capabilities a driver needs into each member's spec (``workloads.driver.MemberSpec``), and
the project's coordinator is told the variant its row names.

A driver from outside the tree — an entry point in the group ``rebalance_lab.drivers``
(oracle/extensions.py, docs/extending.md) — joins the ``drivers`` of each generation its
class says it ``runs``; those plugins are loaded the first time a row's drivers are read.

Data, and nothing of the project imported but the oracle's own plugin loader (drivers from
installed packages join a row's ``drivers``, oracle/extensions.py), so the oracle — the bottom
layer — can read it, and so can everything above it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from . import extensions

GroupHome = Literal["kafka", "zookeeper", "project-coordinator"]
# Kafka's group.protocol: JoinGroup / SyncGroup (classic) or ConsumerGroupHeartbeat (KIP-848).
GroupProtocol = Literal["classic", "consumer"]
# Who runs the assignor: the member the coordinator made leader, which hands the assignment out
# through SyncGroup; the brokers (KIP-848); the project's coordinator itself (seed 001's first
# design); or each member for itself, over the same sorted view of the group (the 0.8 consumer).
KafkaNeed = Literal["zookeeper", "consumer-protocol"]
AssignorHome = Literal["group-leader", "broker", "project-coordinator", "each-member"]


@dataclass(frozen=True)
class Generation:
    name: str  # workload.protocol, and run_started's "protocol"
    about: str  # how a sentence names it: "the ZooKeeper-era consumer"
    # workload.driver -> the module that runs one member (python -m); the first is the default. Plugin
    # drivers that run this generation follow the table's own (read through _Drivers).
    drivers: Mapping[str, str]
    assignors: tuple[str, ...]  # the first is the default
    # What it needs of the brokers: ZooKeeper mode, or the consumer group protocol (KIP-848); None:
    # any cluster. Which releases give it is the release catalogue's (harness/components/versions.py);
    # compare runs the generation on the default release that does.
    needs: KafkaNeed | None = None
    kafka_why: str = ""  # why it needs that, for a scenario on a cluster that cannot give it
    # The group protocol a Kafka client speaks to the brokers; None: the group lives elsewhere.
    group_protocol: GroupProtocol | None = None
    static_membership: bool = False  # KIP-345: members carry a group.instance.id that outlives their process
    assignor_runs_on: AssignorHome = "group-leader"
    # KIP-848: session timeout and heartbeat interval are the group's, set on the brokers
    # (group.consumer.*), not sent by the member.
    broker_timing: bool = False
    coordinator_variant: str | None = None  # the project's coordinator: the design it runs (coordinator.group.variant)
    incremental: bool = False  # rebalance callbacks carry deltas (KIP-429, KIP-848)
    member_epochs: bool = False  # KIP-848: members reach an epoch one by one, each on its own heartbeat
    fenced_commits: bool = True  # the group refuses a former owner's commits (by generation or epoch)
    group_home: GroupHome = "kafka"  # where the group's membership lives
    # The Kafka APIs its members send to the brokers, by Kafka's names: what a message fault may act
    # on (faults/message.py). The group APIs are their protocol's; every Kafka client fetches.
    kafka_apis: tuple[str, ...] = ("Fetch",)
    # Eager range / roundrobin generations must match oracle/assignors.py's layouts: the members
    # sort themselves the way those definitions say (KIP-848's brokers assign their own way).
    layouts: bool = False

    def __post_init__(self):
        object.__setattr__(self, "drivers", _Drivers(self, self.drivers))  # the plugins' too, once read

    @property
    def classic(self) -> bool:
        """Kafka's classic group protocol: JoinGroup / SyncGroup sent by a Kafka client."""
        return self.group_protocol == "classic"

    @property
    def project_coordinator(self) -> bool:
        return self.group_home == "project-coordinator"


class _Drivers(Mapping[str, str]):
    """A generation's ``drivers``: the table's own, then each plugin driver whose class ``runs`` it."""

    def __init__(self, generation: Generation, built_in: Mapping[str, str]):
        built_in = built_in.built_in if isinstance(built_in, _Drivers) else built_in  # a row copied (replace)
        self.generation, self.built_in = generation, MappingProxyType(dict(built_in))
        self._all: Mapping[str, str] | None = None

    def _drivers(self) -> Mapping[str, str]:
        if self._all is None:
            self._all = MappingProxyType(
                {
                    **self.built_in,
                    **{p.name: p.module for p, driver in _plugin_drivers() if _runs(p, driver, self.generation)},
                }
            )
        return self._all

    def __getitem__(self, driver: str) -> str:
        return self._drivers()[driver]

    def __iter__(self) -> Iterator[str]:
        return iter(self._drivers())

    def __len__(self) -> int:
        return len(self._drivers())

    def __repr__(self) -> str:
        return repr(dict(self.built_in)) + (
            "" if self._all is None else f" + plugins {list(self._all)[len(self.built_in) :]}"
        )


_CLASSIC_DRIVERS = MappingProxyType({"librdkafka": "workloads.consumer", "java": "workloads.verifiable"})
# Both group protocols commit and fetch offsets at the group's coordinator, found with FindCoordinator.
_OFFSET_APIS = ("OffsetCommit", "OffsetFetch", "FindCoordinator", "Fetch")
CLASSIC_APIS = ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", *_OFFSET_APIS)
CONSUMER_APIS = ("ConsumerGroupHeartbeat", *_OFFSET_APIS)
_CLASSIC = dict(drivers=_CLASSIC_DRIVERS, group_protocol="classic", kafka_apis=CLASSIC_APIS)
_CONSUMER = dict(
    drivers=MappingProxyType({"librdkafka": "workloads.consumer"}),
    assignors=("uniform", "range"),
    needs="consumer-protocol",
    kafka_why="the consumer protocol (KIP-848) needs brokers that speak it",
    group_protocol="consumer",
    assignor_runs_on="broker",
    broker_timing=True,
    incremental=True,
    member_epochs=True,
    kafka_apis=CONSUMER_APIS,
)
_COORDINATOR = dict(
    about="the project's coordinator",
    drivers=MappingProxyType({"librdkafka": "workloads.coordinated"}),
    assignors=("range", "roundrobin"),
    needs="zookeeper",
    kafka_why="the project's coordinator keeps its groups in ZooKeeper",
    group_home="project-coordinator",
    layouts=True,
)

GENERATIONS: Mapping[str, Generation] = MappingProxyType(
    {
        g.name: g
        for g in (
            # The 0.8 high-level consumer: its own range assignment over sorted consumer threads, in ZooKeeper.
            Generation(
                "zk-eager",
                "the ZooKeeper-era consumer",
                MappingProxyType({"librdkafka": "workloads.zk_eager"}),
                ("range",),
                needs="zookeeper",
                kafka_why="zk-eager rebalances through ZooKeeper",
                assignor_runs_on="each-member",
                fenced_commits=False,
                group_home="zookeeper",
                layouts=True,
            ),
            Generation(
                "classic-eager",
                "the classic eager protocol",
                assignors=("range", "roundrobin"),
                layouts=True,
                **_CLASSIC,
            ),
            Generation(
                "classic-static",
                "the classic protocol with static membership (KIP-345)",
                assignors=("range", "roundrobin", "cooperative-sticky"),
                static_membership=True,
                layouts=True,
                **_CLASSIC,
            ),
            Generation(
                "classic-cooperative",
                "the classic cooperative protocol (KIP-429)",
                assignors=("cooperative-sticky",),
                incremental=True,
                **_CLASSIC,
            ),
            # KIP-848: the assignors are the brokers' remote assignors.
            Generation("consumer", "the consumer protocol (KIP-848)", **_CONSUMER),
            # With instance ids: a member started again within its session comes back as itself.
            Generation(
                "consumer-static",
                "the consumer protocol with static membership (KIP-848)",
                static_membership=True,
                **_CONSUMER,
            ),
            # The project's coordinator, seeds 001-004's designs: v1 assigns in JoinGroup, v2 lets the
            # leader assign (SyncGroup), v3 adds KIP-62's rebalance timeout and KIP-134's initial delay.
            Generation(
                "coordinator-v1", coordinator_variant="v1", assignor_runs_on="project-coordinator", **_COORDINATOR
            ),
            Generation("coordinator-v2", coordinator_variant="v2", **_COORDINATOR),
            Generation("coordinator-v3", coordinator_variant="v3", **_COORDINATOR),
        )
    }
)

PROTOCOLS: tuple[str, ...] = tuple(GENERATIONS)
# Every assignor some generation uses, in the table's order.
ASSIGNORS: tuple[str, ...] = tuple(dict.fromkeys(a for g in GENERATIONS.values() for a in g.assignors))
# Assignors without a closed-form layout to hold a generation to: they keep what members own.
STICKY_ASSIGNORS = frozenset({"cooperative-sticky", "uniform"})

# What a generation lacking a fact does instead, in the words of a check that rests on the fact
# (oracle.checks.not_applicable): "<about> <this>".
LACKING = {"fenced_commits": "has no commit fencing: a zombie's stale commits are accepted (its finding)"}


def _not_a_driver(obj: object, plugin: extensions.Plugin) -> str | None:
    """A driver class (workloads.driver.Driver) whose module runs it: what `python -m` starts."""
    if not callable(getattr(obj, "runs", None)):
        return "it has no runs(generation) -> bool, saying which generations' members it can be"
    main = getattr(sys.modules.get(plugin.module), "main", None)  # its module: imported by loading it
    if getattr(main, "__self__", None) is not obj:
        return (
            f"its module has no `main = {getattr(obj, '__name__', obj)}.main`, which "
            f"`python -m {plugin.module}` runs (workloads/driver.py)"
        )
    return None


@functools.cache
def _plugin_drivers() -> tuple[tuple[extensions.Plugin, object], ...]:
    """(plugin, its driver class) for every plugin driver, loaded once."""
    built_in = {name for g in GENERATIONS.values() for name in g.drivers.built_in}  # type: ignore[attr-defined]
    loaded = extensions.load(extensions.DRIVERS, built_in, _not_a_driver)
    return tuple((p, loaded[p.name]) for p in extensions.installed() if p.group == extensions.DRIVERS)


def _runs(plugin: extensions.Plugin, driver, generation: Generation) -> bool:
    try:
        return bool(driver.runs(generation))
    except Exception as e:  # the plugin's bug, said as its own
        raise extensions.ExtensionError(
            f"plugin {plugin}: runs({generation.name!r}) raised {type(e).__name__}: {e}"
        ) from None


def driver_plugin(driver: str) -> extensions.Plugin | None:
    """The plugin a driver name comes from; None for the table's own drivers."""
    return next((p for p, _ in _plugin_drivers() if p.name == driver), None)


def __getattr__(name: str):
    """DRIVER_NAMES: every driver name, the table's then the plugins' (loading them, once)."""
    if name != "DRIVER_NAMES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    names = [d for g in GENERATIONS.values() for d in g.drivers.built_in]  # type: ignore[attr-defined]
    globals()[name] = tuple(dict.fromkeys([*names, *(p.name for p, _ in _plugin_drivers())]))
    return globals()[name]


def where(**facts) -> tuple[str, ...]:
    """The generations with these facts, in the table's order: ``where(classic=True)``."""
    return tuple(g.name for g in GENERATIONS.values() if all(getattr(g, k) == v for k, v in facts.items()))


INCREMENTAL_PROTOCOLS = frozenset(where(incremental=True))
LAYOUT_PROTOCOLS = frozenset(where(layouts=True))
