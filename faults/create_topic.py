"""create-topic: a new topic while the group runs — picked up by a pattern subscription
(``workload.topic_pattern``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from faults.base import NO_EFFECTS, Effects, Fault, FaultSpec, ScenarioFacts, Targets
from faults.capabilities import Capability
from faults.topic_names import TopicName, topic_set_problems


class CreateTopicSpec(FaultSpec):
    """A new topic — picked up by a pattern subscription (``workload.topic_pattern``)."""

    needs = frozenset({Capability.TOPIC_CHANGES})
    names_topics = True

    kind: Literal["create-topic"]
    topic: TopicName
    partitions: Annotated[int, Field(ge=1, le=1000)]

    @property
    def effects(self) -> Effects:
        return NO_EFFECTS  # a topic: the harness writes topic_created

    def problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        if self.topic in scenario.topics:
            return [("topic", f"topic {self.topic!r} already exists")]
        names = [*scenario.topics, self.topic]
        return [("topic", reason) for i, reason in topic_set_problems(names) if i == len(names) - 1]

    def after(self, scenario: ScenarioFacts) -> ScenarioFacts:
        return scenario.with_topic(self.topic, self.partitions)


class CreateTopic(Fault[CreateTopicSpec]):
    Spec = CreateTopicSpec

    def inject(self, targets: Targets) -> None:
        targets.create_topic(self.spec.topic, self.spec.partitions)
