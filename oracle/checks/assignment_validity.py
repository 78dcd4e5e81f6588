"""assignment-validity: every completed generation hands out every partition exactly once.

A generation is complete once every member that joined it reported its
assignment. Cooperative generations in which members revoked partitions are
deliberately partial (KIP-429's first phase: the moved partitions go to nobody
until the follow-up rebalance), so there only double assignment is checked.
KIP-848 (`consumer`) epochs are reached member by member, so they too are only
checked for double assignment — and so are the epochs of a migrated group while it was a
consumer group, classic members and all (the brokers assign them, with their own assignor:
no layout is judged then either). For eager range / roundrobin the layout must also
match the assignor's definition; cooperative-sticky has no closed-form layout.
Members are held to their own subscriptions (oracle/subscriptions.py): a partition of
a topic a member did not subscribe to is never its own (`unsubscribed-partition`, in every
generation, cooperative and KIP-848 ones too), and a generation need only hand out the
topics its members subscribe to. Where members say their effective subscription
(librdkafka's, with a pattern: a topic only some members' metadata matched yet goes to
those) that is what the layout is computed from, else the subscription each declared. With
different subscriptions the layouts are computed as the assignors define them then: range
per topic over its subscribers; roundrobin dealing each partition to the next member
subscribed to its topic (Java's and librdkafka's alike). With racks on both the members and
the brokers, range (and cooperative-sticky) may place partitions by rack (KIP-881, Java
clients 3.5+, librdkafka 2.3+): its layout is not judged there, and the detail says so.

The coordinator's own count of a generation's members (its "Stabilized … with N
members") is part of the evidence: a member it counted that never got its
JoinGroup answer (stopped right after sending it) was assigned partitions by the
leader all the same. Those are held by nobody until its session expires — a
finding (`held-by-absent-member`, with how long), and the layout is checked
over every member the coordinator counted.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict

from .. import vocabulary as ev
from ..anomalies import Anomaly, CheckResult, duration, listed, members, plural
from ..assignors import LAYOUTS, RACK_AWARE_ASSIGNORS
from ..history import History, Instant, MemberSlot, TopicPartition, render_partitions
from ..ownership import ownership_of
from ..protocols import LAYOUT_PROTOCOLS
from ..rebalances import COMPLETED, rebalances_of, run_rebalances
from ..subscriptions import subscriptions_of

NAME = "assignment-validity"
OPTIONS: dict = {}
# A broker's log line is stamped to the millisecond and placed among the members' events with an
# offset measured at each read of its log: the JoinGroup that completed the generation before
# may carry a stamp just after that generation's "Stabilized". Not this generation's.
BROKER_STAMP_SLACK_MS = 50.0


def check(history: History, options: dict) -> CheckResult:
    ownership = ownership_of(history)
    result = CheckResult()
    checked, partial, layouts, rack_aware = [], [], [], []
    result.violations.extend(_unsubscribed(history, ownership))
    stabilized = {r.generation: r.coordinator_stabilized for r in rebalances_of(history)}
    for rebalance in run_rebalances(history):  # the harness's teardown is not the group's doing
        if rebalance.status != COMPLETED:
            continue
        generation = rebalance.generation
        assignment = ownership.assignments.get(generation, {})
        # A consumer group's epochs are reached member by member, classic members of a migrated
        # group included (their JoinGroup is answered with their own epoch): in a run of one
        # generation its row says so, in a mixed one the instant does (History.consumer_group_at).
        # Judged when its last member joined: the rebalance that follows the conversion back to a
        # classic group begins with the last consumer-protocol member's leave, inside its span.
        member_epochs = history.consumer_group_at(rebalance.stabilized.mono_ms) if rebalance.stabilized else False
        checked.append(generation)
        owners: dict[TopicPartition, list[MemberSlot]] = defaultdict(list)
        for slot, tps in assignment.items():
            for tp in tps:
                owners[tp].append(slot)
        for tp, slots in sorted(owners.items()):
            if len(slots) > 1:
                names = members(*sorted(slots))
                result.violations.append(
                    Anomaly(
                        NAME,
                        "double-assignment",
                        f"generation {generation} assigned {tp} to {len(slots)} members: {', '.join(names)}",
                        partition=str(tp),
                        members=names,
                        generation=generation,
                        times={"assigned": rebalance.end},
                    )
                )
        # KIP-848 members reach an epoch one by one, each reconciling on its own heartbeat:
        # an epoch's snapshot is partial by design (convergence judges the end state).
        if generation in ownership.incremental_revokes or member_epochs:
            partial.append(generation)
            continue
        at = rebalance.end.mono_ms if rebalance.end else history.end.mono_ms
        subscriptions = _subscriptions(history, generation, list(assignment))
        subscribed = history.partitions_at(at)
        if subscriptions is not None:
            topics = frozenset().union(*subscriptions.values())
            subscribed = [tp for tp in subscribed if tp.topic in topics]
        missing = [tp for tp in subscribed if tp not in owners]
        absent = _absent_members(history, rebalance, stabilized.get(generation - 1))
        assignor = _assignor(history, generation)
        # Each member's own generation: in a migrated group back on the classic protocol, only
        # generations whose members all ran an eager range / roundrobin generation have a layout.
        layout_applies = (
            assignor in LAYOUTS
            and bool(assignment)
            and all(history.protocol_of(slot) in LAYOUT_PROTOCOLS for slot in assignment)
        )
        if layout_applies and assignor in RACK_AWARE_ASSIGNORS and _racks_on_both_sides(history, list(assignment)):
            layout_applies = False
            rack_aware.append(generation)
        if not absent:  # everyone the coordinator counted joined, or nobody to blame: the assignment is theirs
            if missing:
                result.violations.append(_unassigned(rebalance, missing))
            if layout_applies:
                layouts.append(generation)
                result.violations.extend(
                    _layout(history, generation, assignor, assignment, subscribed, subscriptions, rebalance.end)
                )
            continue
        # The coordinator stabilized the generation with members that never got their JoinGroup
        # answer (stopped right after sending it; a static member leaves no LeaveGroup behind).
        # The leader assigned them partitions all the same: held by nobody until their session
        # expires. A finding, not an invalid assignment; the layout includes them where it can.
        expected = None
        if layout_applies and len(absent) == rebalance.coordinator_members - len(rebalance.members):
            everyone = {**assignment, **{slot: frozenset() for slot in absent}}
            expected = _expected_layout(history, generation, assignor, everyone, subscribed, subscriptions)
        if expected is not None:
            layouts.append(generation)
            result.violations.extend(
                _layout(history, generation, assignor, assignment, subscribed, subscriptions, rebalance.end, expected)
            )
            held = sorted(tp for slot in absent for tp in expected[slot])
            stray = sorted(set(missing) - set(held))
            if stray:
                result.violations.append(_unassigned(rebalance, stray, ", beyond what its absent members were due"))
            missing = [tp for tp in missing if tp in held]
        if missing:
            result.findings.append(_held_by_absent(history, rebalance, absent, missing, ownership))
    result.detail = {
        "generations_checked": checked,
        "partial_cooperative_generations": partial,
        "layouts_checked": layouts,
    }
    if rack_aware:
        result.detail["layouts_not_judged_rack_aware"] = rack_aware
    return result


def _unsubscribed(history: History, ownership) -> list[Anomaly]:
    """Every partition a member owned of a topic it did not subscribe to: once per member
    incarnation and partition, at its first such ownership."""
    subscriptions, seen, found = subscriptions_of(history), set(), []
    for session in sorted(ownership.sessions, key=lambda s: s.start_ms):
        key = (session.slot, session.tp)
        subscription = subscriptions.of(session.slot)
        if key in seen or subscription is None or subscription.covers(session.tp.topic):
            continue
        seen.add(key)
        gen = f"generation {session.generation}" if session.generation is not None else "no generation"
        found.append(
            Anomaly(
                NAME,
                "unsubscribed-partition",
                f"{session.slot} owned {session.tp} ({gen}, from {history.clock(session.start_ms)}) but is not "
                f"subscribed to topic {session.tp.topic}: its subscription is {subscription}",
                partition=str(session.tp),
                members=members(session.slot),
                generation=session.generation,
                times={"assigned": session.start},
            )
        )
    return found


def _racks_on_both_sides(history: History, slots: list[MemberSlot]) -> bool:
    """Brokers with racks and some member with a client.rack, and the Kafka client's assignor at
    the group leader computing the assignment (Kafka's classic protocol): KIP-881's rack-aware
    placement may apply. (The 0.8 consumer and the project's coordinator's members assign by the
    definition, racks or not.)"""
    if not (history.run or {}).get("broker_racks"):
        return False
    for slot in slots:
        generation = history.generation_of(slot)
        if generation is None or not generation.classic or generation.assignor_runs_on != "group-leader":
            continue
        started = history.first(ev.CONSUMER_STARTED, member=slot.member, incarnation=slot.incarnation) or {}
        if started.get("client_rack"):
            return True
    return False


def _unassigned(rebalance, missing: list[TopicPartition], beyond: str = "") -> Anomaly:
    return Anomaly(
        NAME,
        "unassigned-partition",
        f"generation {rebalance.generation} left {render_partitions(missing)} unassigned{beyond} "
        f"(members: {listed(rebalance.members)})",
        partition=str(missing[0]) if len(missing) == 1 else None,
        members=tuple(rebalance.members),
        generation=rebalance.generation,
        times={"assigned": rebalance.end},
    )


def _assignor(history: History, generation: int) -> str | None:
    """The assignor the group actually chose (JoinGroup's protocol_name), else the configured one."""
    joined = history.first(ev.GROUP_JOINED, generation=generation)
    return (joined or {}).get("protocol_name") or history.assignor


def _subscriptions(
    history: History, generation: int, slots: list[MemberSlot]
) -> dict[MemberSlot, frozenset[str]] | None:
    """Each member's subscription as the JoinGroup that got it into this generation
    carried it (its effective subscription, librdkafka's), else the one it declared; None
    when some member has neither (then all subscribe to all)."""
    subscriptions = {}
    for slot in slots:
        mine = {"member": slot.member, "incarnation": slot.incarnation}
        joined = history.first(ev.GROUP_JOINED, generation=generation, **mine)
        until = joined["mono_ms"] if joined else history.end.mono_ms
        sent = _last_by(history.where(ev.GROUP_JOIN_SENT, **mine), until)
        until = sent["mono_ms"] if sent else until
        changed = _last_by(history.where(ev.SUBSCRIPTION_CHANGED, **mine), until)
        if changed:
            subscriptions[slot] = frozenset(changed["topics"])
            continue
        declared = subscriptions_of(history).of(slot)  # what it subscribed to, as it started
        if declared is None:
            return None
        subscriptions[slot] = frozenset(t for t in {tp.topic for tp in history.partitions} if declared.covers(t))
    return subscriptions


def _last_by(events: list[dict], until: float) -> dict | None:
    """The last of these events (in time order) written at or before `until`."""
    i = bisect_right(events, until, key=lambda e: e["mono_ms"])
    return events[i - 1] if i else None


def _member_order(history: History, generation: int, slots: list[MemberSlot]) -> tuple[list[MemberSlot], str]:
    """Members in the order the assignor sees them, and what that order is by."""
    ids = {}
    for slot in slots:
        joined = history.first(ev.GROUP_JOINED, generation=generation, member=slot.member, incarnation=slot.incarnation)
        started = history.first(ev.CONSUMER_STARTED, member=slot.member, incarnation=slot.incarnation) or {}
        ids[slot] = (started.get("group_instance_id"), (joined or {}).get("member_id") or slot.member)
    if all(instance for instance, _ in ids.values()):
        return sorted(slots, key=lambda s: ids[s][0]), "group.instance.id"
    return sorted(slots, key=lambda s: ids[s][1]), "member id"


def _expected_layout(
    history: History,
    generation: int,
    assignor: str,
    assignment: dict[MemberSlot, frozenset[TopicPartition]],
    partitions: list[TopicPartition],
    subscriptions: dict[MemberSlot, frozenset[str]] | None,
) -> dict | None:
    """The assignor's layout over these members, or None when their order cannot be known:
    a dynamic member that never got its JoinGroup answer has no member id in the history."""
    ordered, basis = _member_order(history, generation, list(assignment))
    if basis != "group.instance.id" and any(
        not history.first(ev.GROUP_JOINED, generation=generation, member=s.member, incarnation=s.incarnation)
        for s in assignment
    ):
        return None
    if subscriptions is not None and not set(assignment) <= set(subscriptions):
        subscriptions = None
    return LAYOUTS[assignor](partitions, ordered, subscriptions)


def _layout(
    history: History,
    generation: int,
    assignor: str,
    assignment: dict[MemberSlot, frozenset[TopicPartition]],
    partitions: list[TopicPartition],
    subscriptions: dict[MemberSlot, frozenset[str]] | None,
    at: Instant | None,
    expected: dict | None = None,
) -> list[Anomaly]:
    ordered, basis = _member_order(history, generation, list(expected or assignment))
    expected = expected or LAYOUTS[assignor](partitions, ordered, subscriptions)
    return [
        Anomaly(
            NAME,
            "layout-mismatch",
            f"generation {generation} ({assignor} over {len(ordered)} members sorted by {basis}): {slot} (#{i}) got "
            f"{render_partitions(assignment[slot])} but {assignor} assigns it {render_partitions(expected[slot])}",
            members=members(slot),
            generation=generation,
            times={"assigned": at} if at else {},
        )
        for i, slot in enumerate(ordered)
        if slot in assignment and assignment[slot] != expected[slot]
    ]


def _absent_members(history: History, rebalance, previous: Instant | None) -> list[MemberSlot] | None:
    """Members the coordinator counted in a generation without their JoinGroup answer, or None
    when it counted no more than joined (or did not say). They are the members that sent a
    JoinGroup for this rebalance — after it began, or after the coordinator stabilized the
    generation before (``previous``: a newcomer's JoinGroup is what makes the coordinator
    prepare the next one, so it is sent before the "Preparing" line), by the coordinator's
    "Stabilized" — and got no answer by then. An empty list: the coordinator counted more,
    and nobody is to blame."""
    counted, stabilized = rebalance.coordinator_members, rebalance.coordinator_stabilized
    if counted is None or stabilized is None or counted <= len(rebalance.members):
        return None
    opened = [i.mono_ms for i in (rebalance.start, rebalance.coordinator_preparing) if i]
    if previous:
        opened.append(previous.mono_ms + BROKER_STAMP_SLACK_MS)
    began = min(opened, default=stabilized.mono_ms)
    joined_members = set(rebalance.members)
    waiting: dict[MemberSlot, bool] = {}
    # A join answered with an error (MEMBER_ID_REQUIRED: a dynamic newcomer the coordinator keeps
    # pending, not counted) is answered; its retry waits again.
    for e in history.named(ev.GROUP_JOIN_SENT, ev.GROUP_JOINED, ev.GROUP_JOIN_FAILED):
        if e["mono_ms"] > stabilized.mono_ms:
            break
        if e["mono_ms"] >= began:
            waiting[MemberSlot.of(e)] = e["name"] == ev.GROUP_JOIN_SENT
    return sorted(slot for slot, unanswered in waiting.items() if unanswered and str(slot) not in joined_members)


def _held_by_absent(
    history: History, rebalance, absent: list[MemberSlot], missing: list[TopicPartition], ownership
) -> Anomaly:
    generation, end = rebalance.generation, rebalance.end
    who = listed([str(s) for s in absent])
    unowned = {}
    for tp in missing:
        later = [s.start_ms for s in ownership.of_partition(tp) if s.start_ms >= end.mono_ms]
        unowned[tp] = (min(later) - end.mono_ms) if later else None
    longest = max((v for v in unowned.values() if v is not None), default=None)
    until = (
        "held by nobody until the end of the run"
        if any(v is None for v in unowned.values())
        else f"held by nobody in practice for up to {duration(longest)}, until the group reassigned them"
    )
    extra = rebalance.coordinator_members - len(rebalance.members)
    return Anomaly(
        NAME,
        "held-by-absent-member",
        f"generation {generation}: the coordinator stabilized it with {rebalance.coordinator_members} members but "
        f"only {len(rebalance.members)} joined ({listed(rebalance.members)}); {render_partitions(missing)} went to "
        f"no member that joined — the leader assigned them among the {plural(extra, 'member')} counted without an "
        f"answered JoinGroup ({who}) — and were {until}",
        partition=str(missing[0]) if len(missing) == 1 else None,
        members=members(*absent),
        generation=generation,
        times={"assigned": end}
        | ({ev.COORDINATOR_STABILIZED: rebalance.coordinator_stabilized} if rebalance.coordinator_stabilized else {}),
    )
