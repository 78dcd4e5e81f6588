"""Each network effect, through our client, against the real Toxiproxy server and a
local echo server: what a member would experience on its lane."""

from __future__ import annotations

import socket
import subprocess
import threading
import time

import pytest

from faults import network
from faults.network import degrade, restore
from faults.toxiproxy import ToxiproxyClient, ToxiproxyError
from harness.cluster.ports import free_port
from harness.components.install import toxiproxy_binary


@pytest.fixture(scope="module")
def toxiproxy():
    port = free_port()
    server = subprocess.Popen(
        [str(toxiproxy_binary()), "-host", "127.0.0.1", "-port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    client = ToxiproxyClient(f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 10
    while True:
        try:
            client.proxies()
            break
        except ToxiproxyError:
            assert time.monotonic() < deadline, "Toxiproxy did not start"
            time.sleep(0.05)
    yield client
    server.terminate()
    server.wait(10)


@pytest.fixture(scope="module")
def echo():
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def handle(conn):
        with conn:
            try:
                while data := conn.recv(4096):
                    conn.sendall(data)
            except OSError:  # the reset effect resets our side too
                pass

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield listener.getsockname()[1]
    stop.set()
    listener.close()


@pytest.fixture
def proxy(toxiproxy, echo, request):
    name, port = f"p-{request.node.name[:40]}", free_port()
    toxiproxy.create(name, f"127.0.0.1:{port}", f"127.0.0.1:{echo}")
    yield name, port
    network.reset(toxiproxy)


def roundtrip(port: int, timeout: float = 2.0) -> float:
    """Seconds for one echo through the proxy; raises on refusal or timeout."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        t0 = time.monotonic()
        s.sendall(b"ping")
        assert s.recv(4) == b"ping"
        return time.monotonic() - t0


def fastest(port: int, tries: int = 3) -> float:
    """The quickest of a few round trips: one may be slow on a busy machine, all of them only
    when something really delays them."""
    return min(roundtrip(port) for _ in range(tries))


def test_blackhole_accepts_connections_but_drops_data(toxiproxy, proxy):
    name, port = proxy
    assert fastest(port) < 0.5
    degrade(toxiproxy, [name], "f1", "blackhole", {})
    assert [p.toxics for p in toxiproxy.proxies() if p.name == name] == [
        ("f1-timeout-upstream", "f1-timeout-downstream")
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:  # accepted ...
        s.sendall(b"ping")
        s.settimeout(1.0)
        with pytest.raises(socket.timeout):  # ... but silent
            s.recv(4)
    restore(toxiproxy, [name], "f1", "blackhole", {})
    assert fastest(port) < 0.5 and all(not p.toxics for p in toxiproxy.proxies())


def test_refuse_disables_the_proxy(toxiproxy, proxy):
    name, port = proxy
    degrade(toxiproxy, [name], "f2", "refuse", {})
    with pytest.raises(ConnectionRefusedError):
        roundtrip(port)
    restore(toxiproxy, [name], "f2", "refuse", {})
    assert fastest(port) < 0.5


def test_a_refusal_inside_another_keeps_the_proxy_refused_until_both_healed(toxiproxy, proxy):
    name, port = proxy
    degrade(toxiproxy, [name], "f1", "refuse", {})
    degrade(toxiproxy, [name], "f2", "refuse", {})
    restore(toxiproxy, [name], "f2", "refuse", {})  # the shorter one heals: f1 still holds the proxy
    assert [p.enabled for p in toxiproxy.proxies() if p.name == name] == [False]
    with pytest.raises(ConnectionRefusedError):
        roundtrip(port)
    restore(toxiproxy, [name], "f1", "refuse", {})
    assert fastest(port) < 0.5


def test_latency_delays_each_direction(toxiproxy, proxy):
    name, port = proxy
    degrade(toxiproxy, [name], "f3", "latency", {"latency_ms": 150, "jitter_ms": 0})
    assert roundtrip(port) >= 0.28  # 150 ms up + 150 ms down
    restore(toxiproxy, [name], "f3", "latency", {"latency_ms": 150})
    assert fastest(port) < 0.15  # the 300 ms are gone


def test_reset_resets_connections(toxiproxy, proxy):
    name, port = proxy
    degrade(toxiproxy, [name], "f4", "reset", {})
    with pytest.raises((ConnectionResetError, AssertionError, BrokenPipeError)):
        roundtrip(port)
    restore(toxiproxy, [name], "f4", "reset", {})
    assert fastest(port) < 0.5


def test_api_errors_name_the_call(toxiproxy):
    with pytest.raises(ToxiproxyError, match="POST /proxies/nope/toxics.*NotFound"):
        toxiproxy.add_toxic("nope", "t", "latency", "downstream", latency=1)
    dead = ToxiproxyClient(f"http://127.0.0.1:{free_port()}", timeout_s=0.5)
    with pytest.raises(ToxiproxyError, match="GET /proxies failed"):
        dead.proxies()
