"""Membership and topology churn: join storms, scaling, rolling restarts, new partitions
and topics — the everyday causes of rebalances, as opposed to failures."""

from __future__ import annotations

import signal
import threading
from dataclasses import dataclass, field

from faults.base import Fault, Targets


@dataclass
class JoinStorm(Fault):
    """``consumers`` new members start at the same moment."""

    kind = "join-storm"

    def inject(self, targets: Targets) -> dict:
        return {"started": targets.start_consumers(int(self.params["consumers"]))}


@dataclass
class Scale(Fault):
    """Scale the group to ``consumers`` members (new ones started, the newest stopped cleanly)."""

    kind = "scale"

    def inject(self, targets: Targets) -> dict:
        return {"changed": targets.scale_consumers(int(self.params["consumers"]))}


@dataclass
class AddPartitions(Fault):
    kind = "add-partitions"

    def inject(self, targets: Targets) -> None:
        targets.add_partitions(self.params["topic"], int(self.params["partitions"]))


@dataclass
class CreateTopic(Fault):
    kind = "create-topic"

    def inject(self, targets: Targets) -> None:
        targets.create_topic(self.params["topic"], int(self.params["partitions"]))


@dataclass
class RollingRestart(Fault):
    """Stop each target (SIGTERM by default), start it again ``down_s`` later, wait
    ``interval_s``, next. Runs in its own thread so other faults keep their times.
    ``heal_after_s`` is the round's nominal length — a broker's controlled shutdown
    takes seconds of its own — so the scheduled heal waits for the round to end; a
    heal at the end of the workload or run finishes it at once, leaving every target
    running."""

    kind = "rolling-restart"
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _names: list[str] = field(default_factory=list)

    @property
    def heal_after_s(self) -> float:
        n = len(self._names) or 1
        return n * float(self.params["down_s"]) + n * float(self.params["interval_s"])

    @property
    def in_progress(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def inject(self, targets: Targets) -> dict:
        which = self.params["targets"]
        self._names = targets.group_names(which) if isinstance(which, str) else list(which)
        self._thread = threading.Thread(target=self._round, args=(targets,), name=f"{self.fault_id}-rolling", daemon=True)
        self._thread.start()
        return {"order": self._names}

    def _round(self, targets: Targets) -> None:
        sig = getattr(signal, self.params["signal"])
        for i, name in enumerate(self._names):
            if self._stop.is_set():
                return
            targets.kill(name, sig)
            self._stop.wait(float(self.params["down_s"]))
            targets.restart(name)
            if i < len(self._names) - 1:
                self._stop.wait(float(self.params["interval_s"]))

    def heal(self, targets: Targets) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=120)
        for name in self._names:
            if not targets.is_running(name):
                targets.restart(name)
