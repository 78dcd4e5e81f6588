"""What a check hands back: anomalies (violations or findings) and a result.

An anomaly is a violation when it fails the run and a finding when it is
worth telling but expected under the fault (a zombie that gets fenced, a
duplicate explained by uncommitted progress). Both carry the same evidence:
partition, offsets, members, generation and the instants involved, so a
reader can go from the message straight to the lines of the history.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any

from .history import Instant


@dataclass(frozen=True)
class Anomaly:
    check: str
    kind: str  # Jepsen-style anomaly name: lost-write, poll-skip, split-brain, ...
    message: str
    partition: str | None = None  # "events-3"
    offsets: str | None = None  # "1204-1220, 1300"
    count: int | None = None
    members: tuple[str, ...] = ()
    generation: int | None = None
    times: dict[str, Instant] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"check": self.check, "kind": self.kind, "message": self.message}
        for key in ("partition", "offsets", "count", "generation"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        if self.members:
            d["members"] = list(self.members)
        if self.times:
            d["times"] = {label: instant.to_dict() for label, instant in self.times.items()}
        return d


@dataclass
class CheckResult:
    violations: list[Anomaly] = field(default_factory=list)
    findings: list[Anomaly] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None  # why the check could not judge this history
    error: str | None = None  # the check raised: "TypeError: …" (a short traceback in detail)

    @classmethod
    def raised(cls, e: Exception) -> CheckResult:
        """The result of a check that raised: the exception, and where, for the bug report."""
        frames = "".join(traceback.format_exception(e, limit=-4))  # the innermost frames say where
        return cls(error=f"{type(e).__name__}: {e}", detail={"traceback": frames})

    @property
    def status(self) -> str:
        if self.error:
            return "error"
        return "skipped" if self.skipped else "failed" if self.violations else "passed"

    def to_dict(self) -> dict[str, Any]:
        d = {
            "status": self.status,
            "violations": len(self.violations),
            "findings": len(self.findings),
            "detail": self.detail,
        }
        if self.skipped or self.error:
            d["reason"] = self.error or self.skipped
        return d


# Why the checks that judge the end of a run cannot judge one that never reached it.
NOT_FINISHED = (
    "no `phase: done` event: the run ended before recovery and drain finished, "
    "so records may still have been in flight and the group still settling"
)


def duration(ms: float) -> str:
    return f"{ms:.0f} ms" if abs(ms) < 1000 else f"{ms / 1000:.1f} s"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


NAMED_MAX = 12  # members a message names before it counts the rest: a group of 1,000 is not a sentence


def listed(names: list[str] | tuple[str, ...]) -> str:
    """Names for a message: all of them, or the first NAMED_MAX and how many more (the anomaly's
    `members` field keeps every one)."""
    if len(names) <= NAMED_MAX:
        return ", ".join(names)
    return f"{', '.join(names[:NAMED_MAX])} and {len(names) - NAMED_MAX} more"


def members(*slots: object) -> tuple[str, ...]:
    """Distinct member names in first-mentioned order."""
    return tuple(dict.fromkeys(str(s) for s in slots if s is not None))
