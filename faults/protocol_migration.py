"""protocol-migration: the group's members restarted one at a time on another Kafka group
protocol — the brokers' online migration between the classic protocol and KIP-848's
``consumer`` protocol.

What Kafka does (its group coordinator, ``GroupMetadataManager``, 4.0 on; the broker setting
``group.consumer.migration.policy``, ``bidirectional`` by default from 4.0; which releases
migrate is the release catalogue's ``KafkaRelease.migrates_groups_online``):

- **upgrade**: the first ConsumerGroupHeartbeat to a non-empty classic group whose members use
  the consumer embedded protocol converts it to a consumer group. Each classic member becomes
  a member at the group's generation as its epoch and keeps what it owned; the newcomer bumps
  the group epoch. From then on every member, classic ones included, has an epoch of its own:
  a classic member's JoinGroup is answered with its member epoch as the generation, its
  assignment is the brokers' (``group.consumer.assignors``, not its own
  ``partition.assignment.strategy``), and its heartbeat says REBALANCE_IN_PROGRESS when it must
  rejoin to catch up. An eager member still revokes everything before each JoinGroup, a
  cooperative one only what moves: that is its client's doing.
- **downgrade**: when the last member using the consumer protocol leaves (or is fenced, or a
  static classic member replaces it), the consumer group is converted back to a classic group
  at its epoch, and a classic rebalance follows.

The fault moves the workload's members (or those listed) one at a time: a clean stop (SIGTERM:
the member leaves the group), its exit awaited, then its slot's next incarnation started on the
generation ``to`` names (``Targets.restart`` with ``MemberChanges``). A migration there and back
is two entries, the second after the first's round (``after`` tells the entries after it what
the members run and until when the first is busy)."""

from __future__ import annotations

import signal
import time
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Annotated, ClassVar, Literal

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
from oracle.protocols import GENERATIONS, PROTOCOLS

EXIT_WAIT_S = 60.0  # a member that has not exited by then is killed (it is stuck in its close)


class ProtocolMigrationSpec(FaultSpec):
    """Restart the group's members one at a time on the protocol generation ``to``."""

    kind: Literal["protocol-migration"]
    to: Literal[PROTOCOLS]  # type: ignore[valid-type]  # the generation the members move to
    assignor: str | None = None  # None: ``to``'s default, or the workload's own when ``to`` is the workload's
    members: Literal["consumers"] | Annotated[list[str], Field(min_length=1, max_length=100)] = "consumers"
    signal: StopSignal = "SIGTERM"
    interval_s: Annotated[float, Field(ge=0, le=DAY_S)] = 5

    needs = frozenset({Capability.RUN_PROCESSES})
    # What a member's stop takes in the round's nominal length (its close, its exit, its start).
    stop_s: ClassVar[float] = 3.0

    @property
    def effects(self) -> Effects:
        return NO_EFFECTS  # no one target: each member it restarts writes its own exit and start

    @property
    def holds_target_s(self) -> float:
        return 0.0

    def round_s(self, members: int) -> float:
        """The round's nominal length: each member's stop, and the interval after all but the last."""
        return members * self.stop_s + max(members - 1, 0) * self.interval_s

    def broker_config(self) -> dict[str, str]:
        # Kafka's default today, said explicitly: KAFKA-16294 plans `upgrade` as the default once
        # consumer groups are the norm, which would refuse the way back.
        return {"group.consumer.migration.policy": "bidirectional"}

    def member_protocols(self) -> tuple[str, ...]:
        return (self.to,)

    def problems(self, scenario: ScenarioFacts) -> list[tuple[str, str]]:
        problems = []
        if not isinstance(self.members, str):
            unknown = [m for m in self.members if m not in scenario.members or m == COORDINATOR]
            if unknown:
                problems.append(("members", f"no member {', '.join(map(repr, unknown))} in this scenario"))
        target, running = GENERATIONS[self.to], GENERATIONS.get(scenario.protocol or "")
        if target.group_protocol is None or (running and running.group_protocol is None):
            lives = running if target.group_protocol is not None else target
            problems.append(
                (
                    "to",
                    f"{lives.about} keeps its group {'in ZooKeeper' if lives.group_home == 'zookeeper' else 'outside Kafka'}: "
                    "the brokers migrate only between Kafka's classic and consumer group protocols",
                )
            )
        elif running is not None and target.group_protocol == running.group_protocol:
            problems.append(
                (
                    "to",
                    f"the members already run {running.about}, the {target.group_protocol} group protocol "
                    f"({scenario.protocol}): a migration moves them to the other one",
                )
            )
        elif scenario.group_migration_problem:
            # the release catalogue's word (KafkaRelease.group_migration_problem), via ScenarioFacts
            problems.append(("to", scenario.group_migration_problem))
        elif target.group_protocol == "consumer" and scenario.assignor in scenario.driver_assignment_user_data:
            problems.append(
                (
                    "to",
                    f"the members' {scenario.assignor} assignor ({scenario.driver}) writes user data into their "
                    "assignments, which the brokers cannot carry into a consumer group: they refuse the upgrade "
                    "(ConsumerGroup.fromClassicGroup) and the first consumer-protocol member fails. Migrate a group "
                    "whose assignor writes none (range, roundrobin)",
                )
            )
        elif scenario.driver not in target.drivers:
            problems.append(
                ("to", f"{self.to} has no {scenario.driver} driver (its drivers: {', '.join(target.drivers)})")
            )
        if self.assignor is not None and self.assignor not in target.assignors:
            problems.append(
                ("assignor", f"{self.to} assigns with {', '.join(target.assignors)}, not {self.assignor!r}")
            )
        if self.at_s < scenario.members_busy_until_s:
            problems.append(
                (
                    "at_s",
                    f"another protocol-migration moves the members until workload+{scenario.members_busy_until_s:g}s "
                    "(its round's nominal length): one migration at a time",
                )
            )
        return problems

    def after(self, scenario: ScenarioFacts) -> ScenarioFacts:
        moved = len(scenario.members if self.members == "consumers" else self.members)
        everyone = self.members == "consumers"
        return replace(
            scenario,
            protocol=self.to if everyone else scenario.protocol,
            assignor=(self.assignor or GENERATIONS[self.to].assignors[0]) if everyone else scenario.assignor,
            members_busy_until_s=self.at_s + self.round_s(moved),
        )

    def acts_on_members(self, members: Collection[str]) -> bool:
        return True


@dataclass
class ProtocolMigration(Round[ProtocolMigrationSpec]):
    """Each member in turn: stopped, its exit awaited, started again on ``to``; ``interval_s``
    between members. Runs in its own thread so other faults keep their times; healed when the
    round is over (a heal at the end of the run finishes it at once, every member running)."""

    Spec = ProtocolMigrationSpec
    thread_name = "migration"
    heal_join_s = EXIT_WAIT_S * 2

    @property
    def changes(self) -> MemberChanges:
        return MemberChanges(protocol=self.spec.to, assignor=self.spec.assignor)

    @property
    def heal_after_s(self) -> float:
        return self.spec.round_s(len(self._names) or 1)

    def inject(self, targets: Targets) -> dict:
        which = self.spec.members
        self._names = targets.group_names(which) if isinstance(which, str) else list(which)
        self._start(targets)
        return {"order": self._names, "to": self.spec.to}

    def _round(self, targets: Targets) -> None:
        for i, name in enumerate(self._names):
            if self._stop.is_set():
                return
            self._at(name)
            self._move(targets, name)
            if i < len(self._names) - 1:
                self._stop.wait(self.spec.interval_s)

    def _move(self, targets: Targets, name: str) -> None:
        """Stop the member, wait for its exit (its LeaveGroup is what converts the group back when it
        was the last on the consumer protocol), start its next incarnation on ``to``."""
        if targets.is_running(name):
            targets.kill(name, getattr(signal, self.spec.signal))
            deadline = time.monotonic() + EXIT_WAIT_S
            while targets.is_running(name) and time.monotonic() < deadline:
                time.sleep(0.05)  # polling the process, not timing the group
            if targets.is_running(name):
                targets.kill(name, signal.SIGKILL)
                while targets.is_running(name):
                    time.sleep(0.05)
        targets.restart(name, self.changes)
