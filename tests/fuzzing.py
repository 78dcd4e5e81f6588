"""Seeded mutators for the bad-input fuzz: scenario files and run histories, damaged in the
ways an outside review damaged them, fed through the command line in-process.

Used by tests/unit/test_fuzz_inputs.py (a few hundred inputs, every suite run) and by
benchmarks/fuzz_inputs.py (the full campaign). A mutation is a function
``(rng, data) -> data`` over the file's bytes; structure-aware ones parse the file first
so the damage reaches past the parser (a wrong type three levels down, a missing key).
Whatever the input, the command must end with exit code 0, 1, 2 (bad input: one message
naming the file) or 4 (a history that cannot be judged in full), never with an exception.

Three families go past files: degenerate random draws (DRAW_MUTATIONS), output paths a
command cannot write (output_outcomes) and every command's options (option_outcomes). They
run under nothing_starts: whatever would start a cluster, a run or Spark raises instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import yaml
from click.testing import CliRunner

from harness.cli import main

Mutation = Callable[[random.Random, bytes], bytes]

# --------------------------------------------------------------------------- hostile values

HOSTILE_SCALARS: list[Any] = [
    None,
    "",
    "many",
    "[/bold]",
    "[red]x",
    "2020-99-99",
    "x" * 3000,
    -1,
    0,
    1,
    2**31,
    2**63,
    10**30,
    10**400,
    -(10**30),
    0.5,
    1e308,
    float("inf"),
    float("nan"),
    True,
    False,
]
HOSTILE_VALUES: list[Any] = HOSTILE_SCALARS + [[], {}, [[]], {"a": {"b": [1]}}, ["x", 1, None], {"[/bold]": 1}]
YAML_HOSTILE = [
    "!!int x",
    "!!float nan",
    "!!timestamp 2020-99-99",
    "!!python/object/apply:os.system ['true']",
    "!!binary zz",
    "!!set {a, b}",
    "!foo bar",
    "! x",
    "2020-99-99",
    "2020-01-01 10:00:00",
    ".inf",
    "-.inf",
    ".nan",
    "1" + "0" * 5000,
    "1.0e+999",
    "0x7fffffffffffffffffff",
    "0o777",
    "'[/bold]'",
    "[/bold]",
    "~",
    "yes",
    "[[[[",
    "{a: [",
    "*undefined",
    "&a [*a]",
    "'\\x00'",
    '"\\ud800"',
    "|\n  multi\n  line",
]
REGEXES = [
    "^a{4294967296}",
    "^a{99999999999}",
    "^" + "(" * 2000 + "a" + ")" * 2000,
    "^[",
    "^(?P<x",
    "^\\",
    "^a{2,1}",
    "^(a+)+$",
    "^" + "[a-z]" * 5000,
    "no-caret",
    "^(?<!x*)a",
]
DEEP_OPEN = {"[": "]", "{a: ": "}"}


def _deep(rng: random.Random) -> str:
    depth = rng.choice([25, 200, 1000, 5000, 50_000])
    opener = rng.choice(list(DEEP_OPEN))
    return opener * depth + "1" + DEEP_OPEN[opener] * depth


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


# --------------------------------------------------------------------------- byte-level mutations (both kinds)


def flip_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data or b" ")
    for _ in range(rng.choice([1, 1, 2, 8])):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def non_utf8(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xfe\xff", b"\x80\x80"]) + data[at:]


def bom(rng: random.Random, data: bytes) -> bytes:
    return rng.choice([b"\xef\xbb\xbf", b"\xef\xbb\xbf\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"]) + data


def control_chars(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice([b"\x00", b"\x07", b"\x1b[31m", b"\r", b"\x0b", b"\xe2\x80\xa8"]) + data[at:]


def delete_lines(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    for _ in range(rng.choice([1, 1, 3])):
        if lines:
            del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def duplicate_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return b"\n".join(lines)


def swap_lines(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def empty(rng: random.Random, data: bytes) -> bytes:
    return rng.choice([b"", b"\n", b"   \n\n", b"\t"])


BYTE_MUTATIONS: dict[str, Mutation] = {
    "flip-bytes": flip_bytes,
    "truncate": truncate,
    "non-utf8": non_utf8,
    "bom": bom,
    "control-chars": control_chars,
    "delete-lines": delete_lines,
    "duplicate-line": duplicate_line,
    "swap-lines": swap_lines,
    "empty": empty,
}

# --------------------------------------------------------------------------- scenario mutations


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path in parsed YAML/JSON data."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,))
    return out


def _parent(data: Any, path: tuple) -> Any:
    for key in path[:-1]:
        data = data[key]
    return data


def _yaml_data(data: bytes) -> dict | None:
    if b"&" in data or len(data) > 100_000:  # anchors: an alias bomb would explode here, in the fuzzer
        return None
    try:
        parsed = yaml.safe_load(data.decode("utf-8"))
    except Exception:
        return None
    return parsed if isinstance(parsed, dict) else None


def _dump_yaml(data: Any) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode()


def yaml_value(rng: random.Random, data: bytes) -> bytes:
    """A random value (after `key: `) replaced by a hostile YAML token: tags, dates, huge numbers, …"""
    lines = _lines(data)
    candidates = [i for i, line in enumerate(lines) if b": " in line and not line.lstrip().startswith(b"#")]
    if not candidates:
        return data + b"\nx: " + rng.choice(YAML_HOSTILE).encode()
    i = rng.choice(candidates)
    key = lines[i].split(b": ", 1)[0]
    lines[i] = key + b": " + rng.choice(YAML_HOSTILE + [_deep(rng)]).encode()
    return b"\n".join(lines)


def deep_nesting(rng: random.Random, data: bytes) -> bytes:
    key = rng.choice([b"description", b"checks", b"topics", b"zz", b"workload"])
    if rng.random() < 0.5:
        return data + b"\n" + key + b": " + _deep(rng).encode() + b"\n"
    depth = rng.choice([25, 300, 3000])
    block = b"".join(b"  " * i + b"a:\n" for i in range(depth)) + b"  " * depth + b"1\n"
    return data + b"\n" + key + b":\n" + b"".join(b"  " + line + b"\n" for line in block.splitlines())


def alias_bomb(rng: random.Random, data: bytes) -> bytes:
    levels = rng.choice([3, 6, 9])
    bomb = [b"l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    bomb += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]".encode() for i in range(1, levels)]
    key = rng.choice([b"checks: {duplicates: {max: *l%d}}", b"description: *l%d", b"zz: *l%d"]) % (levels - 1)
    return data + b"\n" + b"\n".join(bomb) + b"\n" + key + b"\n"


def markup_key(rng: random.Random, data: bytes) -> bytes:
    return (
        data
        + b"\n"
        + rng.choice(
            [
                b"'[/bold]': 1",
                b"workload: {'[/red]': x}",
                b"name: '[bold]x'",
                b"checks: {'[/bold]': {}}",
                b"'[link=x]': y",
            ]
        )
        + b"\n"
    )


def _mutate_data(rng: random.Random, data: bytes, change: Callable[[random.Random, dict], None]) -> bytes:
    parsed = _yaml_data(data)
    if parsed is None:
        return flip_bytes(rng, data)
    try:
        change(rng, parsed)
    except (TypeError, AttributeError, KeyError, IndexError):  # an earlier mutation changed the shape
        return flip_bytes(rng, data)
    return _dump_yaml(parsed)


def _set_random(rng: random.Random, parsed: dict) -> None:
    path = rng.choice(_paths(parsed) or [("zz",)])
    _parent(parsed, path)[path[-1]] = rng.choice(HOSTILE_VALUES)


def _delete_random(rng: random.Random, parsed: dict) -> None:
    paths = _paths(parsed)
    if paths:
        path = rng.choice(paths)
        del _parent(parsed, path)[path[-1]]


def _add_unknown(rng: random.Random, parsed: dict) -> None:
    mappings = [parsed] + [node for path in _paths(parsed) if isinstance(node := _parent(parsed, path)[path[-1]], dict)]
    rng.choice(mappings)[rng.choice(["zz", "[/bold]", "1", "count", "kinds"])] = rng.choice(HOSTILE_VALUES)


def _random_faults(rng: random.Random, parsed: dict) -> None:
    spec = dict(parsed.get("random_faults") or {"count": 3})
    key = rng.choice(["count", "kinds", "targets", "start_s", "end_s", "duration_s"])
    spec[key] = rng.choice(
        [
            [],
            ["pause"],
            ["network"],
            ["poll-stall"],
            ["crash", "crash"],
            ["nope"],
            ["producer"],
            ["broker-1"],
            ["zookeeper-1", "controller-1", "coordinator"],
            ["coordinator-1"],
            [5, 1],
            [0, 0],
            [1, 1e308],
            [-1, 2],
            [1, 2, 3],
            0,
            1,
            1000,
            10**9,
            -5,
            1e308,
            None,
            "x",
        ]
    )
    parsed["random_faults"] = spec


def _checks(rng: random.Random, parsed: dict) -> None:
    name = rng.choice(["duplicates", "convergence", "exclusive-ownership", "commit-monotonicity", "no-loss", "x"])
    option = rng.choice(["max", "within_s", "stall_s", "split_brain", "allow_reset", "zz", 1])
    parsed["checks"] = {name: rng.choice([None, {}, {option: rng.choice(HOSTILE_VALUES)}, [], "all", 5])}


def _broker_config(rng: random.Random, parsed: dict) -> None:
    key = rng.choice(
        [
            "listeners",
            "advertised.listeners",
            "zookeeper.connect",
            "log.dirs",
            "broker.id",
            "node.id",
            "process.roles",
            "inter.broker.listener.name",
            "zookeeper.session.timeout.ms",
            "a b",
            "num.io.threads",
            "x=y",
        ]
    )
    value = rng.choice(["PLAINTEXT://:9092", "1\nlisteners=PLAINTEXT://:1", "x\\", 4, "abc", 10**12, True])
    parsed.setdefault("cluster", {}).setdefault("broker_config", {})[key] = value


def _topic_pattern(rng: random.Random, parsed: dict) -> None:
    workload = parsed.setdefault("workload", {})
    workload.pop("topics", None)
    workload["topic_pattern"] = rng.choice(REGEXES)


def _sizes(rng: random.Random, parsed: dict) -> None:
    """Values that would explode memory or time if accepted."""
    choice = rng.randrange(5)
    big = rng.choice([1001, 10**6, 10**9, 10**30])
    if choice == 0:
        parsed["topics"] = [{"name": "events", "partitions": big}]
    elif choice == 1:
        parsed.setdefault("workload", {})["consumers"] = big
    elif choice == 2:
        parsed["faults"] = [{"kind": "join-storm", "at_s": 1, "consumers": big}]
    elif choice == 3:
        parsed["duration_s"] = rng.choice([1e308, 10**30, float("inf"), -1])
    else:
        parsed["seed"] = rng.choice([10**100, -(10**30), 2**63])


DATA_MUTATIONS: dict[str, Callable[[random.Random, dict], None]] = {
    "wrong-type": _set_random,
    "missing-key": _delete_random,
    "unknown-key": _add_unknown,
    "random-faults": _random_faults,
    "check-options": _checks,
    "broker-config": _broker_config,
    "topic-pattern": _topic_pattern,
    "huge-values": _sizes,
}

SCENARIO_MUTATIONS: dict[str, Mutation] = {
    **BYTE_MUTATIONS,
    "yaml-value": yaml_value,
    "deep-nesting": deep_nesting,
    "alias-bomb": alias_bomb,
    "markup": markup_key,
    **{
        name: (lambda change: lambda rng, data: _mutate_data(rng, data, change))(change)  # noqa: B023 (bound)
        for name, change in DATA_MUTATIONS.items()
    },
}

# --------------------------------------------------------------------------- history mutations


def _events(data: bytes) -> list[Any] | None:
    try:
        return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    except (ValueError, RecursionError):
        return None


def _dump_events(events: list[Any]) -> bytes:
    return "\n".join(json.dumps(e) for e in events).encode() + b"\n"


def _change_event(rng: random.Random, data: bytes, change: Callable[[random.Random, Any], Any]) -> bytes:
    events = _events(data)
    if not events:
        return flip_bytes(rng, data)
    i = rng.randrange(len(events))
    events[i] = change(rng, events[i])
    return _dump_events(events)


def _event_wrong_type(rng: random.Random, event: Any) -> Any:
    paths = _paths(event)
    if paths:
        path = rng.choice(paths)
        _parent(event, path)[path[-1]] = rng.choice(HOSTILE_VALUES)
    return event


def _event_missing_key(rng: random.Random, event: Any) -> Any:
    paths = [p for p in _paths(event) if isinstance(p[-1], str)]
    if paths:
        path = rng.choice(paths)
        del _parent(event, path)[path[-1]]
    return event


def not_an_object(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    lines.insert(
        rng.randrange(len(lines) + 1),
        rng.choice(
            [b"[1, 2]", b'"event"', b"1", b"null", b"true", b"{}", b'{"name": null}', b'{"name": "x"}', b"[{}]"]
        ),
    )
    return b"\n".join(lines)


def deep_line(rng: random.Random, data: bytes) -> bytes:
    depth = rng.choice([50, 1000, 100_000])
    line = rng.choice(
        [
            b"[" * depth + b"]" * depth,
            b'{"name": "phase", "mono_ms": 1, "source": "h", "x": ' + b"[" * depth + b"]" * depth + b"}",
        ]
    )
    lines = _lines(data)
    lines.insert(rng.randrange(len(lines) + 1), line)
    return b"\n".join(lines)


def huge_number(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    token = rng.choice(
        [b"1" + b"0" * 5000, b"1e999", b"-1e999", b"NaN", b"Infinity", b"-Infinity", b"9" * 30, b"1.5", b"-1", b"0"]
    )
    for old in (
        b'"mono_ms":',
        b'"partition":',
        b'"min_offset":',
        b'"max_offset":',
        b'"offset":',
        b'"generation":',
        b'"partitions":',
        b'"seq":',
        b'"incarnation":',
        b'"pid":',
    ):
        at = lines[i].find(old)
        if at >= 0:
            end = at + len(old)
            stop = end
            while stop < len(lines[i]) and lines[i][stop : stop + 1] not in b",}]":
                stop += 1
            lines[i] = lines[i][:end] + token + lines[i][stop:]
            break
    return b"\n".join(lines)


def markup_names(rng: random.Random, data: bytes) -> bytes:
    name = rng.choice([b"[/bold]", b"[red]", b"[link=x]y", b"\\[x]"])
    return data.replace(b'"consumer-2"', b'"' + name + b'"')


def _set_in_run_started(data: bytes, key: str, value: Any) -> bytes:
    events = _events(data)
    if not events:
        return data
    for e in events:
        if isinstance(e, dict) and e.get("name") == "run_started":
            e[key] = value
    return _dump_events(events)


def huge_partition_count(rng: random.Random, data: bytes) -> bytes:
    return _set_in_run_started(
        data, "topics", [{"topic": "events", "partitions": rng.choice([10**9, 10**6, -1, 2**31])}]
    )


def run_started_checks(rng: random.Random, data: bytes) -> bytes:
    return _set_in_run_started(
        data,
        "checks",
        rng.choice(
            [
                {"duplicates": {"max": "many"}},
                {"convergence": {"within_s": -1}},
                {"nope": {}},
                [1],
                "all",
                {"duplicates": [1]},
                {"exclusive-ownership": {"split_brain": "panic"}},
            ]
        ),
    )


def drop_event(rng: random.Random, data: bytes) -> bytes:
    name = rng.choice([b'"run_started"', b'"phase"', b'"group_joined"', b'"partitions_assigned"'])
    return b"\n".join(line for line in _lines(data) if name not in line)


def long_line(rng: random.Random, data: bytes) -> bytes:
    return data + b'{"name": "x", "pad": "' + b"x" * (17 * 2**20) + b'"}\n'


HISTORY_MUTATIONS: dict[str, Mutation] = {
    **BYTE_MUTATIONS,
    "not-an-object": not_an_object,
    "deep-line": deep_line,
    "huge-number": huge_number,
    "markup": markup_names,
    "wrong-type": lambda rng, data: _change_event(rng, data, _event_wrong_type),
    "missing-key": lambda rng, data: _change_event(rng, data, _event_missing_key),
    "huge-partition-count": huge_partition_count,
    "check-options": run_started_checks,
    "drop-event": drop_event,
}
RARE_HISTORY_MUTATIONS: dict[str, Mutation] = {"long-line": long_line}  # 17 MiB each: the campaign only


def mutate(rng: random.Random, data: bytes, mutations: dict[str, Mutation]) -> tuple[str, bytes]:
    """One to three mutations in a row; the name says which."""
    names = [rng.choice(sorted(mutations)) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    for name in names:
        data = mutations[name](rng, data)
    return "+".join(names), data


# --------------------------------------------------------------------------- running them


@dataclass
class Outcome:
    kind: str  # "scenario" or "history"
    mutation: str
    path: str
    exit_code: int | None
    seconds: float
    output: str
    exception: str | None  # what escaped the command: a traceback in real life
    names: tuple[str, ...] = ()  # what a refusal must name, one of them (default: the path)

    def problem(self) -> str | None:
        """What is wrong with how the command treated this input, or None."""
        if self.exception:
            return f"raised {self.exception}"
        if "Traceback" in self.output:
            return "printed a traceback"
        if self.exit_code not in (0, 1, 2, 4):
            return f"exit code {self.exit_code}"
        if self.exit_code == 2 and not any(name in self.output for name in self.names or (self.path,)):
            return f"the error does not name {' or '.join(self.names or (self.path,))}"
        return None


def _invoke(kind: str, mutation: str, path: Path, args: list[str], names: tuple[str, ...] = ()) -> Outcome:
    started = time.perf_counter()
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    seconds = time.perf_counter() - started
    exc = result.exception
    escaped = None if exc is None or isinstance(exc, SystemExit) else f"{type(exc).__name__}: {str(exc)[:200]}"
    return Outcome(kind, mutation, str(path), result.exit_code, seconds, result.output, escaped, names)


def try_scenario(path: Path, mutation: str = "") -> Outcome:
    """`schedule SCENARIO` validates the scenario and draws its faults without starting anything."""
    return _invoke("scenario", mutation, path, ["schedule", str(path)])


def try_history(run_dir: Path, mutation: str = "") -> Outcome:
    return _invoke("history", mutation, run_dir / "history.jsonl", ["check", str(run_dir)])


# --------------------------------------------------------------------------- degenerate random draws

# Raw YAML tokens, so the file says what a user would type: NaN-like spellings, underflow,
# overflow, exact boundaries (a window that ends at duration_s, a length of one millisecond).
DRAW_TOKENS = [
    "0",
    "-0.0",
    "1.0e-9",
    "1e-9",
    "0.0004",
    "0.0005",
    "0.001",
    "0.5",
    "1",
    "5",
    "70",
    "85",
    "89.9995",
    "90",
    "86400",
    "86400.001",
    "1e999",
    "-1e999",
    ".nan",
    ".NaN",
    "NaN",
    ".inf",
    "-.inf",
    "1_000",
    "0x10",
    "~",
    "''",
    "true",
    "[1]",
]
DRAW_COUNTS = ["0", "1", "1000", "1001", "-1", "1.5", ".nan", "1e-9", "true", "~", "'3'"]
DRAW_TARGETS = [
    "[]",
    "[consumer-1, consumer-1]",
    "[consumer-9]",
    "['']",
    "[~]",
    "[broker-1]",
    "[zookeeper-1]",
    "[producer]",
    "consumer-1",
    "[consumer-1, broker-1, zookeeper-1]",
]
DRAW_KINDS = [
    "[]",
    "[pause, pause, pause]",
    "[crash]",
    "[network]",
    "[poll-stall]",
    "[zk-session-expiry]",
    "[nope]",
    "pause",
]


# Boundaries a valid scenario may sit on: half the draws use only these, so they reach the draw itself.
PLAUSIBLE = ["0.0005", "0.001", "0.0015", "1", "5", "69.9995", "70", "85", "89.999", "90", "3600"]


def _token(rng: random.Random) -> str:
    return rng.choice(PLAUSIBLE if rng.random() < 0.6 else DRAW_TOKENS)


def _pair(rng: random.Random) -> str:
    a, b = _token(rng), _token(rng)
    return rng.choice([f"[{a}, {b}]", f"[{a}, {a}]", f"[{b}, {a}]", f"[{a}]", "[]", a])


def degenerate_draws(rng: random.Random, data: bytes) -> bytes:
    """A random_faults block whose draws are degenerate: tiny, huge, equal or reversed bounds,
    zero counts, NaN-like values, an empty window, empty or repeated target lists."""
    parsed = _yaml_data(data)
    if parsed is None:
        return data
    parsed.pop("random_faults", None)
    if rng.random() < 0.3:  # a short run: the default end_s (duration_s - 5) leaves no window
        parsed["duration_s"] = rng.choice([1e-3, 5, 5.0001, 6, 10])
    block = {"count": rng.choice(["1", "6", "1000"] * 3 + DRAW_COUNTS), "duration_s": _pair(rng)}
    for key, pick in (
        ("start_s", _token),
        ("end_s", _token),
        ("targets", lambda r: r.choice(DRAW_TARGETS)),
        ("kinds", lambda r: r.choice(DRAW_KINDS)),
    ):
        if rng.random() < 0.5:
            block[key] = pick(rng)
    text = "random_faults: {" + ", ".join(f"{k}: {v}" for k, v in block.items()) + "}\n"
    return _dump_yaml(parsed) + text.encode()


DRAW_MUTATIONS: dict[str, Mutation] = {"degenerate-draws": degenerate_draws}


# --------------------------------------------------------------------------- commands that must not start anything


class WouldStart(Exception):
    """A command got past its input checks to where it starts something (a cluster, a run,
    Spark, an installation, a cleanup): the fuzz feeds only inputs that must be refused before."""


# What starts (or stops) something real, patched while the fuzz runs: reaching one is a failure
# of the input's refusal, reported as such, never a cluster started on a shared machine.
STARTERS = [
    ("harness.run.loop", "Run.execute"),
    ("harness.cluster.backend", "open_cluster"),
    ("harness.campaigns.suite", "SuiteRun.execute"),
    ("harness.campaigns.capacity", "CapacityRun.run_points"),
    ("analysis.session", "spark_session"),
    ("harness.components.install", "setup_all"),
    ("harness.components.containers.harness_image", "build_harness_image"),
    ("harness.supervision.processes", "cleanup_leftovers"),
    ("harness.cluster.cleanup", "clean_up"),
]


@contextlib.contextmanager
def nothing_starts():
    """Every starter in STARTERS raises WouldStart instead."""
    import importlib
    from unittest import mock

    patches = []
    for module, attr in STARTERS:
        owner_name, _, name = attr.rpartition(".")
        owner = importlib.import_module(module)
        if owner_name:
            owner = getattr(owner, owner_name)

        def refuse(*_args, _what=f"{module}.{attr}", **_kwargs):
            raise WouldStart(f"{_what} was reached: the input was not refused before starting")

        patches.append(mock.patch.object(owner, name, refuse))
    with contextlib.ExitStack() as stack:
        for patch in patches:
            stack.enter_context(patch)
        yield


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.is_dir() else []


# --------------------------------------------------------------------------- output paths


def output_paths(sandbox: Path) -> dict[str, str]:
    """Each kind of output path that cannot be written, made in ``sandbox``: under a regular file,
    under /proc and /sys, a read-only directory, a non-empty one, a NUL, overlong names."""
    (sandbox / "afile").write_text("x")
    (sandbox / "full").mkdir(exist_ok=True)
    (sandbox / "full" / "kept.txt").write_text("the user's")
    (sandbox / "read-only").mkdir(exist_ok=True)
    (sandbox / "read-only").chmod(0o555)
    return {
        "under-a-file": str(sandbox / "afile" / "out"),
        "a-file": str(sandbox / "afile"),
        "under-proc": "/proc/rl-out",
        "under-proc-pid": "/proc/self/rl-out",
        "under-sys": "/sys/rl-out",
        "under-dev-null": "/dev/null/out",
        "read-only": str(sandbox / "read-only" / "out"),
        "non-empty": str(sandbox / "full"),
        "nul": str(sandbox / "a\0b"),
        "long-name": str(sandbox / ("n" * 300)),
        "long-path": str(sandbox.joinpath(*["d" * 200] * 25)),
        "empty-string": "",
    }


# Paths a command may accept (an empty or a read-only directory is writable for root; "" is the
# working directory): only commands that start nothing get them.
MAY_BE_ACCEPTED = {"read-only", "empty-string", "non-empty"}
ONLY_A_WRITE_TELLS = {"under-proc", "under-proc-pid", "under-sys"}


def output_commands(scenario: Path, suite: Path, sweep: Path, run_dir: Path) -> list[tuple[list[str], str, bool]]:
    """(arguments, output option, starts something if the path is accepted) for every command that writes."""
    return [
        (["compose", "render", str(scenario)], "--output", False),
        (["run", str(scenario)], "--runs-dir", True),
        (["compare", str(scenario), "--protocols", "classic-eager"], "--runs-dir", True),
        (["suite", str(suite)], "--runs-dir", True),
        (["suite", str(suite)], "--out", True),
        (["capacity", str(sweep)], "--runs-dir", True),
        (["shrink", str(run_dir)], "--runs-dir", True),
        (["analyze", str(run_dir)], "--out", True),
        (["analyze", str(run_dir), "--out", str(run_dir.parent / "analysis")], "--cache", True),
        (["cluster", "up"], "--workdir", True),
    ]


def try_output(args: list[str], option: str, path: str, label: str, sandbox: Path) -> Outcome:
    """One command with one bad output path. A refusal (exit 2) must name the option and leave
    the sandbox as it was; a command that starts something must refuse."""
    before = _tree(sandbox)
    # the option, or the path as the command resolved it (cluster up: /proc/self is /proc/<pid>)
    names = (f"{option} ", f"{path!r}", path) if path else (option,)
    outcome = _invoke("output", label, Path(" ".join(args + [option, path])), args + [option, path], names)
    if outcome.exit_code == 2 and not outcome.exception and _tree(sandbox) != before:
        outcome.exception = f"refused, yet changed {sandbox}: {sorted(set(_tree(sandbox)) ^ set(before))[:3]}"
    return outcome


def check_write_cases(run_dir: Path) -> list[tuple[str, Path]]:
    """`check --write` into a run directory where what it writes is a directory, not a file."""
    out = []
    for name in ("summary.md", "verdict.json", "run.json"):
        case = run_dir.parent / f"{run_dir.name}-{name}"
        if not case.exists():
            case.mkdir()
            (case / "history.jsonl").write_bytes((run_dir / "history.jsonl").read_bytes())
            (case / name).mkdir()
            if name == "run.json":
                (case / "verdict.json").mkdir()
        out.append((name, case))
    return out


# --------------------------------------------------------------------------- each command's options


def commands(
    group: click.Group | None = None, prefix: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command of `rebalance-lab --help`, subcommands included, by its words."""
    group = group or main
    out = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            out += commands(command, prefix + (name,))
        else:
            out.append((prefix + (name,), command))
    return out


OUTPUT_PARAMS = {"runs_dir", "out", "cache_dir", "workdir", "output", "junit"}  # the output-path family's
# Commands whose options all have good values here, so that a value in range (`--seed 0`) would start it.
STARTS_WITH_GOOD_VALUES = {("run",)}
BAD_INTS = ["x", "", "-1", "0", "1.5", "nan", "1e3", "99999999999999999999999", "0x10", "[/bold]"]
BAD_FLOATS = ["x", "", "-1", "0", "nan", "inf", "-inf", "1e999", "[/bold]"]
BAD_CHOICES = ["nope", "", "[/bold]", "3.9 ", "LOCAL"]
FREE_TEXT = ["", "[/bold]", ",", "x" * 3000, "nope", "\x1b[31m"]


def bad_paths(sandbox: Path) -> dict[str, Path]:
    """Input paths that are not what a command reads: missing, a directory where a file is
    expected (and the reverse), empty, unreadable, a NUL."""
    sandbox.mkdir(parents=True, exist_ok=True)
    (sandbox / "empty-file").write_bytes(b"")
    (sandbox / "a-dir").mkdir(exist_ok=True)
    (sandbox / "binary").write_bytes(bytes(range(256)) * 8)
    return {
        "missing": sandbox / "missing.yaml",
        "a-dir": sandbox / "a-dir",
        "empty-file": sandbox / "empty-file",
        "binary": sandbox / "binary",
        "dev-null": Path("/dev/null"),
        "proc-file": Path("/proc/self/status"),
        "nul": Path(str(sandbox / "a\0b")),
        "long-name": sandbox / ("n" * 300),
        "empty-string": Path(""),
    }


# Commands that act on the machine (install, stop every leftover process, start or stop the
# standalone cluster): never run with good values only, and given short free text alone.
ACTS_ALONE = {("setup",), ("cleanup",), ("cluster", "down"), ("cluster", "up")}
# Free-text options a command can judge only by starting (a Spark master URL): not fed.
JUDGED_BY_STARTING = {"master"}


def option_cases(
    words: tuple[str, ...], command: click.Command, valid: dict[str, list[str]], paths: dict[str, Path]
) -> list[tuple[str, list[str], tuple[str, ...]]]:
    """(label, arguments, what a refusal names) for one command: --help, then each parameter given
    bad values while the others keep good ones (``valid``: good tokens by parameter name)."""
    cases = [("help", [*words, "--help"], ())]

    def with_value(param: click.Parameter, value: str) -> list[str]:
        """The command's good arguments and options, ``param`` given ``value`` instead."""
        out = []
        for p in command.params:
            if p is param:
                out += [value] if isinstance(p, click.Argument) else [p.opts[-1], value]
            else:
                out += valid.get(p.name, [])
        return out

    for param in command.params:
        if param.name in OUTPUT_PARAMS or param.name in JUDGED_BY_STARTING or param.name == "help":
            continue
        t = param.type
        if isinstance(t, click.Choice):
            values = BAD_CHOICES
        elif isinstance(t, (click.IntRange, click.types.IntParamType)):
            values = BAD_INTS
        elif isinstance(t, (click.FloatRange, click.types.FloatParamType)):
            values = BAD_FLOATS
        elif isinstance(t, click.Path) or isinstance(param, click.Argument):
            values = [str(p) for p in paths.values()]
        elif isinstance(param, click.Option) and param.is_flag:
            continue  # a flag alone is no bad input
        elif words in ACTS_ALONE:
            values = FREE_TEXT[:2]
        else:
            values = FREE_TEXT
        for value in values:
            # A refusal names the option or argument, or the value itself (a path, shown as given)
            names = (*getattr(param, "opts", ()), param.human_readable_name, repr(value)[1:-1]) + (
                (value,) if value else ()
            )
            if _accepts(param, value):  # in range after all (--confirm 0): another input may be what is refused
                if words in STARTS_WITH_GOOD_VALUES:
                    continue  # nothing else is: it would run
                names = ("rror",)
            label = param.name if isinstance(param, click.Argument) else param.opts[-1]
            cases.append((f"{label}={value[:20]!r}", [*words, *with_value(param, value)], names))
    return cases


def _accepts(param: click.Parameter, value: str) -> bool:
    try:
        param.type.convert(value, param, None)
    except (click.BadParameter, ValueError, OSError):
        return False
    return not isinstance(param.type, click.Path)  # a path: whether it is readable comes later


def try_option(label: str, args: list[str], names: tuple[str, ...] = ()) -> Outcome:
    return _invoke("option", label, Path(" ".join(args)), args, names)


def command_fixtures(repo: Path, work: Path, history: bytes) -> dict[str, list[str]]:
    """Good tokens for every command's inputs (valid files that lead nowhere dangerous on their
    own: each case makes exactly one thing bad), by click parameter name."""
    run_dir = work / "a-run"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "history.jsonl").write_bytes(history)
    if not (run_dir / "verdict.json").exists():  # a finished run, as analyze wants one
        CliRunner().invoke(main, ["check", str(run_dir), "--write"])
    return {
        "scenario_file": [str(repo / "scenarios/smoke.yaml")],
        "suite_file": [str(repo / "suites/release.yaml")],
        "sweep_file": [str(repo / "profiles/capacity-small.yaml")],
        "run_dir": [str(run_dir)],
        "runs": [str(run_dir)],
        "protocols": ["--protocols", "classic-eager"],
    }


def draw_outcomes(rng: random.Random, bases: list[bytes], work: Path, n: int):
    """``n`` scenarios with degenerate random draws, through `schedule`."""
    for i in range(n):
        name, data = mutate(rng, rng.choice(bases), DRAW_MUTATIONS)
        path = work / f"draw-{i:05d}.yaml"
        path.write_bytes(data)
        outcome = try_scenario(path, name)
        outcome.kind = "draw"
        yield outcome


def output_outcomes(repo: Path, work: Path, history: bytes):
    """Every command that writes, with every kind of output path that cannot be written
    (commands that would start something: only paths they must refuse). Also `check --write`
    into run directories where what it writes is a directory."""
    fixtures = command_fixtures(repo, work, history)
    sandbox = work / "out-sandbox"
    sandbox.mkdir(parents=True, exist_ok=True)
    root = os.geteuid() == 0
    cases = output_commands(
        Path(fixtures["scenario_file"][0]),
        Path(fixtures["suite_file"][0]),
        Path(fixtures["sweep_file"][0]),
        Path(fixtures["run_dir"][0]),
    )
    try:
        with nothing_starts():
            for args, option, starts in cases:
                for label, path in output_paths(sandbox).items():
                    if starts and (label in MAY_BE_ACCEPTED and (root or label != "read-only")):
                        continue
                    if args[0] in ("shrink", "cluster") and label in ONLY_A_WRITE_TELLS:
                        continue  # they judge other things before writing (a failing run; no cluster up here)
                    yield try_output(args, option, path, f"{args[0]} {option} {label}", sandbox)
            for name, run_dir in check_write_cases(Path(fixtures["run_dir"][0])):
                yield _invoke(
                    "output",
                    f"check --write, {name} a directory",
                    run_dir,
                    ["check", str(run_dir), "--write"],
                    (str(run_dir),),
                )
    finally:
        (sandbox / "read-only").chmod(0o755)  # or the temporary directory cannot be removed


def option_outcomes(repo: Path, work: Path, history: bytes):
    """Every command of `--help` (subcommands too): --help, and each option and argument given
    bad numbers, bad choices, missing files, directories where files are expected, …"""
    fixtures = command_fixtures(repo, work, history)
    paths = bad_paths(work / "in-sandbox")
    with nothing_starts():
        yield try_option("help", ["--help"])
        for words, command in commands():
            for label, args, names in option_cases(words, command, fixtures, paths):
                yield try_option(f"{' '.join(words)} {label}", args, names)
