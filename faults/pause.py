"""pause: SIGSTOP, then SIGCONT ``duration_s`` later. Every thread stops, heartbeat threads
included — how Trogdor and Jepsen model a stop-the-world GC pause."""

from __future__ import annotations

from typing import Literal

from faults.base import Effects, Targets, TimedFault, TimedSpec
from faults.capabilities import Capability


class PauseSpec(TimedSpec):
    """SIGSTOP, then SIGCONT after ``duration_s``: a stop-the-world GC pause."""

    acts_on_process = True
    needs = frozenset({Capability.RUN_PROCESSES})  # a broker, ZooKeeper or coordinator: CLUSTER_NODES (TargetedSpec)

    kind: Literal["pause"]

    @property
    def effects(self) -> Effects:
        return Effects(silences="heartbeats", silenced_as="paused", down="paused")


class Pause(TimedFault[PauseSpec]):
    Spec = PauseSpec

    def inject(self, targets: Targets) -> dict | None:
        return targets.pause(self.resolved)

    def heal(self, targets: Targets) -> None:
        targets.resume(self.resolved)
