"""rolling-client-upgrade: the group's members restarted one at a time on a newer client release
(``confluent-kafka==2.16.1``: librdkafka in that release's own environment) — a rolling deploy of
an application that bumps its Kafka client. Each restarted incarnation says the library it really
loaded (``consumer_started.client_version``)."""

from __future__ import annotations

import signal
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal

from pydantic import Field

from faults.base import DAY_S, NO_EFFECTS, Effects, FaultSpec, MemberChanges, ScenarioFacts, StopSignal, Targets
from faults.capabilities import Capability
from faults.rolling_broker_upgrade import release_key
from faults.rounds import Round


class RollingClientUpgradeSpec(FaultSpec):
    """Each running member stopped (``signal``), started again on client ``to`` at once, then
    ``interval_s`` before the next one."""

    kind: Literal["rolling-client-upgrade"]
    to: Annotated[str, Field(min_length=1, max_length=100)]  # as workload.client writes one: "confluent-kafka==2.16.1"
    signal: StopSignal = "SIGTERM"
    interval_s: Annotated[float, Field(ge=0, le=DAY_S)] = 10

    needs = frozenset({Capability.RUN_PROCESSES})
    whole_process = "a process loads one client release"

    @property
    def effects(self) -> Effects:
        return NO_EFFECTS  # no one target: each member it restarts writes its own exit and start

    def client_requirements(self) -> list[str]:
        return [self.to]

    def problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        if scenario.client_release is None:
            return [("to", "the members' client is not known here")]
        try:
            target = scenario.client_release(self.to)
        except ValueError as e:
            return [("to", str(e))]
        now = scenario.client
        if now is None:
            return [("to", f"the {scenario.driver} driver's members run on no client release of their own")]
        if release_key(target) <= release_key(now):
            said = "the client the members run" if target.version == now.version else "a downgrade"
            return [("to", f"{target} is {said} ({now}); an upgrade goes to a newer release")]
        return []

    def after(self, scenario: ScenarioFacts) -> ScenarioFacts:
        try:
            return _with_client(scenario, scenario.client_release(self.to)) if scenario.client_release else scenario
        except ValueError:
            return scenario

    def acts_on_members(self, members: Collection[str]) -> bool:
        return True


def _with_client(scenario: ScenarioFacts, client: Any) -> ScenarioFacts:
    return replace(scenario, client=client)


@dataclass
class RollingClientUpgrade(Round[RollingClientUpgradeSpec]):
    """In its own thread, as a rolling restart; a member's new client stays with its slot (a later
    restart starts it on that client too). A heal ends the round at once and starts any member
    it left stopped — on the new client: it was stopped to be upgraded."""

    Spec = RollingClientUpgradeSpec
    thread_name = "clients"

    @property
    def heal_after_s(self) -> float:
        return (len(self._names) or 1) * (self.spec.interval_s + 5)  # a member's stop and start: a few seconds

    @property
    def changes(self) -> MemberChanges:
        return MemberChanges(client=self.spec.to)

    def inject(self, targets: Targets) -> dict:
        self._names = targets.group_names("consumers")
        self._start(targets)
        return {"order": self._names, "to": self.spec.to}

    def _round(self, targets: Targets) -> None:
        sig = getattr(signal, self.spec.signal)
        for i, name in enumerate(self._names):
            if self._stop.is_set():
                return
            self._at(name)
            targets.kill(name, sig)
            targets.restart(name, self.changes)
            if i < len(self._names) - 1:
                self._stop.wait(self.spec.interval_s)

    def _start_again(self, targets: Targets, name: str) -> None:
        targets.restart(name, self.changes)  # it was stopped to be upgraded
