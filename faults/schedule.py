"""Running faults on a timeline, and healing whatever is still active when it must stop.

One thread walks a time-ordered list of actions (inject at ``at_s``, heal at
``at_s + heal_after_s``). Overlapping faults are fine. ``heal_all`` undoes every
active fault at once — the run calls it before recovery and on every way out
(end, error, Ctrl-C), so no process stays stopped and no broker stays down.
"""

from __future__ import annotations

import heapq
import threading
import time
from typing import Callable

from faults.base import Fault, Targets
from oracle import vocabulary as ev
from runtime.history import now

Emit = Callable[..., None]
# How long a scheduled heal waits for a fault still in progress (a slow rolling round)
# before healing it anyway.
OVERRUN_S = 60.0


class FaultScheduler:
    def __init__(self, faults: list[Fault], targets: Targets, emit: Emit, report: Callable[[str], None] = lambda _m: None):
        self.faults = faults
        self.targets = targets
        self.emit = emit
        self.report = report
        self.active: dict[str, Fault] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="fault-scheduler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # (time, order, action, fault): order keeps heal-before-inject for equal times stable.
        queue = [(f.at_s, i, "inject", f) for i, f in enumerate(self.faults)]
        heapq.heapify(queue)
        order = len(queue)
        due: dict[str, float] = {}  # fault id -> its nominal heal time
        while queue and not self._stop.is_set():
            at, _, action, fault = queue[0]
            if self._stop.wait(max(0.0, self._t0 + at - time.monotonic())):
                return
            heapq.heappop(queue)
            order += 1
            if action == "inject":
                if self._inject(fault):
                    heapq.heappush(queue, (at + fault.heal_after_s, order, "heal", fault))
                    due[fault.fault_id] = at + fault.heal_after_s
            elif fault.in_progress and at < due[fault.fault_id] + OVERRUN_S:
                heapq.heappush(queue, (at + 0.5, order, "heal", fault))  # look again; other faults keep their times
            else:
                self._heal(fault, "scheduled")

    def _inject(self, fault: Fault) -> bool:
        with self._lock:
            if self._stop.is_set():
                return False
            wall, mono = now()  # the event carries when injection began: some take seconds
            try:
                fault.resolved = self.targets.resolve(fault.target) if fault.target else None
                details = fault.inject(self.targets)
            except Exception as e:  # a fault that cannot be done is recorded, not fatal
                self.emit(ev.FAULT_FAILED, fault_id=fault.fault_id, kind=fault.kind, target=fault.target, error=str(e))
                self.report(f"fault {fault.fault_id} ({fault.kind} {fault.target or ''}) could not be injected: {e}")
                return False
            self.active[fault.fault_id] = fault
            where = {"target": fault.resolved}
            if fault.resolved != fault.target:
                where["requested_target"] = fault.target
            self.emit(ev.FAULT_STARTED, ts=wall, mono_ms=mono, fault_id=fault.fault_id, kind=fault.kind, **where,
                      params=fault.params, **({"details": details} if details else {}))
            self.report(f"fault {fault.fault_id}: {fault.kind} {fault.resolved or ''} {_describe(fault.params)}"
                        + (f" {_describe(details)}" if details else ""))
            return True

    def _heal(self, fault: Fault, how: str) -> None:
        with self._lock:
            if self.active.pop(fault.fault_id, None) is None:
                return
            try:
                fault.heal(self.targets)
                self.emit(ev.FAULT_HEALED, fault_id=fault.fault_id, kind=fault.kind, target=fault.resolved, how=how)
                self.report(f"fault {fault.fault_id}: healed ({how})")
            except Exception as e:
                self.emit(ev.FAULT_HEAL_FAILED, fault_id=fault.fault_id, kind=fault.kind, target=fault.resolved, error=str(e))
                self.report(f"fault {fault.fault_id} could not be healed: {e}")

    def heal_all(self, how: str) -> None:
        """Stop injecting and undo every active fault now."""
        self._stop.set()
        if self._thread and self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        for fault in list(self.active.values()):
            self._heal(fault, how)


def _describe(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())
