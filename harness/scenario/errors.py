"""Problems with a file, in the lab's words: ``(key, reason)``, which a ScenarioError prints as
``FILE: key (line N): reason`` (docs/inputs.md).

- A key is a path written as a person counts: ``faults[1].at_s`` is the first fault's ``at_s``
  (``show_key``; a path may come in as pydantic's location, a model validator's ``faults.0.at_s``
  or already shown). One notation everywhere.
- ``validation_problems``: pydantic's errors as problems, each error type said in a sentence of
  the tool's (``REASONS``: "must be a whole number, got 'ten'", not "Input should be a valid
  integer, unable to parse string as an integer"); the branches of a union said once. Model
  validators raise one ``key.path: reason`` line per problem, the key path relative to the model
  that raised; pydantic gives that model's location, and the two are joined here.
- ``located``: each problem's key with its line in the file (``faults[1].at_s (line 14)``), from the
  YAML node tree the file was read into (files.read_scenario_data keeps the last few); a number
  written where text is wanted (``kafka: 3.10``) is told to write it quoted, in the words the
  user wrote. Every ScenarioError goes through it (runtime.errors.ScenarioError.locate).
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Callable

import yaml
from pydantic import ValidationError

from harness.scenario.faults import FAULT_KINDS
from harness.scenario.workload import MOVED_TO_SECTIONS
from runtime.errors import ScenarioError
from workloads.load.profile import STAGE_KINDS

MAX_PROBLEMS = 50  # reported at once; a file that is not a scenario at all would list thousands

_PATHED = re.compile(r"^(?P<key>[^\s:]+): (?P<reason>.*)$")  # a key is what the user wrote: "[/bold]" too

# ------------------------------------------------------------------------------------ key paths

Part = str | int  # a mapping's key, or a list's index (zero-based inside, one-based when shown)
# a list entry [1], or a key after a dot: "quoted" when it holds dots itself
_TOKEN = re.compile(r'\[(?P<index>\d+)\]|(?:^|\.)(?:"(?P<quoted>[^"]+)"|(?P<key>[^.\[\]"\s()=]+))')


def key_parts(key: str, dotted_indices: bool = True) -> tuple[Part, ...] | None:
    """A shown key (``faults[1].at_s``, ``a."b.c"``) as its parts, zero-based (``('faults', 0, 'at_s')``);
    None if it is no key path (``(file)``, ``line 7, column 3``, a suite's ``smoke[seed 1]``).
    ``dotted_indices``: a bare number is a zero-based index too (``faults.0.at_s``, as pydantic and the
    model validators locate a problem); `--set` paths are written one-based only."""
    parts: list[Part] = []
    end = 0
    for m in _TOKEN.finditer(key):
        if m.start() != end:
            return None
        end = m.end()
        if m["index"] is not None:
            if int(m["index"]) < 1:
                return None
            parts.append(int(m["index"]) - 1)
        elif m["quoted"] is not None:
            parts.append(m["quoted"])
        else:
            parts.append(int(m["key"]) if dotted_indices and m["key"].isdigit() else m["key"])
    return tuple(parts) if parts and isinstance(parts[0], str) and end == len(key) else None


def show_parts(parts: tuple[Part, ...]) -> str:
    """``('faults', 0, 'at_s')`` as ``faults[1].at_s``."""
    out = ""
    for p in parts:
        out += f"[{p + 1}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


# A reason naming another entry (``faults.1 crashed it``) names it as a key is shown: ``faults[2]``.
_REFERENCE = re.compile(r"\b(faults|expect|exclude|scenarios|topics|subscriptions|stages|fails|may_also_fail)\.(\d+)\b")


def show_references(reason: str) -> str:
    return _REFERENCE.sub(lambda m: f"{m[1]}[{int(m[2]) + 1}]", reason)


def show_key(key: str) -> str:
    """A key as shown to a person: one-based list indices (``faults.0.at_s`` -> ``faults[1].at_s``)."""
    parts = key_parts(key)
    return show_parts(parts) if parts is not None else key


# ------------------------------------------------------------------------ pydantic, in our words


def _shown(value: object) -> str:
    """A value as the user wrote it, near enough: YAML's spelling of true, false and null."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}" if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:40] + "…")
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


TEXT_WANTED = "must be text"  # a number or true/false where text is wanted: located() may tell to quote it


def _limit(ctx: dict, key: str) -> str:
    value = ctx.get(key)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _pattern(ctx: dict) -> str:
    """A name's pattern in words: ``^[A-Za-z0-9._-]{1,80}$`` -> letters, digits and . _ -, 1 … 80 of them."""
    pattern = str(ctx.get("pattern", ""))
    m = re.fullmatch(r"\^\[([^\]]+)\]\{(\d+),(\d+)\}\$", pattern)
    if not m:
        return f"must match the pattern {pattern}"
    chars, low, high = m.groups()
    words = [w for w, c in (("letters", "A-Za-z"), ("digits", "0-9")) if c in chars]
    rest = chars.replace("A-Za-z", "").replace("0-9", "")
    words += [" ".join(rest)] if rest else []
    return f"{low} … {high} characters, each one of: {', '.join(words)}"


def _expected(ctx: dict) -> str:
    return str(ctx.get("expected", "")).replace("' or '", "', '")


# Each pydantic error type the models can raise -> the tool's sentence (e: pydantic's error, `input` shown).
REASONS: dict[str, Callable[[dict, str], str]] = {
    "missing": lambda e, got: "missing: this key is required",
    "int_type": lambda e, got: f"must be a whole number, got {got}",
    "int_parsing": lambda e, got: f"must be a whole number, got {got}",
    "int_from_float": lambda e, got: f"must be a whole number, got {got}",
    "int_parsing_size": lambda e, got: "must be a whole number of at most 4300 digits",
    "float_type": lambda e, got: f"must be a number, got {got}",
    "float_parsing": lambda e, got: f"must be a number, got {got}",
    "finite_number": lambda e, got: f"must be a finite number (no .nan or .inf), got {got}",
    "bool_type": lambda e, got: f"must be true or false, got {got}",
    "bool_parsing": lambda e, got: f"must be true or false, got {got}",
    "string_type": lambda e, got: f"{TEXT_WANTED}, got {got}",
    "string_too_short": lambda e, got: (
        "must not be empty"
        if e["ctx"]["min_length"] == 1
        else f"must be at least {e['ctx']['min_length']} characters, got {got}"
    ),
    "string_too_long": lambda e, got: f"must be at most {e['ctx']['max_length']} characters, got {len(e['input'])}",
    "string_pattern_mismatch": lambda e, got: f"{_pattern(e['ctx'])}; got {got}",
    "greater_than": lambda e, got: f"must be more than {_limit(e['ctx'], 'gt')}, got {got}",
    "greater_than_equal": lambda e, got: f"must be at least {_limit(e['ctx'], 'ge')}, got {got}",
    "less_than": lambda e, got: f"must be less than {_limit(e['ctx'], 'lt')}, got {got}",
    "less_than_equal": lambda e, got: f"must be at most {_limit(e['ctx'], 'le')}, got {got}",
    "multiple_of": lambda e, got: f"must be a multiple of {_limit(e['ctx'], 'multiple_of')}, got {got}",
    "too_short": lambda e, got: (
        "must not be empty"
        if e["ctx"]["min_length"] == 1
        else f"needs at least {e['ctx']['min_length']} entries, got {e['ctx']['actual_length']}"
    ),
    "too_long": lambda e, got: f"takes at most {e['ctx']['max_length']} entries, got {e['ctx']['actual_length']}",
    "list_type": lambda e, got: f"must be a list, got {got}",
    "tuple_type": lambda e, got: f"must be a list, got {got}",
    "set_type": lambda e, got: f"must be a list, got {got}",
    "dict_type": lambda e, got: f"must be a mapping of keys, got {got}",
    "model_type": lambda e, got: f"must be a mapping of keys, got {got}",
    "model_attributes_type": lambda e, got: f"must be a mapping of keys, got {got}",
    "literal_error": lambda e, got: f"must be one of {_expected(e['ctx'])}; got {got}",
    "enum": lambda e, got: f"must be one of {_expected(e['ctx'])}; got {got}",
    "none_required": lambda e, got: f"must be null, got {got}",
    "extra_forbidden": lambda e, got: "unknown key",
}

# What a union's branch takes, in words: a union's branches failing alike are said once.
_BRANCH = {
    "string_type": "text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true/false",
    "bool_parsing": "true/false",
    "list_type": "a list",
    "dict_type": "a mapping of keys",
    "model_type": "a mapping of keys",
}
_UNION_TAG = re.compile(r"^(str|int|float|bool|none|[a-z-]+\[.*\])$")  # pydantic names a union's branch so


def _loc(loc: tuple) -> tuple[Part, ...]:
    parts = [p for p in loc if not str(p).startswith("function-after")]
    # A tagged union puts the tag in the location (faults.0.pause.duration_s): drop it.
    return tuple(
        p
        for i, p in enumerate(parts)
        if not (i == 2 and parts[0] == "faults" and p in FAULT_KINDS)
        and not (i == 3 and parts[:2] == ["load", "stages"] and p in STAGE_KINDS)
    )


def _kinds(loc: tuple) -> tuple[str, str]:
    """What a tagged union at ``loc`` holds, in words, and its kinds."""
    return ("stage kind", ", ".join(STAGE_KINDS)) if loc[:1] == ("load",) else ("fault kind", ", ".join(FAULT_KINDS))


def _unknown_key(loc: tuple) -> str:
    """Why a key is not accepted: unknown, or moved into a driver family's section (workload.MOVED_TO_SECTIONS)."""
    section = MOVED_TO_SECTIONS.get(str(loc[-1])) if loc[:-1] == ("workload",) else None
    if section:
        return (
            f"moved: write it as workload.{section}.{loc[-1]} (a setting only {section} members have, in their section)"
        )
    return "unknown key"


def _union_branches(errors: list[dict]) -> list[dict]:
    """A union's branches (``Scalar = str | int | float | bool``) failing at one key: one error, its
    branches in words ("must be text, a whole number, a number or true/false, got a list")."""
    out: list[dict] = []
    for e in errors:
        loc = e["loc"]
        branch = isinstance(loc[-1], str) and _UNION_TAG.match(loc[-1]) and e["type"] in _BRANCH if loc else False
        last = out[-1] if out else None
        if branch and last is not None and last.get("branches") is not None and last["loc"] == loc[:-1]:
            if _BRANCH[e["type"]] not in last["branches"]:
                last["branches"].append(_BRANCH[e["type"]])
            continue
        out.append({**e, "loc": loc[:-1], "branches": [_BRANCH[e["type"]]]} if branch else e)
    return out


def _reason(e: dict, loc: tuple) -> str:
    got = _shown(e.get("input"))
    if e.get("branches") and len(e["branches"]) > 1:
        *most, last = e["branches"]
        return f"must be {', '.join(most)} or {last}, got {got}"
    if e["type"] == "extra_forbidden":
        return _unknown_key(loc)
    if e["type"] in REASONS:
        return REASONS[e["type"]](e, got)
    return e["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")


def validation_problems(err: ValidationError) -> list[tuple[str, str]]:
    """pydantic's errors as problems: keys shown (``faults[1].at_s``), reasons in the tool's words."""
    return [(key, show_references(reason)) for key, reason in _problems(err)]


def _problems(err: ValidationError) -> list[tuple[str, str]]:
    out = []
    for e in _union_branches(err.errors()):
        loc = _loc(e["loc"])
        if e["type"] == "union_tag_invalid":
            what, known = _kinds(loc)
            given = e.get("input", {}).get("kind") if isinstance(e.get("input"), dict) else None
            out.append((show_parts((*loc, "kind")), f"unknown {what} {given!r} (known: {known})"))
        elif e["type"] == "union_tag_not_found":
            out.append((show_parts((*loc, "kind")), f"missing (known kinds: {_kinds(loc)[1]})"))
        elif e["type"] in ("value_error", "assertion_error"):
            for part in _reason(e, loc).split("\n"):
                m = _PATHED.match(part)
                inner = key_parts(m["key"]) if m else None
                if m and inner is None:  # a key that is not a path (a user's "[/bold]"): as it was written
                    out.append((".".join(filter(None, (show_parts(loc), m["key"]))), m["reason"]))
                    continue
                out.append((show_parts((*loc, *(inner or ()))) or "(scenario)", m["reason"] if m else part))
        else:
            out.append((show_parts(loc) or "(scenario)", _reason(e, loc)))
    return out


# -------------------------------------------------------------------------- lines in the file

_TREES: OrderedDict[str, yaml.Node] = OrderedDict()  # a file's real path -> the node tree it was read into
_KEEP = 256  # a suite reads its scenarios after itself: its own tree must still be here for its problems


def remember_tree(path, root: yaml.Node) -> None:
    """The node tree a file was read into (files.read_scenario_data): its problems are then located."""
    key = os.path.realpath(str(path))
    _TREES[key] = root
    _TREES.move_to_end(key)
    while len(_TREES) > _KEEP:
        _TREES.popitem(last=False)


def _tree(path) -> yaml.Node | None:
    try:
        return _TREES.get(os.path.realpath(str(path)))
    except (OSError, ValueError):  # a label, not a path ("x.yaml with --backend compose")
        return None


def node_at(root: yaml.Node, parts: tuple[Part, ...]) -> tuple[yaml.Node | None, yaml.Node | None, bool]:
    """Walks the tree by the path: the node naming the deepest part found (a mapping's key, a list's
    item), that part's value, and whether the whole path was found. A key with dots in it
    (``cluster.broker_config.log.retention.ms``) is matched whole, the longest first."""
    node, named, i = root, None, 0
    while i < len(parts):
        if isinstance(node, yaml.SequenceNode) and isinstance(parts[i], int) and parts[i] < len(node.value):
            node = named = node.value[parts[i]]
            i += 1
            continue
        if not isinstance(node, yaml.MappingNode):
            break
        keys = {}
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                keys.setdefault(k.value, (k, v))
        for j in range(len(parts), i, -1):
            found = keys.get(".".join(str(p) for p in parts[i:j]))
            if found:
                named, node = found
                i = j
                break
        else:
            break
    return named, node, i == len(parts)


_NOT_TEXT = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool"}


def quote_advice(node: yaml.Node, key: Part | None) -> str | None:
    """For a number or true/false written where text is wanted: write it quoted, in the user's own
    spelling — and when YAML changed the value (``3.10`` is the number 3.1), say so."""
    if not (isinstance(node, yaml.ScalarNode) and node.style is None and node.tag in _NOT_TEXT):
        return None
    written = node.value
    advice = f'write it quoted, {key}: "{written}"' if isinstance(key, str) else f'write it quoted: "{written}"'
    try:
        read = yaml.safe_load(written)
    except yaml.YAMLError:
        read = None
    shown = _shown(read)
    if shown != written:
        number = isinstance(read, int | float) and not isinstance(read, bool)
        advice += f" (unquoted, YAML reads {written} as {'the number ' if number else ''}{shown})"
    return advice


def located(path, problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each problem's key shown, with its line in ``path`` when the file was read into a node tree:
    ``faults[1].at_s (line 14)``; a key not in the file (one that is missing) gets its nearest
    ancestor's line. A key that is no path (``(file)``, ``line 3``), or that has its line, stays."""
    root = _tree(path)
    out = []
    for key, reason in problems:
        reason = show_references(reason) if isinstance(reason, str) else reason
        parts = key_parts(key) if isinstance(key, str) and "(line " not in key else None
        if parts is None:
            out.append((key, reason))
            continue
        shown = show_parts(parts)
        if root is not None:
            named, node, whole = node_at(root, parts)
            if named is not None:
                shown += f" (line {named.start_mark.line + 1})"
            if whole and reason.startswith(TEXT_WANTED) and (advice := quote_advice(node, parts[-1])):
                reason = f"{TEXT_WANTED}: {advice}"
        out.append((shown, reason))
    return out


ScenarioError.locate = staticmethod(located)  # every ScenarioError's keys, shown and located
