"""Meaning lives in one place (issue 41): what a fault kind does, what a protocol generation
can do, what a backend can do and what a driver can do are declared by the kind, the
generation's row, the backend and the driver's class; nobody else decides by their names.

A walk over every module's syntax tree (not a text search) finds each place where a kind's, a
generation's or a backend's name is compared with something, used as a key to look a meaning
up, or taken apart by its prefix. Such a place is allowed only in the name's own home: a kind's
module and the catalogue, the generations' table, a backend's module and the backends' registry,
and the one table that supplies old histories' fault effects.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from faults.catalogue import KINDS
from harness.cluster.backend import BACKENDS
from oracle.protocols import DRIVER_NAMES, GENERATIONS

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "faults", "workloads", "oracle", "runtime", "coordinator", "analysis")

FAULT_KINDS = frozenset(KINDS)
GENERATION_NAMES = frozenset(GENERATIONS)
BACKEND_NAMES = frozenset(BACKENDS)

# What an expression is about, by the last name in it: `f.kind`, `event["kind"]`, `e.get("protocol")`.
SUBJECTS = {
    "kind": FAULT_KINDS,
    "protocol": GENERATION_NAMES,
    "generation": GENERATION_NAMES,
    "backend": BACKEND_NAMES,
    "driver": frozenset(DRIVER_NAMES),
}
# Names that mean nothing else in this code base (a role is "consumer", a ZooKeeper expiry's
# method may be "network", a target list "brokers"; "poll-stall" or "classic-static" is only ever
# the kind or the generation, and no code compares "local", "compose" or "external" but to tell
# backends apart): compared or looked up anywhere, whatever the other side.
UNMISTAKABLE = frozenset(n for n in FAULT_KINDS | GENERATION_NAMES if "-" in n) | BACKEND_NAMES
PREFIX_CALLS = {"startswith", "endswith", "removeprefix", "removesuffix"}


def homes() -> dict[str, frozenset[str]]:
    """module path -> the names it may decide by."""
    allowed: dict[str, set[str]] = {}

    def allow(path: str, names) -> None:
        allowed.setdefault(path, set()).update(names)

    for kind, fault in KINDS.items():
        allow(f"{fault.__module__.replace('.', '/')}.py", {kind})
    allow("faults/catalogue.py", FAULT_KINDS)
    allow("oracle/legacy.py", FAULT_KINDS)  # old histories' fault effects, by kind: the one exception
    allow("oracle/protocols.py", GENERATION_NAMES | set(DRIVER_NAMES))
    allow("harness/scenario/workload.py", DRIVER_NAMES)  # the driver families' table (FAMILIES)
    for module in (REPO / "harness" / "cluster").glob("*.py"):  # the backends' own layer
        allow(str(module.relative_to(REPO)), BACKEND_NAMES)
    return {path: frozenset(names) for path, names in allowed.items()}


@dataclass(frozen=True)
class Decision:
    path: str
    line: int
    name: str
    how: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.how} {self.name!r}"


def _subject(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ):
        return node.args[0].value
    return None


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for element in node.elts for s in _strings(element)]
    return []


def decisions(source: str, path: str) -> list[Decision]:
    """Every place in ``source`` that decides by a kind's, a generation's or a backend's name."""
    found: list[Decision] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            subjects = {s for side in sides if (s := _subject(side)) in SUBJECTS}
            for side in sides:
                for name in _strings(side):
                    if name in UNMISTAKABLE or any(name in SUBJECTS[s] for s in subjects):
                        found.append(Decision(path, node.lineno, name, "compares with"))
        elif isinstance(node, ast.Subscript):
            for name in _strings(node.slice):
                if name in UNMISTAKABLE - BACKEND_NAMES:  # cluster["backend"] is a lookup of the key
                    found.append(Decision(path, node.lineno, name, "looks up by"))
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                for name in _strings(key) if key is not None else ():
                    if name in UNMISTAKABLE - BACKEND_NAMES:
                        found.append(Decision(path, node.lineno, name, "keys a table by"))
        elif isinstance(node, ast.MatchValue):
            for name in _strings(node.value):
                if name in UNMISTAKABLE:
                    found.append(Decision(path, node.lineno, name, "matches"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in PREFIX_CALLS
            and node.args
        ):
            for prefix in _strings(node.args[0]):
                names = [
                    n for n in GENERATION_NAMES | FAULT_KINDS | BACKEND_NAMES if n != prefix and n.startswith(prefix)
                ]
                if "-" in prefix and names:
                    found.append(Decision(path, node.lineno, prefix, f"takes apart ({', '.join(sorted(names))}) by"))
    return found


def modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py"))


def test_no_name_decides_outside_its_home():
    allowed = homes()
    offenders = [
        d
        for p in modules()
        for d in decisions(p.read_text(), str(p.relative_to(REPO)))
        if d.name not in allowed.get(d.path, frozenset())
    ]
    assert not offenders, "decided by name outside its home:\n" + "\n".join(map(str, offenders))


@pytest.mark.parametrize(
    "snippet",
    [
        'if f.kind == "crash": pass',
        'if e.get("kind") in ("pause", "crash"): pass',
        'if event["protocol"] != "consumer": pass',
        'if spec.backend == "compose": pass',
        'if self.workload.driver != "java": pass',
        'if cluster.get("backend", "local") != "external": pass',
        'if x == "classic-static": pass',
        'WORDS = {"poll-stall": "stuck"}',
        'word = WORDS["poll-stall"]',
        'variant = protocol.removeprefix("coordinator-")',
        'match protocol:\n    case "zk-eager": pass',
    ],
)
def test_the_walk_finds_a_decision_by_name(snippet):
    assert decisions(snippet, "somewhere.py"), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        'if role == "consumer": pass',  # a role, not the generation
        'if self.method == "network": pass',  # a ZooKeeper expiry's method, not the kind
        "if generation.static_membership: pass",
        'kinds = ["pause", "crash", "network"]',  # a default list is data, not a decision
    ],
)
def test_the_walk_leaves_other_words_alone(snippet):
    assert not decisions(snippet, "somewhere.py"), snippet
