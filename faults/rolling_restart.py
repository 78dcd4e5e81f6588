"""rolling-restart: stop and start each target in turn — a rolling bounce of brokers, or a
rolling deploy of consumers (with static membership when the protocol is classic-static),
which may bring the members new timeouts (``session_timeout_ms``, ``max_poll_interval_ms``)."""

from __future__ import annotations

import signal
from collections.abc import Collection
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from faults.base import (
    COORDINATOR,
    DAY_S,
    NO_EFFECTS,
    Effects,
    FaultSpec,
    MemberChanges,
    ScenarioFacts,
    StopSignal,
    Targets,
)
from faults.capabilities import Capability
from faults.rounds import Round
from oracle.protocols import GENERATIONS


class RollingRestartSpec(FaultSpec):
    """Stop and start each target in turn: a rolling bounce of brokers, or a rolling deploy of
    consumers (with static membership when the protocol is classic-static)."""

    kind: Literal["rolling-restart"]
    targets: Literal["brokers", "consumers"] | Annotated[list[str], Field(min_length=1, max_length=100)]
    signal: StopSignal = "SIGTERM"
    down_s: Annotated[float, Field(ge=0, le=DAY_S)] = 2
    interval_s: Annotated[float, Field(ge=0, le=DAY_S)] = 10
    # A deploy that changes the members' timeouts: each comes back with these (None: as before).
    # A static member's JoinGroup carries them; the classic coordinator must take them (KAFKA-14009).
    session_timeout_ms: Annotated[int | None, Field(ge=1000, le=300_000)] = None
    max_poll_interval_ms: Annotated[int | None, Field(ge=1000, le=DAY_S * 1000)] = None

    def needs_by_key(self) -> dict[str, frozenset[Capability]]:
        # Named targets: problems() holds each to the scenario's targets, which list the cluster's
        # nodes only where the backend runs them.
        bounced = Capability.CLUSTER_NODES if self.targets == "brokers" else Capability.RUN_PROCESSES
        return {**super().needs_by_key(), "targets": frozenset({bounced})}

    @property
    def effects(self) -> Effects:
        return NO_EFFECTS  # no one target: each process it restarts writes its own exit and start

    def problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        found = self._timeout_problems(scenario)
        if isinstance(self.targets, str):
            return found
        unknown = [t for t in self.targets if t not in scenario.targets or t == COORDINATOR]
        return (
            [("targets", f"no process {', '.join(map(repr, unknown))} in this scenario")] + found if unknown else found
        )

    @property
    def changes(self) -> MemberChanges | None:
        """What the members come back with; None: a plain restart."""
        if self.session_timeout_ms is None and self.max_poll_interval_ms is None:
            return None
        return MemberChanges(session_timeout_ms=self.session_timeout_ms, max_poll_interval_ms=self.max_poll_interval_ms)

    def _timeout_problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        if self.changes is None:
            return []
        key = "session_timeout_ms" if self.session_timeout_ms is not None else "max_poll_interval_ms"
        if self.targets == "brokers" or (
            not isinstance(self.targets, str) and any(t not in scenario.members for t in self.targets)
        ):
            return [(key, "new timeouts are the members' client settings: a rolling restart of members only")]
        generation = GENERATIONS.get(scenario.protocol or "")
        if self.session_timeout_ms is not None and generation is not None and generation.broker_timing:
            return [(key, f"{scenario.protocol} members' session timeout is the brokers' (KIP-848), not theirs")]
        hb = scenario.heartbeat_interval_ms
        if self.session_timeout_ms is not None and hb is not None and self.session_timeout_ms <= hb:
            return [(key, f"must be above workload.heartbeat_interval_ms ({hb})")]
        return []

    def acts_on_members(self, members: Collection[str]) -> bool:
        return self.targets == "consumers" or (
            not isinstance(self.targets, str) and bool(set(self.targets) & set(members))
        )


@dataclass
class RollingRestart(Round[RollingRestartSpec]):
    """Stop each target (SIGTERM by default), start it again ``down_s`` later, wait
    ``interval_s``, next. Runs in its own thread so other faults keep their times.
    ``heal_after_s`` is the round's nominal length — a broker's controlled shutdown
    takes seconds of its own — so the scheduled heal waits for the round to end; a
    heal at the end of the workload or run finishes it at once, leaving every target
    running. A round that broke partway fails its heal (faults/rounds.py)."""

    Spec = RollingRestartSpec
    thread_name = "rolling"
    # A hosted member's stop may wait for its close until its join phase ends, within the
    # rebalance timeout (harness/run/member_hosts.py: 30 s, then up to max.poll.interval + 75 s).
    heal_join_s = 450.0

    @property
    def heal_after_s(self) -> float:
        n = len(self._names) or 1
        return n * self.spec.down_s + n * self.spec.interval_s

    def inject(self, targets: Targets) -> dict:
        which = self.spec.targets
        self._names = targets.group_names(which) if isinstance(which, str) else list(which)
        self._start(targets)
        return {"order": self._names}

    def _round(self, targets: Targets) -> None:
        sig = getattr(signal, self.spec.signal)
        for i, name in enumerate(self._names):
            if self._stop.is_set():
                return
            self._at(name)
            targets.kill(name, sig)
            self._stop.wait(self.spec.down_s)
            targets.restart(name, self.spec.changes)
            if i < len(self._names) - 1:
                self._stop.wait(self.spec.interval_s)

    def _start_again(self, targets: Targets, name: str) -> None:
        targets.restart(name, self.spec.changes)
