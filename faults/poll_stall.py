"""poll-stall: a member told to stop calling poll for ``duration_s``.

The member keeps its librdkafka heartbeat thread but does not poll — slow processing,
the KIP-62 case. Below max.poll.interval.ms the coordinator keeps it; beyond, librdkafka
leaves the group. The member times the stall itself.
"""

from __future__ import annotations

from typing import Literal

from faults.base import Drawing, Effects, ScenarioFacts, Targets, TimedFault, TimedSpec
from faults.capabilities import Capability
from runtime.child import POLL_STALL, POLL_STALL_END


class PollStallSpec(TimedSpec):
    """The member keeps heartbeating (librdkafka's thread) but does not poll: slow processing."""

    acts_on_process = True
    needs = frozenset({Capability.RUN_PROCESSES})

    kind: Literal["poll-stall"]

    @property
    def effects(self) -> Effects:
        return Effects(silences="polls", silenced_as="stuck in processing (poll stall)")

    def problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        cannot = (
            []
            if scenario.driver_stalls_polls
            else [("kind", f"the {scenario.driver} driver cannot stall its poll loop")]
        )
        return cannot + super().problems(scenario)

    def target_problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        return (
            []
            if self.target in scenario.members
            else [("target", f"a poll stall needs a consumer, not {self.target!r}")]
        )

    draw_targets = "consumer targets"

    @classmethod
    def drawable_for(cls, target: str, drawing: Drawing) -> bool:
        return target in drawing.members


class PollStall(TimedFault[PollStallSpec]):
    Spec = PollStallSpec

    def inject(self, targets: Targets) -> None:
        targets.command(
            self.resolved, {"command": POLL_STALL, "fault_id": self.fault_id, "duration_s": self.spec.duration_s}
        )

    def heal(self, targets: Targets) -> None:
        # The stall ends by itself; an early heal (end of run) ends it now.
        targets.command(self.resolved, {"command": POLL_STALL_END, "fault_id": self.fault_id})
