"""pause: SIGSTOP, then SIGCONT ``duration_s`` later. Every thread stops, heartbeat threads
included — how Trogdor and Jepsen model a stop-the-world GC pause."""

from __future__ import annotations

import random
from typing import Annotated, Literal

from pydantic import Field

from faults.base import DAY_S, Drawing, Fault, Targets, TargetedSpec


class PauseSpec(TargetedSpec):
    """SIGSTOP, then SIGCONT after ``duration_s``: a stop-the-world GC pause."""

    kind: Literal["pause"]
    duration_s: Annotated[float, Field(gt=0, le=DAY_S)]

    drawable = True

    @classmethod
    def draw(cls, rng: random.Random, target: str, length_s: float, drawing: Drawing) -> dict:
        return {"duration_s": length_s}

    @classmethod
    def draw_shapes(cls, target: str, drawing: Drawing) -> list[dict]:
        return [{"duration_s": 1.0}]


class Pause(Fault[PauseSpec]):
    Spec = PauseSpec

    @property
    def heal_after_s(self) -> float:
        return self.spec.duration_s

    def inject(self, targets: Targets) -> None:
        targets.pause(self.resolved)

    def heal(self, targets: Targets) -> None:
        targets.resume(self.resolved)
