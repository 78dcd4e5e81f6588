"""pydantic's validation errors as the lab's problems: ``(key.path, reason)``, which a
ScenarioError prints as ``FILE: key.path: reason`` (docs/inputs.md).

Model validators raise one ``key.path: reason`` line per problem, the key path relative to
the model that raised; pydantic gives that model's location, and the two are joined here.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

from harness.scenario.faults import FAULT_KINDS
from harness.scenario.workload import MOVED_TO_SECTIONS
from workloads.load.profile import STAGE_KINDS

MAX_PROBLEMS = 50  # reported at once; a file that is not a scenario at all would list thousands

_PATHED = re.compile(r"^(?P<key>[^\s:]+): (?P<reason>.*)$")  # a key is what the user wrote: "[/bold]" too


def _loc(loc: tuple) -> str:
    parts = [str(p) for p in loc if not str(p).startswith("function-after")]
    # A tagged union puts the tag in the location (faults.0.pause.duration_s): drop it.
    parts = [
        p
        for i, p in enumerate(parts)
        if not (i == 2 and parts[0] == "faults" and p in FAULT_KINDS)
        and not (i == 3 and parts[:2] == ["load", "stages"] and p in STAGE_KINDS)
    ]
    return ".".join(parts)


def _kinds(loc: str) -> tuple[str, str]:
    """What a tagged union at ``loc`` holds, in words, and its kinds."""
    return ("stage kind", ", ".join(STAGE_KINDS)) if loc.startswith("load.") else ("fault kind", ", ".join(FAULT_KINDS))


def _unknown_key(loc: str) -> str:
    """Why a key is not accepted: unknown, or moved into a driver family's section (workload.MOVED_TO_SECTIONS)."""
    parent, _, key = loc.rpartition(".")
    section = MOVED_TO_SECTIONS.get(key) if parent == "workload" else None
    if section:
        return f"moved: write it as workload.{section}.{key} (a setting only {section} members have, in their section)"
    return "unknown key"


def validation_problems(err: ValidationError) -> list[tuple[str, str]]:
    out = []
    for e in err.errors():
        loc = _loc(e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = _unknown_key(loc)
        elif e["type"] == "union_tag_invalid":
            what, known = _kinds(loc)
            loc, msg = f"{loc}.kind", f"unknown {what} {e.get('input', {}).get('kind')!r} (known: {known})"
        elif e["type"] == "union_tag_not_found":
            loc, msg = f"{loc}.kind", f"missing (known kinds: {_kinds(loc)[1]})"
        if e["type"] == "value_error":
            for part in msg.split("\n"):
                m = _PATHED.match(part)
                key = m["key"] if m else ""
                out.append((".".join(filter(None, (loc, key))) or "(scenario)", m["reason"] if m else part))
        else:
            out.append((loc or "(scenario)", msg))
    return out
