"""harness.cluster.ports: a port one harness claimed is never handed out by another on the
same machine while the first lives (two pytest sessions' workers probe the same slices)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from harness.cluster import ports
from harness.supervision.processes import proc_start_time


@pytest.fixture
def claims(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    monkeypatch.setattr(ports, "_handed_out", set())
    monkeypatch.setattr(ports, "_pruned", False)
    return tmp_path / "ports"


def unbound(n: int) -> list[int]:
    """n ports nothing holds right now: a fixed number may be bound by a neighbour pytest
    worker's cluster, and then free_port rightly skips it."""
    found = []
    for port in range(10100, 12000):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        found.append(port)
        if len(found) == n:
            return found
    pytest.fail(f"fewer than {n} unbound ports in 10100-11999")


def draws(monkeypatch, *candidates: int) -> None:
    """random.randrange gives these ports, in turn."""
    queue = list(candidates)
    monkeypatch.setattr(ports.random, "randrange", lambda _lo, _hi: queue.pop(0))


def test_a_port_another_live_harness_claimed_is_skipped_a_dead_ones_claim_is_void(claims, monkeypatch):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        claims.mkdir(parents=True)
        taken = ports.free_port()  # a first port: the directory is pruned already
        live, dead = [p for p in unbound(3) if p != taken][:2]
        (claims / str(live)).write_text(f"{other.pid} {proc_start_time(other.pid)}")
        (claims / str(dead)).write_text("999999999 1")  # its harness is gone
        draws(monkeypatch, live, dead)
        assert ports.free_port() == dead
        assert (claims / str(dead)).read_text().split()[0] == str(ports.os.getpid())  # ours now
    finally:
        other.kill()
        other.wait()


def test_a_process_hands_a_port_out_once_and_prunes_the_dead_claims_on_first_use(claims, monkeypatch):
    claims.mkdir(parents=True)
    (claims / "10200").write_text("999999999 1")
    first, second = unbound(2)
    draws(monkeypatch, first, first, second)
    assert (ports.free_port(), ports.free_port()) == (first, second)
    assert sorted(p.name for p in claims.iterdir() if p.name.isdigit()) == sorted([str(first), str(second)])
