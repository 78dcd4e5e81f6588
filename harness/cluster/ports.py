"""Free ports on 127.0.0.1 for the listeners of a local cluster.

A port is probed (bind, close) and then claimed for this process in ``ports_dir()``, so a
second harness on the machine — another pytest session, whose workers take the same slices,
a suite beside a run — never hands it out too before our broker binds it. A claim whose
process is gone is void.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.paths import ports_dir
from harness.supervision.processes import _alive, proc_start_time
from runtime.errors import ClusterError

_handed_out: set[int] = set()
_pruned = False  # the claims of processes that are gone, removed once per process


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def _port_range() -> tuple[int, int]:
    lo, _ = _ephemeral_range()
    first = 10_000 if lo > 12_000 else 1024
    # Harnesses running side by side (pytest-xdist workers) each take their own slice
    # ("i/n"), so one never hands out a port another probed a moment before.
    if share := os.environ.get("REBALANCE_LAB_PORT_SLICE"):
        i, n = map(int, share.split("/"))
        width = (lo - first) // n
        first, lo = first + i * width, first + (i + 1) * width
    return first, lo


def free_port() -> int:
    """A free port on 127.0.0.1 *below* the kernel's ephemeral range.

    A port taken from the ephemeral range (bind to 0) can be grabbed by any outgoing
    connection — brokers open many — between our probe and the broker's bind.
    """
    first, lo = _port_range()
    with _claims() as claims:
        for _ in range(1000):
            port = random.randrange(first, lo)
            if port in _handed_out or _claimed_by_another(claims / str(port)):
                continue
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            (claims / str(port)).write_text(_me())
            _handed_out.add(port)
            return port
    raise ClusterError("no free port found on 127.0.0.1")


def _me() -> str:
    return f"{os.getpid()} {proc_start_time(os.getpid())}"


def _claimed_by_another(claim: Path) -> bool:
    try:
        pid, start_time = claim.read_text().split()
        return _alive(int(pid), int(start_time)) and int(pid) != os.getpid()
    except (OSError, ValueError):  # no claim, or a torn one
        return False


@contextmanager
def _claims() -> Iterator[Path]:
    """The claims directory, held for this process alone (claiming is probe-then-write)."""
    global _pruned
    claims = ports_dir()
    claims.mkdir(parents=True, exist_ok=True)
    with (claims / ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _pruned:
            _pruned = True
            for claim in claims.iterdir():
                if claim.name.isdigit() and not _claimed_by_another(claim) and int(claim.name) not in _handed_out:
                    claim.unlink(missing_ok=True)
        yield claims
