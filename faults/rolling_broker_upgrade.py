"""rolling-broker-upgrade: the cluster's nodes restarted one at a time on a newer Kafka release,
on the same data, then the upgrade finalized as a step of its own — as Kafka's upgrade notes
have an operator do it (https://kafka.apache.org/39/getting-started/upgrade,
https://kafka.apache.org/44/getting-started/upgrade/).

- ZooKeeper mode: each broker comes back on the new release with ``inter.broker.protocol.version``
  pinned to the old release's line, so old and new brokers speak one protocol during the roll;
  finalizing is a second rolling restart with it raised to the new line.
- KRaft: the controller first, then each broker (the quorum that decides feature levels runs the
  new release before any broker registers with it); finalizing raises ``metadata.version`` to the
  highest level every node supports (Kafka's FeatureCommand, ``kafka-features.sh upgrade``).

A ZooKeeper-mode cluster cannot go to a release without ZooKeeper (4.x): that needs the KRaft
migration (KIP-866) first, which this fault does not do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field

from faults.base import DAY_S, NO_EFFECTS, Effects, FaultSpec, ScenarioFacts, Targets
from faults.capabilities import Capability
from faults.rounds import Round

INTER_BROKER_PROTOCOL = "inter.broker.protocol.version"  # ZooKeeper mode's version of the brokers' own protocol
NODE_RESTART_S = 25.0  # what one node's stop, start and the cluster's recovery take here, roughly (a nominal length)


def release_key(release: Any) -> tuple[int, ...]:
    """A release's place in time: its version's numbers ("3.9.2" -> (3, 9, 2))."""
    return tuple(int(part) for part in release.version.split(".") if part.isdigit())


class RollingBrokerUpgradeSpec(FaultSpec):
    """Every node of the cluster restarted in turn on release ``to``, then (``finalize``) the
    upgrade finalized: ``interval_s`` between one node back and the next one's stop, and before
    finalizing."""

    kind: Literal["rolling-broker-upgrade"]
    to: Annotated[str, Field(min_length=1, max_length=40)]  # a release ("3.9.2") or a line ("4.4")
    finalize: bool = True
    interval_s: Annotated[float, Field(ge=0, le=DAY_S)] = 10

    needs = frozenset({Capability.CLUSTER_NODES, Capability.NODE_UPGRADES})
    changes_cluster = True

    @property
    def effects(self) -> Effects:
        return NO_EFFECTS  # no one target: each node it restarts writes its own exit and start

    def kafka_releases(self) -> list[str]:
        return [self.to]

    def _target(self, scenario: ScenarioFacts) -> tuple[Any, str | None]:
        """The release ``to`` names, or why it cannot be upgraded to."""
        if scenario.kafka_release is None or scenario.release is None:
            return None, "the cluster's Kafka release is not known here"
        try:
            return scenario.kafka_release(self.to), None
        except ValueError as e:
            return None, str(e)

    def problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        target, why = self._target(scenario)
        if target is None:
            return [("to", why)]
        now = scenario.release
        if release_key(target) <= release_key(now):
            said = "the release the cluster runs" if target.version == now.version else "a downgrade"
            return [("to", f"Kafka {target.version} is {said} (Kafka {now.version}); an upgrade goes to a newer one")]
        if scenario.zookeeper and not target.zookeeper:
            return [
                (
                    "to",
                    f"Kafka {target.version} runs without ZooKeeper: a ZooKeeper-mode cluster (Kafka {now.version}) "
                    "must first be migrated to KRaft (KIP-866), which this fault does not do; upgrade within "
                    "the ZooKeeper releases, or start the cluster in KRaft",
                )
            ]
        if not scenario.zookeeper and not target.kraft:
            return [("to", f"Kafka {target.version} cannot run a KRaft cluster")]
        out = []
        if scenario.zookeeper and INTER_BROKER_PROTOCOL in scenario.broker_config:
            out.append(
                (
                    "to",
                    f"cluster.broker_config sets {INTER_BROKER_PROTOCOL}, which the upgrade sets itself "
                    "(the old release's line during the roll, the new one when finalized)",
                )
            )
        return out

    def after(self, scenario: ScenarioFacts) -> ScenarioFacts:
        target, _ = self._target(scenario)
        return scenario if target is None else scenario.with_release(target)

    def nodes(self, brokers: int, zookeeper: bool) -> int:
        """How many node restarts it makes: each broker (and KRaft's controller), and in ZooKeeper
        mode each broker again to finalize."""
        return brokers * (2 if zookeeper and self.finalize else 1) + (0 if zookeeper else 1)


@dataclass
class RollingBrokerUpgrade(Round[RollingBrokerUpgradeSpec]):
    """In its own thread, so other faults keep their times. ``heal_after_s`` is the round's
    nominal length; the scheduled heal waits while the round goes on, and a heal at the end of
    the workload or the run ends it at once, starting again any node it left stopped (on
    whichever release that node was last given)."""

    Spec = RollingBrokerUpgradeSpec
    thread_name = "upgrade"
    # _names: in the order restarted, controllers then brokers
    _brokers: list[str] = field(default_factory=list)
    _zookeeper: bool = False
    steps: list[dict] = field(default_factory=list)  # each node restart, as restart_node told it

    @property
    def heal_after_s(self) -> float:
        restarts = self.spec.nodes(len(self._brokers) or 1, self._zookeeper)
        return restarts * (NODE_RESTART_S + self.spec.interval_s) + (NODE_RESTART_S if self.spec.finalize else 0)

    def inject(self, targets: Targets) -> dict:
        release, metadata = targets.cluster_kafka()
        target = targets.kafka_release(self.spec.to)
        self._zookeeper = metadata == "zookeeper"
        controllers = [] if self._zookeeper else targets.group_names("controllers")
        self._brokers = targets.group_names("brokers")
        self._names = [*controllers, *self._brokers]
        pin = {INTER_BROKER_PROTOCOL: release.line} if self._zookeeper else {}
        self._start(targets, target, pin, release)
        return {
            "from": release.version,
            "to": target.version,
            "metadata": metadata,
            "order": self._names,
            **({"pinned": pin} if pin else {}),
        }

    def _round(self, targets: Targets, target: Any, pin: dict, release: Any) -> None:
        brokers = self._brokers
        for i, name in enumerate(self._names):
            if self._stop.is_set():
                return
            self._at(name)
            self.steps.append(targets.restart_node(name, target.version, pin if name in brokers else {}))
            if i < len(self._names) - 1 or self.spec.finalize:
                self._stop.wait(self.spec.interval_s)
        if not self.spec.finalize or self._stop.is_set():
            return
        began = time.monotonic() * 1000
        if self._zookeeper and target.line != release.line:
            # Kafka's notes: once every broker runs the new release, raise the protocol and roll again.
            for i, name in enumerate(brokers):
                if self._stop.is_set():
                    return
                self._at(name)
                self.steps.append(targets.restart_node(name, None, {INTER_BROKER_PROTOCOL: target.line}))
                if i < len(brokers) - 1:
                    self._stop.wait(self.spec.interval_s)
        if not self._stop.is_set():
            self._at(None)  # the cluster as a whole
            targets.finalize_features(target.version, began)
