"""Faults a member does to itself when told: a poll stall.

The member keeps its librdkafka heartbeat thread but stops calling poll — slow
processing, the KIP-62 case. Below max.poll.interval.ms the coordinator keeps
it; beyond, librdkafka leaves the group. The member times the stall itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from faults.base import Fault, Targets


@dataclass
class PollStall(Fault):
    kind = "poll-stall"

    @property
    def heal_after_s(self) -> float:
        return float(self.params["duration_s"])

    def inject(self, targets: Targets) -> None:
        targets.command(self.resolved, {"command": "poll-stall", "fault_id": self.fault_id,
                                        "duration_s": float(self.params["duration_s"])})

    def heal(self, targets: Targets) -> None:
        # The stall ends by itself; an early heal (end of run) ends it now.
        targets.command(self.resolved, {"command": "poll-stall-end", "fault_id": self.fault_id})
