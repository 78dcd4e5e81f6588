"""Running faults on a timeline, and healing whatever is still active when it must stop.

One thread walks a time-ordered list of actions (inject at ``at_s``, heal at
``at_s + heal_after_s``). Overlapping faults are fine. A fault with ``on:`` is not on the
timeline: faults/watch.py fires it when the live history shows its condition, and
``fire`` puts its injection on the timeline (now, or ``delay_s`` later). ``heal_all``
undoes every active fault at once — the run calls it before recovery and on every way out
(end, error, Ctrl-C), so no process stays stopped and no broker stays down.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable

from faults.base import Fault, Targets
from oracle import vocabulary as ev
from runtime.history import now

Emit = Callable[..., None]
# How long a scheduled heal waits for a fault still in progress (a slow rolling round)
# before healing it anyway.
OVERRUN_S = 60.0
JOIN_S = 30.0  # how long heal_all waits for the timeline's thread (a broker's shutdown takes seconds)


class FaultScheduler:
    def __init__(
        self,
        faults: list[Fault],
        targets: Targets,
        emit: Emit,
        report: Callable[[str], None] = lambda _m: None,
        run_started_mono_ms: float | None = None,
    ):
        self.faults = faults
        self.run_started_mono_ms = run_started_mono_ms  # the history's t0: its messages' t+ counts from it
        self.targets = targets
        self.emit = emit
        self.report = report
        self.active: dict[str, Fault] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        # (time, order, action, fault, trigger): equal times run in the order queued (every timed
        # inject is queued at start, its heal once it is injected: at one instant, injects first).
        self._queue: list[tuple[float, int, str, Fault, dict | None]] = []
        self._order = 0
        self._changed = threading.Condition()
        # Triggered firings not yet healed (queued, or acting). Under _changed, not _lock: _lock is
        # held through a whole injection (a broker restart takes seconds), and the trigger thread
        # asks is_active on every match.
        self._fired: set[str] = set()

    @property
    def started_mono_ms(self) -> float:
        """When the timeline began (at_s counts from here), on the history's clock."""
        return self._t0 * 1000.0

    def start(self) -> None:
        self._t0 = time.monotonic()
        for f in self.faults:
            if f.spec.on is None:
                self._push(f.at_s, "inject", f)
        self._thread = threading.Thread(target=self._run, name="fault-scheduler", daemon=True)
        self._thread.start()

    def fire(self, fault: Fault, firing: int, trigger: dict) -> None:
        """A trigger matched: inject a fresh copy of ``fault`` (its n-th firing) after its delay."""
        on = fault.spec.on
        copy = type(fault)(
            fault_id=fault.fault_id if firing == 1 else f"{fault.fault_id}.{firing}",
            spec=fault.spec,
            params=fault.params,
        )
        with self._changed:
            self._fired.add(copy.fault_id)
        self._push(time.monotonic() - self._t0 + on.delay_s, "inject", copy, trigger)

    def _push(self, at: float, action: str, fault: Fault, trigger: dict | None = None) -> None:
        with self._changed:
            self._order += 1
            heapq.heappush(self._queue, (at, self._order, action, fault, trigger))
            self._changed.notify()

    def _next(self) -> tuple[float, str, Fault, dict | None] | None:
        """The next action once it is due; None when stopping."""
        with self._changed:
            while not self._stop.is_set():
                if self._queue:
                    at, _, action, fault, trigger = self._queue[0]
                    wait = self._t0 + at - time.monotonic()
                    if wait <= 0:
                        heapq.heappop(self._queue)
                        return at, action, fault, trigger
                    self._changed.wait(wait)
                else:
                    self._changed.wait()  # a trigger may still fire
            return None

    def _run(self) -> None:
        due: dict[str, float] = {}  # fault id -> its nominal heal time
        while (item := self._next()) is not None:
            at, action, fault, trigger = item
            if action == "inject":
                if self._inject(fault, trigger):
                    self._push(at + fault.heal_after_s, "heal", fault)
                    due[fault.fault_id] = at + fault.heal_after_s
            elif fault.in_progress and at < due[fault.fault_id] + OVERRUN_S:
                self._push(at + 0.5, "heal", fault)  # look again; other faults keep their times
            else:
                self._heal(fault, "scheduled")

    def _inject(self, fault: Fault, trigger: dict | None = None) -> bool:
        with self._lock:
            if self._stop.is_set():
                return False
            wall, mono = now()  # the event carries when injection began: some take seconds
            fired = {}
            if trigger is not None:  # the event that fired it, and how long it took to act on it
                delay_ms = fault.spec.on.delay_s * 1000
                fired = {"trigger": trigger, "trigger_latency_ms": round(mono - trigger["mono_ms"] - delay_ms, 3)}
            try:
                fault.resolved = self.targets.resolve(fault.target) if fault.target else None
                details = fault.inject(self.targets)
            except Exception as e:  # a fault that cannot be done is recorded, not fatal
                self.emit(
                    ev.FAULT_FAILED,
                    fault_id=fault.fault_id,
                    kind=fault.kind,
                    target=fault.target,
                    error=str(e),
                    **fired,
                )
                self.report(f"fault {fault.fault_id} ({fault.kind} {fault.target or ''}) could not be injected: {e}")
                self._forget(fault)
                return False
            self.active[fault.fault_id] = fault
            where = {"target": fault.resolved}
            if fault.resolved != fault.target:
                where["requested_target"] = fault.target
            # what it does to its target, as its kind declares it: the oracle never reads the kind's name
            self.emit(
                ev.FAULT_STARTED,
                ts=wall,
                mono_ms=mono,
                fault_id=fault.fault_id,
                kind=fault.kind,
                **where,
                params=fault.params,
                effects=fault.effects.to_event(),
                **({"details": details} if details else {}),
                **fired,
            )
            self.report(
                f"fault {fault.fault_id} at {self._when(mono)}: {fault.kind} {fault.resolved or ''} "
                f"{_describe(fault.params)}"
                + (f" {_describe(details)}" if details else "")
                + (f" (on {trigger['name']}, {fired['trigger_latency_ms']:.0f} ms after it)" if trigger else "")
            )
            return True

    def _when(self, mono_ms: float) -> str:
        """'workload+8.0s (t+13.614s)': the schedule's clock (at_s counts from the workload's start),
        then the run's (the verdict's t+)."""
        at = f"workload+{(mono_ms - self.started_mono_ms) / 1000:.1f}s"
        t0 = self.run_started_mono_ms
        return at + (f" (t+{(mono_ms - t0) / 1000:.3f}s)" if t0 is not None else "")

    def _forget(self, fault: Fault) -> None:
        with self._changed:
            self._fired.discard(fault.fault_id)

    def _heal(self, fault: Fault, how: str) -> None:
        with self._lock:
            self._forget(fault)
            if self.active.pop(fault.fault_id, None) is None:
                return
            began = now()[1]  # what the heal sets going (a SIGCONT) may be in the history before this event
            try:
                fault.heal(self.targets)
                self.emit(
                    ev.FAULT_HEALED,
                    fault_id=fault.fault_id,
                    kind=fault.kind,
                    target=fault.resolved,
                    how=how,
                    started_mono_ms=round(began, 3),
                )
                self.report(f"fault {fault.fault_id} at {self._when(began)}: healed ({how})")
            except Exception as e:
                self.emit(
                    ev.FAULT_HEAL_FAILED, fault_id=fault.fault_id, kind=fault.kind, target=fault.resolved, error=str(e)
                )
                self.report(f"fault {fault.fault_id} could not be healed: {e}")

    def is_active(self, fault_id: str) -> bool:
        """Injected and not healed yet, or fired and waiting for its delay."""
        with self._changed:
            return fault_id in self._fired or fault_id in self.active

    def heal_all(self, how: str) -> None:
        """Stop injecting and undo every active fault now."""
        with self._changed:
            self._stop.set()
            self._changed.notify()
        if self._thread and self._thread is not threading.current_thread():
            self._thread.join(timeout=JOIN_S)
        # An injection that outlasted the join ends first: its fault is healed with the others, and
        # nothing is injected once this returns (the run stops its processes next: a member a late
        # join storm started would be missed).
        if self._lock.acquire(timeout=OVERRUN_S):
            self._lock.release()
        else:
            self.report(
                f"an injection still under way after {JOIN_S + OVERRUN_S:.0f} s: its fault is not healed, "
                "and healing the others waits for it"
            )
        for fault in list(self.active.values()):
            self._heal(fault, how)


def _describe(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())
