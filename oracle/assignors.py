"""The eager assignors' layouts, by definition, to compare a generation against.

Members come sorted the way the client's assignor sorts them: by
group.instance.id when every member is static, else by member id. Each member
may subscribe to different topics (a pattern subscription matched against each
member's own metadata); a topic then goes only to the members subscribed to it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence

from .history import TopicPartition

Layout = dict[Hashable, frozenset[TopicPartition]]
Subscriptions = Mapping[Hashable, frozenset[str]] | None  # None: every member subscribes to every topic


def _subscribed(subscriptions: Subscriptions, member: Hashable, topic: str) -> bool:
    return subscriptions is None or topic in subscriptions[member]


def range_layout(
    partitions: Sequence[TopicPartition], members: Sequence[Hashable], subscriptions: Subscriptions = None
) -> Layout:
    """Per topic, over its C subscribers: N = P // C, M = P % C; subscriber i gets
    [i*N + min(i, M), (i+1)*N + min(i+1, M))."""
    by_topic: dict[str, list[TopicPartition]] = defaultdict(list)
    for tp in sorted(partitions):
        by_topic[tp.topic].append(tp)
    layout: dict[Hashable, set[TopicPartition]] = {m: set() for m in members}
    for topic, tps in by_topic.items():
        subscribers = [member for member in members if _subscribed(subscriptions, member, topic)]
        if not subscribers:
            continue
        n, m = divmod(len(tps), len(subscribers))
        for i, member in enumerate(subscribers):
            layout[member].update(tps[i * n + min(i, m) : (i + 1) * n + min(i + 1, m)])
    return {member: frozenset(tps) for member, tps in layout.items()}


def roundrobin_layout(
    partitions: Sequence[TopicPartition], members: Sequence[Hashable], subscriptions: Subscriptions = None
) -> Layout:
    """All partitions, sorted by topic then partition, dealt to the members in turn,
    skipping members not subscribed to the partition's topic."""
    layout: dict[Hashable, set[TopicPartition]] = {m: set() for m in members}
    turn = -1
    for tp in sorted(partitions):
        if not any(_subscribed(subscriptions, member, tp.topic) for member in members):
            continue
        turn = (turn + 1) % len(members)
        while not _subscribed(subscriptions, members[turn], tp.topic):
            turn = (turn + 1) % len(members)
        layout[members[turn]].add(tp)
    return {member: frozenset(tps) for member, tps in layout.items()}


# KIP-881: with client.rack on members and broker.rack on brokers these assignors may place a
# partition on a member in a rack of one of its replicas (Java clients 3.5+, librdkafka 2.3+),
# which the layouts above do not model: their layout is not judged where racks are on both sides.
RACK_AWARE_ASSIGNORS = frozenset({"range", "cooperative-sticky"})

LAYOUTS: dict[str, Callable[[Sequence[TopicPartition], Sequence[Hashable], Subscriptions], Layout]] = {
    "range": range_layout,
    "roundrobin": roundrobin_layout,
}
