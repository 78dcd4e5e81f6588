"""crash: SIGKILL (no LeaveGroup, no controlled shutdown) or SIGTERM (a clean close),
then, if ``restart_after_s`` is given, the same process started again that much later."""

from __future__ import annotations

import math
import random
import signal
from typing import Annotated, Literal

from pydantic import Field

from faults.base import DAY_S, STOP_SIGNALS, Drawing, Effects, Fault, StopSignal, TargetedSpec, Targets
from faults.capabilities import Capability


class CrashSpec(TargetedSpec):
    """SIGKILL (no LeaveGroup, no controlled shutdown) or SIGTERM (clean close)."""

    acts_on_process = True
    needs = frozenset({Capability.RUN_PROCESSES})  # a broker, ZooKeeper or coordinator: CLUSTER_NODES (TargetedSpec)

    kind: Literal["crash"]
    signal: StopSignal = "SIGKILL"
    restart_after_s: Annotated[float | None, Field(gt=0, le=DAY_S)] = None

    drawable = True
    length_key = "restart_after_s"

    @property
    def effects(self) -> Effects:
        # SIGTERM too: the member closes cleanly, but its process is gone by the fault's doing
        return Effects(
            silences="heartbeats", silenced_as="crashed", down="killed", restart_after_s=self.restart_after_s
        )

    @property
    def holds_target_s(self) -> float:
        return self.restart_after_s or math.inf  # without a restart: down for good

    @classmethod
    def draw(cls, rng: random.Random, target: str, length_s: float, drawing: Drawing) -> dict:
        return {"signal": rng.choice(STOP_SIGNALS), cls.length_key: length_s}

    @classmethod
    def draw_shapes(cls, target: str, drawing: Drawing) -> list[dict]:
        return [{}]


class Crash(Fault[CrashSpec]):
    Spec = CrashSpec

    @property
    def heal_after_s(self) -> float:
        return self.spec.restart_after_s or 0.0

    def inject(self, targets: Targets) -> None:
        targets.kill(self.resolved, getattr(signal, self.spec.signal))

    def heal(self, targets: Targets) -> None:
        if self.spec.restart_after_s:
            targets.restart(self.resolved)
