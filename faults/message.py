"""message: one Kafka protocol message of one member (or of every member) acted on by the message proxy.

The message proxy (faults/message_proxy/) sits in front of each member's Toxiproxy lane and
reads the Kafka protocol: it knows every request a connection has outstanding by its
correlation id and API key. A ``message`` fault gives it a rule for ``duration_s``: for the
responses to ``api`` requests of its target, an ``action`` whose meaning on the TCP
connection is exact:

- ``delay``: the response, and every later response on the connection (responses keep
  their order), is held back ``delay_ms``;
- ``withhold``: the response never comes; the connection stalls until the client's own
  request timeout (its driver's), then the proxy closes it — a lost response, as a client
  sees one;
- ``cut-after-request``: the broker gets and processes the request; the client sees its
  connection close before the answer;
- ``error``: the broker's real answer, its error codes replaced by ``error`` (one the API
  allows), re-encoded for the version in use.

Requests always reach the broker. ``count`` limits the rule to the first N matching
messages, ``probability`` acts on each with that chance (seeded: the same run acts on the
same messages), ``match`` only on requests whose fields have those values (e.g.
``member_epoch: 0``: a ConsumerGroupHeartbeat that joins). The proxy writes a
``message_faulted`` event for each message it acts on.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from faults.base import NO_EFFECTS, Drawing, Effects, ScenarioFacts, Targets, TimedFault, TimedSpec
from faults.capabilities import Capability
from faults.message_proxy import apis
from oracle import vocabulary as ev
from oracle.protocols import GENERATIONS

ACTIONS = ev.MESSAGE_ACTIONS
EVERY_MEMBER = "consumers"  # a target: the rule acts on every member's lanes

# What a drawn message fault may be: never Fetch (a consume stalled or failed is what the other
# kinds already do to a member) and never LeaveGroup (the members leave at the end of the run only).
DRAWN_APIS_EXCLUDED = frozenset({"Fetch", "LeaveGroup"})
DRAWN_ACTIONS = ACTIONS
DRAWN_DELAY_MS = (100, 3000)


class MessageSpec(TimedSpec):
    """One Kafka protocol message of ``target`` (a member, or ``consumers``: every member) acted on
    for ``duration_s`` by the message proxy (docs/faults.md: message faults)."""

    needs = frozenset({Capability.MESSAGE_LANES})

    kind: Literal["message"]
    api: Literal[tuple(apis.APIS)]  # type: ignore[valid-type]
    action: Literal[ACTIONS]  # type: ignore[valid-type]
    delay_ms: Annotated[int, Field(ge=1, le=600_000)] = 1000
    error: str | None = None  # action error: the error code the answer carries instead (its name)
    count: Annotated[int, Field(ge=1)] | None = None  # the first N matching messages only
    probability: Annotated[float, Field(gt=0, le=1)] = 1.0
    seed: int | None = None  # of the probability draw; None: one from the fault's id
    match: dict[str, int | str | bool | None] = Field(default_factory=dict)  # request fields and their values

    @model_validator(mode="after")
    def _error_with_error_only(self) -> MessageSpec:
        if (self.action == "error") != (self.error is not None):
            raise ValueError("error: the error code an `error` action puts in, and only there")
        return self

    @property
    def effects(self) -> Effects:
        # Every request reaches the broker, and a member's heartbeats go on by its own timers whatever
        # became of an answer (the Java consumer sends on its interval regardless). So a message fault
        # silences nothing: a member evicted meanwhile fell silent by its own client's timers, and its
        # explanation names the running fault (oracle/explain.py), as for a cut inbound only.
        return NO_EFFECTS

    def acts_on_members(self, members) -> bool:
        return self.target == EVERY_MEMBER or self.target in members

    def problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        if self.target == EVERY_MEMBER:
            return self.target_problems(scenario)
        return super().problems(scenario)

    def target_problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        if self.target != EVERY_MEMBER and self.target not in scenario.members:
            return [("target", f"message faults act on a member's messages (or {EVERY_MEMBER!r}), not {self.target!r}")]
        problems = []
        generation = GENERATIONS.get(scenario.protocol or "")
        if generation is not None and self.api not in generation.kafka_apis:
            spoken = ", ".join(generation.kafka_apis) or "none"
            problems.append(
                ("api", f"{generation.about} ({generation.name}) sends no {self.api} (its members send: {spoken})")
            )
        api = apis.APIS[self.api]
        if self.error is not None and self.error not in api.errors:
            problems.append(
                ("error", f"{self.api} is never answered {self.error} (it may be: {', '.join(api.errors)})")
            )
        unknown = sorted(set(self.match) - set(api.request_fields))
        if unknown:
            problems.append(
                (
                    "match",
                    f"{self.api} requests have no field {', '.join(unknown)} (fields: {', '.join(api.request_fields)})",
                )
            )
        return problems

    def rule(self, fault_id: str, close_after_ms: int) -> dict:
        """The message proxy's rule for this entry (faults/message_proxy/)."""
        return {
            "fault_id": fault_id,
            "member": "*" if self.target == EVERY_MEMBER else self.target,
            "api": self.api,
            "action": self.action,
            "delay_ms": self.delay_ms,
            "error": self.error,
            "close_after_ms": close_after_ms,
            "count": self.count,
            "probability": self.probability,
            "seed": self.seed if self.seed is not None else zlib.crc32(fault_id.encode()),
            "match": dict(self.match),
        }

    # --- the random draw: a member's own messages, of an API its generation sends -------------

    draw_targets = "members whose protocol sends Kafka group requests,"

    @classmethod
    def drawable_for(cls, target: str, drawing: Drawing) -> bool:
        return target in drawing.members and bool(drawn_apis(drawing))

    @classmethod
    def draw(cls, rng: random.Random, target: str, length_s: float, drawing: Drawing) -> dict:
        api = rng.choice(drawn_apis(drawing))
        action = rng.choice(DRAWN_ACTIONS)
        options: dict[str, Any] = {
            cls.length_key: length_s,
            "api": api,
            "action": action,
            "count": rng.randint(1, 3),
            "seed": rng.randrange(2**31),
        }
        if action == "delay":
            options["delay_ms"] = rng.randint(*DRAWN_DELAY_MS)
        if action == "error":
            options["error"] = rng.choice(drawn_errors(api, drawing))
        return options

    @classmethod
    def draw_shapes(cls, target: str, drawing: Drawing) -> list[dict]:
        return [
            {
                "duration_s": 1.0,
                "api": api,
                "action": action,
                **({"error": drawn_errors(api, drawing)[0]} if action == "error" else {}),
            }
            for api in drawn_apis(drawing)
            for action in DRAWN_ACTIONS
        ]


def drawn_apis(drawing: Drawing) -> list[str]:
    return [api for api in drawing.kafka_apis if api not in DRAWN_APIS_EXCLUDED]


def drawn_errors(api: str, drawing: Drawing) -> tuple[str, ...]:
    """The errors a draw may put in ``api``'s answers: those a broker could answer the members with."""
    return apis.APIS[api].drawn_errors(static_membership=drawing.static_membership, member_epochs=drawing.member_epochs)


@dataclass
class Message(TimedFault[MessageSpec]):
    Spec: ClassVar = MessageSpec

    def inject(self, targets: Targets) -> dict:
        members = targets.group_names("consumers") if self.spec.target == EVERY_MEMBER else [self.resolved]
        close_after_ms = max((targets.request_timeout_ms(m, self.spec.api) for m in members), default=0)
        rule = self.spec.rule(self.fault_id, close_after_ms)
        targets.message_proxy().add_rule(rule)
        return {"rule": rule}

    def heal(self, targets: Targets) -> None:
        targets.message_proxy().remove_rule(self.fault_id)
