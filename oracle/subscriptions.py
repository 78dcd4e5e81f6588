"""Who subscribed to what: each member's subscription, read from the history.

Members of one group may subscribe to different topics (``workload.subscriptions``; a
pattern matched against each member's own metadata). The assignors give a topic's
partitions only to the members subscribed to it, so the checks judge ownership against
each member's own subscription, never the group's topics as a whole:

- a partition of topic T owned by a member not subscribed to T is a violation
  (assignment-validity, ``unsubscribed-partition``);
- a partition must be owned while some live member subscribes to its topic, and only then
  (convergence, assignment-validity's ``unassigned-partition``).

A member's subscription is what its ``consumer_started`` declares (``subscription``: topics
by name, or a pattern); a history written before members declared it takes the group's,
from ``run_started`` (``topic_pattern``, else the group's topics: ``topics`` and those the
harness said the group consumes, ``topic_created`` / ``partitions_added``) — every member of
those runs subscribed to exactly that. A history with neither (a converted log) says nothing: not judged.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from . import vocabulary as ev
from .history import Event, History, MemberProcesses, MemberSlot


@dataclass(frozen=True)
class Subscription:
    """Topics by name, or a pattern (a regular expression matched from the topic's start)."""

    topics: frozenset[str] | None = None
    pattern: str | None = None
    name: str | None = None  # its workload.subscriptions entry, where it has one

    def covers(self, topic: str) -> bool:
        if self.pattern is not None:
            try:
                return re.match(self.pattern, topic) is not None
            except re.error:  # not a pattern this reader can match: it judges nothing by it
                return True
        return topic in (self.topics or ())

    def __str__(self) -> str:
        shown = f"pattern {self.pattern}" if self.pattern is not None else ", ".join(sorted(self.topics or ()))
        return f"{self.name} ({shown})" if self.name else shown


def _declared(started: Event | None, run: Event, group_topics: frozenset[str]) -> Subscription | None:
    said = (started or {}).get("subscription")
    if isinstance(said, dict):
        name = said.get("name") if isinstance(said.get("name"), str) else None
        if isinstance(said.get("pattern"), str):
            return Subscription(pattern=said["pattern"], name=name)
        if isinstance(said.get("topics"), list):
            return Subscription(topics=frozenset(t for t in said["topics"] if isinstance(t, str)), name=name)
        return None
    if run.get("subscriptions"):  # members with different subscriptions, one of which did not say its own
        return None
    if isinstance(run.get("topic_pattern"), str):
        return Subscription(pattern=run["topic_pattern"])
    if run.get("topics"):  # and any topic the harness said the group consumes (topic_created, partitions_added)
        return Subscription(topics=group_topics)
    return None


@dataclass(frozen=True)
class Life:
    """One member incarnation: from its consumer_started until it stopped, exited or was started again."""

    slot: MemberSlot
    start_ms: float
    end_ms: float
    subscription: Subscription | None


class Subscriptions:
    """Every member incarnation's subscription and life (``subscriptions_of``)."""

    def __init__(self, history: History):
        run = history.run or {}
        group_topics = frozenset(tp.topic for tp in history.partitions)
        self.lives: list[Life] = []
        self._of: dict[MemberSlot, Subscription | None] = {}
        open_: dict[str, tuple[MemberSlot, float, Subscription | None]] = {}
        processes = MemberProcesses()

        def close(member: str, at: float) -> None:
            if member in open_:
                slot, start, subscription = open_.pop(member)
                self.lives.append(Life(slot, start, at, subscription))

        for e in history.named(ev.CONSUMER_STARTED, ev.CONSUMER_STOPPED, ev.CLIENT_DESTROYED, ev.PROCESS_EXITED):
            if e["name"] == ev.CONSUMER_STARTED:
                slot = MemberSlot.of(e)
                close(slot.member, e["mono_ms"])
                self._of[slot] = subscription = _declared(e, run, group_topics)
                open_[slot.member] = (slot, e["mono_ms"], subscription)
                processes.started(e)
                continue
            if e["name"] == ev.PROCESS_EXITED:
                ended = processes.exited(e)
                if ended is None:  # no member ran in its pid, as far as the history says: the one it names
                    ended = (
                        [open_[e["process"]][0]] if e.get("role") == "consumer" and e.get("process") in open_ else []
                    )
            else:
                ended = [MemberSlot.of(e)]
            for slot in ended:
                if slot.member in open_ and open_[slot.member][0] == slot:
                    close(slot.member, e["mono_ms"])
        for member in list(open_):
            close(member, math.inf)
        self.lives.sort(key=lambda life: life.start_ms)
        self._fallback = _declared(None, run, group_topics)
        declared = set(self._of.values())
        # Mixed: members subscribed differently; else each live member covers the same topics.
        self.mixed = len({(s.topics, s.pattern) if s else None for s in declared}) > 1

    def of(self, slot: MemberSlot) -> Subscription | None:
        """The slot's subscription; a slot with no consumer_started (a converted log) takes the group's."""
        return self._of.get(slot, self._fallback)

    def live_at(self, mono_ms: float) -> list[Life]:
        """The member incarnations running at an instant (half-open: one that ended then no longer is)."""
        return [life for life in self.lives if life.start_ms <= mono_ms < life.end_ms]

    def wanted(self, topic: str, mono_ms: float) -> bool:
        """Whether a partition of ``topic`` must be owned at an instant: some live member subscribes to
        it. Where every member subscribed alike (or nobody is live), every topic of the group is."""
        if not self.mixed:
            return True
        live = self.live_at(mono_ms)
        return not live or any(life.subscription is None or life.subscription.covers(topic) for life in live)


def subscriptions_of(history: History) -> Subscriptions:
    return history.memo("subscriptions", lambda: Subscriptions(history))
