"""join-storm: ``consumers`` new members start at the same moment."""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Literal

from pydantic import Field

from faults.base import MAX_MEMBERS, NO_EFFECTS, Effects, Fault, FaultSpec, Targets
from faults.capabilities import Capability


class JoinStormSpec(FaultSpec):
    """``consumers`` new members start at once."""

    needs = frozenset({Capability.RUN_PROCESSES})

    kind: Literal["join-storm"]
    # The workload.subscriptions entry the members it starts get (default: the entries in turn).
    subscription: Annotated[str | None, Field(min_length=1, max_length=64)] = None
    consumers: Annotated[int, Field(ge=1, le=MAX_MEMBERS)]

    @property
    def effects(self) -> Effects:
        return NO_EFFECTS  # the group: the members it starts write their own events

    def acts_on_members(self, members: Collection[str]) -> bool:
        return True

    def members_after(self, running: int) -> int:
        return running + self.consumers


class JoinStorm(Fault[JoinStormSpec]):
    Spec = JoinStormSpec

    def inject(self, targets: Targets) -> dict:
        return {"started": targets.start_consumers(self.spec.consumers, self.spec.subscription)}
