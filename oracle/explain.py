"""Each rebalance explained: who the group waited for, in which phase, and why.

A rebalance is measured in oracle/rebalances.py (start, detect / join / sync, end).
This module says what made it as long as it was, as the critical path of waits:

- **trigger**: what began it, and how long that took to be noticed — a member
  paused, crashed or cut off is evicted only when its session times out (one that fell
  silent by its own client's timers during a fault that silences nothing, such as a cut
  inbound only, is evicted with that fault named), a member stuck in processing leaves
  only when its max.poll.interval.ms runs out, a member joined or left, or rejoined after
  a message fault took one answer from it;
- **join**: whom the coordinator waited for before answering the JoinGroups — a member
  of the previous generation that never rejoined holds the phase until its rebalance
  timeout (max.poll.interval.ms), a new, empty group is held open for the initial
  rebalance delay (KIP-134), else the last member to send its JoinGroup;
- **sync**: the leader's assignment, which every follower waits for.

Each wait names a member (or none: the coordinator itself), a stable ``cause`` key
(CAUSES) and its length; the longest is the critical one, and ``sentence`` says it in
one line. Reads the history only, like every check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from . import vocabulary as ev
from .history import Event, History, effects_of
from .rebalances import Rebalance, join_sent_by_generation, run_rebalances

# The causes, by key: what readers (tables, tests, the analysis) match on.
CAUSES = {
    "session-timeout": "evicted when its session timed out",
    "poll-timeout": "left the group when its max.poll.interval.ms ran out",
    "left": "left the group",
    "joined": "joined the group",
    "rejoined": "rejoined with new metadata",
    "coordinator-moved": "the group's coordinator moved",
    "rebalance-timeout": "never rejoined; dropped when its rebalance timeout ran out",
    "initial-delay": "the coordinator held a new group open for its initial rebalance delay",
    "late-join": "the last member to send its JoinGroup",
    "leader-assignment": "the leader's assignment",
    "slowest-sync": "the last member to get its assignment",
    "member-signal": "a member's own sign",
    "message": "a protocol message the message proxy held back, withheld, cut or rewrote (a message fault)",
}
# A wait this short is the protocol doing its work, not a story worth telling.
NOTABLE_MS = 1000.0
# Members find a new coordinator while the rebalance begins: a move seen this soon after its start counts.
COORDINATOR_FOUND_WITHIN_MS = 1000.0
# A member dropped at its rebalance timeout: the join phase held about max.poll.interval.ms (counted
# from the member's last poll, a little before the first JoinGroup).
REBALANCE_TIMEOUT_SLACK_MS = 2000.0
# How far before the rebalance a fault on the member it names may have begun to be its onset:
# the member's session (or poll interval) plus slack for the heartbeat that noticed it.
ONSET_SLACK_MS = 5000.0
# What a member's own poll_stall_started says of it (a fault says it in its effects' `silenced_as`).
STALLED = "stuck in processing (poll stall)"


@dataclass(frozen=True)
class Wait:
    phase: str  # trigger | join | sync
    cause: str  # a key of CAUSES
    ms: float | None
    member: str | None  # whom the group waited for; None: the coordinator itself
    detail: str  # the words for the sentence

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "cause": self.cause,
            "ms": None if self.ms is None else round(self.ms, 3),
            "member": self.member,
            "detail": self.detail,
        }


@dataclass
class Explanation:
    generation: int
    waits: list[Wait] = field(default_factory=list)

    @property
    def critical(self) -> Wait | None:
        """The longest wait: what to fix to make this rebalance shorter."""
        timed = [w for w in self.waits if w.ms is not None]
        return max(timed, key=lambda w: w.ms) if timed else (self.waits[0] if self.waits else None)

    @property
    def sentence(self) -> str:
        notable = [w for w in self.waits if w.ms is not None and w.ms >= NOTABLE_MS]
        trigger = next((w for w in self.waits if w.phase == "trigger"), None)
        told = notable or ([trigger] if trigger else [])
        if not told:
            return f"generation {self.generation}: no wait stood out"
        return f"generation {self.generation}: " + "; then ".join(w.detail for w in told)

    def to_dict(self) -> dict[str, Any]:
        critical = self.critical
        return {
            "explanation": self.sentence,
            "critical_path": [w.to_dict() for w in self.waits],
            "waited_for": critical.member if critical else None,
            "cause": critical.cause if critical else None,
        }


def explain_rebalances(history: History) -> dict[int, Explanation]:
    """generation -> its explanation, for the run's rebalances (not the teardown's)."""
    return history.memo("explanations", lambda: _Explainer(history).all())


def _s(ms: float) -> str:
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms:.0f} ms"


class _Explainer:
    def __init__(self, history: History):
        self.h = history
        self.rebalances = run_rebalances(history)
        self.started = {e.get("member"): e for e in history.named(ev.CONSUMER_STARTED)}  # the latest incarnation's
        self.names = sorted(
            {e["member"] for e in history.named(ev.CONSUMER_STARTED) if e.get("member")}, key=len, reverse=True
        )
        self._names_re: re.Pattern | None = None
        self.faults = history.named(ev.FAULT_STARTED)
        self.stalls = history.named(ev.POLL_STALL_STARTED)
        self.messages = history.named(ev.MESSAGE_FAULTED)
        self.assignment_received = {
            e.get("generation"): e for e in history.of_our_group(ev.COORDINATOR_ASSIGNMENT_RECEIVED)
        }
        # Who coordinated the group over time: the observer's view of the brokers, and the project
        # coordinator's leader as the members found it.
        self.coordinators = [
            [
                (e["mono_ms"], e["coordinator"])
                for e in history.named(ev.GROUP_DESCRIBED)
                if e.get("coordinator") is not None
            ],
            [(e["mono_ms"], e["instance"]) for e in history.named(ev.COORDINATOR_FOUND) if e.get("instance")],
        ]
        self.initial_delay_ms = (history.run.get("group_settings") or {}).get("initial_rebalance_delay_ms")

    def all(self) -> dict[int, Explanation]:
        out, previous = {}, None
        for r in self.rebalances:
            x = Explanation(r.generation)
            trigger = self.trigger(r, previous)
            if trigger:
                x.waits.append(trigger)
            x.waits += [w for w in (self.join(r, previous, trigger), self.sync(r)) if w]
            out[r.generation] = x
            previous = r
        return out

    # --- who is who --------------------------------------------------------------------

    def member_in(self, text: str | None) -> str | None:
        """The member a coordinator's reason names (by member id ``consumer-2-<uuid>`` or static
        instance id ``<group>-consumer-2``)."""
        if not text or not self.names:
            return None
        if self._names_re is None:  # one pattern for all: a thousand members' reasons are read once each
            self._names_re = re.compile(rf"(?<![\w])({'|'.join(map(re.escape, self.names))})(?![\w])")
        named = set(self._names_re.findall(text))
        return next((name for name in self.names if name in named), None)  # longest first: consumer-10

    def setting(self, member: str | None, key: str) -> int | None:
        return (self.started.get(member) or {}).get(key)

    def fault_on(self, member: str, before_ms: float, within_ms: float) -> Event | None:
        """The latest fault that silenced ``member`` and began in the ``within_ms`` before ``before_ms``:
        the coordinator notices a silent member only at a timeout, not when it falls silent."""
        hits = [
            f
            for f in self.faults
            if f.get("target") == member
            and effects_of(f).get(ev.SILENCES)
            and before_ms - within_ms <= f["mono_ms"] <= before_ms
        ]
        stalls = [
            s for s in self.stalls if s.get("member") == member and before_ms - within_ms <= s["mono_ms"] <= before_ms
        ]
        return max(hits + stalls, key=lambda e: e["mono_ms"], default=None)

    def fault_during(self, member: str, before_ms: float, within_ms: float) -> Event | None:
        """The latest fault on ``member`` that silences nothing but was in effect in the ``within_ms``
        before ``before_ms`` (a one-way cut inbound, a message fault): its coordinator heard the member
        while it began, and the member fell silent later by its own client's timers — named, but its
        start is not when the member fell silent."""
        healed = {e.get("fault_id"): e["mono_ms"] for e in self.h.named(ev.FAULT_HEALED)}
        hits = [
            f
            for f in self.faults
            if f.get("target") == member
            and not effects_of(f).get(ev.SILENCES)
            and f["mono_ms"] <= before_ms
            and healed.get(f.get("fault_id"), before_ms) >= before_ms - within_ms
        ]
        return max(hits, key=lambda e: e["mono_ms"], default=None)

    def what_happened(self, fault: Event) -> str:
        if fault["name"] == ev.POLL_STALL_STARTED:
            return STALLED + (f" (fault {fault['fault_id']})" if fault.get("fault_id") else "")
        return (
            f"{effects_of(fault).get(ev.SILENCED_AS)} (fault {fault.get('fault_id') or 'without an id'}, "
            f"{fault.get('kind')})"
        )

    def message_on(self, member: str | None, before_ms: float, within_ms: float) -> Event | None:
        """The latest message the proxy acted on for ``member`` (any member: None) in the ``within_ms``
        before ``before_ms``: a member that lost or was refused an answer rejoins on its own."""
        hits = [
            m
            for m in self.messages
            if member in (None, m.get(ev.MEMBER))
            and before_ms - within_ms - self.held_ms(m) <= m["mono_ms"] <= before_ms
        ]
        return max(hits, key=lambda e: e["mono_ms"], default=None)

    @staticmethod
    def held_ms(m: Event) -> float:
        """How long after the event the member could first see what became of its answer: a held-back
        answer comes ``delay_ms`` later, a withheld one ends in the connection's close ``close_after_ms``
        after the request (the client's request timeout), and its reaction follows only then."""
        key = {"delay": "delay_ms", "withhold": "close_after_ms"}.get(m.get("action"))
        return float(m.get(key) or 0) if key else 0.0

    @staticmethod
    def message_said(m: Event) -> str:
        """What the proxy did to the message, as a sentence says it."""
        whose = f"{m.get(ev.MEMBER)}'s {m['api']} response"
        done = {
            "delay": f"was held back {m.get('delay_ms')} ms",
            "withhold": "never came (the proxy withheld it and closed the connection "
            f"{m.get('close_after_ms')} ms after the request)",
            "cut-after-request": "was cut: the broker processed the request, the connection closed before the answer",
            "error": f"was replaced by {m.get('error')}"
            + (f" (the broker said {m['replaced_error']})" if m.get("replaced_error") not in (None, "NONE") else ""),
        }.get(m["action"], m["action"])
        return f"{whose} {done} (fault {m['fault_id']})"

    def after_message(self, r: Rebalance, member: str | None, detail: str) -> Wait | None:
        """The rebalance began on a member's own sign right after a message fault acted on its messages."""
        message = self.message_on(member, r.start.mono_ms, ONSET_SLACK_MS)
        if message is None:
            return None
        waited = r.start.mono_ms - message["mono_ms"]
        return Wait(
            "trigger",
            "message",
            waited,
            message.get(ev.MEMBER),
            f"{self.message_said(message)}, and {detail} {_s(waited)} later",
        )

    @staticmethod
    def stopped_polling(fault: Event | None) -> bool:
        """The member kept heartbeating but did not poll: it leaves only at its max.poll.interval.ms."""
        return fault is not None and (
            fault["name"] == ev.POLL_STALL_STARTED or effects_of(fault).get(ev.SILENCES) == ev.POLLS
        )

    # --- the phases --------------------------------------------------------------------

    def trigger(self, r: Rebalance, previous: Rebalance | None) -> Wait | None:
        if r.start is None:
            return None
        start = r.start.mono_ms
        moved = self.coordinator_moved(r, previous)
        if moved:
            return moved
        reason = r.coordinator_reason or ""
        member = self.member_in(reason)
        low = reason.lower()
        if member and ("heartbeat expiration" in low or "session timeout" in low):
            session = self.setting(member, "session_timeout_ms")
            fault = self.fault_on(member, start, (session or 0) + ONSET_SLACK_MS)
            setting = f" (session.timeout.ms {session})" if session else ""
            if fault:
                waited = start - fault["mono_ms"]
                return Wait(
                    "trigger",
                    "session-timeout",
                    waited,
                    member,
                    f"{member} was {self.what_happened(fault)} and the coordinator evicted it only when "
                    f"its session timed out{setting}, {_s(waited)} later",
                )
            during = self.fault_during(member, start, (session or 0) + ONSET_SLACK_MS)
            if during:
                waited = start - during["mono_ms"]
                return Wait(
                    "trigger",
                    "session-timeout",
                    waited,
                    member,
                    f"{member} went silent during fault {during.get('fault_id') or 'without an id'} "
                    f"({during.get('kind')}) and the coordinator evicted it when its session timed out{setting}, "
                    f"{_s(waited)} after the fault began",
                )
            return Wait(
                "trigger",
                "session-timeout",
                session,
                member,
                f"{member} went silent and the coordinator evicted it when its session timed out{setting}",
            )
        if member and ("leavegroup" in low or "left" in low):
            poll = self.setting(member, "max_poll_interval_ms")
            stall = self.fault_on(member, start, (poll or 0) + ONSET_SLACK_MS) if poll else None
            if self.stopped_polling(stall):
                waited = start - stall["mono_ms"]
                return Wait(
                    "trigger",
                    "poll-timeout",
                    waited,
                    member,
                    f"{member} was {self.what_happened(stall)} and left the group only when its "
                    f"max.poll.interval.ms ({poll}) ran out, {_s(waited)} later",
                )
            return Wait("trigger", "left", 0.0, member, f"{member} left the group")
        if member and ("adding" in low and "member" in low):
            return Wait("trigger", "joined", 0.0, member, f"{member} joined the group")
        if member and ("re-joining" in low or "updating metadata" in low):
            return self.after_message(r, member, f"{member} rejoined") or Wait(
                "trigger", "rejoined", 0.0, member, f"{member} rejoined with new metadata"
            )
        # No coordinator line naming a member (KIP-848's epoch bumps, zk-eager, the project's
        # coordinator without one): the members' first sign.
        first = r.trigger or "a member's sign"
        signer = self.member_in(first)
        return self.after_message(r, signer, f"the rebalance began with {first}") or Wait(
            "trigger", "member-signal", 0.0, signer, f"it began with {first}"
        )

    def coordinator_moved(self, r: Rebalance, previous: Rebalance | None) -> Wait | None:
        """The group's coordinator changed between the previous rebalance and this one's start: as
        the observer saw it (a broker's id), or as members found it (the project's coordinator)."""
        lo = previous.end.mono_ms if previous and previous.end else -float("inf")
        hi = r.start.mono_ms + COORDINATOR_FOUND_WITHIN_MS
        for seen in self.coordinators:
            before = [c for t, c in seen if t <= lo]
            during = [(t, c) for t, c in seen if lo < t <= hi]
            was = before[-1] if before else (during[0][1] if during else None)
            moved = next(((t, c) for t, c in during if c != was), None)
            if was is not None and moved:
                lost = [e["mono_ms"] for e in self.h.named(ev.COORDINATOR_LOST) if lo < e["mono_ms"] <= moved[0]]
                waited = moved[0] - (lost[0] if lost else r.start.mono_ms)
                return Wait(
                    "trigger",
                    "coordinator-moved",
                    max(0.0, waited),
                    None,
                    f"the group's coordinator moved ({was} -> {moved[1]})"
                    + (f", found again {_s(waited)} after it was lost" if lost else ""),
                )
        return None

    def join(self, r: Rebalance, previous: Rebalance | None, trigger: Wait | None) -> Wait | None:
        if r.join_ms is None or r.stabilized is None:
            return None
        sent = self.join_sent(r)
        if not sent:
            return None
        first = min(e["mono_ms"] for e in sent.values())
        held = r.stabilized.mono_ms - first
        gone = trigger.member if trigger and trigger.cause in ("session-timeout", "left", "poll-timeout") else None
        before = {m.split("#")[0] for m in previous.members} if previous else set()
        now = {m.split("#")[0] for m in r.members}
        missing = sorted(before - now - {gone})
        for member in missing:  # a member of the last generation that never rejoined
            poll = self.setting(member, "max_poll_interval_ms")
            if poll and held >= poll - REBALANCE_TIMEOUT_SLACK_MS:
                fault = self.fault_on(member, r.stabilized.mono_ms, held + ONSET_SLACK_MS)
                why = f", {self.what_happened(fault)}" if fault else ""
                return Wait(
                    "join",
                    "rebalance-timeout",
                    held,
                    member,
                    f"the join phase waited {_s(held)} for {member}{why}, which never rejoined: the "
                    f"coordinator dropped it when its rebalance timeout (max.poll.interval.ms {poll}) ran out",
                )
        last_member, last = max(sent.items(), key=lambda kv: kv[1]["mono_ms"])
        after_last = r.stabilized.mono_ms - last["mono_ms"]
        new_group = previous is None or not previous.members
        if new_group and after_last >= NOTABLE_MS and (self.initial_delay_ms or 0) > 0:
            return Wait(
                "join",
                "initial-delay",
                held,
                None,
                f"the coordinator held the new group's join phase open {_s(held)} for its initial "
                f"rebalance delay (group.initial.rebalance.delay.ms {self.initial_delay_ms}, extended "
                f"while members kept joining); the last, {last_member}, joined {_s(last['mono_ms'] - first)} in",
            )
        waited = last["mono_ms"] - first
        fault = self.fault_on(last_member, last["mono_ms"], waited + ONSET_SLACK_MS)
        why = (
            f", {self.what_happened(fault)},"
            if fault
            else (
                self.in_revoke(last_member, first, last["mono_ms"])
                or self.heard_late(last_member, first, last["mono_ms"])
            )
        )
        return Wait(
            "join",
            "late-join",
            held,
            last_member,
            f"the join phase took {_s(held)}: {last_member}{why} sent its JoinGroup last, {_s(waited)} "
            f"after the first member",
        )

    def in_revoke(self, member: str, lo: float, hi: float) -> str:
        """A member whose revoke callback waits for its processing thread (processing: worker)
        rejoins only once that thread has finished what it held."""
        ends = self.h.where(ev.PARTITIONS_REVOKED, member=member)
        for start in self.h.where(ev.REVOKE_STARTED, member=member):
            # Its own callback's end: the same incarnation (one killed inside never ended it).
            end = next(
                (
                    e
                    for e in ends
                    if e["mono_ms"] >= start["mono_ms"] and e.get(ev.INCARNATION) == start.get(ev.INCARNATION)
                ),
                None,
            )
            took = end["mono_ms"] - start["mono_ms"] if end else 0.0
            if end and lo <= end["mono_ms"] <= hi and took >= NOTABLE_MS:
                return (
                    f", which spent {_s(took)} in its revoke callback while its processing thread finished "
                    f"the {start.get('in_flight')} records it held,"
                )
        return ""

    def heard_late(self, member: str, lo: float, hi: float) -> str:
        """A member already in the group hears of a rebalance in the answer to its next heartbeat."""
        heard = [e for e in self.h.where(ev.REBALANCE_STARTED, member=member) if lo <= e["mono_ms"] <= hi]
        return (
            ", which heard of it at its next heartbeat,"
            if any("rebalance in progress" in str(e.get("reason", "")).lower() for e in heard)
            else ""
        )

    def join_sent(self, r: Rebalance) -> dict[str, Event]:
        """Each member's first JoinGroup for this generation (its retries are the same join)."""
        return {slot.member: sent[0] for slot, sent in join_sent_by_generation(self.h).get(r.generation, {}).items()}

    def sync(self, r: Rebalance) -> Wait | None:
        if r.sync_ms is None or r.stabilized is None:
            return None
        received = self.assignment_received.get(r.generation)
        if r.leader and received:
            ms = max(
                0.0, received["mono_ms"] - r.stabilized.mono_ms
            )  # the leader may sync before the last join is seen
            return Wait(
                "sync",
                "leader-assignment",
                ms,
                r.leader.split("#")[0],
                f"the leader {r.leader} sent its assignment {_s(ms)} after the join phase ended",
            )
        synced = self.h.where(ev.GROUP_SYNCED, generation=r.generation)
        if not synced:
            return None
        last = max(synced, key=lambda e: e["mono_ms"])
        return Wait(
            "sync",
            "slowest-sync",
            r.sync_ms,
            last.get("member"),
            f"{last.get('member')} got its assignment last, {_s(r.sync_ms)} after joining",
        )
