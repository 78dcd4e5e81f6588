"""The history's own promises, checked before any check judges the cluster.

A check blames a consumer, a coordinator or a broker for what the history shows. It may
only do so when the history is what its writers promised (docs/history.md, "Promises"):
a writer that numbered its events wrongly, a clock that ran backwards, a record that was
never produced — these are faults of the history, never findings about the cluster.

Each promise has one treatment, stated with it:

- ``REFUSE``: the history cannot be judged soundly (every check orders events by a clock
  that is broken here, or reads a field that contradicts itself). ``check`` refuses the
  file (exit 2) naming the lines; when the harness wrote it during ``run``, the run broke
  (exit 3).
- ``SET_ASIDE``: the events that break it are set aside and named by the check
  ``history-integrity``, which fails alone; the rest is judged as if they were not there.

The loader also tolerates, and counts, what several appending writers leave when one of
them dies (`LoadReport`): a torn last line, a torn line followed by another writer's line,
an exact duplicate line, a missing ``run_finished``, and fields the format does not know.
None of those changes what a check says.

`Audit` takes the lines in file order, one call per line: a writer's lines are in the
order it wrote them (one ``write()`` each, under its lock), which is what its ``seq`` and
clock are promised against. Pure, like the rest of the oracle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import vocabulary as ev
from .fields import MEMBER_HOST_ROLE, unknown_fields
from .legacy import FAULT_EFFECTS_SINCE
from .protocols import GENERATIONS

REFUSE = "refuse"
SET_ASIDE = "set-aside"


class Promise(NamedTuple):
    id: str
    says: str  # what a well-formed history guarantees
    treatment: str  # REFUSE or SET_ASIDE
    why: str  # why that treatment


PROMISES: dict[str, Promise] = {
    p.id: p
    for p in (
        Promise(
            "event-lines",
            "every line is one JSON event whose fields the oracle reads have their types (oracle/events.py)",
            REFUSE,
            "a line that cannot be read could be any event",
        ),
        Promise(
            "writer-sequence",
            "each writer (source and incarnation) numbers its events 1, 2, 3, … in the order of its lines",
            REFUSE,
            "a missing, repeated or reordered event of one writer leaves the rest of its story unknown",
        ),
        Promise(
            "writer-clock",
            "a writer's mono_ms never goes back from one of its events to the next, beyond its clock's resolution",
            REFUSE,
            "every check orders events by mono_ms: a clock that went back "
            "reorders what happened and blames the member for it",
        ),
        Promise(
            "run-bounds",
            "run_started is the harness's first event and run_finished its last, each at most "
            "once; no event is stamped before run_started or after run_finished, and no line follows "
            "run_finished",
            REFUSE,
            "the run's options and its end are read from them: two of either is two runs in one file",
        ),
        Promise(
            "generation-order",
            "a member's generation (or KIP-848 member epoch) never goes back within one incarnation",
            REFUSE,
            "ownership sessions are keyed by generation: one that goes back makes sessions overlap that never did",
        ),
        Promise(
            "record-fields",
            "the fields of one record agree: a range's count is max_offset - min_offset + 1; "
            "a commit was sent no later than answered; a successful commit carries no error",
            REFUSE,
            "a record that contradicts itself cannot say which of its fields is wrong",
        ),
        Promise(
            "partitions-exist",
            "every partition an event names of the run's topics exists by the end of the "
            "run (below its topic's partition count)",
            REFUSE,
            "ownership and convergence are judged over the topic's partitions: one that does not exist "
            "would be unowned forever",
        ),
        Promise(
            "fault-effects",
            "every fault_started says what its fault does to its target (effects; format 3 on)",
            REFUSE,
            "the explanations, ownership and convergence read what a fault did from it alone: "
            "a fault that says nothing would be judged as one that did nothing",
        ),
        Promise(
            "message-faults",
            "every message_faulted names a fault whose fault_started is in the history, stamped no "
            "later than the message it acted on",
            REFUSE,
            "the explanations blame what a member did next on the message the proxy acted on: one "
            "that names no fault, or acted before its fault began, would be blamed on nothing",
        ),
        Promise(
            "hosted-members",
            "a member in a member host says so (consumer_started's host) with the pid of that host's "
            "process_started before it",
            REFUSE,
            "a member host's exit ends every member it ran, found by its pid: a member that named "
            "another pid would outlive its host in the oracle's reading",
        ),
        Promise(
            "member-protocol",
            "a member incarnation says once which protocol generation it runs (consumer_started's "
            "protocol); where the run's members ran more than one, every incarnation says it, naming a "
            "generation this oracle knows (oracle/protocols.py)",
            REFUSE,
            "a migrated group's members are judged each by its own generation's rules (epochs or the "
            "group's generations, eager or incremental callbacks): one that said none, or two, would be "
            "judged by the wrong ones",
        ),
        Promise(
            "produced",
            "every offset a member consumed or committed was produced: acknowledged to the producer "
            "by the time it stopped, or below a high watermark the observer saw later",
            SET_ASIDE,
            "the records that never existed are set aside and the rest judged: what the members did with "
            "real records is still known",
        ),
    )
}

# How far back a writer's mono_ms may step within one clock domain (docs/history.md, "Clock
# domains"). Stamps made at writing, under the writer's lock, never go back; a client's and
# the JVM's stamps come from log lines of millisecond resolution made by several threads of
# another process; a broker's lines also carry the wall-to-monotonic offset measured at each
# read of its log.
CLOCK_RESOLUTION_MS: dict[str | None, float] = {None: 0.0, "client": 0.0, "jvm": 50.0, "broker-log": 50.0}

# Event name -> its fields that name partitions: lists of {topic, partition}.
_PARTITION_LISTS = {
    ev.PARTITIONS_ASSIGNED: "partitions",
    ev.PARTITIONS_REVOKED: "partitions",
    ev.PARTITIONS_LOST: "partitions",
    ev.REVOKE_STARTED: "partitions",
    ev.RECORDS_CONSUMED: ev.RANGES,
    ev.RECORDS_ACKED: ev.RANGES,
    ev.OFFSETS_COMMITTED: ev.OFFSETS,
    ev.LAG_SAMPLED: "partitions",
}
_RANGED = frozenset({ev.RECORDS_CONSUMED, ev.RECORDS_ACKED})
MAX_SHOWN = 8  # broken promises named in a refusal; the rest are counted


class Broken(NamedTuple):
    promise: str
    lines: tuple[int, ...]  # the file's line numbers (1-based) that show it
    message: str

    def __str__(self) -> str:
        where = "line" + ("s " + ", ".join(map(str, self.lines)) if len(self.lines) > 1 else f" {self.lines[0]}")
        return f"{where}: {self.promise}: {self.message}"


@dataclass
class LoadReport:
    """What the loader dropped, recovered or noticed on its way through the file: counted,
    shown, and never a reason for a check to say anything."""

    lines: int = 0
    events: int = 0
    torn: list[tuple[int, int]] = field(default_factory=list)  # (line, bytes): a write cut short, dropped
    recovered: list[int] = field(default_factory=list)  # lines whose event followed a torn write on the same line
    duplicates: list[int] = field(default_factory=list)  # exact repeats of an earlier line, dropped
    run_finished: bool = False
    unknown_fields: dict[str, int] = field(default_factory=dict)  # "event.field" -> lines carrying it
    restarted_writers: list[str] = field(default_factory=list)  # format 1: a writer's seq began at 1 again

    def to_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "events": self.events,
            "torn": [list(t) for t in self.torn],
            "recovered": self.recovered,
            "duplicates": self.duplicates,
            "run_finished": self.run_finished,
            "unknown_fields": dict(sorted(self.unknown_fields.items())),
            "restarted_writers": self.restarted_writers,
        }

    @classmethod
    def of(cls, d: dict[str, Any]) -> LoadReport:
        """The report from its `to_dict` (a verdict.json's `history-integrity` detail)."""
        return cls(**{**d, "torn": [tuple(t) for t in d.get("torn", ())]})

    def notes(self) -> list[str]:
        """One line per thing worth a reader's attention; none for a clean history."""
        notes = []
        if self.torn:
            notes.append(
                f"{len(self.torn)} torn line(s) dropped (a writer died mid-write): line "
                + ", ".join(f"{n} ({b} bytes)" for n, b in self.torn[:MAX_SHOWN])
            )
        if self.recovered:
            notes.append(
                f"{len(self.recovered)} event(s) read from behind a torn write on the same line: line "
                + ", ".join(map(str, self.recovered[:MAX_SHOWN]))
            )
        if self.duplicates:
            notes.append(
                f"{len(self.duplicates)} exact duplicate line(s) dropped: line "
                + ", ".join(map(str, self.duplicates[:MAX_SHOWN]))
            )
        if not self.run_finished:
            notes.append("no run_finished: the harness that wrote it did not get to its end")
        if self.unknown_fields:
            notes.append(
                "fields this oracle does not know (passed over): "
                + ", ".join(f"{k} ×{n}" for k, n in sorted(self.unknown_fields.items())[:MAX_SHOWN])
            )
        if self.restarted_writers:
            notes.append("writers restarted without an incarnation (format 1): " + ", ".join(self.restarted_writers))
        return notes


class _Writer:
    """What one writer (source, incarnation) has written so far."""

    __slots__ = ("seq", "mono", "line", "raw", "generation", "generation_line")

    def __init__(self) -> None:
        self.seq = 0
        self.mono = float("-inf")
        self.line = 0
        self.raw = b""
        self.generation: int | None = None
        self.generation_line = 0


class Audit:
    """The promises checked line by line, in file order (`see`), then across the file (`finish`)."""

    def __init__(self) -> None:
        self.report = LoadReport()
        self.broken: list[Broken] = []
        self._writers: dict[tuple[Any, Any], _Writer] = {}
        self._restarts: list[tuple[str, int]] = []  # (writer, line): seq back to 1 without an incarnation
        self._unsaid: list[tuple[str, int]] = []  # (fault id, line): a fault_started without its effects
        self._fault_starts: dict[Any, float] = {}  # fault id -> its fault_started's mono_ms
        # (fault id, mono_ms, line) of each message_faulted: its fault_started may come later in the file
        # (written once the injection returned), so they are matched in `finish`.
        self._messages: list[tuple[Any, float, int]] = []
        self._run_protocol: Any = None
        self._host_pids: dict[Any, Any] = {}  # member host -> the pid of its latest process_started
        self._protocols: dict[tuple[Any, Any], list[tuple[Any, int]]] = {}  # member writer -> (protocol, line)
        self._run_started: int | None = None
        self._finished_at: int | None = None  # the line of run_finished
        self._format = 1
        self._started_mono: float | None = None
        self._finished_mono: float | None = None
        self._earliest = (float("inf"), 0)  # (mono_ms, line) of the earliest event stamped
        self._latest = (float("-inf"), 0)  # and the latest
        self._counts: dict[str, int] = {}  # a run topic -> its partition count by the end
        self._highest: dict[str, tuple[int, int]] = {}  # topic -> (highest partition named, its first line)

    def see(self, event: dict, line: int, raw: bytes) -> bool:
        """Take one parsed, well-typed line; False if it is an exact repeat to drop."""
        name, source, incarnation = event["name"], event["source"], event.get(ev.INCARNATION)
        key = (source, incarnation or 1)
        w = self._writers.get(key)
        if w is None:
            w = self._writers[key] = _Writer()
        seq = event.get(ev.SEQ)
        if seq is not None:
            if seq != w.seq + 1:
                if seq == w.seq and raw == w.raw:
                    self.report.duplicates.append(line)
                    return False
                if seq == 1 and incarnation is None:  # a restart: allowed in format 1 only (`finish`)
                    self._restarts.append((str(source), line))
                    w.mono, w.generation = float("-inf"), None
                else:
                    self._break(
                        "writer-sequence",
                        (w.line, line) if w.line else (line,),
                        f"{_writer(key)}: seq {seq} after seq {w.seq}"
                        if w.seq
                        else f"{_writer(key)}: its first event has seq {seq}, not 1",
                    )
            w.seq = seq
        mono = event[ev.MONO_MS]
        if mono < w.mono - CLOCK_RESOLUTION_MS.get(event.get(ev.CLOCK), 0.0):
            self._break(
                "writer-clock",
                (w.line, line),
                f"{_writer(key)}: mono_ms {mono} after {w.mono} ({w.mono - mono:.3f} ms back)",
            )
        w.mono, w.line, w.raw = mono, line, raw
        self.report.events += 1
        if mono < self._earliest[0]:
            self._earliest = (mono, line)
        if mono > self._latest[0]:
            self._latest = (mono, line)
        if self._finished_at is not None:
            self._break("run-bounds", (self._finished_at, line), f"{name} from {source} after run_finished")

        generation = event.get(ev.GENERATION)
        if generation is not None and event.get(ev.MEMBER) is not None and name in _MEMBER_EVENTS:
            if w.generation is not None and generation < w.generation:
                self._break(
                    "generation-order",
                    (w.generation_line, line),
                    f"{_writer(key)}: generation {generation} after {w.generation}",
                )
            w.generation, w.generation_line = generation, line

        if name == ev.RUN_STARTED:
            if self._run_started is not None:
                self._break("run-bounds", (self._run_started, line), "a second run_started")
            elif source != "harness" or seq not in (None, 1):
                self._break(
                    "run-bounds", (line,), f"run_started from {source} as its event {seq}, not the harness's first"
                )
            self._run_started, self._started_mono = line, mono
            self._format = event.get("format_version") or 1
            self._run_protocol = event.get("protocol")
            for t in event.get("topics") or ():
                self._counts[t["topic"]] = max(self._counts.get(t["topic"], 0), t["partitions"])
        elif name == ev.RUN_FINISHED:
            self._finished_at, self._finished_mono, self.report.run_finished = line, mono, True
        elif name in (ev.PARTITIONS_ADDED, ev.TOPIC_CREATED):
            self._counts[event["topic"]] = max(self._counts.get(event["topic"], 0), event["partitions"])
        elif name == ev.CONSUMER_STARTED and event.get(ev.MEMBER) is not None:
            self._protocols.setdefault(key, []).append((event.get("protocol"), line))
            host = event.get("host")
            if host is not None and self._host_pids.get(host) != event.get("pid"):
                self._break(
                    "hosted-members",
                    (line,),
                    f"{_writer(key)} says it is in {host} with pid {event.get('pid')}; {host} started with "
                    f"pid {self._host_pids.get(host)}",
                )
        elif name == ev.PROCESS_STARTED and event.get("role") == MEMBER_HOST_ROLE:
            self._host_pids[event.get("process")] = event.get("pid")
        elif name == ev.FAULT_STARTED:
            self._fault_starts[event.get("fault_id")] = mono
            if event.get(ev.EFFECTS) is None:  # fine before format 3 (`finish`)
                self._unsaid.append((f"{event.get('fault_id') or 'a fault'} ({event.get('kind')})", line))
        elif name == ev.MESSAGE_FAULTED:
            self._messages.append((event["fault_id"], mono, line))

        named = _PARTITION_LISTS.get(name)
        if named is not None:
            self._records(event, name, named, line)
        unknown = unknown_fields(event)
        if unknown:
            counts = self.report.unknown_fields
            for f in unknown:
                counts[f"{name}.{f}"] = counts.get(f"{name}.{f}", 0) + 1
        return True

    def _records(self, event: dict, name: str, key: str, line: int) -> None:
        if name == ev.OFFSETS_COMMITTED:
            self._commit(event, line)
        highest = self._highest
        ranged = name in _RANGED
        for item in event.get(key) or ():
            topic, partition = item["topic"], item["partition"]
            top = highest.get(topic)
            if top is None or partition > top[0]:
                highest[topic] = (partition, line)
            if ranged:
                count = item.get(ev.COUNT)
                if count is not None and count != item[ev.MAX_OFFSET] - item[ev.MIN_OFFSET] + 1:
                    self._break(
                        "record-fields",
                        (line,),
                        f"{name}: {topic}-{partition} {item[ev.MIN_OFFSET]}..{item[ev.MAX_OFFSET]} says count {count}",
                    )

    def _commit(self, event: dict, line: int) -> None:
        sent = event.get("started_mono_ms")
        tolerance = CLOCK_RESOLUTION_MS.get(event.get(ev.CLOCK), 0.0)
        if sent is not None and sent > event[ev.MONO_MS] + tolerance:
            self._break(
                "record-fields", (line,), f"offsets_committed sent at {sent}, after its answer at {event[ev.MONO_MS]}"
            )
        if event.get("success") and event.get("error_code") is not None:
            self._break("record-fields", (line,), f"offsets_committed succeeded with error_code {event['error_code']}")

    def _member_protocols(self) -> None:
        """member-protocol: once per incarnation; in a mixed group, said by all, and known."""
        stated = {p for said in self._protocols.values() for p, _ in said if p is not None}
        mixed = len(stated | ({self._run_protocol} if self._run_protocol is not None else set())) > 1
        for key, said in self._protocols.items():
            if len(said) > 1:
                self._break(
                    "member-protocol",
                    tuple(line for _, line in said),
                    f"{_writer(key)} started {len(said)} times: " + ", ".join(f"{p or 'no protocol'}" for p, _ in said),
                )
            elif mixed and said[0][0] not in GENERATIONS:
                protocol, line = said[0]
                self._break(
                    "member-protocol",
                    (line,),
                    f"{_writer(key)}: "
                    + (f"protocol {protocol!r} is no generation this oracle knows" if protocol else "no protocol")
                    + f" in a group whose members ran {', '.join(sorted(map(str, stated)))}",
                )

    def finish(self) -> list[Broken]:
        """The promises that span the file; then every promise broken, in line order."""
        self._member_protocols()
        if self._format >= 2:
            for writer, line in self._restarts:
                self._break("writer-sequence", (line,), f"{writer}: seq 1 again without a new incarnation")
        else:
            self.report.restarted_writers = sorted({w for w, _ in self._restarts})
        if self._format >= FAULT_EFFECTS_SINCE:
            for fault, line in self._unsaid:
                self._break(
                    "fault-effects",
                    (line,),
                    f"fault_started {fault} says nothing of what it does to its target: no effects",
                )
        for fault_id, mono, line in self._messages:
            started = self._fault_starts.get(fault_id)
            if started is None:
                self._break("message-faults", (line,), f"message_faulted names fault {fault_id}, which never started")
            elif mono < started:
                self._break(
                    "message-faults",
                    (line,),
                    f"message_faulted of fault {fault_id} stamped {started - mono:.3f} ms before its fault_started",
                )
        # Every writer stamps an instant no later than it writes; the harness writes run_started
        # before it starts anything, and run_finished once everything else has stopped.
        if self._started_mono is not None and self._earliest[0] < self._started_mono:
            self._break(
                "run-bounds",
                (self._earliest[1], self._run_started),
                f"an event stamped {self._started_mono - self._earliest[0]:.3f} ms before run_started",
            )
        if self._finished_mono is not None and self._latest[0] > self._finished_mono:
            self._break(
                "run-bounds",
                (self._finished_at, self._latest[1]),
                f"an event stamped {self._latest[0] - self._finished_mono:.3f} ms after run_finished",
            )
        for topic, (partition, line) in self._highest.items():
            count = self._counts.get(topic)
            if count is not None and partition >= count:
                self._break(
                    "partitions-exist",
                    (line,),
                    f"{topic}-{partition} named, and {topic} has {count} partition(s) by the end of the run",
                )
        return sorted(self.broken, key=lambda b: b.lines[-1])

    def _break(self, promise: str, lines: tuple[int, ...], message: str) -> None:
        self.broken.append(Broken(promise, tuple(sorted(lines)), message))


# The events a member writes as itself (its `generation` is its own, not a coordinator's).
_MEMBER_EVENTS = frozenset(
    name
    for name in (
        ev.CONSUMER_STARTED,
        ev.SUBSCRIPTION_CHANGED,
        ev.GROUP_JOIN_SENT,
        ev.GROUP_JOINED,
        ev.GROUP_JOIN_FAILED,
        ev.GROUP_SYNCED,
        ev.GROUP_SYNC_FAILED,
        ev.HEARTBEAT_FAILED,
        ev.REBALANCE_STARTED,
        ev.PARTITIONS_ASSIGNED,
        ev.REVOKE_STARTED,
        ev.PARTITIONS_REVOKED,
        ev.PARTITIONS_LOST,
        ev.RECORDS_CONSUMED,
        ev.OFFSETS_COMMITTED,
        ev.CONSUMER_ERROR,
        ev.CONSUMER_STOPPED,
        ev.CLIENT_DESTROYED,
    )
)


def _writer(key: tuple[Any, Any]) -> str:
    source, incarnation = key
    return f"{source}" if incarnation == 1 else f"{source}#{incarnation}"


def refusal(broken: list[Broken]) -> str:
    """The words of a refusal: the promises broken, the first few with their lines."""
    shown = "; ".join(map(str, broken[:MAX_SHOWN]))
    more = f" (and {len(broken) - MAX_SHOWN} more)" if len(broken) > MAX_SHOWN else ""
    return f"the history breaks its promises (docs/history.md, Promises): {shown}{more}"
