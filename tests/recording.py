"""A member's events as unit tests see them: written through a real ``MemberEvents``
(workloads/member_events.py) into memory instead of a history file."""

from __future__ import annotations

from collections.abc import Callable

from workloads.member_events import Identity, MemberEvents

# What MemberEvents stamps on every event, beside what the driver said.
STAMPED = frozenset({"ts", "mono_ms", "clock", "member_id", "generation"})


class Recording:
    """The writer under ``events``: keeps every event written, whole (``written``) and as the driver
    said it (``said``: name and fields, without the stamps)."""

    def __init__(self, identity: Callable[[], Identity] | None = None):
        self.written: list[dict] = []
        self.events = MemberEvents(self, identity or (lambda: (None, None)))

    def emit(self, name: str, *, ts: float | None = None, mono_ms: float | None = None, **fields) -> dict:
        event = {
            "name": name,
            **({"ts": ts} if ts is not None else {}),
            **({"mono_ms": mono_ms} if mono_ms is not None else {}),
            **fields,
        }
        self.written.append(event)
        return event

    @property
    def said(self) -> list[tuple[str, dict]]:
        return [(e["name"], {k: v for k, v in e.items() if k not in STAMPED and k != "name"}) for e in self.written]

    def names(self) -> list[str]:
        return [e["name"] for e in self.written]

    def of(self, name: str) -> list[dict]:
        return [fields for n, fields in self.said if n == name]
