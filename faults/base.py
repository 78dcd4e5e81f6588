"""What a fault is: something done to a target at a time, and undone (healed) later.

Faults act on named processes through ``Targets``, which the run provides, so a
fault never needs to know whether ``broker-2`` is a local JVM or a container.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class Targets(Protocol):
    def pause(self, name: str) -> None: ...
    def resume(self, name: str) -> None: ...
    def kill(self, name: str, sig: int) -> None: ...
    def restart(self, name: str) -> None: ...


@dataclass
class Fault:
    fault_id: str
    target: str
    at_s: float
    params: dict = field(default_factory=dict)

    kind = "fault"

    @property
    def heal_after_s(self) -> float:
        """Seconds from injection to heal; 0 means there is nothing to undo."""
        return 0.0

    def inject(self, targets: Targets) -> None:
        raise NotImplementedError

    def heal(self, targets: Targets) -> None:
        raise NotImplementedError
