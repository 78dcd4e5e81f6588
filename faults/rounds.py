"""A fault that runs a round of restarts in its own thread (a rolling upgrade, a protocol
migration), so other faults keep their times.

What breaks partway is kept, not lost with the thread: the heal stops the round, starts again
any process it left stopped, then raises what broke — and the scheduler records it as
``fault_heal_failed``, so a round that did not finish cannot pass as one that did.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import ClassVar

from faults.base import Fault, S, Targets


@dataclass
class Round(Fault[S]):
    """A kind's ``_round(targets, *args)`` walks ``_names``, calling ``_at(name)`` before it acts on
    each (a failure then names it) and returning early once ``_stop`` is set; ``inject`` starts
    it with ``_start``."""

    thread_name: ClassVar[str] = "round"  # the thread's name after the fault's id
    heal_join_s: ClassVar[float] = 120.0  # how long a heal waits for the round's current step

    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    failed: str | None = None  # why the round stopped short, if it did
    failed_at: str | None = None  # the process it was acting on then
    _names: list[str] = field(default_factory=list)
    _step: str | None = None  # the process the round acts on now

    @property
    def in_progress(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _start(self, targets: Targets, *args) -> None:
        self._thread = threading.Thread(
            target=self._run_round, args=(targets, *args), name=f"{self.fault_id}-{self.thread_name}", daemon=True
        )
        self._thread.start()

    def _round(self, targets: Targets, *args) -> None:
        raise NotImplementedError

    def _at(self, name: str | None) -> None:
        self._step = name

    def _run_round(self, targets: Targets, *args) -> None:
        """The round, its failure kept: the heal raises it, and the history says it (fault_heal_failed)."""
        try:
            self._round(targets, *args)
        except Exception as e:
            self.failed, self.failed_at = f"{type(e).__name__}: {e}", self._step

    def _start_again(self, targets: Targets, name: str) -> None:
        """Start a process the round left stopped (a kind may start it changed)."""
        targets.restart(name)

    def heal(self, targets: Targets) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=self.heal_join_s)
        at = f" at {self.failed_at}" if self.failed_at else ""
        broken = [f"the round stopped{at}: {self.failed}"] if self.failed else []
        for name in self._names:
            if not targets.is_running(name):
                try:
                    self._start_again(targets, name)
                except Exception as e:  # the others are started all the same
                    broken.append(f"{name} not started again: {type(e).__name__}: {e}")
        if broken:
            raise RuntimeError("; ".join(broken))
