"""A message fault's rule, as the proxy holds it: which requests it takes, and what becomes of their answers.

A rule is decided on each request as it passes (the member's, the API's, ``match``'s
fields; then ``count`` and the seeded ``probability``), and acted on the answer to it. A
request taken before its fault healed has its answer acted on even if the answer comes
after: the decision was made while the fault was on.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any

from faults.message_proxy import frames
from faults.message_proxy.apis import APIS, Api
from oracle.vocabulary import MESSAGE_ACTIONS

EVERY_MEMBER = "*"


class RuleError(ValueError):
    """A rule the proxy cannot take, with the reason."""


@dataclass
class Rule:
    fault_id: str
    member: str  # a member's name, or EVERY_MEMBER
    api: Api
    action: str
    delay_ms: int = 0
    error: str | None = None
    close_after_ms: int = 0
    count: int | None = None
    probability: float = 1.0
    seed: int = 0
    match: dict[str, Any] = field(default_factory=dict)
    taken: int = 0  # requests it took so far
    rng: random.Random = field(init=False, repr=False)

    def __post_init__(self):
        self.rng = random.Random(self.seed)

    @classmethod
    def of(cls, d: dict) -> Rule:
        """A rule from the control API's JSON; RuleError with the reason if it is not one."""
        try:
            api = APIS[d["api"]]
        except KeyError:
            raise RuleError(f"api: {d.get('api')!r} is none of {', '.join(APIS)}") from None
        if d.get("action") not in MESSAGE_ACTIONS:
            raise RuleError(f"action: {d.get('action')!r} is none of {', '.join(MESSAGE_ACTIONS)}")
        if d["action"] == "error":
            if d.get("error") not in api.errors:
                raise RuleError(
                    f"error: {api.name} is never answered {d.get('error')!r} (it may be: {', '.join(api.errors)})"
                )
            frames.error_code(d["error"])
        if not d.get("fault_id") or not d.get("member"):
            raise RuleError("a rule names its fault (fault_id) and its member (or '*')")
        return cls(
            fault_id=str(d["fault_id"]),
            member=str(d["member"]),
            api=api,
            action=d["action"],
            delay_ms=int(d.get("delay_ms") or 0),
            error=d.get("error"),
            close_after_ms=int(d.get("close_after_ms") or 0),
            count=d.get("count"),
            probability=float(d.get("probability", 1.0)),
            seed=int(d.get("seed") or 0),
            match=dict(d.get("match") or {}),
        )

    @property
    def spent(self) -> bool:
        return self.count is not None and self.taken >= self.count

    def takes(self, member: str, api_key: int, frame: bytes) -> bool:
        """Whether it acts on the answer to this request (a request frame, without its size)."""
        if self.spent or api_key != self.api.key or self.member not in (EVERY_MEMBER, member):
            return False
        if self.match and not self._matches(frame):
            return False
        if self.probability < 1.0 and self.rng.random() >= self.probability:
            return False
        self.taken += 1
        return True

    def _matches(self, frame: bytes) -> bool:
        try:
            body = frames.decode_request(frame)
        except Exception:  # a version kio cannot read: the proxy caps versions so that none comes
            return False
        names = {f.name for f in dataclasses.fields(body)}
        return all(name in names and getattr(body, name) == value for name, value in self.match.items())
