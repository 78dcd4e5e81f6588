"""`on:` — a fault fired by the group's state, as the live history shows it, not by the clock.

Consumer-group bugs hide in windows a few milliseconds wide: a member killed inside its
revoke callback, a broker bounced between JoinGroup and SyncGroup. A time-based schedule
hits them by luck. A fault entry with ``on:`` is armed at ``at_s`` (default 0) and fires
when the history shows its condition — exactly one of:

- ``event``: a history event by name (docs/history.md), optionally only ``member``'s,
  e.g. ``{event: partitions_revoked, member: consumer-2}``;
- ``state``: the group entering a coordinator state, as the brokers' log or the project's
  coordinator tells it (PreparingRebalance, CompletingRebalance, Stable, Empty);
- ``lag_above``: the group's total lag, as the observer samples it, above a number of records;

on its ``nth`` match since arming, ``delay_s`` later, and again on later matches up to
``count`` times. The run records in each ``fault_started`` the event that fired it and the
latency from that event to the injection (``trigger`` and ``trigger_latency_ms``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from faults.strict import DAY_S, Strict
from oracle import vocabulary as ev
from runtime.history import BROKER_LOG_CLOCK

# A state and the brokers' GroupCoordinator lines that say the group entered it
# (harness/run/brokerlog.py). The project's coordinator says it with coordinator_state_changed;
# the lines it also writes (coordinator_stabilized at Stable, say) do not count, or one
# transition would match twice, once as the wrong state.
STATE_EVENTS: dict[str, tuple[str, ...]] = {
    "PreparingRebalance": (ev.COORDINATOR_PREPARING_REBALANCE,),
    # Kafka logs "Stabilized group … generation N" as the group enters CompletingRebalance
    # (awaiting the leader's SyncGroup); KIP-848 groups compute a target assignment instead.
    "CompletingRebalance": (ev.COORDINATOR_STABILIZED, ev.COORDINATOR_TARGET_ASSIGNMENT),
    "Stable": (ev.COORDINATOR_ASSIGNMENT_RECEIVED,),
    "Empty": (ev.COORDINATOR_GROUP_EMPTY,),
}
GroupState = Literal[tuple(STATE_EVENTS)]  # type: ignore[valid-type]
# Every event a trigger may name: what the run's processes write while it goes.
TRIGGER_EVENTS = frozenset(
    ev.CONSUMER_EVENTS
    + ev.COORDINATOR_EVENTS
    + ev.OBSERVER_EVENTS
    + ev.PRODUCER_EVENTS
    + (ev.PROCESS_STARTED, ev.PROCESS_EXITED, ev.PHASE, ev.FAULT_STARTED, ev.FAULT_HEALED)
)
MAX_FIRINGS = 100


class Trigger(Strict):
    event: str | None = None
    member: str | None = None  # with `event`: only this member's events
    state: GroupState | None = None
    lag_above: Annotated[int, Field(ge=0)] | None = None
    nth: Annotated[int, Field(ge=1, le=10_000)] = 1
    delay_s: Annotated[float, Field(ge=0, le=DAY_S)] = 0.0
    count: Annotated[int, Field(ge=1, le=MAX_FIRINGS)] = 1

    @model_validator(mode="after")
    def _one_condition(self) -> Trigger:
        given = [k for k in ("event", "state", "lag_above") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"needs exactly one of event, state, lag_above (given: {', '.join(given) or 'none'})")
        if self.event is not None and self.event not in TRIGGER_EVENTS:
            raise ValueError(
                f"event: {self.event!r} is not an event the run writes while it goes "
                f"(e.g. partitions_revoked, rebalance_started, group_join_sent, coordinator_stabilized)"
            )
        if self.member is not None and self.event is None:
            raise ValueError("member: only with event (a state or the lag is the whole group's)")
        return self

    @property
    def names(self) -> tuple[str, ...]:
        """The event names that can match."""
        if self.event:
            return (self.event,)
        if self.state:
            return (*STATE_EVENTS[self.state], ev.COORDINATOR_STATE_CHANGED)
        return (ev.LAG_SAMPLED,)

    @property
    def reads_coordinator_log(self) -> bool:
        """It waits on the brokers' log: the run reads those often while it is armed."""
        return bool(self.state) or self.event in ev.COORDINATOR_EVENTS

    def matches(self, event: dict[str, Any], group: str | None = None) -> bool:
        name = event.get("name")
        if name not in self.names:
            return False
        if name in ev.COORDINATOR_EVENTS and group is not None and event.get("group") not in (None, group):
            return False  # a shared broker logs other runs' groups too
        if self.event:
            return self.member is None or event.get("member") == self.member
        if self.state:
            if name == ev.COORDINATOR_STATE_CHANGED:
                return event.get("to") == self.state
            return event.get(ev.CLOCK) == BROKER_LOG_CLOCK
        lag = sum(p.get("lag") or 0 for p in event.get("partitions") or () if isinstance(p, dict))
        return lag > self.lag_above

    def describe(self) -> str:
        what = (
            f"{self.event}" + (f" of {self.member}" if self.member else "")
            if self.event
            else f"the group entering {self.state}"
            if self.state
            else f"lag above {self.lag_above}"
        )
        return (
            f"{what}"
            + (f" (match {self.nth})" if self.nth > 1 else "")
            + (f" +{self.delay_s:g} s" if self.delay_s else "")
            + (f", up to {self.count} times" if self.count > 1 else "")
        )
