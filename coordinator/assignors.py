"""Partition assignors of the project's coordinator: the coordinator itself runs them
in v1, the group leader member in v2/v3 (the same code, so the variants differ only
in *who* assigns). The oracle keeps its own copy of the definitions, on purpose:
it checks these.

Members are sorted by member id; each topic goes only to the members subscribed to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

Assignment = dict[str, list[tuple[str, int]]]  # member id -> [(topic, partition)]


def range_assign(subscriptions: Mapping[str, list[str]], partitions: Mapping[str, int]) -> Assignment:
    """Per topic, over its sorted subscribers: N = P // C, M = P % C, subscriber i gets
    [i*N + min(i, M), (i+1)*N + min(i+1, M))."""
    out: Assignment = {member: [] for member in sorted(subscriptions)}
    for topic in sorted(partitions):
        subscribers = [m for m in sorted(subscriptions) if topic in subscriptions[m]]
        if not subscribers:
            continue
        n, extra = divmod(partitions[topic], len(subscribers))
        for i, member in enumerate(subscribers):
            first = i * n + min(i, extra)
            out[member] += [(topic, p) for p in range(first, first + n + (1 if i < extra else 0))]
    return out


def roundrobin_assign(subscriptions: Mapping[str, list[str]], partitions: Mapping[str, int]) -> Assignment:
    """Every partition, sorted by topic then partition, dealt in turn to the sorted members,
    skipping those not subscribed to its topic."""
    members = sorted(subscriptions)
    out: Assignment = {member: [] for member in members}
    turn = -1
    for topic in sorted(partitions):
        if not any(topic in subscriptions[m] for m in members):
            continue
        for p in range(partitions[topic]):
            turn = (turn + 1) % len(members)
            while topic not in subscriptions[members[turn]]:
                turn = (turn + 1) % len(members)
            out[members[turn]].append((topic, p))
    return out


ASSIGNORS: dict[str, Callable[[Mapping[str, list[str]], Mapping[str, int]], Assignment]] = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
}
