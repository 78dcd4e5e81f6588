"""scale: the group scaled to ``consumers`` members — new ones started (new numbers, never a
stopped member's), or the newest stopped cleanly."""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Literal

from pydantic import Field

from faults.base import MAX_MEMBERS, NO_EFFECTS, Effects, Fault, FaultSpec, Targets
from faults.capabilities import Capability


class ScaleSpec(FaultSpec):
    """Scale the group to ``consumers`` members: start new ones, or stop (SIGTERM) the newest."""

    needs = frozenset({Capability.RUN_PROCESSES})

    kind: Literal["scale"]
    # The workload.subscriptions entry the members it starts get (default: the entries in turn).
    subscription: Annotated[str | None, Field(min_length=1, max_length=64)] = None
    consumers: Annotated[int, Field(ge=0, le=MAX_MEMBERS)]

    @property
    def effects(self) -> Effects:
        return NO_EFFECTS  # the group: the members it starts or stops write their own events

    def acts_on_members(self, members: Collection[str]) -> bool:
        return True

    def members_after(self, running: int) -> int:
        return self.consumers


class Scale(Fault[ScaleSpec]):
    Spec = ScaleSpec

    def inject(self, targets: Targets) -> dict:
        return {"changed": targets.scale_consumers(self.spec.consumers, self.spec.subscription)}
