"""The run's rebalances as they settle, measured by the oracle on the live history.

Locust is told each rebalance once (workloads/load/locustfile.py): the oracle's own
measurement (oracle/rebalances.py) of the history written so far, so the figures Locust
shows are the ones the verdict will have. A rebalance is told once it is completed, every
member alive has joined that generation or a later one (no member can still join it: a
KIP-848 member reaches an epoch on its own heartbeat, seconds after another; with an
incremental protocol every member alive has joined a later one: a member's share of a
generation can come in steps), and it has
been over for ``settle_s`` by the history's clock (a member's last events of it may reach
the file a little later); every one still untold once the run is ``done``.
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
_BULK = frozenset(
    {ev.RECORDS_CONSUMED, ev.RECORDS_ACKED, ev.OFFSETS_COMMITTED, ev.LAG_SAMPLED, ev.CLIENT_LOG, ev.GROUP_DESCRIBED}
)


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
        history = History(sorted(self.events, key=sort_key))
        reached = self._generation_every_member_reached(history)
        # An incremental member counted by its SyncGroup (an empty delta) may still be given partitions
        # of that generation (KIP-848 reconciles in steps): settled once every member has moved past it.
        last_open = reached - 1 if history.incremental else reached
        for r in run_rebalances(history):
            if r.generation in self.told or r.status != COMPLETED:
                continue
            if not self.done and (r.end.mono_ms > self._latest_ms - self.settle_ms or r.generation > last_open):
                continue
            self.told.add(r.generation)
            out.append(SettledRebalance(r.generation, r.duration_ms, len(r.moves), r.trigger))
        return out

    @staticmethod
    def _generation_every_member_reached(history: History) -> float:
        """The lowest generation the members alive now have joined (a member that has not joined
        any yet holds everything back: it will join one)."""
        alive: dict[tuple, float] = {}
        for e in history.named(ev.CONSUMER_STARTED, ev.CONSUMER_STOPPED, ev.PROCESS_EXITED, ev.GROUP_JOINED):
            slot = (e.get(ev.MEMBER), e.get(ev.INCARNATION))
            if e["name"] == ev.CONSUMER_STARTED:
                alive[slot] = float("-inf")
            elif e["name"] == ev.CONSUMER_STOPPED:
                alive.pop(slot, None)
            elif e["name"] == ev.PROCESS_EXITED:  # killed without a word: its process is gone all the same
                alive = {s: g for s, g in alive.items() if s[0] != e.get("process")}
            elif slot in alive and e.get(ev.GENERATION) is not None:
                alive[slot] = max(alive[slot], e[ev.GENERATION])
        return min(alive.values(), default=float("inf"))
