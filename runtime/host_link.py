"""The link between the harness and a member host on another machine: one TCP connection,
one JSON object per line (UTF-8, ``\\n``-terminated), each with a ``type``.

A member host (workloads/member_host.py) that shares no files with the harness — it runs
on a Locust worker, elsewhere — connects to the harness (the server, ``HostLinkServer``);
its commands, status and history events, which a host on the harness's machine exchanges
through files, go over this link instead:

=========  ===============  ==================================================================
type       direction        fields
=========  ===============  ==================================================================
hello      host → harness   ``host`` (its process name), ``pid``, ``machine`` (/etc/machine-id,
                            else the host name), ``version`` (``PROTOCOL_VERSION``). First line.
ping       harness → host   ``id``: answer at once
pong       host → harness   ``id``, ``ts``, ``mono_ms``: the host's clocks when the ping arrived
command    harness → host   a member host command, as in its command files (``seq``, ``command``,
                            ``member``, …); a ``start`` carries the MemberSpec inline as ``spec``
                            instead of a ``spec_file``
status     host → harness   ``status``: the host's status (what its status file holds)
event      host → harness   ``event``: one history event, as a history writer writes its line,
                            stamped by the host's clocks
bye        both             harness → host: stop every member (cleanly), send their last events,
                            then say bye. Host → harness: that was my last line.
=========  ===============  ==================================================================

Clocks. ``mono_ms`` orders a history's events only if every writer reads the same
CLOCK_MONOTONIC; another machine's is not. At connect, and every ``REALIGN_EVERY_S`` after,
the harness sends ``ALIGN_SAMPLES`` pings one after another and keeps the answer with the
smallest round trip (NTP's rule): the host read its clocks somewhere between the ping's send
(t0) and the pong's arrival (t3), so ``offset = host clock − (t0 + t3) / 2`` is off by at most
``(t3 − t0) / 2``, the error bound. Both clocks of an event — ``mono_ms`` and the wall clock
``ts`` — get their own offset. Every alignment is a ``clock_aligned`` event of the harness
(docs/history.md); every event relayed has its ``ts`` and its monotonic fields (``mono_ms``,
``started_mono_ms``: every field ending in ``mono_ms``) turned into the harness's clocks
before it is appended, its ``source`` and ``seq`` kept. A new alignment may move a writer's
clock back by up to its error: its events are put no earlier than its previous one (as
``runtime.history`` does for another clock's stamp), so a writer's clock never goes back.

Cleanup. The host exits when its link drops: it stops its members, cleanly first
(``on_close``), then, if they have not all gone after ``hard_exit_after_s``, by ending the
process (its members' sockets close as a crashed process's would). The harness's
``close()`` says bye to every host and waits for their last lines.

Threads, not asyncio: both ends are small (a few hosts, one reader each), and the host's
members write from their own threads.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from oracle import vocabulary as ev
from runtime.history import EventWriter, HistoryWriter, now

PROTOCOL_VERSION = 1
HELLO, PING, PONG, COMMAND, STATUS, EVENT, BYE = "hello", "ping", "pong", "command", "status", "event", "bye"
ALIGN_SAMPLES = 8  # pings per alignment; the smallest round trip of them is kept
PONG_TIMEOUT_S = 2.0  # a ping unanswered this long is a lost sample
REALIGN_EVERY_S = 30.0  # clocks drift apart (a few ppm): aligned again this often
HELLO_TIMEOUT_S = 10.0
BYE_TIMEOUT_S = 60.0  # the harness waits this long for a host's last line after its bye
HARD_EXIT_AFTER_S = 30.0  # a host whose link dropped and whose members have not all stopped by then ends

Clock = Callable[[], tuple[float, float]]  # (wall ms, monotonic ms), as runtime.history.now


class LinkError(Exception):
    """The link broke its protocol (a line that is not a JSON object of a known type, a hello missing)."""


def machine_id() -> str:
    """What tells machines apart: systemd's machine id, else the host name."""
    try:
        return open("/etc/machine-id").read().strip() or socket.gethostname()
    except OSError:
        return socket.gethostname()


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``--link``), ValueError with the reason."""
    hostname, sep, port = text.rpartition(":")
    if not sep or not hostname or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not HOST:PORT")
    return hostname, int(port)


class _Line:
    """One end's socket: whole JSON lines in, JSON lines out (one ``sendall`` each, under a lock)."""

    def __init__(self, sock: socket.socket):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a ping is not held back for more
        self.sock = sock
        self._in = sock.makefile("rb")
        self._send_lock = threading.Lock()
        self.closed = False

    def send(self, message: dict) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        with self._send_lock:
            self.sock.sendall(data)

    def receive(self) -> dict | None:
        """The next message, None once the other end has closed (or the socket broke)."""
        try:
            line = self._in.readline()
        except OSError:
            return None
        if not line:
            return None
        try:
            message = json.loads(line)
        except ValueError as e:
            raise LinkError(f"not a JSON line: {line[:200]!r} ({e})") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise LinkError(f"not a message (a JSON object with a type): {line[:200]!r}")
        return message

    def close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self._in.close()
        with contextlib.suppress(OSError):
            self.sock.close()


# --- the host's end -------------------------------------------------------------------------------


class LinkWriter(EventWriter):
    """A history writer on a member host: numbers and stamps its events as a ``HistoryWriter``
    (the same ``emit``: a ``MemberEvents`` writes through it unchanged), by the host's clocks,
    and sends each over the link."""

    def __init__(self, link: HostLink, source: str, **context):
        super().__init__(source, **context)
        self.link = link

    def _now(self) -> tuple[float, float]:
        return self.link.clock()

    def _append(self, line: str, event: dict) -> None:
        self.link.send_event(event)

    def close(self) -> None:
        """Nothing of its own to close: the link is the host's."""


class HostLink:
    """A member host's end of the link: ``connect()`` says hello, then a reader thread answers
    pings, hands each command to ``on_command`` (in the order sent, on that thread) and calls
    ``on_close(reason)`` once, when the harness says bye (``"bye"``) or the link drops
    (``"dropped"``). With ``hard_exit_after_s`` (a member host's own link: HARD_EXIT_AFTER_S),
    after a drop the process ends that much later if it still runs (exit code 70): cleanup
    reaches a host whose members hang in their close. Without (a link in a test's process),
    nothing ends the process."""

    def __init__(
        self,
        address: tuple[str, int],
        host: str,
        *,
        on_command: Callable[[dict], None],
        on_close: Callable[[str], None],
        clock: Clock = now,
        hard_exit_after_s: float | None = None,
    ):
        self.address = address
        self.host = host
        self.clock = clock
        self.on_command = on_command
        self.on_close = on_close
        self.hard_exit_after_s = hard_exit_after_s
        self._line: _Line | None = None
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def connect(self, timeout_s: float = 10.0) -> None:
        sock = socket.create_connection(self.address, timeout=timeout_s)
        sock.settimeout(None)
        self._line = _Line(sock)
        self._line.send(
            {"type": HELLO, "host": self.host, "pid": os.getpid(), "machine": machine_id(), "version": PROTOCOL_VERSION}
        )
        self._thread = threading.Thread(target=self._read, name=f"{self.host}-link", daemon=True)
        self._thread.start()

    def writer(self, source: str, **context) -> LinkWriter:
        """A history writer whose events go to the harness's history (``runtime.history.HistoryWriter``'s surface)."""
        return LinkWriter(self, source, **context)

    def send_event(self, event: dict) -> None:
        self._send({"type": EVENT, "event": event})

    def status(self, status: dict) -> None:
        """The host's status, as its status file would hold it."""
        self._send({"type": STATUS, "status": status})

    def bye(self) -> None:
        """The host's last line: every event of it has been sent. Then the link closes."""
        self._send({"type": BYE})
        if self._line is not None:
            self._line.close()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def wait_closed(self, timeout: float | None = None) -> bool:
        return self._closed.wait(timeout)

    def _send(self, message: dict) -> None:
        if self._line is None or self._line.closed:
            return  # the link is gone: what a member says now reaches no history (the harness said so)
        try:
            self._line.send(message)
        except OSError:
            self._line.closed = True

    def _read(self) -> None:
        reason = "dropped"
        try:
            while (message := self._line.receive()) is not None:
                kind = message["type"]
                if kind == PING:
                    wall, mono = self.clock()  # read as it arrived: the harness times the round trip around it
                    self._send({"type": PONG, "id": message.get("id"), "ts": wall, "mono_ms": mono})
                elif kind == COMMAND:
                    self.on_command({k: v for k, v in message.items() if k != "type"})
                elif kind == BYE:
                    reason = "bye"
                    break
        except LinkError as e:
            print(f"{self.host}: link: {e}", file=sys.stderr, flush=True)
        self._closed.set()
        if reason == "dropped":
            self._line.close()
            if self.hard_exit_after_s is not None:
                threading.Thread(target=self._exit_later, daemon=True).start()
        self.on_close(reason)

    def _exit_later(self) -> None:
        time.sleep(self.hard_exit_after_s)  # a deadline, not a timing anchor: nothing waits on it
        print(
            f"{self.host}: link dropped {self.hard_exit_after_s:g} s ago, members still running: exiting",
            file=sys.stderr,
            flush=True,
        )
        os._exit(70)


# --- the harness's end ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alignment:
    """A host's clocks against the harness's: ``host clock − harness clock`` for the monotonic
    and the wall clock, each within ``error_ms`` (half the best sample's round trip)."""

    offset_ms: float  # monotonic
    wall_offset_ms: float
    error_ms: float
    samples: int  # pongs answered, of ALIGN_SAMPLES

    @classmethod
    def estimate(cls, samples: list[tuple[float, float, float, float, float, float]]) -> Alignment:
        """From (harness wall at send, harness mono at send, host wall, host mono, harness wall at
        answer, harness mono at answer) per pong: the one with the smallest monotonic round trip."""
        w0, m0, hw, hm, w3, m3 = min(samples, key=lambda s: s[5] - s[1])
        error = max(m3 - m0, w3 - w0, 0.0) / 2
        return cls(hm - (m0 + m3) / 2, hw - (w0 + w3) / 2, error, len(samples))

    def to_harness(self, event: dict) -> dict:
        """The event with its stamps in the harness's clocks."""
        out = dict(event)
        for key, value in event.items():
            if key.endswith(ev.MONO_MS) and isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = round(value - self.offset_ms, 3)
        if isinstance(event.get(ev.TS), (int, float)) and not isinstance(event.get(ev.TS), bool):
            out[ev.TS] = round(event[ev.TS] - self.wall_offset_ms, 3)
        return out


@dataclass
class HostConnection:
    """One member host as the harness sees it through its link."""

    host: str
    pid: int
    machine: str
    server: HostLinkServer
    line: _Line
    alignment: Alignment | None = None
    status: dict = field(default_factory=dict)  # its last status
    said_bye: bool = False
    _changed: threading.Condition = field(default_factory=threading.Condition)
    _pongs: dict = field(default_factory=dict)  # ping id -> (wall, mono) at the harness when it came
    _pending: list = field(default_factory=list)  # events that came before the first alignment
    _last_mono: dict = field(default_factory=dict)  # (source, incarnation) -> its last mono_ms relayed
    _gone: threading.Event = field(default_factory=threading.Event)

    def command(self, command: dict) -> None:
        """A member host command (``seq``, ``command``, ``member``, …). OSError if the link is gone."""
        self.line.send({**command, "type": COMMAND})

    @property
    def connected(self) -> bool:
        return not self._gone.is_set()

    def wait_status(self, predicate: Callable[[dict], bool], timeout: float) -> bool:
        """Wait until the host's status satisfies ``predicate`` (False: timed out, or the link went)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(self.status):
                left = deadline - time.monotonic()
                if left <= 0 or self._gone.is_set():
                    return predicate(self.status)
                self._changed.wait(left)
            return True

    def wait_gone(self, timeout: float | None = None) -> bool:
        return self._gone.wait(timeout)

    def bye(self, timeout: float = BYE_TIMEOUT_S) -> bool:
        """Tell the host to stop every member and wait for its last line (True) or the link to drop."""
        with contextlib.suppress(OSError):
            self.line.send({"type": BYE})
        gone = self._gone.wait(timeout)
        self.line.close()
        return gone and self.said_bye

    # -- the reader thread --

    def _serve(self) -> None:
        try:
            while (message := self.line.receive()) is not None:
                kind = message["type"]
                if kind == PONG:
                    wall, mono = self.server.clock()
                    with self._changed:
                        self._pongs[message.get("id")] = (wall, mono, message)
                        self._changed.notify_all()
                elif kind == EVENT:
                    self._relay(message.get("event"))
                elif kind == STATUS:
                    with self._changed:
                        self.status = message.get("status") or {}
                        self._changed.notify_all()
                elif kind == BYE:
                    self.said_bye = True
                    break
        except LinkError as e:
            self.server.report(f"{self.host}: {e}: link closed")
        finally:
            self.line.close()
            self._flush_pending()  # a host gone before its first alignment: its events, unaligned, are not lost
            self.server._gone(self)  # (its end written after its last events, before anyone waiting hears of it)
            with self._changed:
                self._gone.set()
                self._changed.notify_all()

    def _relay(self, event) -> None:
        if not (isinstance(event, dict) and isinstance(event.get(ev.MONO_MS), (int, float))):
            self.server.report(f"{self.host}: an event without mono_ms dropped: {str(event)[:200]}")
            return
        with self._changed:
            if self.alignment is None:
                self._pending.append(event)
                return
            self._append(event)

    def _append(self, event: dict) -> None:
        """(Under ``_changed``.) Into the harness's clocks, no earlier than its writer's last event."""
        event = self.alignment.to_harness(event) if self.alignment else dict(event)
        writer = (event.get(ev.SOURCE), event.get(ev.INCARNATION))
        last = self._last_mono.get(writer, float("-inf"))
        if event[ev.MONO_MS] < last:  # a new alignment moved the host's clock back by less than its error
            shift = last - event[ev.MONO_MS]
            event[ev.MONO_MS] = last
            if isinstance(event.get(ev.TS), (int, float)):
                event[ev.TS] = round(event[ev.TS] + shift, 3)
        self._last_mono[writer] = event[ev.MONO_MS]
        self.server.history.relay(event)

    def _flush_pending(self) -> None:
        with self._changed:
            pending, self._pending = self._pending, []
            for event in pending:
                self._append(event)

    def align(self) -> Alignment | None:
        """Ping ``ALIGN_SAMPLES`` times, one after another; the new alignment (written as
        ``clock_aligned``), or None if no pong came (the link is gone)."""
        samples = []
        for _ in range(ALIGN_SAMPLES):
            ping = self.server._next_ping()
            wall0, mono0 = self.server.clock()
            try:
                self.line.send({"type": PING, "id": ping})
            except OSError:
                break
            with self._changed:
                self._changed.wait_for(lambda p=ping: p in self._pongs or self._gone.is_set(), PONG_TIMEOUT_S)
                answer = self._pongs.pop(ping, None)
            if answer is not None:
                wall3, mono3, pong = answer
                samples.append((wall0, mono0, float(pong["ts"]), float(pong["mono_ms"]), wall3, mono3))
            if self._gone.is_set():
                break
        if not samples:
            return None
        alignment = Alignment.estimate(samples)
        with self._changed:
            self.alignment = alignment
            self.server.history.emit(
                ev.CLOCK_ALIGNED,
                host=self.host,
                machine=self.machine,
                offset_ms=round(alignment.offset_ms, 3),
                wall_offset_ms=round(alignment.wall_offset_ms, 3),
                error_ms=round(alignment.error_ms, 3),
                samples=alignment.samples,
            )
            pending, self._pending = self._pending, []
            for event in pending:
                self._append(event)
            self._changed.notify_all()
        return alignment


class HostLinkServer:
    """The harness's end: listens on ``bind:port`` (127.0.0.1 in this project; port 0: any), takes
    each member host's hello, aligns its clocks, then relays its events to ``history`` (the
    harness's own writer: ``clock_aligned`` is its event) and keeps its status. ``on_host`` is
    called (on the host's own thread) once a host is aligned and ready for commands."""

    def __init__(
        self,
        history: HistoryWriter,
        port: int = 0,
        *,
        bind: str = "127.0.0.1",
        clock: Clock = now,
        on_host: Callable[[HostConnection], None] = lambda _h: None,
        on_gone: Callable[[HostConnection], None] = lambda _h: None,
        report: Callable[[str], None] = lambda _m: None,
        realign_every_s: float = REALIGN_EVERY_S,
    ):
        self.history = history
        self.clock = clock
        self.on_host = on_host
        self.on_gone = on_gone
        self.report = report
        self.realign_every_s = realign_every_s
        self._sock = socket.create_server((bind, port))
        self.port = self._sock.getsockname()[1]
        self.hosts: dict[str, HostConnection] = {}
        self._lock = threading.Condition()
        self._ping = 0
        self._closing = threading.Event()
        self._accepter = threading.Thread(target=self._accept, name="host-link", daemon=True)
        self._accepter.start()

    @property
    def address(self) -> str:
        host, port = self._sock.getsockname()[:2]
        return f"{host}:{port}"

    def wait_for_hosts(self, count: int, timeout: float) -> list[HostConnection]:
        """The first ``count`` hosts aligned (fewer if the timeout ran out), in the order they came."""
        with self._lock:
            self._lock.wait_for(lambda: len(self._ready()) >= count, timeout)
            return self._ready()[:count]

    def _ready(self) -> list[HostConnection]:
        return [h for h in self.hosts.values() if h.alignment is not None and h.connected]

    def close(self, timeout: float = BYE_TIMEOUT_S) -> dict[str, bool]:
        """Bye to every host, in parallel; wait for their last lines. Host -> whether it said bye."""
        self._closing.set()
        with contextlib.suppress(OSError):
            self._sock.close()
        hosts = list(self.hosts.values())
        said: dict[str, bool] = {}
        threads = [threading.Thread(target=lambda h=h: said.__setitem__(h.host, h.bye(timeout))) for h in hosts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return said

    def _next_ping(self) -> int:
        with self._lock:
            self._ping += 1
            return self._ping

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                sock, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._welcome, args=(sock,), daemon=True).start()

    def _welcome(self, sock: socket.socket) -> None:
        line = _Line(sock)
        sock.settimeout(HELLO_TIMEOUT_S)
        try:
            hello = line.receive()
            if hello is None or hello.get("type") != HELLO or not isinstance(hello.get("host"), str):
                raise LinkError(f"the first line was not a hello: {str(hello)[:200]}")
            if hello.get("version") != PROTOCOL_VERSION:
                raise LinkError(f"protocol version {hello.get('version')!r}, this harness speaks {PROTOCOL_VERSION}")
        except (LinkError, OSError) as e:
            self.report(f"host link: {e}")
            line.close()
            return
        sock.settimeout(None)
        host = HostConnection(hello["host"], int(hello.get("pid") or 0), str(hello.get("machine")), self, line)
        with self._lock:
            if host.host in self.hosts and self.hosts[host.host].connected:
                self.report(f"host link: a second {host.host} refused")
                line.close()
                return
            self.hosts[host.host] = host
        threading.Thread(target=host._serve, name=f"{host.host}-link", daemon=True).start()
        if host.align() is None:
            return
        with self._lock:
            self._lock.notify_all()
        self.on_host(host)
        while not self._closing.wait(self.realign_every_s) and host.connected:
            host.align()

    def _gone(self, host: HostConnection) -> None:
        with self._lock:
            self._lock.notify_all()
        self.on_gone(host)
