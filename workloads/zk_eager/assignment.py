"""What a 0.8 consumer's rebalance computes — the range assignment over the sorted consumer
threads — and what it computes it from (``Inputs``: any change means a new rebalance)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def range_assignment(partitions: Sequence[int], threads: Sequence[str]) -> dict[str, list[int]]:
    """One topic's partitions over its consumer threads, as the 0.8 consumer did it:
    both sorted, N = P // C, M = P % C, thread i gets [i*N + min(i, M), (i+1)*N + min(i+1, M)).
    The first M threads get one partition more; with more threads than partitions the
    last ones get none. (The oracle has its own copy of the definition on purpose: it
    checks this one.)"""
    ordered_partitions, ordered_threads = sorted(partitions), sorted(threads)
    if not ordered_threads:
        return {}
    per_thread, extra = divmod(len(ordered_partitions), len(ordered_threads))
    out = {}
    for i, thread in enumerate(ordered_threads):
        first = i * per_thread + min(i, extra)
        out[thread] = ordered_partitions[first : first + per_thread + (1 if i < extra else 0)]
    return out


@dataclass(frozen=True)
class Inputs:
    """What a rebalance is computed from; any difference since the last attempt means a new one."""

    generation: int  # cversion of /consumers/<g>/ids
    consumers: tuple[str, ...]
    brokers: tuple[str, ...]
    topics: tuple[tuple[str, int, int], ...]  # (topic, partitions, data version) of subscribed topics

    def change_since(self, before: Inputs | None) -> str | None:
        if before is None:
            return "first view of the group"
        if self.consumers != before.consumers or self.generation != before.generation:
            return "consumers changed"
        if self.brokers != before.brokers:
            return "brokers changed"
        if self.topics != before.topics:
            return "topic partitions changed"
        return None
