"""Faults done to a whole process with signals: GC-like pauses and crashes."""

from __future__ import annotations

import signal
from dataclasses import dataclass

from faults.base import Fault, Targets


@dataclass
class Pause(Fault):
    """SIGSTOP then SIGCONT: every thread stops, heartbeat threads included —
    how Trogdor and Jepsen model a stop-the-world GC pause."""

    kind = "pause"

    @property
    def heal_after_s(self) -> float:
        return float(self.params["duration_s"])

    def inject(self, targets: Targets) -> None:
        targets.pause(self.resolved)

    def heal(self, targets: Targets) -> None:
        targets.resume(self.resolved)


@dataclass
class Crash(Fault):
    """SIGKILL (no LeaveGroup, no controlled shutdown) or SIGTERM (clean close),
    optionally followed by a restart of the same process after a delay."""

    kind = "crash"

    @property
    def heal_after_s(self) -> float:
        return float(self.params.get("restart_after_s") or 0.0)

    def inject(self, targets: Targets) -> None:
        targets.kill(self.resolved, getattr(signal, self.params.get("signal", "SIGKILL")))

    def heal(self, targets: Targets) -> None:
        if self.params.get("restart_after_s"):
            targets.restart(self.resolved)
