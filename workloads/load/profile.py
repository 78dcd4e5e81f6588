"""A load profile: how many members the group has, second by second, as stages.

    load:
      stages:
        - {kind: ramp, to: 32, over_s: 60}                         # one by one, evenly, up to 32
        - {kind: sawtooth, low: 24, high: 32, period_s: 20, for_s: 60}  # churn: up one by one, then 8 leave at once
        - {kind: hold, for_s: 10}
        - {kind: step, to: 8, by: 4, every_s: 5}                   # 4 leave every 5 s, down to 8
        - {kind: spike, to: 48, for_s: 10}                         # 48 at once, for 10 s, then back

Each stage starts from the count the one before left (the first from ``workload.consumers``,
the members that formed the group in the warm-up); after the last, the count holds. The
profile is pure arithmetic — Locust's shape (workloads/load/locustfile.py) asks it each tick,
the scenario's validation asks it for the peak and the length.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

Count = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(gt=0, le=86_400)]


def _toward(start: int, to: int, moved: int) -> int:
    """``moved`` members from ``start`` towards ``to`` (up or down), never past it."""
    return start + min(abs(to - start), moved) * (1 if to >= start else -1)


class _Stage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    def length_s(self, start: int) -> float:
        raise NotImplementedError

    def members(self, start: int, t: float) -> int:
        """Members ``t`` seconds into the stage (0 <= t < length), ``start`` when it began."""
        raise NotImplementedError

    def end(self, start: int) -> int:
        """Members once the stage is over."""
        raise NotImplementedError

    def peak(self, start: int) -> int:
        return max(start, self.end(start))

    def trough(self, start: int) -> int:
        """The fewest members during the stage (each kind moves evenly between its bounds)."""
        return min(start, self.end(start))


class Hold(_Stage):
    kind: Literal["hold"]
    for_s: Seconds

    def length_s(self, start: int) -> float:
        return self.for_s

    def members(self, start: int, t: float) -> int:
        return start

    def end(self, start: int) -> int:
        return start


class Ramp(_Stage):
    """From the count before to ``to`` over ``over_s``, one member at a time, evenly spaced."""

    kind: Literal["ramp"]
    to: Count
    over_s: Seconds

    def length_s(self, start: int) -> float:
        return self.over_s

    def members(self, start: int, t: float) -> int:
        # |to - start| + 1 even steps, the last one at `to`
        return _toward(start, self.to, math.trunc((abs(self.to - start) + 1) * t / self.over_s))

    def end(self, start: int) -> int:
        return self.to


class Step(_Stage):
    """``by`` members at once every ``every_s``, towards ``to``."""

    kind: Literal["step"]
    to: Count
    by: Annotated[int, Field(ge=1)]
    every_s: Seconds

    def length_s(self, start: int) -> float:
        return math.ceil(abs(self.to - start) / self.by) * self.every_s

    def members(self, start: int, t: float) -> int:
        return _toward(start, self.to, (math.floor(t / self.every_s) + 1) * self.by)

    def end(self, start: int) -> int:
        return self.to


class Spike(_Stage):
    """``to`` members at once for ``for_s``, then back to the count before."""

    kind: Literal["spike"]
    to: Count
    for_s: Seconds

    def length_s(self, start: int) -> float:
        return self.for_s

    def members(self, start: int, t: float) -> int:
        return self.to

    def end(self, start: int) -> int:
        return start

    def peak(self, start: int) -> int:
        return max(start, self.to)

    def trough(self, start: int) -> int:
        return min(start, self.to)


class Sawtooth(_Stage):
    """Churn: each period rises one member at a time from ``low`` to ``high``, then the
    ``high - low`` newest leave at once. The stage ends at ``low``."""

    kind: Literal["sawtooth"]
    low: Count
    high: Count
    period_s: Seconds
    for_s: Seconds

    @model_validator(mode="after")
    def _rises(self):
        if self.high < self.low:
            raise ValueError(f"high: {self.high} is below low ({self.low})")
        return self

    def length_s(self, start: int) -> float:
        return self.for_s

    def members(self, start: int, t: float) -> int:
        phase = (t % self.period_s) / self.period_s
        return self.low + min(self.high - self.low, math.trunc((self.high - self.low + 1) * phase))

    def end(self, start: int) -> int:
        return self.low

    def peak(self, start: int) -> int:
        return max(start, self.high)

    def trough(self, start: int) -> int:
        return min(start, self.low)


STAGES = (Hold, Ramp, Step, Spike, Sawtooth)
STAGE_KINDS = tuple(get_args(s.model_fields["kind"].annotation)[0] for s in STAGES)
Stage = Annotated[Union[STAGES], Field(discriminator="kind")]  # noqa: UP007  (a union of the tuple above)


class LoadProfile(BaseModel):
    """The scenario's ``load`` section: the stages, and how Locust runs them."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    stages: Annotated[list[Stage], Field(min_length=1, max_length=1000)]
    # Locust's web UI on 127.0.0.1:web_port while the run goes (the profile starts by itself);
    # without it Locust runs headless.
    web_port: Annotated[int | None, Field(ge=1024, le=65535)] = None
    # Locust's distributed mode: a master and this many workers, all on 127.0.0.1 (0: one process).
    workers: Annotated[int, Field(ge=0, le=16)] = 0
    # Where the members run: `harness`, processes the harness starts on its own machine; `on-workers`,
    # in a member host beside each Locust worker, linked to the harness over TCP: the workers share
    # no file with the run (workloads/load/member_hosts.py, runtime/host_link.py).
    member_hosts: Literal["harness", "on-workers"] = "harness"
    # A rebalance goes to Locust once it has been over this long by the history's clock (a
    # member's last events of it may reach the history a little after it ended).
    settle_s: Annotated[float, Field(ge=0, le=600)] = 3.0

    def timeline(self, start: int) -> list[tuple[float, int, _Stage]]:
        """(when the stage begins, members then, the stage) for each stage."""
        out, at, members = [], 0.0, start
        for stage in self.stages:
            out.append((at, members, stage))
            at += stage.length_s(members)
            members = stage.end(members)
        return out

    def length_s(self, start: int) -> float:
        at, members, stage = self.timeline(start)[-1]
        return at + stage.length_s(members)

    def members_at(self, start: int, t: float) -> int:
        """Members ``t`` seconds into the profile; after its end, the last stage's end count."""
        for at, members, stage in reversed(self.timeline(start)):
            if t >= at:
                return stage.members(members, t - at) if t - at < stage.length_s(members) else stage.end(members)
        return start

    def peak(self, start: int) -> int:
        return max([start, *(stage.peak(members) for _, members, stage in self.timeline(start))])

    def trough(self, start: int) -> int:
        """The fewest members the profile ever has: members numbered up to it are never stopped by it."""
        return min([start, *(stage.trough(members) for _, members, stage in self.timeline(start))])
