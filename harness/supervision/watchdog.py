"""A harness's watchdog: what the harness started is stopped even when the harness is SIGKILLed.

A CI job that times out kills the harness with SIGKILL: no teardown runs, and its brokers,
ZooKeeper, Toxiproxy, members (a paused one too) and compose projects would run on until
someone ran `cleanup`. So the first time a harness process registers something to stop
(a process, a compose project), it starts this watchdog, in a session of its own so that
signals sent to the harness's process group do not reach it:

    python -m harness.cluster.cleanup HARNESS_PID

It waits on the harness's pidfd (``wait_until_gone``) — woken the instant the harness is gone,
however it went — then does for that harness what the start of the next run would: every
backend stops its processes and removes its compose projects (paused ones resumed or unpaused
first), and its runs are marked ``killed`` by "the watchdog of harness PID". After a harness
that tore down normally there is nothing left to do, and it exits. A detached cluster
(`cluster up`) is meant to outlive its command: it is left alone, for `cluster down` or `cleanup`.
What it did goes to ``watchdog.log`` in the lab home.

The clean-up is the cluster layer's (harness/cluster/cleanup.py, which asks each backend):
started here by module name, so that this layer, below the backends, imports none of them.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

WATCHDOG_MODULE = "harness.cluster.cleanup"  # its `main`: wait for the harness, then clean up after it

_started_for: int | None = None  # the pid whose watchdog this process started (a fork is another harness)


def ensure_watchdog() -> None:
    """Start this harness process's watchdog, once (idempotent; cheap after the first call)."""
    global _started_for
    if _started_for == os.getpid():
        return
    _started_for = os.getpid()
    log = _log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        subprocess.Popen(
            [sys.executable, "-m", WATCHDOG_MODULE, str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )


def wait_until_gone(pid: int) -> None:
    """Return once process ``pid`` has exited (at once if it already has)."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # already gone
    try:
        select.select([pidfd], [], [])
    finally:
        os.close(pidfd)


def _log_path() -> Path:
    from harness.paths import lab_home

    return lab_home() / "watchdog.log"
