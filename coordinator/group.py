"""One consumer group's state machine (seed 003's GroupMetadata and GroupCoordinator).

Pure: no sockets, no ZooKeeper, no clock of its own. The coordinator calls it under
its lock with the time, and hands it three things: ``emit`` (history events),
``persist`` (write the group's metadata, fenced: raises ``NotLeader`` for a deposed
leader) and ``partitions_of`` (topic -> partition count, for v1's own assignment).

Requests that wait for the rebalance (JoinGroup, SyncGroup) get a ``Reply`` that the
request's thread waits on outside the lock; the group fills it in when the
rebalance gets that far.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from oracle import vocabulary as ev

from .assignors import ASSIGNORS
from .protocol import (
    COORDINATOR_NOT_AVAILABLE,
    ILLEGAL_GENERATION,
    INVALID_REQUEST,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    error,
)

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"


class NotLeader(Exception):
    """This instance may no longer write the group: another leader took over, or ZooKeeper is gone."""


@dataclass(frozen=True)
class Variant:
    """What distinguishes the coordinator generations the seeds trace — both sides of each
    design: this coordinator's, and its members' (workloads/coordinated.py)."""

    name: str
    coordinator_assigns: bool  # v1: the coordinator runs the assignor; v2+: the leader member does
    rebalance_signal: int  # the heartbeat error that tells a member to rejoin
    own_rebalance_timeout: bool  # KIP-62: the member's rebalance timeout, not its session timeout
    initial_rebalance_delay_ms: int  # KIP-134: a first join into an empty group waits for more

    def rebalance_timeout_ms(self, session_timeout_ms: int, rebalance_timeout_ms: int) -> int:
        return rebalance_timeout_ms if self.own_rebalance_timeout else session_timeout_ms

    @property
    def background_heartbeats(self) -> bool:
        """KIP-62 brought both: members heartbeat off the poll loop, and max.poll.interval.ms
        (their rebalance timeout) is what the poll loop must keep to."""
        return self.own_rebalance_timeout


def variant(name: str, initial_rebalance_delay_ms: int = 3000) -> Variant:
    if name == "v1":
        return Variant("v1", True, ILLEGAL_GENERATION, False, 0)
    if name == "v2":
        return Variant("v2", False, REBALANCE_IN_PROGRESS, False, 0)
    if name == "v3":
        return Variant("v3", False, REBALANCE_IN_PROGRESS, True, initial_rebalance_delay_ms)
    raise ValueError(f"unknown coordinator variant {name!r} (v1, v2, v3)")


class Reply:
    """A response that arrives when the rebalance gets that far."""

    def __init__(self):
        self._done = threading.Event()
        self.response: dict = {}

    def complete(self, response: dict) -> None:
        if not self._done.is_set():
            self.response = response
            self._done.set()

    def wait(self, timeout_s: float) -> dict | None:
        return self.response if self._done.wait(timeout_s) else None

    @classmethod
    def now(cls, response: dict) -> Reply:
        reply = cls()
        reply.complete(response)
        return reply


@dataclass
class Member:
    member_id: str
    client_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol: str  # the assignor it asked for
    topics: list[str]
    assignment: list[tuple[str, int]] = field(default_factory=list)
    heartbeat_deadline: float = 0.0
    awaiting_join: Reply | None = None
    awaiting_sync: Reply | None = None

    def metadata(self) -> dict:
        return {
            "client_id": self.client_id,
            "session_timeout_ms": self.session_timeout_ms,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "protocol": self.protocol,
            "topics": self.topics,
            "assignment": [list(tp) for tp in self.assignment],
        }


def _tps(tps) -> list[dict]:
    return [{"topic": t, "partition": p} for t, p in sorted(tps)]


class Group:
    def __init__(
        self,
        group_id: str,
        variant: Variant,
        *,
        emit: Callable[..., None],
        persist: Callable[[dict], None],
        partitions_of: Callable[[list[str]], Mapping[str, int]],
    ):
        self.group_id = group_id
        self.variant = variant
        self.emit = emit
        self.persist = persist
        self.partitions_of = partitions_of
        self.state = EMPTY
        self.generation = 0
        self.protocol: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.offsets: dict[tuple[str, int], int] = {}
        self.join_deadline = 0.0  # PreparingRebalance ends here at the latest (rebalance timeout)
        self.initial_join_deadline: float | None = None  # InitialDelayedJoin, while it lasts

    # ------------------------------------------------------------------ requests

    def join(
        self,
        member_id: str,
        client_id: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocols: list[dict],
        now: float,
    ) -> Reply:
        if self.state == DEAD:  # unloaded: the group has moved to another coordinator, find it again
            return Reply.now(error(COORDINATOR_NOT_AVAILABLE, "the group is dead here"))
        if not protocols or protocols[0].get("name") not in ASSIGNORS:
            return Reply.now(error(INVALID_REQUEST, f"protocols: one of {', '.join(ASSIGNORS)} expected"))
        if member_id and member_id not in self.members:
            return Reply.now(error(UNKNOWN_MEMBER_ID, f"{member_id} is not a member of generation {self.generation}"))
        new = not member_id
        if new:
            member_id = f"{client_id}-{uuid.uuid4()}"
        rebalance_timeout_ms = self.variant.rebalance_timeout_ms(session_timeout_ms, rebalance_timeout_ms)
        member = self.members.get(member_id) or Member(
            member_id,
            client_id,
            session_timeout_ms,
            rebalance_timeout_ms,
            protocols[0]["name"],
            list(protocols[0].get("topics") or []),
        )
        member.session_timeout_ms, member.rebalance_timeout_ms = session_timeout_ms, rebalance_timeout_ms
        member.protocol, member.topics = protocols[0]["name"], list(protocols[0].get("topics") or [])
        self.members[member_id] = member
        if member.awaiting_join:  # a retried join replaces the one in flight
            member.awaiting_join.complete(error(REBALANCE_IN_PROGRESS, "superseded by a new JoinGroup"))
        member.awaiting_join = reply = Reply()
        member.heartbeat_deadline = now + session_timeout_ms
        if new:
            self.emit(ev.COORDINATOR_MEMBER_JOINED, member_id=member_id, client_id=client_id)
        if self.state == PREPARING:
            if self.initial_join_deadline is not None and new:
                # KIP-134: every newcomer buys the others one more delay, up to the rebalance timeout.
                self.initial_join_deadline = min(now + self.variant.initial_rebalance_delay_ms, self.join_deadline)
        else:
            self._prepare_rebalance(f"{'adding' if new else 'rejoining'} member {member_id}", now)
        self.try_complete_join(now)
        return reply

    def sync(self, member_id: str, generation: int, assignments: Mapping[str, list] | None, now: float) -> Reply:
        member = self.members.get(member_id)
        if member is None:
            return Reply.now(error(UNKNOWN_MEMBER_ID))
        if generation != self.generation:
            return Reply.now(error(ILLEGAL_GENERATION, f"generation {generation}, the group is at {self.generation}"))
        if self.state == PREPARING:
            return Reply.now(error(REBALANCE_IN_PROGRESS))
        member.heartbeat_deadline = now + member.session_timeout_ms
        if self.state == STABLE:
            return Reply.now(self._sync_response(member))
        member.awaiting_sync = reply = Reply()
        if member_id == self.leader_id:
            if assignments is None:
                return Reply.now(error(INVALID_REQUEST, "the leader's SyncGroup carries the assignment"))
            self.emit(ev.COORDINATOR_ASSIGNMENT_RECEIVED, leader_id=member_id, generation=self.generation)
            for mid, m in self.members.items():
                m.assignment = sorted((a["topic"], int(a["partition"])) for a in assignments.get(mid) or ())
            self._transition(STABLE, now, f"generation {self.generation} assigned by the leader")
            if self._save(now):
                self._stabilized()
        return reply

    def heartbeat(self, member_id: str, generation: int, now: float) -> dict:
        member = self.members.get(member_id)
        if member is None:
            return error(UNKNOWN_MEMBER_ID)
        member.heartbeat_deadline = now + member.session_timeout_ms
        if self.state == PREPARING:
            # The member learns of the rebalance here: v1 by ILLEGAL_GENERATION (seed 001), later ones
            # by REBALANCE_IN_PROGRESS. Checked before the generation: a member that missed a whole
            # rebalance is told to rejoin either way.
            return error(self.variant.rebalance_signal, "the group is rebalancing")
        if generation != self.generation:
            return error(ILLEGAL_GENERATION, f"generation {generation}, the group is at {self.generation}")
        if self.state == COMPLETING:
            return error(REBALANCE_IN_PROGRESS, "waiting for the leader's assignment")
        return error(0)

    def leave(self, member_id: str, now: float) -> dict:
        if member_id not in self.members:
            return error(UNKNOWN_MEMBER_ID)
        self._remove(member_id, "the member left (LeaveGroup)", now)
        return error(0)

    def commit(self, member_id: str, generation: int, offsets: list[dict], now: float) -> dict:
        member = self.members.get(member_id)
        if member is None:
            return error(UNKNOWN_MEMBER_ID)
        if generation != self.generation:
            return error(ILLEGAL_GENERATION, f"generation {generation}, the group is at {self.generation}")
        if self.state == COMPLETING:
            return error(REBALANCE_IN_PROGRESS)
        member.heartbeat_deadline = now + member.session_timeout_ms
        # Accepted while Stable and, for eager members committing as they revoke, PreparingRebalance.
        return error(0)

    def describe(self) -> dict:
        return {
            "state": self.state,
            "generation_id": self.generation,
            "protocol_name": self.protocol,
            "leader_id": self.leader_id,
            "members": [
                {"member_id": m.member_id, "client_id": m.client_id, "assignment": _tps(m.assignment)}
                for m in self.members.values()
            ],
        }

    # ------------------------------------------------------------------ time

    def tick(self, now: float) -> None:
        """Session expiries and join deadlines."""
        for member in list(self.members.values()):
            # A member waiting in JoinGroup or SyncGroup is alive by definition (Kafka's shouldKeepAlive).
            if member.awaiting_join is None and member.awaiting_sync is None and now >= member.heartbeat_deadline:
                self._remove(
                    member.member_id, f"session timeout ({member.session_timeout_ms} ms without a heartbeat)", now
                )
        self.try_complete_join(now)

    def metadata_changed(self, reason: str, now: float) -> None:
        """A subscribed topic changed (v1's coordinator watches them in ZooKeeper)."""
        if self.state in (STABLE, COMPLETING):
            self._prepare_rebalance(reason, now)

    # ------------------------------------------------------------------ transitions

    def _transition(self, to: str, now: float, reason: str = "") -> None:
        if to != self.state:
            self.emit(
                ev.COORDINATOR_STATE_CHANGED, **{"from": self.state}, to=to, generation=self.generation, reason=reason
            )
            self.state = to

    def _prepare_rebalance(self, reason: str, now: float) -> None:
        # Logged before anyone is told: a member's record of its refusal follows it in the history.
        self.emit(ev.COORDINATOR_PREPARING_REBALANCE, old_generation=self.generation, reason=reason)
        for member in self.members.values():
            if member.awaiting_sync:  # the leader's assignment will not come for this generation
                member.awaiting_sync.complete(error(REBALANCE_IN_PROGRESS, reason))
                member.awaiting_sync = None
        was_empty = self.state == EMPTY
        self._transition(PREPARING, now, reason)
        self.join_deadline = now + max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
        delay = self.variant.initial_rebalance_delay_ms
        self.initial_join_deadline = min(now + delay, self.join_deadline) if was_empty and delay else None

    def try_complete_join(self, now: float) -> None:
        if self.state != PREPARING:
            return
        if self.initial_join_deadline is not None:
            if now < self.initial_join_deadline:
                return
            self.initial_join_deadline = None
        missing = [m for m in self.members.values() if m.awaiting_join is None]
        if missing and now < self.join_deadline:
            return  # DelayedJoin: wait for every known member, up to the rebalance timeout
        for member in missing:
            self._remove(member.member_id, "did not rejoin within the rebalance timeout", now, complete=False)
        self._complete_join(now)

    def _complete_join(self, now: float) -> None:
        self.generation += 1
        if not self.members:
            self.protocol = self.leader_id = None
            self._transition(EMPTY, now, "no members")
            self.emit(ev.COORDINATOR_GROUP_EMPTY, generation=self.generation)
            self._save(now)
            return
        if self.leader_id not in self.members:
            self.leader_id = next(iter(self.members))  # the first to join leads
        self.protocol = self.members[self.leader_id].protocol
        if self.variant.coordinator_assigns:
            subscriptions = {mid: m.topics for mid, m in self.members.items()}
            topics = sorted({t for m in self.members.values() for t in m.topics})
            assignment = ASSIGNORS[self.protocol](subscriptions, self.partitions_of(topics))
            for mid, m in self.members.items():
                m.assignment = assignment.get(mid, [])
            self._transition(STABLE, now, f"generation {self.generation} assigned by the coordinator")
        else:
            for m in self.members.values():
                m.assignment = []
            self._transition(COMPLETING, now, f"generation {self.generation} formed")
        if not self._save(now):
            return
        for mid, m in self.members.items():
            # v1 has no leader member: the coordinator assigns (the group's first member is kept
            # internally only to pick the assignor its members asked for).
            leader = None if self.variant.coordinator_assigns else self.leader_id
            response = {
                **error(0),
                "generation_id": self.generation,
                "member_id": mid,
                "leader_id": leader,
                "protocol_name": self.protocol,
                "members": [],
            }
            if mid == self.leader_id and not self.variant.coordinator_assigns:
                response["members"] = [{"member_id": o.member_id, "topics": o.topics} for o in self.members.values()]
            if self.variant.coordinator_assigns:
                response["assignment"] = _tps(m.assignment)
            m.awaiting_join.complete(response)
            m.awaiting_join = None
            m.heartbeat_deadline = now + m.session_timeout_ms
        if self.variant.coordinator_assigns:
            self._stabilized()

    def _stabilized(self) -> None:
        """The generation's assignment is saved: everyone waiting in SyncGroup gets theirs."""
        self.emit(ev.COORDINATOR_STABILIZED, generation=self.generation, members=len(self.members))
        for m in self.members.values():
            if m.awaiting_sync:
                m.awaiting_sync.complete(self._sync_response(m))
                m.awaiting_sync = None

    def _sync_response(self, member: Member) -> dict:
        return {**error(0), "assignment": _tps(member.assignment)}

    def _remove(self, member_id: str, reason: str, now: float, complete: bool = True) -> None:
        member = self.members.pop(member_id)
        for reply in (member.awaiting_join, member.awaiting_sync):
            if reply:
                reply.complete(error(UNKNOWN_MEMBER_ID, reason))
        self.emit(ev.COORDINATOR_MEMBER_REMOVED, member_id=member_id, cause=reason)
        if self.leader_id == member_id:
            self.leader_id = None
        if self.state in (STABLE, COMPLETING):
            self._prepare_rebalance(f"removing member {member_id}: {reason}", now)
        elif self.state == EMPTY and not self.members:
            return
        if complete:
            self.try_complete_join(now)

    # ------------------------------------------------------------------ persistence

    def snapshot(self) -> dict:
        return {
            "group": self.group_id,
            "variant": self.variant.name,
            "state": self.state,
            "generation": self.generation,
            "protocol": self.protocol,
            "leader_id": self.leader_id,
            "members": {mid: m.metadata() for mid, m in self.members.items()},
        }

    def _save(self, now: float) -> bool:
        """Write the group; a deposed leader answers every waiting member NOT_COORDINATOR."""
        try:
            self.persist(self.snapshot())
            return True
        except NotLeader as e:
            self.fail_waiting(NOT_COORDINATOR, str(e))
            return False

    def unload(self, reason: str, now: float) -> None:
        """This instance no longer coordinates the group (Kafka's onGroupUnloaded): the group is
        Dead here and its waiting members are told NOT_COORDINATOR; the next leader loads it
        from ZooKeeper."""
        self.fail_waiting(NOT_COORDINATOR, reason)
        self._transition(DEAD, now, reason)

    def fail_waiting(self, code: int, message: str) -> None:
        for m in self.members.values():
            for reply in (m.awaiting_join, m.awaiting_sync):
                if reply:
                    reply.complete(error(code, message))
            m.awaiting_join = m.awaiting_sync = None

    @classmethod
    def restore(cls, snapshot: dict, offsets: dict[tuple[str, int], int], now: float, **kwargs) -> Group:
        """A new leader's view of a group another leader kept: members get a fresh session
        (as Kafka's coordinator gives them after loading a group); a group caught between
        generations rebalances again, since the requests it waited for went to the old leader."""
        group = cls(snapshot["group"], **kwargs)
        group.generation, group.protocol = snapshot["generation"], snapshot["protocol"]
        group.leader_id = snapshot["leader_id"]
        for mid, m in snapshot["members"].items():
            group.members[mid] = Member(
                mid,
                m["client_id"],
                m["session_timeout_ms"],
                m["rebalance_timeout_ms"],
                m["protocol"],
                m["topics"],
                [tuple(tp) for tp in m["assignment"]],
                heartbeat_deadline=now + m["session_timeout_ms"],
            )
        group.offsets = dict(offsets)
        group.state = snapshot["state"] if snapshot["state"] in (STABLE, EMPTY) else STABLE
        if snapshot["state"] not in (STABLE, EMPTY):
            group._prepare_rebalance("coordinator failover during a rebalance", now)
        return group
