"""Free ports on 127.0.0.1 for the listeners of a local cluster."""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

from runtime.errors import ClusterError

_handed_out: set[int] = set()


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
    for _ in range(1000):
        port = random.randrange(first, lo)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise ClusterError("no free port found on 127.0.0.1")
