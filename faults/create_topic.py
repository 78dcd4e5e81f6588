"""create-topic: a new topic while the group runs — picked up by a pattern subscription
(``workload.topic_pattern``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from faults.base import OWN_TOPICS_ONLY, Fault, FaultSpec, ScenarioFacts, Targets


class CreateTopicSpec(FaultSpec):
    """A new topic — picked up by a pattern subscription (``workload.topic_pattern``)."""

    external_refusal = OWN_TOPICS_ONLY
    names_topics = True

    kind: Literal["create-topic"]
    topic: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,200}$")]
    partitions: Annotated[int, Field(ge=1, le=1000)]

    def problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        return [("topic", f"topic {self.topic!r} already exists")] if self.topic in scenario.topics else []

    def after(self, scenario: ScenarioFacts) -> ScenarioFacts:
        return scenario.with_topic(self.topic, self.partitions)


class CreateTopic(Fault[CreateTopicSpec]):
    Spec = CreateTopicSpec

    def inject(self, targets: Targets) -> None:
        targets.create_topic(self.spec.topic, self.spec.partitions)
