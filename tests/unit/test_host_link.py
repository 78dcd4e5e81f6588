"""The link between the harness and a member host on another machine (runtime/host_link.py):
a fake host over a real socket on 127.0.0.1, its clocks skewed by a known amount."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from oracle import vocabulary as ev
from oracle.history import load_history
from runtime import host_link
from runtime.history import HistoryWriter, now
from runtime.host_link import Alignment, HostConnection, HostLink, HostLinkServer, LinkError, parse_address
from workloads.member_events import MemberEvents

ROOT = Path(__file__).resolve().parents[2]
# A new interpreter importing the project (and confluent-kafka) on a loaded machine: a limit, not an anchor.
START_LIMIT_S = 60
MONO_SKEW_MS = -123_456.789  # the host's CLOCK_MONOTONIC minus the harness's
WALL_SKEW_MS = 5_000.25  # and its wall clock, 5 s ahead


def skewed() -> tuple[float, float]:
    wall, mono = now()
    return wall + WALL_SKEW_MS, mono + MONO_SKEW_MS


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class FakeHost:
    """A member host's end in this process: its commands and how its link ended, recorded."""

    def __init__(self, port: int, name: str = "member-host-w1", clock=skewed, **kw):
        self.commands: list[dict] = []
        self.closed: list[str] = []
        self.link = HostLink(
            ("127.0.0.1", port), name, on_command=self.commands.append, on_close=self.closed.append, clock=clock, **kw
        )
        self.link.connect()


@pytest.fixture
def server(tmp_path):
    history = HistoryWriter(tmp_path / "history.jsonl", "harness")
    server = HostLinkServer(history, realign_every_s=3600)
    yield server
    server.close(timeout=2)
    history.close()


def test_alignment_recovers_a_skewed_clock_within_its_error_bound(server, tmp_path):
    FakeHost(server.port)
    (host,) = server.wait_for_hosts(1, timeout=5)
    a = host.alignment
    assert a.samples == host_link.ALIGN_SAMPLES
    assert 0 <= a.error_ms < 50  # a round trip on the loopback
    assert abs(a.offset_ms - MONO_SKEW_MS) <= a.error_ms + 1e-3
    assert abs(a.wall_offset_ms - WALL_SKEW_MS) <= a.error_ms + 1e-3
    (aligned,) = [e for e in lines(tmp_path / "history.jsonl") if e["name"] == ev.CLOCK_ALIGNED]
    assert aligned[ev.SOURCE] == "harness"
    assert aligned["host"] == "member-host-w1" and aligned["samples"] == a.samples
    assert aligned["offset_ms"] == round(a.offset_ms, 3) and aligned["error_ms"] == round(a.error_ms, 3)


def test_a_member_writes_through_the_link_into_the_harness_clocks(server, tmp_path):
    """MemberEvents over a LinkWriter, unchanged: the event lands with its source and seq, its
    stamps (and started_mono_ms) in the harness's clocks, within the alignment's error."""
    fake = FakeHost(server.port)
    (host,) = server.wait_for_hosts(1, timeout=5)
    events = MemberEvents(fake.link.writer("consumer-7", member="consumer-7", incarnation=2))
    before_wall, before_mono = now()
    _, host_mono = skewed()
    events.offsets_committed([(("t", 0), 5)], trigger="manual", started_mono_ms=host_mono)
    events.consumer_stopped("shutdown")
    after_wall, after_mono = now()
    server.close(timeout=0.2)  # the fake host never says bye: close waits for the link's end
    history = lines(tmp_path / "history.jsonl")
    committed, stopped = [e for e in history if e[ev.SOURCE] == "consumer-7"]
    err = host.alignment.error_ms + 0.01
    assert (committed["name"], committed[ev.SEQ], stopped[ev.SEQ]) == (ev.OFFSETS_COMMITTED, 1, 2)
    assert (committed[ev.MEMBER], committed[ev.INCARNATION]) == ("consumer-7", 2)
    for e in (committed, stopped):
        assert before_mono - err <= e[ev.MONO_MS] <= after_mono + err
        assert before_wall - err <= e[ev.TS] <= after_wall + err
    assert before_mono - err <= committed["started_mono_ms"] <= committed[ev.MONO_MS]
    load_history(tmp_path / "history.jsonl")  # the format's own reading takes the relayed lines


def test_commands_go_to_the_host_in_order_and_its_status_comes_back(server):
    fake = FakeHost(server.port)
    (host,) = server.wait_for_hosts(1, timeout=5)
    spec = {"member": "consumer-3", "incarnation": 1, "group": "g"}
    host.command({"seq": 1, "command": "start", "member": "consumer-3", "spec": spec})
    host.command({"seq": 2, "command": "crash", "member": "consumer-3"})
    deadline = time.monotonic() + 5  # the host says it applied them once they reached it, not before
    while len(fake.commands) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    fake.link.status({"pid": 1, "applied": 2, "members": {"consumer-3": {"incarnation": 1, "state": "gone"}}})
    assert host.wait_status(lambda s: s.get("applied") == 2, timeout=5)
    assert [c["seq"] for c in fake.commands] == [1, 2]
    assert fake.commands[0] == {"seq": 1, "command": "start", "member": "consumer-3", "spec": spec}
    assert (host.pid, host.machine) == (os.getpid(), host_link.machine_id())


def test_close_says_bye_and_waits_for_the_hosts_last_events(tmp_path):
    history = HistoryWriter(tmp_path / "history.jsonl", "harness")
    server = HostLinkServer(history, realign_every_s=3600)
    fake = None

    def on_close(reason: str) -> None:  # a host stopping its members: their last events, then bye
        fake.closed.append(reason)
        MemberEvents(fake.link.writer("consumer-1", member="consumer-1", incarnation=1)).consumer_stopped("shutdown")
        fake.link.bye()

    fake = FakeHost(server.port)
    fake.link.on_close = on_close
    server.wait_for_hosts(1, timeout=5)
    assert server.close(timeout=5) == {"member-host-w1": True}
    assert fake.closed == ["bye"]
    assert [e["name"] for e in lines(tmp_path / "history.jsonl")][-1] == ev.CONSUMER_STOPPED
    history.close()


FAKE_HOST = textwrap.dedent(
    """
    import sys, threading
    from runtime.host_link import HostLink
    closed = threading.Event()
    hang = sys.argv[2] == "hang"  # its members never stop: only the hard exit ends it
    link = HostLink(("127.0.0.1", int(sys.argv[1])), "member-host-w2", on_command=lambda c: None,
                    on_close=lambda reason: None if hang else closed.set(), hard_exit_after_s=0.2)
    link.connect()
    closed.wait()
    """
)


@pytest.mark.parametrize(("mode", "returncode"), [("clean", 0), ("hang", 70)])
def test_a_host_exits_when_its_link_drops(server, mode, returncode):
    """Cleanup reaches a host on another machine: its link gone, it stops (or is ended)."""
    proc = subprocess.Popen([sys.executable, "-c", FAKE_HOST, str(server.port), mode], cwd=ROOT)
    try:
        (host,) = server.wait_for_hosts(1, timeout=START_LIMIT_S)
        assert host.pid == proc.pid
        host.line.close()  # the harness's machine gone: no bye
        assert proc.wait(timeout=5) == returncode
    finally:
        proc.kill()
        proc.wait()


def test_a_link_that_does_not_say_hello_first_is_refused(server):
    said = []
    server.report = said.append
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b'{"type": "event", "event": {}}\n')
        assert sock.recv(1) == b""  # closed by the harness
    assert "not a hello" in said[0]
    assert not server.hosts


def test_a_new_alignment_never_moves_a_writer_back(tmp_path):
    """Re-aligned with an offset larger by 2 ms (within the errors): the writer's next event,
    0.5 ms later by the host's clock, is put at its previous one, not 1.5 ms before it."""
    relayed = []

    class Server:
        history = type("H", (), {"relay": staticmethod(relayed.append)})()

    host = HostConnection("member-host-w1", 1, "m", Server(), line=None)
    host.alignment = Alignment(offset_ms=100.0, wall_offset_ms=0.0, error_ms=3.0, samples=8)
    host._relay({ev.NAME: "a", ev.TS: 1000.0, ev.MONO_MS: 500.0, ev.SOURCE: "consumer-1", ev.SEQ: 1})
    host.alignment = Alignment(offset_ms=102.0, wall_offset_ms=2.0, error_ms=3.0, samples=8)
    host._relay({ev.NAME: "b", ev.TS: 1000.5, ev.MONO_MS: 500.5, ev.SOURCE: "consumer-1", ev.SEQ: 2})
    host._relay({ev.NAME: "c", ev.TS: 1000.5, ev.MONO_MS: 500.5, ev.SOURCE: "consumer-2", ev.SEQ: 1})
    assert [(e[ev.MONO_MS], e[ev.TS]) for e in relayed] == [(400.0, 1000.0), (400.0, 1000.0), (398.5, 998.5)]


def test_events_before_the_first_alignment_wait_for_it():
    relayed = []

    class Server:
        history = type("H", (), {"relay": staticmethod(relayed.append), "emit": staticmethod(lambda *a, **k: None)})()

    host = HostConnection("member-host-w1", 1, "m", Server(), line=None)
    host._relay({ev.NAME: "a", ev.TS: 10.0, ev.MONO_MS: 50.0, ev.SOURCE: "consumer-1", ev.SEQ: 1})
    assert relayed == []
    host.alignment = Alignment(offset_ms=40.0, wall_offset_ms=5.0, error_ms=0.1, samples=1)
    host._flush_pending()
    assert [(e[ev.MONO_MS], e[ev.TS]) for e in relayed] == [(10.0, 5.0)]


def test_the_estimate_keeps_the_sample_with_the_smallest_round_trip():
    # (harness wall, mono at send; host wall, mono; harness wall, mono at answer)
    slow = (0.0, 0.0, 1_050.0, 2_050.0, 40.0, 40.0)  # 40 ms round trip
    fast = (100.0, 100.0, 1_101.0, 2_101.0, 102.0, 102.0)  # 2 ms
    a = Alignment.estimate([slow, fast])
    assert (a.offset_ms, a.wall_offset_ms, a.error_ms, a.samples) == (2_000.0, 1_000.0, 1.0, 2)


@pytest.mark.parametrize("text", ["127.0.0.1", ":80", "h:0", "h:x", "h:70000"])
def test_a_bad_link_address_says_why(text):
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_address(text)


def test_a_line_that_is_not_a_message_is_a_link_error():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        a = socket.create_connection(listener.getsockname())
        b, _ = listener.accept()
        with a, b:
            a.sendall(b"[1, 2]\n")
            with pytest.raises(LinkError, match="JSON object with a type"):
                host_link._Line(b).receive()


def test_status_wait_ends_when_the_link_goes(server):
    fake = FakeHost(server.port)
    (host,) = server.wait_for_hosts(1, timeout=5)
    threading.Timer(0.05, fake.link._line.close).start()
    started = time.monotonic()
    assert not host.wait_status(lambda s: s.get("applied") == 1, timeout=5)
    assert time.monotonic() - started < 2


def test_the_clocks_are_aligned_again_and_again(tmp_path):
    history = HistoryWriter(tmp_path / "history.jsonl", "harness")
    server = HostLinkServer(history, realign_every_s=0.01)
    try:
        FakeHost(server.port)
        (host,) = server.wait_for_hosts(1, timeout=5)
        deadline = time.monotonic() + 5
        while len([e for e in lines(tmp_path / "history.jsonl") if e["name"] == ev.CLOCK_ALIGNED]) < 3:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert abs(host.alignment.offset_ms - MONO_SKEW_MS) <= host.alignment.error_ms + 1e-3
    finally:
        server.close(timeout=0.2)
        history.close()
