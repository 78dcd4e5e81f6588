"""The history's vocabulary as the oracle reads it: per event, the fields it uses and their types.

docs/history.md is the format (its names: oracle/vocabulary.py); this is the part of
it a verdict depends on, checked line by line when a history is loaded, so a damaged
or hand-edited file is refused with its line and field instead of surfacing as a
traceback deep inside a check. Fields the oracle does not read are not checked, nor
events the format does not name: the format may grow, and other tools' histories
carry more. A check that starts reading a field adds it here.

It runs over every line of million-line histories: a table of allowed types and
bounds per field, compiled into one plain-Python test per event (`compile_record`).
Only a line that fails is looked at again, by `explain`, for the words to say why.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

from . import vocabulary as ev

MAX_PARTITION = 2**31 - 1  # Kafka's partition ids are int32
MAX_OFFSET = 2**63 - 1  # and offsets int64
# A topic's partition count builds a list of partitions: bounded, so a damaged count
# cannot ask for a billion of them. Far above what a Kafka cluster can host.
MAX_PARTITIONS_PER_TOPIC = 100_000
_FLOAT_MAX = sys.float_info.max  # as a bound it keeps out inf (and nan, which compares false)

_NONE = type(None)
_ABSENT = object()


class Field(NamedTuple):
    """One field: the JSON types it may have, bounds for a number, the shape of a list's items."""

    key: str
    types: tuple[type, ...]
    expected: str  # for messages: "an integer or null"
    bounds: tuple[float, float] | None = None
    items: Record | Field | None = None


class Record(NamedTuple):
    """An object: its fields (absent is fine), the ones it must have, checks across fields."""

    fields: tuple[Field, ...]
    required: tuple[str, ...] = ()
    check: Callable[[dict], str | None] | None = None  # None when fine, else the reason
    # (low, high): two required numbers, low <= high. Declared, not a function, so that the
    # compiled tests (also over a bulk event's rows of values, `compile_rows`) can inline it.
    ordered: tuple[str, str] | None = None


def _f(
    types: tuple[type, ...],
    expected: str,
    bounds: tuple[float, float] | None = None,
    items: Record | Field | None = None,
) -> Callable[[str], Field]:
    return lambda key: Field(key, types, expected, bounds, items)


STR = _f((str,), "a string")
OPT_STR = _f((str, _NONE), "a string or null")
OPT_BOOL = _f((bool, _NONE), "true, false or null")
INT = _f((int,), "an integer")  # type() is int: true is not a number here
OPT_INT = _f((int, _NONE), "an integer or null")
NUMBER = _f((int, float), "a finite number", (-_FLOAT_MAX, _FLOAT_MAX))
OPT_NUMBER = _f((int, float, _NONE), "a finite number or null", (-_FLOAT_MAX, _FLOAT_MAX))
OPT_OBJECT = _f((dict, _NONE), "an object or null")
PARTITION = _f((int,), f"a partition number 0..{MAX_PARTITION}", (0, MAX_PARTITION))
PARTITION_COUNT = _f((int,), f"a partition count 0..{MAX_PARTITIONS_PER_TOPIC}", (0, MAX_PARTITIONS_PER_TOPIC))
OFFSET = _f((int,), "an offset (a 64-bit integer)", (-MAX_OFFSET - 1, MAX_OFFSET))
OPT_OFFSET = _f((int, _NONE), "an offset (a 64-bit integer) or null", (-MAX_OFFSET - 1, MAX_OFFSET))
INCARNATION = _f((int, _NONE), "an incarnation ≥ 1 or null", (1, MAX_OFFSET))


def list_of(items: Record | Field, expected: str) -> Callable[[str], Field]:
    return _f((list, _NONE), f"a list of {expected}, or null", items=items)


def _topic_counts(d: dict) -> str | None:
    topics = d["topics"]
    if type(topics) is not dict:
        return f"topics: expected an object of topic -> partition count, got {shown(topics)}"
    for topic, count in topics.items():
        if type(count) is not int or not 0 <= count <= MAX_PARTITIONS_PER_TOPIC:
            return f"topics.{topic}: expected a partition count 0..{MAX_PARTITIONS_PER_TOPIC}, got {shown(count)}"
    return None


def _subscription(d: dict) -> str | None:
    """consumer_started.subscription: absent or null, or topics by name, or a pattern (oracle/subscriptions.py)."""
    said = d.get("subscription")
    if said is None:
        return None
    if type(said) is not dict:
        return f"subscription: expected an object (topics or pattern), got {shown(said)}"
    topics, pattern = said.get("topics"), said.get("pattern")
    if (topics is None) == (pattern is None):
        return f"subscription: expected either topics or pattern, got {shown(said)}"
    if topics is not None and (type(topics) is not list or not all(type(t) is str for t in topics)):
        return f"subscription.topics: expected a list of topic names, got {shown(topics)}"
    if pattern is not None:
        if type(pattern) is not str:
            return f"subscription.pattern: expected a regular expression, got {shown(pattern)}"
        try:
            re.compile(pattern)
        except (re.error, OverflowError, RecursionError) as e:
            return f"subscription.pattern: not a regular expression: {e}"
    if said.get("name") is not None and type(said["name"]) is not str:
        return f"subscription.name: expected a string or null, got {shown(said['name'])}"
    return None


def _check_options(d: dict) -> str | None:
    checks = d.get("checks")
    if checks is None:
        return None
    if type(checks) is not dict:
        return f"checks: expected an object of check name -> options, got {shown(checks)}"
    for name, options in checks.items():
        if options is not None and type(options) is not dict:
            return f"checks.{name}: expected an object of option -> value, or null, got {shown(options)}"
    return None


# A fault's effects: each key's allowed values (docs/history.md, fault_started).
_EFFECT_VALUES: dict[str, tuple[Any, ...]] = {
    ev.SILENCES: (ev.HEARTBEATS, ev.POLLS, None),
    ev.DOWN: (ev.PAUSED, ev.KILLED, None),
}


def _message_action(d: dict) -> str | None:
    if d["action"] not in ev.MESSAGE_ACTIONS:
        return f"action {d['action']!r} is none of {', '.join(ev.MESSAGE_ACTIONS)}"
    if d["action"] == "error" and not d.get("error"):
        return "an error action says the error it put in"
    return None


def _fault_effects(d: dict) -> str | None:
    effects = d.get(ev.EFFECTS)
    if effects is None:
        return None  # format 3 promises them (oracle/integrity.py: fault-effects); older ones never had them
    for key, allowed in _EFFECT_VALUES.items():
        if effects.get(key) not in allowed:
            expected = ", ".join(map(shown, allowed[:-1])) + f" or {shown(allowed[-1])}"
            return f"{ev.EFFECTS}.{key}: expected {expected}, got {shown(effects.get(key))}"
    said = effects.get(ev.SILENCED_AS)
    if effects.get(ev.SILENCES) is not None and type(said) is not str:
        return f"{ev.EFFECTS}.{ev.SILENCED_AS}: expected a string (the fault silences its target), got {shown(said)}"
    restart = effects.get(ev.RESTART_AFTER_S)
    if restart is not None and (type(restart) not in (int, float) or not 0 <= restart <= _FLOAT_MAX):
        return f"{ev.EFFECTS}.{ev.RESTART_AFTER_S}: expected a finite number of seconds or null, got {shown(restart)}"
    return None


TOPIC_PARTITION = Record((STR(ev.TOPIC), PARTITION(ev.PARTITION)), (ev.TOPIC, ev.PARTITION))
RANGE = Record(
    (STR(ev.TOPIC), PARTITION(ev.PARTITION), OFFSET(ev.MIN_OFFSET), OFFSET(ev.MAX_OFFSET)),
    (ev.TOPIC, ev.PARTITION, ev.MIN_OFFSET, ev.MAX_OFFSET),
    ordered=(ev.MIN_OFFSET, ev.MAX_OFFSET),
)
RANGES = list_of(RANGE, "offset ranges")
PARTITIONS = list_of(TOPIC_PARTITION, "partitions")
OFFSETS = list_of(
    Record((STR(ev.TOPIC), PARTITION(ev.PARTITION), OFFSET(ev.OFFSET)), (ev.TOPIC, ev.PARTITION, ev.OFFSET)),
    "committed offsets",
)
LAG = list_of(
    Record(
        (STR(ev.TOPIC), PARTITION(ev.PARTITION), OPT_OFFSET("committed"), OPT_OFFSET("high_watermark"), OPT_INT("lag")),
        (ev.TOPIC, ev.PARTITION),
    ),
    "partition lags",
)
TOPICS = list_of(Record((STR(ev.TOPIC), PARTITION_COUNT("partitions")), (ev.TOPIC, "partitions")), "topics")
MEMBER_IDS = list_of(STR("member id"), "member ids")
MEMBER_NAMES = list_of(STR("member"), "member names")
# run_started's plugins (oracle/extensions.py): which distribution a check the run named came from.
PLUGINS = list_of(
    Record(
        (STR("group"), STR("name"), OPT_STR("value"), OPT_STR("distribution"), OPT_STR("version")), ("group", "name")
    ),
    "plugins",
)
# run_started's subscriptions (workload.subscriptions): each entry's name, topics and first members.
SUBSCRIPTIONS = list_of(
    Record((STR("name"), list_of(STR("topic"), "topic names")("topics"), MEMBER_NAMES("members")), ("name",)),
    "subscriptions",
)
# A version newer than this reader's is refused first, in words of its own (`newer_format`).
VERSION = _f((int, _NONE), "a format version ≥ 1, or null", (1, ev.FORMAT_VERSION))

# Fields of every event (docs/history.md), and of every consumer event.
ENVELOPE = (
    STR(ev.NAME),
    NUMBER(ev.MONO_MS),
    STR(ev.SOURCE),
    OPT_NUMBER(ev.TS),
    INT(ev.SEQ),  # part of the sort key: never null
    OPT_STR(ev.MEMBER),
    INCARNATION(ev.INCARNATION),
    OPT_STR(ev.MEMBER_ID),
    OPT_INT(ev.GENERATION),
)
ENVELOPE_REQUIRED = (ev.NAME, ev.MONO_MS, ev.SOURCE)

_GROUP = (OPT_STR("group"),)
_FAULT = (OPT_STR("fault_id"), OPT_STR("kind"), OPT_STR("target"))
_PARTITIONS = (PARTITIONS("partitions"), OPT_BOOL("incremental"))
_ENVELOPE_ONLY = ((), (), None)

# Event name -> (its fields the oracle reads, the ones it cannot do without, a check across fields).
# Every event of the format is here; of one the oracle does not read, only the envelope is checked.
EVENTS: dict[str, tuple[tuple[Field, ...], tuple[str, ...], Callable[[dict], str | None] | None]] = {
    ev.RUN_STARTED: (
        (
            OPT_STR("run_id"),
            OPT_STR("scenario"),
            OPT_INT("seed"),
            TOPICS("topics"),
            OPT_STR("topic_pattern"),
            *_GROUP,
            OPT_STR("protocol"),
            OPT_STR("assignor"),
            OPT_OBJECT("group_settings"),
            PLUGINS("plugins"),
            VERSION("format_version"),
            SUBSCRIPTIONS("subscriptions"),
            OPT_OBJECT("broker_racks"),
        ),
        (),
        _check_options,
    ),
    ev.PHASE: ((OPT_STR("phase"), OPT_STR("reason")), (), None),
    ev.PROCESS_STARTED: ((OPT_STR("process"), OPT_STR("role"), OPT_INT("pid")), (), None),
    ev.PROCESS_EXITED: ((OPT_STR("process"), OPT_STR("role"), OPT_INT("pid"), OPT_INT("returncode")), (), None),
    ev.PARTITIONS_ADDED: (
        (STR("topic"), PARTITION_COUNT("partitions"), OPT_BOOL("subscribed")),
        ("topic", "partitions"),
        None,
    ),
    ev.TOPIC_CREATED: (
        (STR("topic"), PARTITION_COUNT("partitions"), OPT_BOOL("subscribed")),
        ("topic", "partitions"),
        None,
    ),
    ev.HEAL_CHECKED: _ENVELOPE_ONLY,
    ev.NODE_RESTARTED: _ENVELOPE_ONLY,
    ev.CLUSTER_FINALIZED: _ENVELOPE_ONLY,
    ev.CLOCK_ALIGNED: _ENVELOPE_ONLY,
    ev.RUN_FINISHED: ((OPT_STR("outcome"), OPT_STR("error")), (), None),
    ev.GROUP_RESIZED: ((OPT_INT("members"), MEMBER_NAMES("started"), MEMBER_NAMES("stopped")), (), None),
    ev.LAG_SAMPLED: ((*_GROUP, LAG("partitions")), (), None),
    ev.GROUP_DESCRIBED: _ENVELOPE_ONLY,
    ev.PRODUCER_STARTED: _ENVELOPE_ONLY,
    ev.PRODUCER_STOPPED: _ENVELOPE_ONLY,
    ev.RECORDS_ACKED: ((RANGES(ev.RANGES), OPT_INT("unplaced")), (), None),
    ev.PRODUCE_FAILED: _ENVELOPE_ONLY,
    ev.CONSUMER_STARTED: (
        (
            *_GROUP,
            OPT_INT("pid"),
            OPT_STR("protocol"),
            OPT_STR("assignor"),
            OPT_STR("group_instance_id"),
            OPT_STR("commit_mode"),
            OPT_NUMBER("session_timeout_ms"),
            OPT_NUMBER("max_poll_interval_ms"),
            OPT_STR("client_rack"),
            OPT_STR("host"),
        ),
        (),
        _subscription,
    ),
    ev.SUBSCRIPTION_CHANGED: ((), ("topics",), _topic_counts),
    ev.GROUP_JOIN_SENT: _ENVELOPE_ONLY,
    ev.GROUP_JOINED: (
        (OPT_STR("leader_id"), OPT_BOOL("is_leader"), OPT_STR("protocol_name"), MEMBER_IDS("members")),
        (ev.GENERATION,),
        None,
    ),
    ev.GROUP_JOIN_FAILED: _ENVELOPE_ONLY,
    ev.GROUP_SYNCED: _ENVELOPE_ONLY,
    ev.GROUP_SYNC_FAILED: _ENVELOPE_ONLY,
    ev.HEARTBEAT_FAILED: _ENVELOPE_ONLY,
    ev.REBALANCE_STARTED: _ENVELOPE_ONLY,
    ev.PARTITIONS_ASSIGNED: (_PARTITIONS, (), None),
    ev.REVOKE_STARTED: _ENVELOPE_ONLY,
    ev.PARTITIONS_REVOKED: (_PARTITIONS, (), None),
    ev.PARTITIONS_LOST: (_PARTITIONS, (), None),
    ev.RECORDS_CONSUMED: ((RANGES(ev.RANGES),), (), None),
    ev.OFFSETS_COMMITTED: (
        (
            OFFSETS(ev.OFFSETS),
            OPT_BOOL("success"),
            OPT_STR("error"),
            OPT_INT("error_code"),
            OPT_STR("trigger"),
            OPT_NUMBER("started_mono_ms"),
        ),
        (),
        None,
    ),
    ev.CONSUMER_ERROR: _ENVELOPE_ONLY,
    ev.POLL_STALL_STARTED: _ENVELOPE_ONLY,
    ev.POLL_STALL_ENDED: _ENVELOPE_ONLY,
    ev.CLIENT_LOG: _ENVELOPE_ONLY,
    # Its presence makes the verdict INCOMPLETE (verdict.unrecognised), so what it says is read and checked.
    ev.LOG_UNRECOGNISED: ((OPT_STR("log"), OPT_STR("missing"), OPT_STR("client_version")), (), None),
    ev.REBALANCE_FAILED: _ENVELOPE_ONLY,
    ev.CONSUMER_STOPPED: ((OPT_STR("reason"),), (), None),
    ev.CLIENT_DESTROYED: _ENVELOPE_ONLY,
    ev.TEST_HOOK_ARMED: _ENVELOPE_ONLY,
    ev.TEST_HOOK_FIRED: _ENVELOPE_ONLY,
    ev.COORDINATOR_FOUND: _ENVELOPE_ONLY,
    ev.COORDINATOR_LOST: _ENVELOPE_ONLY,
    ev.FAULT_STARTED: ((*_FAULT, OPT_OBJECT("params"), OPT_OBJECT(ev.EFFECTS)), (), _fault_effects),
    ev.FAULT_HEALED: ((*_FAULT, OPT_STR("how"), OPT_NUMBER("started_mono_ms")), (), None),
    ev.FAULT_FAILED: _ENVELOPE_ONLY,
    ev.FAULT_HEAL_FAILED: _ENVELOPE_ONLY,
    ev.MESSAGE_FAULTED: (
        (
            STR("fault_id"),
            OPT_STR(ev.MEMBER),
            OPT_STR("broker"),
            STR("api"),
            OPT_INT("api_version"),
            OPT_INT("correlation_id"),
            STR("action"),
            OPT_INT("delay_ms"),
            OPT_INT("close_after_ms"),
            OPT_STR("error"),
            OPT_STR("replaced_error"),
        ),
        ("fault_id", "api", "action"),
        _message_action,
    ),
    ev.COORDINATOR_PREPARING_REBALANCE: ((*_GROUP, OPT_INT("old_generation"), OPT_STR("reason")), (), None),
    ev.COORDINATOR_STABILIZED: ((*_GROUP, OPT_INT("members")), (), None),
    ev.COORDINATOR_TARGET_ASSIGNMENT: (_GROUP, (), None),
    ev.COORDINATOR_ASSIGNMENT_RECEIVED: ((*_GROUP, OPT_STR("leader_id")), (), None),
    ev.COORDINATOR_MEMBER_JOINED: _ENVELOPE_ONLY,
    ev.COORDINATOR_MEMBER_REMOVED: ((*_GROUP, OPT_STR("reason")), (), None),
    ev.COORDINATOR_GROUP_EMPTY: (_GROUP, (), None),
    ev.COORDINATOR_STARTED: _ENVELOPE_ONLY,
    ev.COORDINATOR_STOPPED: _ENVELOPE_ONLY,
    ev.COORDINATOR_ZOOKEEPER_STATE: _ENVELOPE_ONLY,
    ev.COORDINATOR_ELECTED: _ENVELOPE_ONLY,
    ev.COORDINATOR_RESIGNED: _ENVELOPE_ONLY,
    ev.COORDINATOR_STATE_CHANGED: _ENVELOPE_ONLY,
}


def newer_format(event: dict) -> str | None:
    """Why a run_started cannot be read by this oracle: a newer rebalance-lab wrote it (None if not).
    Said before any field is looked at: a newer format may have changed them."""
    version = event.get("format_version") if event.get(ev.NAME) == ev.RUN_STARTED else None
    if type(version) is int and version > ev.FORMAT_VERSION:
        return (
            f"written by a newer rebalance-lab: format version {version}, this reader knows up to {ev.FORMAT_VERSION}"
        )
    return None


def compile_record(shape: Record) -> Callable[[Any], bool]:
    """The record's yes/no test as straight-line Python: every line of a history goes through one,
    and a loop interpreting the table costs about twice as much. `explain` reads the same table."""
    env: dict[str, Any] = {"ABSENT": _ABSENT}
    source: list[str] = []

    def emit(record: Record, fn: str) -> None:
        body = [f"def {fn}(d):", "    if type(d) is not dict: return False", "    get = d.get"]
        body += [f"    if get({key!r}, ABSENT) is ABSENT: return False" for key in record.required]
        for i, f in enumerate(record.fields):
            types = f"{fn}_types{i}"
            env[types] = f.types
            body += [
                f"    v = get({f.key!r}, ABSENT)",
                "    if v is not ABSENT:",
                "        t = type(v)",
                "        if " + " and ".join(f"t is not {types}[{j}]" for j in range(len(f.types))) + ": return False",
            ]
            if f.bounds is not None:
                nullable = "v is not None and " if _NONE in f.types else ""
                body.append(f"        if {nullable}not {f.bounds[0]!r} <= v <= {f.bounds[1]!r}: return False")
            if type(f.items) is Record:
                emit(f.items, f"{fn}_{i}")
                body.append(f"        if t is list and not all(map({fn}_{i}, v)): return False")
            elif f.items is not None:
                env[f"{fn}_items{i}"] = f.items.types
                body.append(f"        if t is list and any(type(x) not in {fn}_items{i} for x in v): return False")
        if record.ordered is not None:
            body.append(f"    if not d[{record.ordered[0]!r}] <= d[{record.ordered[1]!r}]: return False")
        if record.check is not None:
            env[f"{fn}_check"] = record.check
        body.append(f"    return {fn}_check(d) is None" if record.check is not None else "    return True")
        source.append("\n".join(body))

    emit(shape, "fits")
    exec("\n\n".join(source), env)  # nested records first: each function is defined before it is called
    return env["fits"]


def compile_values(name: str, keys: tuple[str, ...], rows_type: type) -> Callable[[tuple], bool]:
    """`fits` for an event of that name held as its values in the order of `keys`, its lists of
    objects as `rows_type` (`.shape.keys`, `.rows`: history.py's compact rows). The loader tests
    the compact form of a bulk event instead of the parsed dict: one pass over its ranges, not
    two. True only where `fits` is; False may also mean "not sure": then the dict is tested."""
    record = _RECORDS.get(name, _ANY_EVENT)
    at = {k: i for i, k in enumerate(keys)}
    if record.check is not None or record.ordered is not None or any(k not in at for k in record.required):
        return lambda values: False
    env: dict[str, Any] = {"rows_type": rows_type}
    body = ["def fits_values(v):", f"    {''.join(f'v{i}, ' for i in range(len(keys)))}= v"]
    for n, f in enumerate(record.fields):
        if f.key not in at:
            continue
        x = f"v{at[f.key]}"
        if type(f.items) is Record and list in f.types:
            env[f"rows{n}"] = _rows_test(f.items)
            body += [
                f"    if type({x}) is rows_type:",
                f"        if not rows{n}({x}): return False",
                f"    elif type({x}) is list:",
                f"        if {x}: return False  # objects of several shapes: the dict is tested",
                f"    elif {_type_is_not(x, f.types, env)}: return False",
            ]
            continue
        if f.items is not None:
            body.append(f"    if type({x}) is list and {x}: return False")
        body += _value_test(x, f, env, "    ")
    body.append("    return True")
    exec("\n".join(body), env)
    return env["fits_values"]


def _rows_test(record: Record) -> Callable[[Any], bool]:
    """Tests rows of objects of one shape (rows.shape.keys) against the record, compiled per shape."""
    compiled: dict[tuple[str, ...], Callable[[tuple], bool]] = {}

    def test(rows: Any) -> bool:
        keys = rows.shape.keys
        fits = compiled.get(keys)
        if fits is None:
            fits = compiled[keys] = compile_rows(record, keys)
        return fits(rows.rows)

    return test


def compile_rows(record: Record, keys: tuple[str, ...]) -> Callable[[tuple], bool]:
    """`all(map(fits, objects))` for objects held as tuples of their values in the order of `keys`."""
    at = {k: i for i, k in enumerate(keys)}
    if (
        record.check is not None
        or any(k not in at for k in record.required)
        or any(f.items is not None for f in record.fields if f.key in at)
    ):
        return lambda rows: False
    env: dict[str, Any] = {}
    body = ["def fits_rows(rows):", f"    for {''.join(f'r{i}, ' for i in range(len(keys)))}in rows:"]
    for f in record.fields:
        if f.key in at:
            body += _value_test(f"r{at[f.key]}", f, env, "        ")
    if record.ordered is not None:
        body.append(f"        if not r{at[record.ordered[0]]} <= r{at[record.ordered[1]]}: return False")
    body.append("    return True")
    exec("\n".join(body), env)
    return env["fits_rows"]


def _value_test(x: str, f: Field, env: dict[str, Any], indent: str) -> list[str]:
    """Lines returning False unless the value in variable `x` has one of the field's types, within its bounds."""
    lines = [f"{indent}if {_type_is_not(x, f.types, env)}: return False"]
    if f.bounds is not None:
        nullable = f"{x} is not None and " if _NONE in f.types else ""
        lines.append(f"{indent}if {nullable}not {f.bounds[0]!r} <= {x} <= {f.bounds[1]!r}: return False")
    return lines


def _type_is_not(x: str, types: tuple[type, ...], env: dict[str, Any]) -> str:
    """`type(x) not in types`, as identity tests on names bound in env (type() is exact: true is no int)."""
    for t in types:
        assert env.setdefault(f"{t.__name__}_type", t) is t, f"two types named {t.__name__}"
    if len(types) == 1:
        return f"type({x}) is not {types[0].__name__}_type"
    return f"(t := type({x})) is not {types[0].__name__}_type and " + " and ".join(
        f"t is not {t.__name__}_type" for t in types[1:]
    )


def explain(value: Any, shape: Record) -> tuple[str, str] | None:
    """Why an object does not fit its record, as (path below it, reason); None if it does."""
    if type(value) is not dict:
        return "", f"expected an object, got {shown(value)}"
    for key in shape.required:  # in the order of the fields: a line without a name says so first
        if key not in value and not any(f.key == key for f in shape.fields):
            return f".{key}", "missing"
    for field in shape.fields:
        v = value.get(field.key, _ABSENT)
        if v is _ABSENT:
            if field.key in shape.required:
                return f".{field.key}", "missing"
            continue
        if type(v) not in field.types or (
            field.bounds is not None and v is not None and not field.bounds[0] <= v <= field.bounds[1]
        ):
            return f".{field.key}", f"expected {field.expected}, got {shown(v)}"
        if field.items is not None and type(v) is list:
            for i, x in enumerate(v):
                if type(field.items) is Record:
                    found = explain(x, field.items)
                    if found:
                        return f".{field.key}[{i}]{found[0]}", found[1]
                elif type(x) not in field.items.types:
                    return f".{field.key}[{i}]", f"expected {field.items.expected}, got {shown(x)}"
    if shape.ordered is not None:
        low, high = shape.ordered
        if not value[low] <= value[high]:
            return "", f"{high} {value[high]} is below {low} {value[low]}"
    if shape.check is not None:
        reason = shape.check(value)
        if reason:
            return "", reason
    return None


# One record per event name, the envelope included: one pass over each line.
_RECORDS: dict[str, Record] = {
    name: Record(ENVELOPE + fields, ENVELOPE_REQUIRED + required, check)
    for name, (fields, required, check) in EVENTS.items()
}
_ANY_EVENT = Record(ENVELOPE, ENVELOPE_REQUIRED)
_FITS: dict[str, Callable[[Any], bool]] = {name: compile_record(r) for name, r in _RECORDS.items()}
_FITS_ANY_EVENT = compile_record(_ANY_EVENT)


def problem(event: Any) -> str | None:
    """What makes one parsed history line unusable, as ``event.field: reason``; None if it is fine."""
    name = event.get("name") if type(event) is dict else None
    if _FITS.get(name, _FITS_ANY_EVENT)(event) if type(name) is str else False:
        return None
    if type(event) is not dict:
        return f"expected an event (a JSON object), got {shown(event)}"
    newer = newer_format(event)
    if newer:
        return newer
    path, reason = explain(event, _RECORDS.get(name, _ANY_EVENT) if type(name) is str else _ANY_EVENT) or (
        "",
        "not an event",
    )
    return f"{name if type(name) is str else 'event'}{path}: {reason}"


def shown(value: Any, limit: int = 40) -> str:
    """A value as it looks in the file, cut short: messages quote what they refuse."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    except RecursionError:  # nested deeper than Python recurses (orjson parses 1024 levels)
        text = "[[[…" if type(value) is list else "{…"
    return text if len(text) <= limit else text[:limit] + "…"
