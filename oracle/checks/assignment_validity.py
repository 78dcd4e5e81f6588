"""assignment-validity: every completed generation hands out every partition exactly once.

A generation is complete once every member that joined it reported its
assignment. Cooperative generations in which members revoked partitions are
deliberately partial (KIP-429's first phase: the moved partitions go to nobody
until the follow-up rebalance), so there only double assignment is checked.
KIP-848 (`consumer`) epochs are reached member by member, so they too are only
checked for double assignment. For eager range / roundrobin the layout must also
match the assignor's definition; cooperative-sticky has no closed-form layout.
Members that reported their subscriptions (librdkafka's, with a pattern) are
held to them: a topic only some members' metadata matched yet goes to those.
"""
from __future__ import annotations

from collections import defaultdict

from ..anomalies import Anomaly, CheckResult, members
from ..assignors import LAYOUTS
from ..history import History, Instant, MemberSlot, TopicPartition, render_partitions
from ..ownership import ownership_of
from ..rebalances import COMPLETED, rebalances_of

NAME = "assignment-validity"
OPTIONS: dict = {}
# zk-eager: range over sorted threads; the project's coordinator: range/roundrobin over sorted member ids.
LAYOUT_PROTOCOLS = frozenset({"classic-eager", "classic-static", "zk-eager",
                              "coordinator-v1", "coordinator-v2", "coordinator-v3"})


def check(history: History, options: dict) -> CheckResult:
    ownership = ownership_of(history)
    result = CheckResult()
    checked, partial, layouts = [], [], []
    for rebalance in rebalances_of(history):
        if rebalance.status != COMPLETED:
            continue
        generation = rebalance.generation
        assignment = ownership.assignments.get(generation, {})
        checked.append(generation)
        owners: dict[TopicPartition, list[MemberSlot]] = defaultdict(list)
        for slot, tps in assignment.items():
            for tp in tps:
                owners[tp].append(slot)
        for tp, slots in sorted(owners.items()):
            if len(slots) > 1:
                names = members(*sorted(slots))
                result.violations.append(Anomaly(
                    NAME, "double-assignment",
                    f"generation {generation} assigned {tp} to {len(slots)} members: {', '.join(names)}",
                    partition=str(tp), members=names, generation=generation,
                    times={"assigned": rebalance.end}))
        # KIP-848 members reach an epoch one by one, each reconciling on its own heartbeat:
        # an epoch's snapshot is partial by design (convergence judges the end state).
        if generation in ownership.incremental_revokes or history.protocol == "consumer":
            partial.append(generation)
            continue
        at = rebalance.end.mono_ms if rebalance.end else history.end.mono_ms
        subscriptions = _subscriptions(history, generation, list(assignment))
        subscribed = history.partitions_at(at)
        if subscriptions is not None:
            topics = frozenset().union(*subscriptions.values())
            subscribed = [tp for tp in subscribed if tp.topic in topics]
        missing = [tp for tp in subscribed if tp not in owners]
        if missing:
            result.violations.append(Anomaly(
                NAME, "unassigned-partition",
                f"generation {generation} left {render_partitions(missing)} unassigned "
                f"(members: {', '.join(rebalance.members)})",
                partition=str(missing[0]) if len(missing) == 1 else None, members=tuple(rebalance.members),
                generation=generation, times={"assigned": rebalance.end}))
        assignor = _assignor(history, generation)
        if assignor in LAYOUTS and history.protocol in LAYOUT_PROTOCOLS and assignment:
            layouts.append(generation)
            result.violations.extend(_layout(history, generation, assignor, assignment, subscribed, subscriptions,
                                             rebalance.end))
    result.detail = {"generations_checked": checked, "partial_cooperative_generations": partial,
                     "layouts_checked": layouts}
    return result


def _assignor(history: History, generation: int) -> str | None:
    """The assignor the group actually chose (JoinGroup's protocol_name), else the configured one."""
    joined = history.first("group_joined", generation=generation)
    return (joined or {}).get("protocol_name") or history.assignor


def _subscriptions(history: History, generation: int,
                   slots: list[MemberSlot]) -> dict[MemberSlot, frozenset[str]] | None:
    """Each member's subscription as the JoinGroup that got it into this generation
    carried it; None unless every member reported one (then all subscribe to all)."""
    subscriptions = {}
    for slot in slots:
        mine = {"member": slot.member, "incarnation": slot.incarnation}
        joined = history.first("group_joined", generation=generation, **mine)
        until = joined["mono_ms"] if joined else history.end.mono_ms
        sent = [e["mono_ms"] for e in history.named("group_join_sent") if _is(e, mine) and e["mono_ms"] <= until]
        until = sent[-1] if sent else until
        changed = [e for e in history.named("subscription_changed") if _is(e, mine) and e["mono_ms"] <= until]
        if not changed:
            return None
        subscriptions[slot] = frozenset(changed[-1]["topics"])
    return subscriptions


def _is(event: dict, where: dict) -> bool:
    return all(event.get(k) == v for k, v in where.items())


def _member_order(history: History, generation: int, slots: list[MemberSlot]) -> tuple[list[MemberSlot], str]:
    """Members in the order the assignor sees them, and what that order is by."""
    ids = {}
    for slot in slots:
        joined = history.first("group_joined", generation=generation, member=slot.member, incarnation=slot.incarnation)
        started = history.first("consumer_started", member=slot.member, incarnation=slot.incarnation) or {}
        ids[slot] = (started.get("group_instance_id"), (joined or {}).get("member_id") or slot.member)
    if all(instance for instance, _ in ids.values()):
        return sorted(slots, key=lambda s: ids[s][0]), "group.instance.id"
    return sorted(slots, key=lambda s: ids[s][1]), "member id"


def _layout(history: History, generation: int, assignor: str, assignment: dict[MemberSlot, frozenset[TopicPartition]],
            partitions: list[TopicPartition], subscriptions: dict[MemberSlot, frozenset[str]] | None,
            at: Instant | None) -> list[Anomaly]:
    ordered, basis = _member_order(history, generation, list(assignment))
    expected = LAYOUTS[assignor](partitions, ordered, subscriptions)
    return [
        Anomaly(
            NAME, "layout-mismatch",
            f"generation {generation} ({assignor} over {len(ordered)} members sorted by {basis}): {slot} (#{i}) got "
            f"{render_partitions(assignment[slot])} but {assignor} assigns it {render_partitions(expected[slot])}",
            members=members(slot), generation=generation, times={"assigned": at} if at else {})
        for i, slot in enumerate(ordered) if assignment[slot] != expected[slot]
    ]
