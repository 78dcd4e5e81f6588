"""add-partitions: a declared topic grown to ``partitions`` in total while the group consumes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from faults.base import NO_EFFECTS, Effects, Fault, FaultSpec, ScenarioFacts, Targets
from faults.capabilities import Capability


class AddPartitionsSpec(FaultSpec):
    needs = frozenset({Capability.TOPIC_CHANGES})
    names_topics = True

    kind: Literal["add-partitions"]
    topic: str
    partitions: Annotated[int, Field(ge=2, le=1000, description="the new total")]

    @property
    def effects(self) -> Effects:
        return NO_EFFECTS  # a topic: the harness writes partitions_added

    def problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        current = scenario.topics.get(self.topic)
        if current is None:
            return [("topic", f"topic {self.topic!r} is not declared under topics")]
        if self.partitions <= current:
            return [("partitions", f"{self.partitions} is not more than the {current} partitions {self.topic} has")]
        return []

    def after(self, scenario: ScenarioFacts) -> ScenarioFacts:
        return scenario.with_topic(self.topic, self.partitions)  # a later entry grows it from here


class AddPartitions(Fault[AddPartitionsSpec]):
    Spec = AddPartitionsSpec

    def inject(self, targets: Targets) -> None:
        targets.add_partitions(self.spec.topic, self.spec.partitions)
