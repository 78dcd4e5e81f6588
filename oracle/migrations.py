"""Hand-overs of a protocol migration, measured from the history.

A member moved to another protocol generation (``protocol-migration``, docs/history.md "Mixed
groups") is one slot's incarnation followed by the next on another generation: each
``consumer_started`` says what it ran. Per such move, from the old incarnation's exit — its
process's ``process_exited`` (the harness saw it gone), else its ``consumer_stopped`` — to:

- ``joined_ms``: the new incarnation's first ``group_joined`` (a JoinGroup answer, or a KIP-848
  epoch): it is a member of the group again;
- ``owning_ms``: its first ``partitions_assigned`` that gives it partitions: it works again;
- ``stable_ms``: the observer's first ``group_described`` after that, in state STABLE and covering
  every partition, with the new incarnation among the members (its client id is the slot's name)
  owning partitions: the whole group settled with it.

None where the run ended first. What the member did meanwhile is the checks' to judge; this
is only how long the switch took.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import vocabulary as ev
from .history import Event, History, Instant, MemberProcesses, MemberSlot


@dataclass
class Move:
    member: str
    incarnation: int  # the new one
    from_protocol: str | None
    to_protocol: str | None
    left: Instant  # the old incarnation's exit
    joined: Instant | None = None
    owning: Instant | None = None
    stable: Instant | None = None

    def _ms(self, then: Instant | None) -> float | None:
        return None if then is None else round(then.mono_ms - self.left.mono_ms, 3)

    def to_dict(self, history: History) -> dict[str, Any]:
        return {
            "member": self.member,
            "incarnation": self.incarnation,
            "from": self.from_protocol,
            "to": self.to_protocol,
            "left_t_s": round((self.left.mono_ms - history.t0) / 1000, 3),
            "joined_ms": self._ms(self.joined),
            "owning_ms": self._ms(self.owning),
            "stable_ms": self._ms(self.stable),
        }


def moves_of(history: History) -> list[Move]:
    """Every incarnation that ran another generation than its slot's previous one, in time order."""
    return history.memo("migrations", lambda: _measure(history))


def migrations(history: History) -> list[dict[str, Any]]:
    """As verdict.json's stats carry them (``migrations``)."""
    return [m.to_dict(history) for m in moves_of(history)]


def _measure(history: History) -> list[Move]:
    started = {MemberSlot.of(e): e for e in history.named(ev.CONSUMER_STARTED) if "member" in e}
    exits: dict[MemberSlot, Event] = {}
    processes = MemberProcesses()
    for e in history.named(ev.CONSUMER_STARTED, ev.PROCESS_EXITED):
        if e["name"] == ev.CONSUMER_STARTED:
            processes.started(e)
        for slot in (processes.exited(e) or []) if e["name"] == ev.PROCESS_EXITED else []:
            exits.setdefault(slot, e)
    for e in history.named(ev.CONSUMER_STOPPED, ev.CLIENT_DESTROYED):
        exits.setdefault(MemberSlot.of(e), e)  # no process_exited seen: its own last word
    moves = []
    for slot, _e in sorted(started.items(), key=lambda item: item[1]["mono_ms"]):
        before = MemberSlot(slot.member, slot.incarnation - 1)
        if slot.incarnation < 2 or before not in started:
            continue
        old, new = history.protocol_of(before), history.protocol_of(slot)
        if old == new or before not in exits:
            continue
        move = Move(slot.member, slot.incarnation, old, new, Instant.of(exits[before]))
        mine = {"member": slot.member, "incarnation": slot.incarnation}
        joined = history.first(ev.GROUP_JOINED, **mine)
        owning = next((a for a in history.where(ev.PARTITIONS_ASSIGNED, **mine) if a.get("partitions")), None)
        move.joined = Instant.of(joined) if joined else None
        move.owning = Instant.of(owning) if owning else None
        if owning:
            stable = next(
                (
                    d
                    for d in history.of_our_group(ev.GROUP_DESCRIBED)
                    if d["mono_ms"] >= owning["mono_ms"] and _settled(d, slot)
                ),
                None,
            )
            move.stable = Instant.of(stable) if stable else None
        moves.append(move)
    return moves


def _settled(described: Event, slot: MemberSlot) -> bool:
    """The observer saw the group stable, every partition owned, the member among the owners."""
    if described.get("state") != "STABLE" or not described.get("covers_all"):
        return False
    members = described.get("members") or {}
    return any(key.split("/", 1)[0] == slot.member and owned for key, owned in members.items())
