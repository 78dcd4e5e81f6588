"""poll-stall: a member told to stop calling poll for ``duration_s``.

The member keeps its librdkafka heartbeat thread but does not poll — slow processing,
the KIP-62 case. Below max.poll.interval.ms the coordinator keeps it; beyond, librdkafka
leaves the group. The member times the stall itself.
"""

from __future__ import annotations

import random
from typing import Annotated, Literal

from pydantic import Field

from faults.base import DAY_S, Drawing, Fault, ScenarioFacts, Targets, TargetedSpec


class PollStallSpec(TargetedSpec):
    """The member keeps heartbeating (librdkafka's thread) but does not poll: slow processing."""

    kind: Literal["poll-stall"]
    duration_s: Annotated[float, Field(gt=0, le=DAY_S)]

    def problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        java = [("kind", "the java driver (VerifiableConsumer) cannot stall its poll loop")] if scenario.driver == "java" else []
        return java + super().problems(scenario)

    def target_problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        return [] if self.target in scenario.members else [("target", f"a poll stall needs a consumer, not {self.target!r}")]

    drawable = True
    draw_targets = "consumer targets"

    @classmethod
    def drawable_for(cls, target: str, drawing: Drawing) -> bool:
        return target in drawing.members

    @classmethod
    def draw(cls, rng: random.Random, target: str, length_s: float, drawing: Drawing) -> dict:
        return {"duration_s": length_s}

    @classmethod
    def draw_shapes(cls, target: str, drawing: Drawing) -> list[dict]:
        return [{"duration_s": 1.0}]


class PollStall(Fault[PollStallSpec]):
    Spec = PollStallSpec

    @property
    def heal_after_s(self) -> float:
        return self.spec.duration_s

    def inject(self, targets: Targets) -> None:
        targets.command(self.resolved, {"command": "poll-stall", "fault_id": self.fault_id,
                                        "duration_s": self.spec.duration_s})

    def heal(self, targets: Targets) -> None:
        # The stall ends by itself; an early heal (end of run) ends it now.
        targets.command(self.resolved, {"command": "poll-stall-end", "fault_id": self.fault_id})
