"""Seeded mutators for the bad-input fuzz: scenario files and run histories, damaged in the
ways an outside review damaged them, fed through the command line in-process.

Used by tests/unit/test_fuzz_inputs.py (a few hundred inputs, every suite run) and by
benchmarks/fuzz_inputs.py (the full campaign). A mutation is a function
``(rng, data) -> data`` over the file's bytes; structure-aware ones parse the file first
so the damage reaches past the parser (a wrong type three levels down, a missing key).
Whatever the input, the command must end with exit code 0, 1, 2 (bad input: one message
naming the file) or 4 (a history that cannot be judged in full), never with an exception.
"""
from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml
from click.testing import CliRunner

from harness.cli import main

Mutation = Callable[[random.Random, bytes], bytes]

# --------------------------------------------------------------------------- hostile values

HOSTILE_SCALARS: list[Any] = [
    None, "", "many", "[/bold]", "[red]x", "2020-99-99", "x" * 3000, -1, 0, 1, 2**31, 2**63, 10**30, 10**400,
    -(10**30), 0.5, 1e308, float("inf"), float("nan"), True, False,
]
HOSTILE_VALUES: list[Any] = HOSTILE_SCALARS + [[], {}, [[]], {"a": {"b": [1]}}, ["x", 1, None], {"[/bold]": 1}]
YAML_HOSTILE = [
    "!!int x", "!!float nan", "!!timestamp 2020-99-99", "!!python/object/apply:os.system ['true']", "!!binary zz",
    "!!set {a, b}", "!foo bar", "! x", "2020-99-99", "2020-01-01 10:00:00", ".inf", "-.inf", ".nan", "1" + "0" * 5000,
    "1.0e+999", "0x7fffffffffffffffffff", "0o777", "'[/bold]'", "[/bold]", "~", "yes", "[[[[", "{a: [", "*undefined",
    "&a [*a]", "'\\x00'", "\"\\ud800\"", "|\n  multi\n  line",
]
REGEXES = ["^a{4294967296}", "^a{99999999999}", "^" + "(" * 2000 + "a" + ")" * 2000, "^[", "^(?P<x", "^\\", "^a{2,1}",
           "^(a+)+$", "^" + "[a-z]" * 5000, "no-caret", "^(?<!x*)a"]
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
    return data[:rng.randrange(len(data) + 1)]


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
    "flip-bytes": flip_bytes, "truncate": truncate, "non-utf8": non_utf8, "bom": bom, "control-chars": control_chars,
    "delete-lines": delete_lines, "duplicate-line": duplicate_line, "swap-lines": swap_lines, "empty": empty,
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
    return data + b"\n" + rng.choice([b"'[/bold]': 1", b"workload: {'[/red]': x}", b"name: '[bold]x'",
                                      b"checks: {'[/bold]': {}}", b"'[link=x]': y"]) + b"\n"


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
    spec[key] = rng.choice([
        [], ["pause"], ["network"], ["poll-stall"], ["crash", "crash"], ["nope"], ["producer"], ["broker-1"],
        ["zookeeper-1", "controller-1", "coordinator"], ["coordinator-1"], [5, 1], [0, 0], [1, 1e308], [-1, 2],
        [1, 2, 3], 0, 1, 1000, 10**9, -5, 1e308, None, "x",
    ])
    parsed["random_faults"] = spec


def _checks(rng: random.Random, parsed: dict) -> None:
    name = rng.choice(["duplicates", "convergence", "exclusive-ownership", "commit-monotonicity", "no-loss", "x"])
    option = rng.choice(["max", "within_s", "stall_s", "split_brain", "allow_reset", "zz", 1])
    parsed["checks"] = {name: rng.choice([None, {}, {option: rng.choice(HOSTILE_VALUES)}, [], "all", 5])}


def _broker_config(rng: random.Random, parsed: dict) -> None:
    key = rng.choice(["listeners", "advertised.listeners", "zookeeper.connect", "log.dirs", "broker.id", "node.id",
                      "process.roles", "inter.broker.listener.name", "zookeeper.session.timeout.ms", "a b",
                      "num.io.threads", "x=y"])
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
    "wrong-type": _set_random, "missing-key": _delete_random, "unknown-key": _add_unknown,
    "random-faults": _random_faults, "check-options": _checks, "broker-config": _broker_config,
    "topic-pattern": _topic_pattern, "huge-values": _sizes,
}

SCENARIO_MUTATIONS: dict[str, Mutation] = {
    **BYTE_MUTATIONS,
    "yaml-value": yaml_value, "deep-nesting": deep_nesting, "alias-bomb": alias_bomb, "markup": markup_key,
    **{name: (lambda change: lambda rng, data: _mutate_data(rng, data, change))(change)
       for name, change in DATA_MUTATIONS.items()},
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
    lines.insert(rng.randrange(len(lines) + 1), rng.choice([b"[1, 2]", b'"event"', b"1", b"null", b"true", b"{}",
                                                            b'{"name": null}', b'{"name": "x"}', b"[{}]"]))
    return b"\n".join(lines)


def deep_line(rng: random.Random, data: bytes) -> bytes:
    depth = rng.choice([50, 1000, 100_000])
    line = rng.choice([b"[" * depth + b"]" * depth,
                       b'{"name": "phase", "mono_ms": 1, "source": "h", "x": ' + b"[" * depth + b"]" * depth + b"}"])
    lines = _lines(data)
    lines.insert(rng.randrange(len(lines) + 1), line)
    return b"\n".join(lines)


def huge_number(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    token = rng.choice([b"1" + b"0" * 5000, b"1e999", b"-1e999", b"NaN", b"Infinity", b"-Infinity",
                        b"9" * 30, b"1.5", b"-1", b"0"])
    for old in (b'"mono_ms":', b'"partition":', b'"min_offset":', b'"max_offset":', b'"offset":', b'"generation":',
                b'"partitions":', b'"seq":', b'"incarnation":', b'"pid":'):
        at = lines[i].find(old)
        if at >= 0:
            end = at + len(old)
            stop = end
            while stop < len(lines[i]) and lines[i][stop:stop + 1] not in b",}]":
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
    return _set_in_run_started(data, "topics", [{"topic": "events",
                                                 "partitions": rng.choice([10**9, 10**6, -1, 2**31])}])


def run_started_checks(rng: random.Random, data: bytes) -> bytes:
    return _set_in_run_started(data, "checks", rng.choice([
        {"duplicates": {"max": "many"}}, {"convergence": {"within_s": -1}}, {"nope": {}}, [1], "all",
        {"duplicates": [1]}, {"exclusive-ownership": {"split_brain": "panic"}}]))


def drop_event(rng: random.Random, data: bytes) -> bytes:
    name = rng.choice([b'"run_started"', b'"phase"', b'"group_joined"', b'"partitions_assigned"'])
    return b"\n".join(line for line in _lines(data) if name not in line)


def long_line(rng: random.Random, data: bytes) -> bytes:
    return data + b'{"name": "x", "pad": "' + b"x" * (17 * 2**20) + b'"}\n'


HISTORY_MUTATIONS: dict[str, Mutation] = {
    **BYTE_MUTATIONS,
    "not-an-object": not_an_object, "deep-line": deep_line, "huge-number": huge_number, "markup": markup_names,
    "wrong-type": lambda rng, data: _change_event(rng, data, _event_wrong_type),
    "missing-key": lambda rng, data: _change_event(rng, data, _event_missing_key),
    "huge-partition-count": huge_partition_count, "check-options": run_started_checks, "drop-event": drop_event,
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

    def problem(self) -> str | None:
        """What is wrong with how the command treated this input, or None."""
        if self.exception:
            return f"raised {self.exception}"
        if "Traceback" in self.output:
            return "printed a traceback"
        if self.exit_code not in (0, 1, 2, 4):
            return f"exit code {self.exit_code}"
        if self.exit_code == 2 and self.path not in self.output:
            return "the error does not name the file"
        return None


def _invoke(kind: str, mutation: str, path: Path, args: list[str]) -> Outcome:
    started = time.perf_counter()
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    seconds = time.perf_counter() - started
    exc = result.exception
    escaped = None if exc is None or isinstance(exc, SystemExit) else f"{type(exc).__name__}: {str(exc)[:200]}"
    return Outcome(kind, mutation, str(path), result.exit_code, seconds, result.output, escaped)


def try_scenario(path: Path, mutation: str = "") -> Outcome:
    """`schedule SCENARIO` validates the scenario and draws its faults without starting anything."""
    return _invoke("scenario", mutation, path, ["schedule", str(path)])


def try_history(run_dir: Path, mutation: str = "") -> Outcome:
    return _invoke("history", mutation, run_dir / "history.jsonl", ["check", str(run_dir)])
