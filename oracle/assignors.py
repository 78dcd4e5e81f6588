"""The eager assignors' layouts, by definition, to compare a generation against.

Members come sorted the way the client's assignor sorts them: by
group.instance.id when every member is static, else by member id.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Hashable, Sequence

from .history import TopicPartition

Layout = dict[Hashable, frozenset[TopicPartition]]


def range_layout(partitions: Sequence[TopicPartition], members: Sequence[Hashable]) -> Layout:
    """Per topic: N = P // C, M = P % C; member i gets [i*N + min(i, M), (i+1)*N + min(i+1, M))."""
    by_topic: dict[str, list[TopicPartition]] = defaultdict(list)
    for tp in sorted(partitions):
        by_topic[tp.topic].append(tp)
    layout: dict[Hashable, set[TopicPartition]] = {m: set() for m in members}
    n_members = len(members)
    for tps in by_topic.values():
        n, m = divmod(len(tps), n_members)
        for i, member in enumerate(members):
            layout[member].update(tps[i * n + min(i, m):(i + 1) * n + min(i + 1, m)])
    return {member: frozenset(tps) for member, tps in layout.items()}


def roundrobin_layout(partitions: Sequence[TopicPartition], members: Sequence[Hashable]) -> Layout:
    """All partitions, sorted by topic then partition, dealt to the members in turn."""
    layout: dict[Hashable, set[TopicPartition]] = {m: set() for m in members}
    for i, tp in enumerate(sorted(partitions)):
        layout[members[i % len(members)]].add(tp)
    return {member: frozenset(tps) for member, tps in layout.items()}


LAYOUTS: dict[str, Callable[[Sequence[TopicPartition], Sequence[Hashable]], Layout]] = {
    "range": range_layout,
    "roundrobin": roundrobin_layout,
}
