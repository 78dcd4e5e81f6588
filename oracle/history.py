"""Reading a run history and indexing it the way the checks ask questions.

The history (docs/history.md) is the oracle's only input. `History` is an
immutable view over the sorted events: topic-partitions, who consumed which
offsets, which commits happened, what the producer got acknowledged. Derived
views (ownership sessions, rebalances) are memoised on it so every check sees
the same interpretation of the same events.
"""

from __future__ import annotations

import gc
import json
import math
import sys
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import orjson

from . import legacy
from . import vocabulary as ev
from .events import compile_values, problem
from .fields import MEMBER_HOST_ROLE
from .integrity import Audit, Broken, LoadReport, refusal
from .offsets import OffsetSet
from .protocols import GENERATIONS, INCREMENTAL_PROTOCOLS, Generation

Event = dict[str, Any]
T = TypeVar("T")


def sort_key(event: Event) -> tuple:
    """Lines are appended by many processes; CLOCK_MONOTONIC is the shared order."""
    if type(event) is CompactEvent:
        return event.sort_key  # worked out once: a long history is sorted twice
    return (event["mono_ms"], event.get("source", ""), event.get("seq", 0))


def effects_of(fault: Event) -> dict[str, Any]:
    """What a fault_started says its fault does to its target (docs/history.md); {}: nothing."""
    return fault.get(ev.EFFECTS) or {}


class HistoryError(ValueError):
    """A file that is not a history: names the file, the line (if one is to blame) and why."""

    def __init__(self, path: str | Path, line: int | None, reason: str):
        self.path, self.line, self.reason = str(path), line, reason
        super().__init__(f"{path}:{line}: {reason}" if line else f"{path}: {reason}")


# An event is a few hundred bytes (run_started with a long fault schedule: a few hundred KB);
# a longer "line" is a file that is not a history, and reading it whole would cost its size.
MAX_LINE_BYTES = 16 * 2**20


def _parse(raw: bytes, first: bool) -> Any:
    """One line's event; ValueError (with the reason) if the line is not JSON."""
    try:
        return orjson.loads(raw)  # a long history is mostly well-formed lines: the fast parser first
    except orjson.JSONDecodeError:
        pass  # the standard library says why, in its words, and reads what orjson refuses (NaN, a BOM)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 text (byte 0x{raw[e.start]:02x} at column {e.start + 1})") from None
    if first and text.startswith("\ufeff"):  # a byte order mark, as some editors write: not content
        text = text[1:]
    try:
        return json.loads(text)  # NaN and Infinity parse: a field the oracle reads refuses them (events.py)
    except json.JSONDecodeError as e:
        raise ValueError(f"not a JSON event ({e.msg.removesuffix(' at')} at column {e.colno})") from None
    except ValueError as e:  # an integer too long to convert (Python's advice on that is not for users)
        raise ValueError(f"not a JSON event ({str(e).split('; use')[0]})") from None
    except RecursionError:
        raise ValueError("not a JSON event (nested too deeply)") from None


class BrokenHistory(HistoryError):
    """A history that breaks a promise whose treatment is to refuse it (oracle/integrity.py)."""

    def __init__(self, path: str | Path, broken: list[Broken]):
        self.broken = broken
        super().__init__(path, None, refusal(broken))


class Loaded(list):
    """The events of a history file in time order, with what the loader noticed on the way
    (`report`): counted and shown in the verdict, never a reason for a check to say anything."""

    report: LoadReport


# Every writer's line starts so (runtime/history.py): where a torn write ran into the next
# writer's line, that line starts here.
_EVENT_START = b'{"name":'


def load_history(path: str | Path, compact_events: bool = False) -> Loaded:
    """Read history.jsonl (or RUN_DIR/history.jsonl), sorted into time order.

    Several processes append to one file; one killed mid-write leaves a torn line. The last
    line torn is dropped; a torn line that another writer's line ran into gives that line's
    event back; an exact repeat of a writer's previous line is dropped. Each is counted in
    the `LoadReport`. A line that cannot be read otherwise, an event the oracle cannot read
    (oracle/events.py), a broken promise whose treatment is to refuse (oracle/integrity.py:
    BrokenHistory), or a file without a single event, or without run_started and without any
    member's event, means the file is not a history that can be judged: HistoryError, naming
    the lines.

    `compact_events`: the bulk events (records, commits) as read-only `compact`
    mappings, a quarter of the memory — for judging a long history, not for editing it.
    """
    keep = _compact_checked if compact_events else _checked
    path = Path(path)
    if path.is_dir():
        path = path / "history.jsonl"
    if path.exists() and not path.is_file():
        raise HistoryError(path, None, "not a regular file")
    events = Loaded()
    audit = Audit()
    torn: HistoryError | None = None  # a line that did not parse: forgiven only as the last one
    try:
        with gc_paused(), path.open("rb") as fh:
            lineno = 0
            while raw := fh.readline(MAX_LINE_BYTES + 1):
                lineno += 1
                if raw.isspace():
                    continue
                if torn:
                    raise torn
                if len(raw) > MAX_LINE_BYTES:
                    raise HistoryError(path, lineno, f"longer than {MAX_LINE_BYTES >> 20} MiB: not an event")
                try:
                    event = _parse(raw, lineno == 1)
                except ValueError as e:
                    at, event = _after_torn_write(raw)
                    if event is None:
                        torn = HistoryError(path, lineno, str(e))
                        audit.report.torn.append((lineno, len(raw.rstrip(b"\n"))))
                        continue
                    audit.report.torn.append((lineno, at))
                    audit.report.recovered.append(lineno)
                kept = keep(event)
                if kept is None:
                    raise HistoryError(path, lineno, problem(event))
                if audit.see(event, lineno, raw):
                    events.append(kept)
            audit.report.lines = lineno
    except OSError as e:
        raise HistoryError(path, None, e.strerror or str(e)) from None
    if not events:
        raise HistoryError(
            path, None, "no events: nothing to judge" + (f" (line {torn.line}: {torn.reason})" if torn else "")
        )
    if not any(e["name"] == ev.RUN_STARTED or e.get(ev.MEMBER) for e in events):
        # what a check judges is said by run_started (topics, group) or by members' events (a
        # converted VerifiableConsumer log): without either, every check would pass on nothing
        raise HistoryError(path, None, f"neither {ev.RUN_STARTED} nor any member's event: nothing to judge")
    broken = audit.finish()
    if broken:
        raise BrokenHistory(path, broken)
    events.sort(key=sort_key)
    events.report = audit.report
    return events


def _after_torn_write(raw: bytes) -> tuple[int, Event | None]:
    """(bytes torn, the event) of a line that a torn write ran into; (0, None): not such a line.
    A dead writer's cut-off line has no newline: the next writer's whole line follows it."""
    at = raw.find(_EVENT_START, 1)
    while at > 0:
        try:
            event = orjson.loads(raw[at:])
        except orjson.JSONDecodeError:
            at = raw.find(_EVENT_START, at + 1)
            continue
        return (at, event) if type(event) is dict else (0, None)
    return 0, None


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    @classmethod
    def of(cls, d: dict) -> TopicPartition:
        return cls(d["topic"], int(d["partition"]))

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


def render_partitions(tps: Iterable[TopicPartition]) -> str:
    """'events-0,1,2, audit-4' — partitions grouped by topic."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in sorted(tps):
        by_topic[tp.topic].append(tp.partition)
    return ", ".join(f"{t}-{','.join(map(str, ps))}" for t, ps in by_topic.items()) or "nothing"


class MemberSlot(NamedTuple):
    """One life of a member: its stable name plus which restart of it this is."""

    member: str
    incarnation: int = 1

    @classmethod
    def of(cls, event: Event) -> MemberSlot:
        return cls(event.get("member") or event["source"], int(event.get("incarnation") or 1))

    def __str__(self) -> str:
        return self.member if self.incarnation == 1 else f"{self.member}#{self.incarnation}"


class MemberProcesses:
    """Which member incarnations each process runs, as a history says it, event by event: a member
    process runs one, a member host many (their consumer_started carry ``host`` and its pid). The
    one place that says which incarnations a ``process_exited`` ends."""

    def __init__(self):
        self._by_pid: dict[int, dict[str, MemberSlot]] = {}
        self._ended: set[MemberSlot] = set()  # ended before their process: stopped, handle destroyed

    def started(self, e: Event) -> None:
        """A consumer_started: its slot runs in its pid (replacing that member's earlier one)."""
        if isinstance(e.get("pid"), int):
            self._by_pid.setdefault(e["pid"], {})[e.get("member") or e["source"]] = MemberSlot.of(e)

    def ended(self, e: Event) -> None:
        """A consumer_stopped or client_destroyed: its incarnation ended while its process goes on (a
        member host's exit does not end it again)."""
        self._ended.add(MemberSlot.of(e))

    def exited(self, e: Event) -> list[MemberSlot] | None:
        """The incarnations a process_exited ends: every one of a member host, a member process's own
        (a pid the kernel gave again to another process is not its member's); None: no member ran
        in that pid as far as the history says."""
        running = self._by_pid.pop(e.get("pid"), None) if isinstance(e.get("pid"), int) else None
        if running is None:
            return None
        if e.get("role") == MEMBER_HOST_ROLE:
            return sorted(s for s in running.values() if s not in self._ended)
        slot = running.get(e.get("process"))
        return [slot] if slot else []


class Instant(NamedTuple):
    ts: float | None  # wall clock, for people
    mono_ms: float  # monotonic, for arithmetic

    @classmethod
    def of(cls, event: Event) -> Instant:
        return cls(event.get("ts"), event["mono_ms"])

    def to_dict(self) -> dict:
        return {"ts": self.ts, "mono_ms": self.mono_ms}


class Consumption(NamedTuple):
    """One contiguous range of records whose processing a member completed.
    (A tuple: a long history holds millions of them.)"""

    slot: MemberSlot
    tp: TopicPartition
    lo: int
    hi: int
    at: Instant
    generation: int | None

    @property
    def offsets(self) -> OffsetSet:
        return OffsetSet.span(self.lo, self.hi)


class Commit(NamedTuple):
    """One partition's entry of an `offsets_committed` event."""

    slot: MemberSlot
    tp: TopicPartition
    offset: int  # next offset to read
    success: bool
    error: str | None
    error_code: Any  # the client's code for the error (an integer; null where the client gave none)
    trigger: str | None
    generation: int | None
    sent_ms: float  # started_mono_ms: ownership is judged when the request left
    at: Instant  # when the answer came


# -- compact events ---------------------------------------------------------------

# The events a long history is mostly made of (one per poll batch, per commit, per producer
# flush) and the list of objects each carries.
_NESTED = {ev.RECORDS_CONSUMED: ev.RANGES, ev.RECORDS_ACKED: ev.RANGES, ev.OFFSETS_COMMITTED: ev.OFFSETS}


class _Shape:
    """The keys of one kind of object, in order: one instance shared by all objects of that shape."""

    __slots__ = ("keys", "index", "names", "row", "pickers", "getters")
    _known: dict[tuple[str, ...], _Shape] = {}
    # Fields whose strings repeat on every line (who wrote it, which topic): kept once each.
    _NAMES = frozenset({"name", "source", "member", "member_id", "trigger", "error", "driver", "topic"})

    def __init__(self, keys: tuple[str, ...]):
        self.keys, self.index = keys, {k: i for i, k in enumerate(keys)}
        self.names = tuple(i for i, k in enumerate(keys) if k in self._NAMES)
        self.pickers: dict[tuple[str, ...], Callable[[tuple], tuple]] = {}
        self.getters: dict[tuple[str, ...], Callable[[tuple], tuple]] = {}
        # As a row of a list: its values in this order, its strings kept once (KeyError: another key).
        # Written out, as `(intern(o["topic"]), o["partition"], …)`: millions of ranges go through it,
        # so the interning is inline too (a call per range cost a tenth of loading).
        fields = ", ".join(
            f"(v{i} if type(v{i} := o[{k!r}]) is not str else intern(v{i}))" if i in self.names else f"o[{k!r}]"
            for i, k in enumerate(keys)
        )
        self.row = eval(f"lambda o: ({fields},)", {"intern": sys.intern})

    @classmethod
    def of(cls, keys: tuple[str, ...]) -> _Shape:
        shape = cls._known.get(keys)
        if shape is None:
            shape = cls._known[keys] = cls(tuple(sys.intern(k) for k in keys))
        return shape

    def getter(self, keys: tuple[str, ...]) -> Callable[[tuple], tuple]:
        """Those fields (two or more) out of a row; KeyError for a key it does not have, as o[key]."""
        getter = self.getters.get(keys)
        if getter is None:
            getter = self.getters[keys] = itemgetter(*(self.index[k] for k in keys))
        return getter

    def picker(self, keys: tuple[str, ...]) -> Callable[[tuple], tuple]:
        """Those fields out of (values + (None,)): the last slot stands for a missing key."""
        picker = self.pickers.get(keys)
        if picker is None:
            at = [self.index.get(k, len(self.keys)) for k in keys]
            get = itemgetter(*at)
            picker = self.pickers[keys] = get if len(at) > 1 else lambda values: (get(values),)
        return picker

    def intern(self, values: list) -> list:
        for i in self.names:
            if type(values[i]) is str:
                values[i] = sys.intern(values[i])
        return values


class _Rows(NamedTuple):
    """A list of objects of one shape (offset ranges, say), as tuples of their values."""

    shape: _Shape
    rows: tuple[tuple, ...]

    def dicts(self) -> list[dict]:
        keys = self.shape.keys
        return [dict(zip(keys, row, strict=False)) for row in self.rows]


def _rows(objects: list) -> _Rows | None:
    """The objects as rows of one shape; None unless every one is a dict with the same keys."""
    if type(objects[0]) is not dict:
        return None
    shape = _Shape.of(tuple(objects[0]))
    try:
        if sum(map(len, objects)) != len(shape.keys) * len(objects):
            return None
        rows = tuple(map(shape.row, objects))  # KeyError: another key; TypeError: not a dict
    except (KeyError, TypeError):
        return None
    return tuple.__new__(_Rows, (shape, rows))


class CompactEvent(Mapping):
    """A bulk event held as tuples: a quarter of the memory of the dict it was parsed into,
    read the same way (its list of ranges or offsets comes back as new dicts on each read;
    the History reads the tuples). A million-line history is mostly these."""

    __slots__ = ("_shape", "_values", "sort_key")

    def __init__(self, shape: _Shape, values: tuple, key: tuple):
        self._shape, self._values, self.sort_key = shape, values, key

    def __getitem__(self, key: str) -> Any:
        value = self._values[self._shape.index[key]]
        return value.dicts() if type(value) is _Rows else value

    def get(self, key: str, default: Any = None) -> Any:
        i = self._shape.index.get(key)
        if i is None:
            return default
        value = self._values[i]
        return value.dicts() if type(value) is _Rows else value

    def __contains__(self, key: object) -> bool:
        return key in self._shape.index

    def __iter__(self) -> Iterator[str]:
        return iter(self._shape.keys)

    def __len__(self) -> int:
        return len(self._shape.keys)

    def __repr__(self) -> str:
        return repr(dict(self))

    def rows(self, key: str) -> _Rows | None:
        """The nested objects under `key` as tuples (None: not there, or not held as tuples)."""
        i = self._shape.index.get(key)
        value = self._values[i] if i is not None else None
        return value if type(value) is _Rows else None

    def pick(self, keys: tuple[str, ...]) -> tuple:
        """`tuple(map(self.get, keys))` for top-level fields, in one step."""
        return self._shape.picker(keys)(self._values + (None,))


# Who wrote an event and when: what every record and commit is stamped with.
_HEAD = (ev.MEMBER, ev.SOURCE, ev.INCARNATION, ev.TS, ev.MONO_MS)
_RANGE = (ev.TOPIC, ev.PARTITION, ev.MIN_OFFSET, ev.MAX_OFFSET)


def _pick(event: Event, keys: tuple[str, ...]) -> tuple:
    """These fields of an event (None where absent), however it is held."""
    return event.pick(keys) if type(event) is CompactEvent else tuple(map(event.get, keys))


def compact(event: Event) -> Event:
    """The event in less memory, if it is of a kind a long history holds millions of
    (`records_consumed`, `records_acked`, `offsets_committed`); any other event as it is.
    The loader calls it on every line it keeps: a ten-million-record history then fits."""
    nested = _NESTED.get(event.get("name")) if type(event) is dict else None
    if nested is None or "mono_ms" not in event:
        return event
    return _compactor(tuple(event), nested)(event)


def _checked(event: Any) -> Event | None:
    """The event, if the oracle can read it (oracle/events.py); None if not."""
    return None if problem(event) else event


def _compact_checked(event: Any) -> Event | None:
    """`compact(event)`, if the oracle can read the event; None if not. A bulk event is tested
    in its compact form, its ranges as rows of values: one pass over them, not two (a long
    history is mostly ranges). Anything that form does not vouch for is tested as parsed."""
    try:
        kept = compact(event)
    except Exception:  # a line it cannot make sense of: the test below says why
        kept = None
    if type(kept) is CompactEvent:
        shape, values = kept._shape, kept._values
        test = _VALUE_TESTS.get((values[shape.index["name"]], shape))
        if test is None:
            name = values[shape.index["name"]]
            test = _VALUE_TESTS[name, shape] = compile_values(name, shape.keys, _Rows)
        if test(values):
            return kept
    return None if problem(event) else compact(event)


# (event name, shape) -> events.py's test of such an event's values, compiled on first use
_VALUE_TESTS: dict[tuple[str, _Shape], Callable[[tuple], bool]] = {}


def _compactor(keys: tuple[str, ...], nested: str) -> Callable[[dict], CompactEvent]:
    """`compact` for events with exactly these keys, in this order, as straight-line Python:
    the loader runs it on most lines of a long history, and a loop over the shape's fields
    cost twice as much. One per shape, made on first use."""
    found = _COMPACTORS.get(keys)
    if found is None:
        shape = _Shape.of(keys)
        names = [f"v{i}" for i in range(len(keys))]
        body = ["def compact_shape(event):", f"    {', '.join(names)}, = event.values()"]
        body += [f"    if type(v{i}) is str: v{i} = intern(v{i})" for i in shape.names]
        if nested in shape.index:
            i = shape.index[nested]
            body.append(f"    if type(v{i}) is list and v{i}: v{i} = rows(v{i}) or v{i}")
        at = shape.index.get
        key = (
            f"v{at('mono_ms')}",
            f"v{at('source')}" if "source" in keys else '""',
            f"v{at('seq')}" if "seq" in keys else "0",
        )
        body.append(f"    return new_event(shape, ({', '.join(names)},), ({', '.join(key)}))")
        env = {"intern": sys.intern, "rows": _rows, "shape": shape, "new_event": CompactEvent}
        exec("\n".join(body), env)
        found = _COMPACTORS[keys] = env["compact_shape"]
    return found


_COMPACTORS: dict[tuple[str, ...], Callable[[dict], CompactEvent]] = {}


def _fields(event: Event, key: str, names: tuple[str, ...]) -> Iterable[tuple]:
    """These fields of each object listed under `key` (offset ranges, committed offsets)."""
    rows = event.rows(key) if type(event) is CompactEvent else None
    if rows is None:
        return map(itemgetter(*names), event.get(key) or ())
    return map(rows.shape.getter(names), rows.rows)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Cyclic garbage collection paused while millions of long-lived objects are built: every
    collection would walk them all again, for nothing (indexes and records hold no cycles).
    Half the time of indexing a long history went to it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # What was built is long-lived: straight into the oldest generation, unscanned. Left young, the
        # first collection after the pause walks all of it (a second for a 3 M-record history's indexes).
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()


def _extend(ranges: list[tuple[int, int]], lo: int, hi: int) -> None:
    """Adds lo..hi to a partition's ranges, on to the last one when it carries straight on:
    a partition's batches mostly follow one another, so a run's million batches come down
    to a few ranges before OffsetSet sorts and merges them (the same set either way)."""
    if ranges and lo <= hi:
        last_lo, last_hi = ranges[-1]
        if last_lo <= lo <= last_hi + 1 and last_lo <= last_hi:
            if hi > last_hi:
                ranges[-1] = (last_lo, hi)
            return
    ranges.append((lo, hi))


class History:
    def __init__(self, events: Iterable[Event]):
        with gc_paused():
            self._index(events)

    def _index(self, events: Iterable[Event]) -> None:
        # what the loader noticed (oracle/integrity.py); events not from a file: nothing
        self.loaded: LoadReport = getattr(events, "report", None) or LoadReport(events=-1)
        self.events: list[Event] = sorted(events, key=sort_key)
        self._by_name: dict[str, list[Event]] = defaultdict(list)
        for e in self.events:
            self._by_name[e["name"]].append(e)
        self._memo: dict[str, Any] = {}

        self.run: Event = self.first(ev.RUN_STARTED) or {}
        version = self.run.get("format_version")
        self.format_version: int = version if type(version) is int else 1
        if self.format_version < legacy.FAULT_EFFECTS_SINCE and self._by_name.get(ev.FAULT_STARTED):
            self._supply_fault_effects()
        self.protocol: str | None = self.run.get("protocol")
        self.assignor: str | None = self.run.get("assignor")
        self.group: str | None = self.run.get("group")
        self.t0: float = (self.run or self.events[0])["mono_ms"] if self.events else 0.0
        self.end: Instant = Instant.of(self.events[-1]) if self.events else Instant(None, 0.0)

        # Millions of ranges name a handful of partitions and members: one object for each.
        self._tps: dict[tuple, TopicPartition] = {}
        self._slots: dict[tuple, MemberSlot] = {}
        acked = defaultdict(list)
        for e in self.named(ev.RECORDS_ACKED):
            for tp, lo, hi in self.ranges_of(e):
                _extend(acked[tp], lo, hi)
        self.acked: dict[TopicPartition, OffsetSet] = {tp: OffsetSet(rs) for tp, rs in acked.items()}
        del acked
        self.produced_end, self.produced_known_until = self._produced_ends()
        # set aside, the promise `produced` (oracle/integrity.py): records and commits past what was produced
        self.never_produced: list[Consumption] = []
        self.never_produced_commits: list[Commit] = []
        self._bulk_writers: set[MemberSlot] = set()  # who wrote records_consumed, offsets_committed (members())
        self._unindexed_writers: list[Event] = []  # such events listing no record or offset
        self.consumptions: list[Consumption] = []
        self._consumptions_by_tp: dict[TopicPartition, list[Consumption]] = defaultdict(list)
        self.consumed: dict[TopicPartition, OffsetSet] = {
            tp: OffsetSet(rs) for tp, rs in self._index_consumptions().items()
        }
        self.commits: list[Commit] = self._index_commits()
        self.partitions: list[TopicPartition] = self._partitions()  # every partition of the group, by the end
        self._added_at = self._partitions_added()

    def _supply_fault_effects(self) -> None:
        """An older history's faults with the effects their kinds had (oracle/legacy.py), in place
        of the events as read: every reader finds `effects` on every fault_started."""
        supplied = {id(e): legacy.with_effects(e) for e in self._by_name[ev.FAULT_STARTED]}
        self.events = [supplied.get(id(e), e) for e in self.events]
        self._by_name[ev.FAULT_STARTED] = list(supplied.values())

    def first_assigned(self, tp: TopicPartition) -> float | None:
        """When a partition added mid-run was first given to a member (None: never, or not added)."""
        at = self._added_at.get(tp)
        return at if at is not None and at != float("inf") else None

    @property
    def partitions_added_mid_run(self) -> bool:
        """Some partition of the group came after the run began (more partitions, a new topic)."""
        return bool(self._added_at)

    def partitions_at(self, mono_ms: float) -> list[TopicPartition]:
        """The group's partitions at an instant. One added mid-run (more partitions, a new
        topic matching a pattern) counts once a member was first assigned it: until the
        group's metadata caught up, an assignment without it was not wrong."""
        return [tp for tp in self.partitions if self._added_at.get(tp, float("-inf")) <= mono_ms]

    def _partitions_added(self) -> dict[TopicPartition, float]:
        """Partition -> when the group first assigned it, for partitions added mid-run."""
        declared = {
            TopicPartition(t["topic"], p) for t in self.run.get("topics") or () for p in range(int(t["partitions"]))
        }
        if not declared:
            return {}
        first_assigned: dict[TopicPartition, float] = {}
        for e in self.named(ev.PARTITIONS_ASSIGNED):
            for p in e.get("partitions") or ():
                first_assigned.setdefault(TopicPartition.of(p), e["mono_ms"])
        return {tp: first_assigned.get(tp, float("inf")) for tp in self.partitions if tp not in declared}

    def _produced_ends(self) -> tuple[dict[TopicPartition, int], float]:
        """(partition -> the offset after the last one known to exist, until when that is known).
        Known to exist: acknowledged to the producer, or below a high watermark the observer saw.
        Once the producer wrote its last word (`producer_stopped`), that is all there ever was;
        before (a harness killed mid-run), a high watermark never goes back, so what was
        consumed before the last sample is below it. Empty when the history says neither (a
        converted VerifiableConsumer log): then nothing is known not to exist."""
        ends = {tp: offsets.max + 1 for tp, offsets in self.acked.items() if offsets}
        samples = self.named(ev.LAG_SAMPLED)
        for e in samples:
            for p in e.get("partitions") or ():
                hw = p.get("high_watermark")
                if hw is not None:
                    tp = self._tp(p["topic"], p["partition"])
                    if hw > ends.get(tp, 0):
                        ends[tp] = hw
        producer = list(self.named(ev.PRODUCER_STARTED, ev.PRODUCER_STOPPED))
        if producer and producer[-1]["name"] == ev.PRODUCER_STOPPED:
            return ends, float("inf")
        return ends, samples[-1]["mono_ms"] if samples else float("-inf")

    def _index_consumptions(self) -> dict[TopicPartition, list[tuple[int, int]]]:
        """One Consumption per range of every `records_consumed`; returns the ranges by partition.
        There are millions: the loop is kept tight, and the tuples are made without their
        Python-level constructors. Offsets past what was produced are set aside (`never_produced`)."""
        consumed, by_tp, everything, new = defaultdict(list), self._consumptions_by_tp, self.consumptions, tuple.__new__
        tps, writers, produced, until = self._tps, self._bulk_writers, self.produced_end, self.produced_known_until
        for e in self.named(ev.RECORDS_CONSUMED):
            slot = None  # who and when: the same for each of the event's ranges
            for topic, partition, lo, hi in _fields(e, ev.RANGES, _RANGE):
                tp, lo, hi = tps.get((topic, partition)) or self._tp(topic, partition), int(lo), int(hi)
                if slot is None:
                    member, source, incarnation, ts, mono_ms, generation = _pick(e, _HEAD + (ev.GENERATION,))
                    slot, at = self._slot_of(e, member, source, incarnation), new(Instant, (ts, mono_ms))
                    if "member" in e:
                        writers.add(slot)
                end = produced.get(tp)
                if end is not None and hi >= end and at.mono_ms <= until:  # nothing known of it: not judged
                    self.never_produced.append(new(Consumption, (slot, tp, max(lo, end), hi, at, generation)))
                    if lo >= end:
                        continue
                    hi = end - 1
                _extend(consumed[tp], lo, hi)
                c = new(Consumption, (slot, tp, lo, hi, at, generation))
                everything.append(c)
                by_tp[tp].append(c)
            if slot is None:
                self._unindexed_writers.append(e)
        return consumed

    def _index_commits(self) -> list[Commit]:
        """One Commit per partition of every `offsets_committed`, in the order they were sent. An offset
        past what was produced is set aside (`never_produced_commits`), as the records before it were."""
        commits, tps, writers, new = [], self._tps, self._bulk_writers, tuple.__new__
        produced, until = self.produced_end, self.produced_known_until
        for e in self.named(ev.OFFSETS_COMMITTED):
            slot = None
            for topic, partition, offset in _fields(e, ev.OFFSETS, (ev.TOPIC, ev.PARTITION, ev.OFFSET)):
                if slot is None:
                    member, source, incarnation, ts, mono_ms, generation, success, error, code, trigger, sent_ms = (
                        _pick(
                            e, _HEAD + (ev.GENERATION, "success", "error", "error_code", "trigger", "started_mono_ms")
                        )
                    )
                    slot, at, success = (
                        self._slot_of(e, member, source, incarnation),
                        new(Instant, (ts, mono_ms)),
                        bool(success),
                    )
                    # librdkafka's auto commits come without the instant their request left (null):
                    # the answer is the latest it can have left.
                    sent_ms = mono_ms if sent_ms is None else sent_ms
                    if "member" in e:
                        writers.add(slot)
                key = (topic, partition)
                commit = new(
                    Commit,
                    (
                        slot,
                        tps.get(key) or self._tp(*key),
                        int(offset),
                        success,
                        error,
                        code,
                        trigger,
                        generation,
                        sent_ms,
                        at,
                    ),
                )
                end = produced.get(commit.tp)
                past = end is not None and commit.offset > end and mono_ms <= until
                (self.never_produced_commits if past else commits).append(commit)
            if slot is None:
                self._unindexed_writers.append(e)
        # By (sent, answered). They are listed in the order their events were, answered first
        # (mono_ms leads the events' sort key): one stable sort by the time sent is enough.
        commits.sort(key=attrgetter("sent_ms"))
        return commits

    def _tp(self, topic: str, partition: Any) -> TopicPartition:
        tp = self._tps.get((topic, partition))
        if tp is None:
            tp = self._tps[topic, partition] = TopicPartition(topic, int(partition))
        return tp

    def _slot(self, event: Event) -> MemberSlot:
        return self._slot_of(event, *_pick(event, _HEAD[:3]))

    def _slot_of(self, event: Event, member: Any, source: Any, incarnation: Any) -> MemberSlot:
        """MemberSlot.of(event), given its member, source and incarnation fields (one per slot)."""
        if not member and source is None:
            return MemberSlot.of(event)  # no member name: the source names it, or it has none (KeyError)
        key = (member or source, incarnation or 1)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = MemberSlot.of(event)
        return slot

    def ranges_of(self, event: Event) -> Iterator[tuple[TopicPartition, int, int]]:
        """An event's offset ranges (`records_acked`, `records_consumed`): partition, first, last."""
        tps = self._tps
        for topic, partition, lo, hi in _fields(event, ev.RANGES, _RANGE):
            yield tps.get((topic, partition)) or self._tp(topic, partition), int(lo), int(hi)

    # -- lookups -----------------------------------------------------------

    def named(self, *names: str) -> list[Event]:
        """The events of these names, in time order (one list, computed once: do not change it)."""
        if len(names) == 1:
            return self._by_name.get(names[0], [])
        return self.memo(
            ("named", names), lambda: sorted((e for n in names for e in self._by_name.get(n, [])), key=sort_key)
        )

    def first(self, name: str, **where: Any) -> Event | None:
        found = self.where(name, **where)
        return found[0] if found else None

    def last(self, name: str, **where: Any) -> Event | None:
        found = self.where(name, **where)
        return found[-1] if found else None

    def where(self, name: str, **where: Any) -> list[Event]:
        """The events of that name whose fields have those values, in time order. Checks ask
        this once per generation and member: the answers are indexed by the fields asked about."""
        if not where:
            return self.named(name)
        keys = tuple(sorted(where))
        try:
            wanted = tuple(where[k] for k in keys)
            hash(wanted)
        except TypeError:  # a value that cannot be a key (a list): look at each event
            return [e for e in self.named(name) if all(e.get(k) == v for k, v in where.items())]
        index = self._memo.get(("where", name, keys))
        if index is None:
            index = self._memo[("where", name, keys)] = defaultdict(list)
            for e in self.named(name):
                values = tuple(e.get(k) for k in keys)
                try:
                    index[values].append(e)
                except TypeError:  # an unhashable field value equals no hashable one asked for
                    pass
        return index.get(wanted, [])

    def of_our_group(self, name: str) -> list[Event]:
        """The events of that name about our group, or about no group in particular (a shared broker
        logs other groups too, a shared observer samples their lag)."""
        return [e for e in self.named(name) if self.group is None or e.get("group") in (None, self.group)]

    @property
    def done(self) -> Event | None:
        """The `phase: done` event: the run got through recovery and drain."""
        return self.first(ev.PHASE, phase="done")

    @property
    def incremental(self) -> bool:
        return self.protocol in INCREMENTAL_PROTOCOLS or self.memo(
            "incremental",
            lambda: any(e.get("incremental") for e in self.named(ev.PARTITIONS_ASSIGNED, ev.PARTITIONS_REVOKED)),
        )

    # --- protocol generations, per member incarnation ------------------------------------
    # A run's members may not all run one generation: a protocol migration restarts them one by
    # one on another (docs/history.md, "Mixed groups"). Each incarnation's consumer_started says
    # what it ran; the run's own protocol is what every other one ran.

    def protocol_of(self, slot: MemberSlot) -> str | None:
        """The generation an incarnation ran: its consumer_started's `protocol`, else the run's."""
        return self._incarnation_protocols().get(slot, self.protocol)

    def generation_of(self, slot: MemberSlot) -> Generation | None:
        """An incarnation's row of oracle/protocols.py (None: a generation this reader does not know)."""
        protocol = self.protocol_of(slot)
        return GENERATIONS.get(protocol) if isinstance(protocol, str) else None

    def incremental_of(self, slot: MemberSlot) -> bool:
        """Its rebalance callbacks carry deltas: its generation's fact, or its own callbacks say so."""
        generation = self.generation_of(slot)
        return bool(generation and generation.incremental) or self.incremental

    @property
    def protocols(self) -> tuple[str, ...]:
        """Every generation a member of the run ran, the run's own first."""
        ran = [self.protocol, *self._incarnation_protocols().values()]
        return tuple(dict.fromkeys(p for p in ran if isinstance(p, str)))

    @property
    def mixed(self) -> bool:
        """Members ran both of Kafka's group protocols (classic and consumer): the group was
        migrated online, and was a consumer group only while a consumer-protocol member was in it."""
        kinds = {GENERATIONS[p].group_protocol for p in self.protocols if p in GENERATIONS}
        return len(kinds - {None}) > 1

    def consumer_group_at(self, mono_ms: float) -> bool:
        """The group was a KIP-848 consumer group at the instant: generations were each member's own
        epoch, not the group's. In a run of one generation, its row says it; in a mixed group, the
        brokers converted it on the first consumer-protocol member's heartbeat and back when the last
        one left (GroupMetadataManager): from such an incarnation's first epoch to its end."""
        if not self.mixed:
            generation = GENERATIONS.get(self.protocol) if isinstance(self.protocol, str) else None
            return bool(generation and generation.member_epochs)
        return any(start <= mono_ms < end for start, end in self._consumer_group_spans())

    def _incarnation_protocols(self) -> dict[MemberSlot, str]:
        def compute() -> dict[MemberSlot, str]:
            return {
                self._slot(e): e["protocol"]
                for e in self.named(ev.CONSUMER_STARTED)
                if "member" in e and isinstance(e.get("protocol"), str)
            }

        return self.memo("incarnation_protocols", compute)

    def _consumer_group_spans(self) -> list[tuple[float, float]]:
        """(first epoch, end) of each incarnation running a generation with member epochs. Its end:
        its consumer_stopped or client_destroyed, its process's exit, its slot's next incarnation, else the end."""

        def compute() -> list[tuple[float, float]]:
            epochs = {
                s for s, p in self._incarnation_protocols().items() if p in GENERATIONS and GENERATIONS[p].member_epochs
            }
            first: dict[MemberSlot, float] = {}
            for e in self.named(ev.GROUP_JOINED):
                slot = self._slot(e) if "member" in e else None
                if slot in epochs:
                    first.setdefault(slot, e["mono_ms"])
            processes, ends = MemberProcesses(), {}
            for e in self.named(ev.CONSUMER_STOPPED, ev.CLIENT_DESTROYED, ev.PROCESS_EXITED, ev.CONSUMER_STARTED):
                if e["name"] == ev.PROCESS_EXITED:
                    slots = processes.exited(e) or []
                elif e["name"] == ev.CONSUMER_STARTED and "member" in e:
                    processes.started(e)
                    slot = self._slot(e)
                    slots = [MemberSlot(slot.member, slot.incarnation - 1)] if slot.incarnation > 1 else []
                else:
                    slots = [self._slot(e)] if "member" in e else []
                for slot in slots:
                    ends.setdefault(slot, e["mono_ms"])
            return sorted((t, ends.get(slot, math.inf)) for slot, t in first.items())

        return self.memo("consumer_group_spans", compute)

    def known_offsets(self, tp: TopicPartition) -> OffsetSet:
        """Offsets we know exist in the log: acknowledged or seen by a consumer.

        A gap in consumption only matters where records are known to exist;
        transaction markers and never-written offsets are not skips.
        """
        return self.acked.get(tp, OffsetSet()) | self.consumed.get(tp, OffsetSet())

    def consumptions_of(self, tp: TopicPartition) -> list[Consumption]:
        """One partition's consumed ranges, in time order."""
        return self._consumptions_by_tp.get(tp, [])

    def consumptions_between(self, tp: TopicPartition, from_ms: float, to_ms: float) -> list[Consumption]:
        """One partition's consumed ranges processed from `from_ms` to `to_ms` (both included),
        in time order: a window looked up, not the whole partition scanned."""
        times = self.consumption_times(tp)
        return self.consumptions_of(tp)[bisect_left(times, from_ms) : bisect_right(times, to_ms)]

    def consumption_times(self, tp: TopicPartition) -> list[float]:
        """When each of `consumptions_of(tp)` was processed (rising: they are in time order)."""
        times = self.memo("consumption_times", dict).get(tp)
        if times is None:
            times = self._memo["consumption_times"][tp] = [c.at.mono_ms for c in self.consumptions_of(tp)]
        return times

    def committed_at(self, tp: TopicPartition, mono_ms: float) -> Commit | None:
        """The group's committed offset for a partition at an instant: the last
        successful commit answered by then (what a new owner would fetch)."""

        def index() -> dict[TopicPartition, tuple[list[float], list[Commit]]]:
            by_tp: dict[TopicPartition, list[Commit]] = defaultdict(list)
            for c in sorted((c for c in self.commits if c.success), key=attrgetter("at.mono_ms")):
                by_tp[c.tp].append(c)
            return {tp: ([c.at.mono_ms for c in cs], cs) for tp, cs in by_tp.items()}

        times, commits = self.memo("commits_answered", index).get(tp, ([], []))
        i = bisect_right(times, mono_ms)
        return commits[i - 1] if i else None

    def commit_outcomes(self) -> tuple[int, dict[str, int]]:
        """(successful commits, failed commits by error name); one per partition entry."""
        failed: dict[str, int] = defaultdict(int)
        for (_, error), n in self.commit_failures().items():
            failed[error] += n
        return self._commit_tally()[0], dict(sorted(failed.items()))

    def commit_failures(self) -> dict[tuple[str, str], int]:
        """(error code, error name) -> failed commits, one per partition entry; "none" for a failure
        without a code, "unknown" for one without a name."""
        return dict(self._commit_tally()[1])

    def _commit_tally(self) -> tuple[int, dict[tuple[str, str], int]]:
        """One pass over the commits, shared by fenced-commits and the stats (millions of entries)."""

        def tally() -> tuple[int, dict[tuple[str, str], int]]:
            ok, failed = 0, defaultdict(int)
            for c in self.commits:
                if c.success:
                    ok += 1
                else:
                    failed["none" if c.error_code is None else str(c.error_code), c.error or "unknown"] += 1
            return ok, dict(sorted(failed.items()))

        return self.memo("commit_tally", tally)

    def members(self) -> list[MemberSlot]:
        # The slots of records and commits were worked out while indexing them: only the
        # other events (and those of records or commits that listed none) are looked at again.
        slots = set(self._bulk_writers)
        for name, events in self._by_name.items():
            if name not in (ev.RECORDS_CONSUMED, ev.OFFSETS_COMMITTED):
                slots.update(self._slot(e) for e in events if "member" in e)
        slots.update(self._slot(e) for e in self._unindexed_writers if "member" in e)
        return sorted(slots)

    def clock(self, mono_ms: float) -> str:
        """Times in messages are relative to the run's start (run_started): 't+12.345s'. The
        fault schedule's `at_s` counts from the workload phase instead: see ``fault_clock``."""
        return f"t+{(mono_ms - self.t0) / 1000:.3f}s"

    @property
    def workload_started(self) -> float | None:
        """When the workload phase began (mono_ms): the fault schedule's zero, which `at_s` counts from."""
        e = self.first(ev.PHASE, phase="workload")
        return e["mono_ms"] if e else None

    def fault_clock(self, at_s: float) -> str:
        """A fault's scheduled time on both clocks: 'workload+8.0s (t+13.614s)'."""
        start = self.workload_started
        return f"workload+{at_s:g}s" + (f" ({self.clock(start + at_s * 1000)})" if start is not None else "")

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """Derived views (ownership, rebalances, duplicates) are computed once per history."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def _partitions(self) -> list[TopicPartition]:
        declared = [
            TopicPartition(t["topic"], p) for t in self.run.get("topics") or () for p in range(int(t["partitions"]))
        ]
        if declared:
            counts = {t["topic"]: int(t["partitions"]) for t in self.run.get("topics") or ()}
            for e in self.named(ev.PARTITIONS_ADDED, ev.TOPIC_CREATED):
                if e.get("subscribed", True):
                    counts[e["topic"]] = max(counts.get(e["topic"], 0), int(e["partitions"]))
            return sorted(TopicPartition(t, p) for t, n in counts.items() for p in range(n))
        # No run_started (e.g. a converted VerifiableConsumer log): the partitions anyone touched.
        seen = set(self.acked) | set(self.consumed) | {c.tp for c in self.commits}
        for e in self.named(ev.PARTITIONS_ASSIGNED):
            seen.update(TopicPartition.of(p) for p in e.get("partitions") or ())
        return sorted(seen)
