"""Plumbing shared by the processes a run starts (producer, consumers, observer, coordinator instances).

Each reads its spec from the JSON file named on its command line, and stops
cleanly — closing its client, writing its last events — on SIGTERM or SIGINT.
"""

from __future__ import annotations

import json
import signal
import threading
from typing import TypeVar

from runtime import secrets

# The harness's commands to a member: written to its control file, announced by SIGUSR1
# (faults.poll_stall gives them, workloads.poll_stall obeys them).
POLL_STALL, POLL_STALL_END = "poll-stall", "poll-stall-end"

T = TypeVar("T")


def read_spec(cls: type[T], argv: list[str]) -> T:
    """The spec file named on the command line; secret client settings (``***`` in the file) come
    from this process's environment (runtime.secrets)."""
    with open(argv[1]) as f:
        spec = json.load(f)
    if isinstance(spec.get("client_settings"), dict):
        spec["client_settings"] = secrets.child_settings(spec["client_settings"])
    return cls(**spec)


def stop_on_signals() -> threading.Event:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return stop
