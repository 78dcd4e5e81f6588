"""What the Kafka and ZooKeeper clients inside a member process say, as history events.

librdkafka's lines are read the way librdkafka writes them when no log callback is
set: each from the librdkafka thread that made it, to stderr, the moment it made it::

    %7|1795457288.538|CGRPSTATE|consumer-1#consumer-1| [thrd:main]: Group "g" changed state …
    (syslog level | wall clock s.ms | facility | client instance | message)

A Python ``logger`` instead gets the lines queued until the application polls, so a
member that is busy or stalled would stamp its whole rebalance when it polls again,
seconds after the client acted. ``StderrTap`` points the process's fd 2 at a spool file
and reads the lines as they come; whatever else reaches stderr (Python's own output, a
traceback) goes on to the real stderr, the member's log file.
"""

from __future__ import annotations

import atexit
import fcntl
import logging
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from runtime.history import now
from workloads.member_events import MemberEvents

# librdkafka's rd_kafka_log_print(): "%%%i|%u.%03u|%s|%s| %s\n"
_LINE = re.compile(r"%(?P<level>[0-7])\|(?P<s>\d+)\.(?P<ms>\d{3})\|(?P<fac>[^|]*)\|(?P<client>[^|]*)\| (?P<msg>.*)")
# The thread prefix librdkafka puts before the message (log.thread.name, on by default).
_THREAD = re.compile(r"\[thrd:[^\]]*\]: ")
# Syslog severities as confluent-kafka names them for a Python logger (what client_log always said).
LEVEL_NAMES = {0: "CRITICAL", 1: "CRITICAL", 2: "CRITICAL", 3: "ERROR", 4: "WARNING", 5: "INFO", 6: "INFO", 7: "DEBUG"}
WARNING = 4
READ_EVERY_S = 0.01  # how often the reader looks for new lines (each says when it was made)
READ_BYTES = 1 << 20
SPOOL_BYTES = 32 << 20  # read this far, the tap starts the next spool file
# A write under way as fd 2 moved to the next spool still lands in the last: read it this long.
RETIRED_READ_S = 1.0


@dataclass(frozen=True)
class ClientLine:
    """One librdkafka log line."""

    level: int  # syslog severity: 7 debug … 4 warning, 3 error
    wall_ms: float  # when librdkafka made the line (wall clock, millisecond resolution)
    facility: str  # e.g. CGRPOP, JOINGROUP, HEARTBEAT
    client: str  # the client instance, "<client.id>#consumer-<n>"
    message: str  # without librdkafka's thread prefix

    @property
    def level_name(self) -> str:
        return LEVEL_NAMES[self.level]


def parse_line(text: str) -> ClientLine | None:
    """A librdkafka log line, or None for anything else written to stderr."""
    m = _LINE.fullmatch(text)
    if not m:
        return None
    message = m["msg"]
    if t := _THREAD.match(message):
        message = message[t.end() :]
    return ClientLine(int(m["level"]), int(m["s"]) * 1000.0 + int(m["ms"]), m["fac"], m["client"], message)


def client_instant(wall_ms: float, not_before_mono_ms: float | None = None) -> tuple[float, float]:
    """(ts, mono_ms) of a client line: its wall time on the history's monotonic clock, with the
    offset between the two clocks measured now, in this process. Never before
    ``not_before_mono_ms`` (the member's previous event): the line's millisecond resolution
    must not put it ahead of something the member did before it."""
    wall, mono = now()
    line_mono = wall_ms - (wall - mono)
    if not_before_mono_ms is not None and line_mono < not_before_mono_ms:
        return wall_ms + (not_before_mono_ms - line_mono), not_before_mono_ms
    return wall_ms, line_mono


# librdkafka's `cgrp` debug lines that nobody reads, dropped before they are parsed: its dumps of
# assignments (most of its lines per commit), and a broker thread's "Not purging toppar fetch
# queue buffer" as a partition goes: in a 1,000-member run's teardown 67,143 of them in 5 s from
# one host of 50 members, at 10,000-20,000 lines a second per host.
NOT_PURGING = b"Not purging toppar fetch queue buffer"


@dataclass
class _Spool:
    """An unlinked file fd 2 appends to, and how far the tap has read it."""

    fd: int
    read_at: int = 0
    partial: bytes = b""  # the start of a line whose end is not written yet
    retired_at: float | None = None  # monotonic: when fd 2 moved on to the next spool

    @classmethod
    def create(cls) -> _Spool:
        fd, path = tempfile.mkstemp(prefix="stderr-tap-")
        os.unlink(path)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_APPEND)  # every thread's line whole, at the end
        return cls(fd)

    def unread(self) -> bool:
        """Peeked at without the tap's lock: a spool closed meanwhile says yes, and the drain sees."""
        try:
            return self.retired_at is not None or os.fstat(self.fd).st_size > self.read_at
        except OSError:
            return True


class StderrTap:
    """fd 2 into a spool file: librdkafka's lines to ``on_line`` as they are written, and all of
    stderr on to where fd 2 pointed before — the member's log keeps the client's own account,
    for what the history does not say (which offset a fetch started from, and why).

    A file, not a pipe, because a librdkafka thread must never wait for Python. A pipe's writer
    waits while the pipe is full, and only a Python thread, holding the GIL, empties it; but
    confluent-kafka keeps the GIL in ``assign()`` and ``unassign()`` while they wait for the
    handle's main thread. A member in ``unassign()`` and its handle's main thread writing a log
    line to a full pipe waited for each other for good (1,000-member teardowns: hosts' closes
    hung). A file takes every write at once; the tap reads it behind the writers and starts a new
    one every SPOOL_BYTES, so the disk holds one spool's worth per process.

    A reader thread takes lines as they come. ``caught_up()`` takes, on the calling thread,
    everything written so far and holds the lock while the caller writes its own event: a
    rebalance callback runs after librdkafka logged the JoinGroup response that led to it
    (the line is written before the rebalance op is enqueued), so the generation is known
    there, and events of one member stay in the order they happened.
    """

    def __init__(self, on_line: Callable[[ClientLine], None]):
        self.on_line = on_line
        self.lock = threading.RLock()
        self._spools: list[_Spool] = []  # the one fd 2 appends to last; a retired one first
        self._real_stderr = -1
        self._stopping = threading.Event()
        self._reader: threading.Thread | None = None

    def start(self) -> StderrTap:
        sys.stderr.flush()
        self._real_stderr = os.dup(2)
        self._spools = [_Spool.create()]
        os.dup2(self._spools[-1].fd, 2)
        self._reader = threading.Thread(target=self._read_on, name="stderr-tap", daemon=True)
        self._reader.start()
        atexit.register(self.stop)  # a traceback that ends the process is in the spool: pass it on
        return self

    @contextmanager
    def caught_up(self) -> Iterator[None]:
        with self.lock:
            self._drain()
            yield

    def stop(self) -> None:
        """Everything written so far is handled; fd 2 is the real stderr again."""
        if self._real_stderr < 0:
            return
        sys.stderr.flush()
        with self.lock:
            os.dup2(self._real_stderr, 2)
            self._stopping.set()
        if self._reader is not None:
            self._reader.join(timeout=2)
        time.sleep(READ_EVERY_S)  # a write under way as fd 2 moved lands in the spool meanwhile
        with self.lock:
            self._drain(final=True)
            self._spools = []
            os.close(self._real_stderr)
            self._real_stderr = -1

    # --- reading --------------------------------------------------------------------

    def _read_on(self) -> None:
        while not self._stopping.wait(READ_EVERY_S):
            if any(spool.unread() for spool in self._spools):
                try:
                    with self.lock:
                        if not self._stopping.is_set():
                            self._drain()
                except OSError as e:  # a reader that died would leave the lines to the catch-ups alone
                    self._forward(f"stderr tap: {type(e).__name__}: {e}\n".encode())

    def _drain(self, final: bool = False) -> None:
        """Under the lock: handle the complete lines written before the call, and no more. A
        writer that never pauses (a librdkafka broker thread logging in a loop) would otherwise
        keep whoever drains here, with the lock, for good. ``final``: the spools' last reading."""
        for spool in list(self._spools):
            self._read(spool, os.fstat(spool.fd).st_size)
            if final or (spool.retired_at is not None and time.monotonic() - spool.retired_at > RETIRED_READ_S):
                if kept := self._handle(spool.partial) if spool.partial else []:  # a last line without its end
                    self._forward(b"\n".join(kept) + b"\n")
                os.close(spool.fd)
                self._spools.remove(spool)
        if not final and self._spools and self._spools[-1].read_at >= SPOOL_BYTES and not self._stopping.is_set():
            try:
                fresh = _Spool.create()
            except OSError:
                return  # no room for another: this one goes on growing, and the next drain tries again
            os.dup2(fresh.fd, 2)
            self._spools[-1].retired_at = time.monotonic()
            self._spools.append(fresh)

    def _read(self, spool: _Spool, end: int) -> None:
        while spool.read_at < end:
            chunk = os.pread(spool.fd, min(end - spool.read_at, READ_BYTES), spool.read_at)
            if not chunk:
                return
            spool.read_at += len(chunk)
            *lines, spool.partial = (spool.partial + chunk).split(b"\n")
            kept = [out for raw in lines for out in self._handle(raw)]
            if kept:  # one write for the chunk: the log is written at the pace librdkafka writes
                self._forward(b"\n".join(kept) + b"\n")

    def _handle(self, raw: bytes) -> list[bytes]:
        """Read one line; what goes on to the log for it."""
        if raw.startswith(b"%7|") and (b"|DUMP" in raw[:48] or (b"|PARTDEL|" in raw[:48] and NOT_PURGING in raw)):
            return []  # lines nobody reads (above NOT_PURGING)
        line = parse_line(raw.decode("utf-8", "replace"))
        if line is not None:
            try:
                self.on_line(line)
            except Exception as e:  # a reader that dies would leave librdkafka blocked on a full pipe
                return [raw, f"stderr tap: {type(e).__name__}: {e} on {raw[:300]!r}".encode()]
        return [raw]

    def _forward(self, data: bytes) -> None:
        try:
            os.write(self._real_stderr, data)
        except OSError:
            pass


class TapRouter:
    """One StderrTap for a process of many client handles (a member host): each librdkafka line
    to the reader of the handle its client instance names (``<client.id>#consumer-<n>``; a
    member's client.id is its name). A line of no registered handle goes on to the log only."""

    def __init__(self):
        self._readers: dict[str, Callable[[ClientLine], None]] = {}
        self.tap = StderrTap(self._route).start()

    def _route(self, line: ClientLine) -> None:
        reader = self._readers.get(line.client.split("#", 1)[0])
        if reader is not None:
            reader(line)

    def register(self, client_id: str, on_line: Callable[[ClientLine], None]) -> TapView:
        """Lines of ``client_id`` to ``on_line`` from now on (a new incarnation replaces the last)."""
        with self.tap.lock:
            self._readers[client_id] = on_line
        return TapView(self, client_id, on_line)

    def unregister(self, client_id: str, on_line: Callable[[ClientLine], None]) -> None:
        with self.tap.lock:
            if self._readers.get(client_id) is on_line:  # not a later incarnation's
                del self._readers[client_id]


@dataclass(frozen=True)
class TapView:
    """One handle's share of a TapRouter, with the surface of a StderrTap a member uses."""

    router: TapRouter
    client_id: str
    on_line: Callable[[ClientLine], None]

    def caught_up(self):
        return self.router.tap.caught_up()

    def stop(self) -> None:
        """Its lines read so far are handled; later ones (there are none: its handle is gone) are not."""
        with self.router.tap.caught_up():
            self.router.unregister(self.client_id, self.on_line)


class WarningsToHistory(logging.Handler):
    """A Python logger's warnings and errors as ``client_log`` events: how the fetchers of the
    zk-eager and coordinator drivers (no group in Kafka, warnings only) and kazoo report."""

    def __init__(self, events: MemberEvents):
        super().__init__(logging.WARNING)
        self.events = events

    def emit(self, record: logging.LogRecord) -> None:  # logging.Handler's name for handling a record
        self.events.client_log(record.levelname, record.getMessage()[:500])


def warnings_logger(name: str, events: MemberEvents) -> logging.Logger:
    logger = logging.getLogger(name)
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    logger.addHandler(WarningsToHistory(events))
    return logger
