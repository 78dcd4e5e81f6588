"""A harness's watchdog: what the harness started is stopped even when the harness is SIGKILLed.

A CI job that times out kills the harness with SIGKILL: no teardown runs, and its brokers,
ZooKeeper, Toxiproxy, members (a paused one too) and compose projects would run on until
someone ran `cleanup`. So the first time a harness process registers something to stop
(a process, a compose project), it starts this watchdog, in a session of its own so that
signals sent to the harness's process group do not reach it:

    python -m harness.supervision.watchdog HARNESS_PID

It waits on the harness's pidfd — woken the instant the harness is gone, however it went —
then does for that harness what the start of the next run would: stops its processes and
removes its compose projects (paused ones resumed or unpaused first), and marks its runs
``killed`` by "the watchdog of harness PID". After a harness that tore down
normally there is nothing left to do, and it exits. A detached cluster (`cluster up`) is
meant to outlive its command: it is left alone, for `cluster down` or `cleanup`.
What it did goes to ``watchdog.log`` in the lab home.
"""
from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

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
        subprocess.Popen([sys.executable, "-m", "harness.supervision.watchdog", str(os.getpid())], stdin=subprocess.DEVNULL,
                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)


def _log_path() -> Path:
    from harness.paths import lab_home

    return lab_home() / "watchdog.log"


def main(argv: list[str]) -> int:
    harness = int(argv[1])
    from harness.run.loop import (
        clean_up_after_dead_harnesses,  # loaded now: when the harness dies, act at once
    )

    try:
        pidfd = os.pidfd_open(harness)
    except ProcessLookupError:
        pidfd = None  # already gone
    if pidfd is not None:
        select.select([pidfd], [], [])
        os.close(pidfd)
    by = f"the watchdog of harness {harness}"

    def report(message: str) -> None:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {by}: {message}", flush=True)

    clean_up_after_dead_harnesses(by, report, owner_pid=harness)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
