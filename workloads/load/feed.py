"""The run's rebalances as they settle, measured by the oracle on the live history.

Locust is told each rebalance once (workloads/load/locustfile.py): the oracle's own
measurement (oracle/rebalances.py) of the history written so far, so the figures Locust
shows are the ones the verdict will have. A rebalance is told once it is completed and
has been over for ``settle_s`` by the history's clock — a member's last events of it may
reach the file a little later — and every one still untold once the run is ``done``.
Teardown and superseded generations are never told (they have no duration in the verdict).

Beside them, the records' latencies as the producer and the members wrote them (``latency_ms``
of records_acked: produce() to acknowledgement; ``e2e_ms`` of records_consumed: CreateTime to
processed), as they arrive: one (kind, ms, records) per histogram bucket.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from oracle import vocabulary as ev
from oracle.history import History, sort_key
from oracle.rebalances import COMPLETED, run_rebalances
from runtime.tail import FileTail

PRODUCE, END_TO_END = "produce", "end-to-end"
_LATENCIES = {ev.RECORDS_ACKED: ("latency_ms", PRODUCE), ev.RECORDS_CONSUMED: ("e2e_ms", END_TO_END)}
# The bulk of a history, which measuring rebalances never reads.
_BULK = frozenset({ev.RECORDS_CONSUMED, ev.RECORDS_ACKED, ev.OFFSETS_COMMITTED, ev.LAG_SAMPLED, ev.CLIENT_LOG,
                   ev.GROUP_DESCRIBED})


@dataclass(frozen=True)
class SettledRebalance:
    generation: int
    duration_ms: float
    partitions_moved: int
    trigger: str | None


class RebalanceFeed:
    def __init__(self, history: str | Path, settle_s: float):
        self.settle_ms = settle_s * 1000
        self.events: list[dict] = []
        self.told: set[int] = set()
        self.done = False  # the run reached `phase: done`: every rebalance of it is in the history
        self.latencies: list[tuple[str, float, int]] = []  # (PRODUCE or END_TO_END, ms, records) not taken yet
        self._tail = FileTail(history)
        self._latest_ms = float("-inf")

    def read(self) -> None:
        """The history's new whole lines (a line being written is left for next time)."""
        for line in self._tail.new_lines():
            if not line.strip():
                continue
            event = orjson.loads(line)
            self._latest_ms = max(self._latest_ms, event.get("mono_ms", self._latest_ms))
            if event["name"] == ev.PHASE and event.get("phase") == "done":
                self.done = True
            if event["name"] not in _BULK:
                self.events.append(event)
            elif event["name"] in _LATENCIES:
                key, kind = _LATENCIES[event["name"]]
                self.latencies += [(kind, ms, n) for ms, n in event.get(key) or ()]

    def take_latencies(self) -> list[tuple[str, float, int]]:
        """The latencies read since the last call."""
        taken, self.latencies = self.latencies, []
        return taken

    def settled(self) -> list[SettledRebalance]:
        """Rebalances completed and settled since the last call (all of them once ``done``)."""
        self.read()
        if not any(e["name"] == ev.RUN_STARTED for e in self.events):
            return []
        out = []
        for r in run_rebalances(History(sorted(self.events, key=sort_key))):
            if r.generation in self.told or r.status != COMPLETED:
                continue
            if not self.done and r.end.mono_ms > self._latest_ms - self.settle_ms:
                continue
            self.told.add(r.generation)
            out.append(SettledRebalance(r.generation, r.duration_ms, len(r.moves), r.trigger))
        return out
