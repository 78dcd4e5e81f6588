"""What a group handed out, worked out from a history's events alone (no oracle): the tests' own
reading of the capacity table's restart columns (analysis.run_tables.RunTables.restart)."""

from __future__ import annotations

import math


def handed_out(events: list[dict], start: float, until: float = math.inf) -> tuple[int, float | None]:
    """Partitions given (partitions_assigned) in [start, until) to another member than the one that
    had them last, and when the last partition was given (None: none was)."""
    owner: dict[tuple, str] = {}
    moved, last = 0, None
    for e in sorted(events, key=lambda e: e["mono_ms"]):
        if e["name"] != "partitions_assigned" or e["mono_ms"] >= until:
            continue
        for p in e["partitions"]:
            tp = (p["topic"], p["partition"])
            if e["mono_ms"] >= start:
                moved += tp in owner and owner[tp] != e["member"]
                last = e["mono_ms"]
            owner[tp] = e["member"]
    return moved, last
