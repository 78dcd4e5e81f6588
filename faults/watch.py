"""Watching the live history for the triggers of ``on:`` faults (faults/trigger.py).

Every process of a run appends to one history file (runtime/history.py); this thread
reads what was appended every few milliseconds, matches each armed trigger and asks the
scheduler to fire its fault. A cheap byte test on the event's name comes before any JSON
parsing, so a history of thousands of records a second costs little. The brokers' own log
lines reach the history only when the run reads them (harness.run.brokerlog): while a trigger
waits on them, ``refresh`` is called on every round, so they are read as often.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from faults.base import Fault
from faults.schedule import FaultScheduler
from runtime.tail import FileTail

EVERY_S = 0.005  # how often the history is read: the trigger latency's floor


@dataclass
class _Armed:
    fault: Fault
    armed_at_ms: float  # on the history's clock
    matches: int = 0
    firings: int = 0

    @property
    def done(self) -> bool:
        return self.firings >= self.fault.spec.on.count


class TriggerWatcher:
    def __init__(
        self,
        history: Path,
        scheduler: FaultScheduler,
        faults: list[Fault],
        group: str | None,
        refresh: Callable[[], None] | None = None,
        every_s: float = EVERY_S,
    ):
        self.tail = FileTail(history)
        self.scheduler, self.group, self.every_s = scheduler, group, every_s
        self.faults = [f for f in faults if f.spec.on is not None]
        self.refresh = refresh if any(f.spec.on.reads_coordinator_log for f in self.faults) else None
        self.armed: list[_Armed] = []
        # the byte forms of the names any trigger waits for: `"name":"x"` starts every history line
        self._names = {f'"name":"{n}"'.encode() for f in self.faults for n in f.spec.on.names}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Arm every trigger at its at_s, counted from the scheduler's start."""
        if not self.faults:
            return
        t0 = self.scheduler.started_mono_ms
        self.armed = [_Armed(f, t0 + f.at_s * 1000.0) for f in self.faults]
        self._thread = threading.Thread(target=self._run, name="fault-triggers", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            if self.refresh:
                try:
                    self.refresh()
                except Exception:  # a log mid-rotation, a broker gone: the run reads them again
                    pass
            for line in self.tail.new_lines():
                if any(n in line[:80] for n in self._names):
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue  # a line the oracle will name when it loads the history; the watch goes on
                    self.consider(event)
            if all(a.done for a in self.armed):
                return

    def consider(self, event: dict) -> None:
        for a in self.armed:
            on = a.fault.spec.on
            if a.done or event.get("mono_ms", 0) < a.armed_at_ms or not on.matches(event, self.group):
                continue
            a.matches += 1
            previous = a.fault.fault_id if a.firings <= 1 else f"{a.fault.fault_id}.{a.firings}"
            if a.matches < on.nth or (a.firings and self.scheduler.is_active(previous)):
                continue  # not yet its turn, or its last firing still acts
            a.firings += 1
            self.scheduler.fire(
                a.fault,
                a.firings,
                {
                    k: event.get(k)
                    for k in ("name", "source", "seq", "mono_ms", "member", "incarnation", "generation")
                    if event.get(k) is not None
                },
            )
