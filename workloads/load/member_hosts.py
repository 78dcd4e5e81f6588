"""Member hosts on Locust's workers (``load.member_hosts: on-workers``).

A planner with several machines runs a Locust worker on each; each worker starts one member
host (workloads/member_host.py) beside it, which connects to the harness over its link
(runtime/host_link.py) and runs the members the harness places on it. The worker and its
host share no file with the harness: the master tells each worker, when it asks, where the
harness's link listens and the host's name (one message each way, Locust's own channel);
the host works in a temporary directory of its own and sends everything over the link.

The host dies with its worker: the kernel sends it SIGTERM when the worker exits
(PR_SET_PDEATHSIG; its members stop cleanly), and it stops when its link drops.

No gevent here (Locust's patching stays in the locustfile): this is what the harness and the
tests import.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import tempfile

ASK = "rebalance-lab-ask-host"  # worker -> master, until answered: which host am I to start?
ANSWER = "rebalance-lab-host"  # master -> worker: {"link": "HOST:PORT", "host": its name, "driver": its module}
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def host_name(worker_index: int) -> str:
    """The member host of Locust's worker ``worker_index`` (0, 1, …): ``member-host-w1``, …"""
    return f"member-host-w{worker_index + 1}"


def host_command(link: str, host: str, driver: str) -> list[str]:
    return [sys.executable, "-m", "workloads.member_host", "--link", link, "--host", host, "--driver-module", driver]


def _die_with_parent(parent: int) -> None:
    """(In the child, before exec.) SIGTERM when the worker exits — unless it already has."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        os._exit(71)
    if os.getppid() != parent:  # the worker died before the prctl: no signal would come
        os._exit(72)


def start_member_host(link: str, host: str, driver: str) -> tuple[subprocess.Popen, str]:
    """The host, in a temporary directory of its own (its working directory, returned too: the
    caller removes it); its output is the worker's."""
    workdir = tempfile.mkdtemp(prefix=f"rebalance-lab-{host}-")
    parent = os.getpid()
    proc = subprocess.Popen(
        host_command(link, host, driver), cwd=workdir, preexec_fn=lambda: _die_with_parent(parent), close_fds=True
    )
    return proc, workdir


def stop_member_host(proc: subprocess.Popen, timeout_s: float = 60.0) -> int:
    """SIGTERM (every member stops cleanly), SIGKILL if it has not exited by ``timeout_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()
