"""What a fault is: something done at a time, and undone (healed) later.

Faults act through ``Targets``, which the run provides, so a fault never needs
to know whether ``broker-2`` is a local JVM or a container, or how a member is
told to stall.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class Targets(Protocol):
    def resolve(self, name: str) -> str: ...  # "coordinator" -> the group's coordinator broker
    def pause(self, name: str) -> None: ...
    def resume(self, name: str) -> None: ...
    def kill(self, name: str, sig: int) -> None: ...
    def restart(self, name: str) -> None: ...
    def is_running(self, name: str) -> bool: ...
    def group_names(self, which: str) -> list[str]: ...  # "brokers" | "consumers"
    def proxies(self, target: str, link: str) -> list[str]: ...
    def toxiproxy(self): ...
    def command(self, member: str, command: dict) -> None: ...
    def expire_zookeeper_session(self, name: str) -> dict: ...
    def zookeeper_session_timeout_s(self, name: str) -> float: ...
    def start_consumers(self, count: int) -> list[str]: ...
    def scale_consumers(self, count: int) -> list[str]: ...
    def add_partitions(self, topic: str, total: int) -> None: ...
    def create_topic(self, topic: str, partitions: int) -> None: ...


@dataclass
class Fault:
    fault_id: str
    at_s: float
    target: str | None = None  # None for faults on the group or the cluster as a whole
    params: dict = field(default_factory=dict)
    resolved: str | None = None  # the process actually hit (``coordinator`` is looked up at injection)

    kind = "fault"

    def __post_init__(self):
        if self.resolved is None:
            self.resolved = self.target

    @property
    def heal_after_s(self) -> float:
        """Seconds from injection to heal; 0 means there is nothing to undo."""
        return 0.0

    @property
    def in_progress(self) -> bool:
        """Still acting on its own (a rolling restart's round): its scheduled heal waits."""
        return False

    def inject(self, targets: Targets) -> dict | None:
        """Do it; may return details worth recording (e.g. which proxies, which session)."""
        raise NotImplementedError

    def heal(self, targets: Targets) -> None:
        pass
