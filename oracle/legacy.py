"""Histories of older formats, read as the current one: the one place a fault kind's name decides.

Since format 3 every ``fault_started`` says what its fault does to its target (``effects``,
declared by the kind: faults/base.py, Effects), and the oracle reads only that. A history
written before says the kind's name and options alone: ``LEGACY_FAULT_EFFECTS`` gives each
kind of those formats the effects it declared when format 3 began, so an old run is
explained and judged as it always was. A kind this table does not know did nothing the
oracle could tell.

Pure, like the rest of the oracle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import vocabulary as ev

FAULT_EFFECTS_SINCE = 3  # the first format whose fault_started carry their effects


def _effects(
    silences: str | None = None,
    silenced_as: str | None = None,
    down: str | None = None,
    restart_after_s: float | None = None,
) -> dict[str, Any]:
    return {ev.SILENCES: silences, ev.SILENCED_AS: silenced_as, ev.DOWN: down, ev.RESTART_AFTER_S: restart_after_s}


def _nothing(params: dict) -> dict[str, Any]:
    return _effects()


# A format 1 or 2 fault kind -> its effects, from the fault's options (`params`).
LEGACY_FAULT_EFFECTS: dict[str, Callable[[dict], dict[str, Any]]] = {
    "pause": lambda params: _effects(ev.HEARTBEATS, "paused", ev.PAUSED),
    # a crash without restart_after_s (or with 0, or format 1's duration_s) was down for good
    "crash": lambda params: _effects(ev.HEARTBEATS, "crashed", ev.KILLED, params.get("restart_after_s") or None),
    "network": lambda params: _effects(ev.HEARTBEATS, "cut off"),
    "poll-stall": lambda params: _effects(ev.POLLS, "stuck in processing (poll stall)"),
    "zk-session-expiry": _nothing,
    "rolling-restart": _nothing,
    "join-storm": _nothing,
    "scale": _nothing,
    "add-partitions": _nothing,
    "create-topic": _nothing,
}


def with_effects(fault: dict) -> dict:
    """A fault_started of a format before 3, with the effects its kind had (those it carries, if any)."""
    if fault.get(ev.EFFECTS) is not None:
        return fault
    declared = LEGACY_FAULT_EFFECTS.get(fault.get("kind"))
    params = fault.get("params")
    return {**fault, ev.EFFECTS: declared(params if type(params) is dict else {}) if declared else _effects()}
