"""Appending events to a run history (schema: docs/history.md; its names: oracle/vocabulary.py).

Every process of a run opens the same ``history.jsonl`` with O_APPEND and writes
each event as one ``write()`` of one line, so lines from different processes never
interleave and a process killed with SIGKILL loses nothing it already wrote.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import defaultdict
from pathlib import Path

from oracle import vocabulary as ev
from runtime.secrets import redact, registered

# The `clock` of the events read from the brokers' logs: stamped with the brokers' own times.
BROKER_LOG_CLOCK = "broker-log"


def now() -> tuple[float, float]:
    """(wall-clock ms, CLOCK_MONOTONIC ms). Monotonic time is system-wide on Linux,
    so it orders events from different processes on one host."""
    return time.time() * 1000.0, time.monotonic() * 1000.0


def tp(topic: str, partition: int) -> dict:
    return {ev.TOPIC: topic, ev.PARTITION: partition}


def offset_ranges(offsets_by_tp: dict[tuple[str, int], list[int]]) -> list[dict]:
    """Compress offsets into contiguous inclusive ranges, the history's unit of records."""
    ranges = []
    for (topic, partition), offsets in sorted(offsets_by_tp.items()):
        run_start = prev = None
        for off in sorted(offsets):
            if prev is not None and off == prev + 1:
                prev = off
                continue
            if prev is not None:
                ranges.append(_range(topic, partition, run_start, prev))
            run_start = prev = off
        if prev is not None:
            ranges.append(_range(topic, partition, run_start, prev))
    return ranges


def latency_histogram(latencies_ms) -> list[list[float]]:
    """Latencies as ``[[ms, records], …]``, each rounded to two significant digits (as Locust keeps
    them for its percentiles): a batch of records' latencies in a few pairs, not one number each."""
    counts: dict[float, int] = defaultdict(int)
    for ms in latencies_ms:
        ms = max(ms, 0.0)
        counts[round(ms) if ms < 100 else round(ms, -1) if ms < 1000 else round(ms, -2)] += 1
    return [[ms, n] for ms, n in sorted(counts.items())]


def _range(topic, partition, lo, hi) -> dict:
    return {ev.TOPIC: topic, ev.PARTITION: partition, ev.MIN_OFFSET: lo, ev.MAX_OFFSET: hi, ev.COUNT: hi - lo + 1}


class EventWriter:
    """One writer of a history: its `source`, numbering its events 1, 2, 3, … A process that can be
    started again writes its `incarnation` in `context` (1, 2, …): each life is a writer of its own.
    Where its lines go is the subclass's: the history file (``HistoryWriter``), or the link of a
    member host on another machine (runtime/host_link.py), whose clocks its events are stamped by."""

    def __init__(self, source: str, **context):
        self.source = source
        self.context = context  # fields stamped on every event (e.g. member, incarnation)
        self._seq = 0
        self._last_mono = float("-inf")
        self._lock = threading.Lock()

    def _now(self) -> tuple[float, float]:
        return now()

    def _append(self, line: str, event: dict) -> None:
        """Write one event's line (called under the writer's lock, in the order of ``seq``)."""
        raise NotImplementedError

    def emit(self, name: str, *, ts: float | None = None, mono_ms: float | None = None, **fields) -> dict:
        with self._lock:
            # The clock is read under the lock: a thread that numbers its event after another's
            # stamps it no earlier (docs/history.md, Promises: writer-sequence, writer-clock).
            wall, mono = self._now()
            if mono_ms is not None and mono_ms < self._last_mono:
                # A stamp from another clock (a broker's or the JVM's log line, made by one of its threads)
                # is put no earlier than this writer's previous event: its events stay in the order written.
                ts = (ts if ts is not None else wall) + (self._last_mono - mono_ms)
                mono_ms = self._last_mono
            self._seq += 1
            event = {
                ev.NAME: name,
                ev.TS: round(ts if ts is not None else wall, 3),
                ev.MONO_MS: round(mono_ms if mono_ms is not None else mono, 3),
                ev.SOURCE: self.source,
                ev.SEQ: self._seq,
                **self.context,
                **fields,
            }
            self._last_mono = event[ev.MONO_MS]
            # No secret value in a history line (an error message quoting a setting): masked before it
            # is serialised, where JSON's escaping would hide a value with a quote or a non-ASCII letter.
            if registered():
                event = redact(event)
            self._append(json.dumps(event, separators=(",", ":")), event)
        return event


class HistoryWriter(EventWriter):
    """A writer appending to the history file itself (every writer on this machine)."""

    def __init__(self, path: str | Path, source: str, **context):
        super().__init__(source, **context)
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def _append(self, line: str, event: dict) -> None:
        os.write(self._fd, (line + "\n").encode())

    def relay(self, event: dict) -> None:
        """Append an event another writer made — its own `source`, `seq` and stamps, e.g. one a member
        host on another machine sent over its link, its clocks already turned into this machine's —
        as one line, like every line of the history."""
        line = json.dumps(redact(event) if registered() else event, separators=(",", ":"))
        with self._lock:
            os.write(self._fd, (line + "\n").encode())

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
