"""Member hosts on Locust's workers (``load.member_hosts: on-workers``): hosts the harness did not
start and shares no file with, reached through their link (runtime/host_link.py).

Each Locust worker starts one member host (workloads/load/member_hosts.py), which connects to
the run's ``HostLinkServer``; once its clocks are aligned it is a ``RemoteHost`` here, with the
surface of a ``MemberHost`` (harness/run/member_hosts.py) — ``send`` a command, read its
``status`` — so a ``HostedMember`` on it is started, stopped, crashed, frozen and told as on
a host of this machine. What differs is carried by the link: a ``start`` carries the member's
spec, a ``tell`` the member's control file's content, the status and the history events come
back over it (the events in the harness's clocks, each alignment a ``clock_aligned``).

Its process is the worker's to start and stop; its history is the harness's to write:
``process_started`` when its link says hello (its pid, as its members' ``consumer_started``
say), ``process_exited`` when the link ends — returncode 0 after its bye (every member's
last event came first), -9 when the link dropped without one (its members' ends are lost,
as a killed process's).
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

from harness.run.member_hosts import READY_TIMEOUT_S
from harness.supervision.service import Service, StopTier
from oracle import vocabulary as ev
from runtime.errors import ClusterError
from runtime.history import HistoryWriter
from runtime.host_link import HostConnection, HostLinkServer

LOST = -signal.SIGKILL  # process_exited's returncode for a host whose link dropped without its bye


class RemoteHost(Service):
    """A member host on a Locust worker, as the harness sees it through its link."""

    role, tier = "member-host", StopTier.CLIENTS

    def __init__(self, name: str, workload, history: HistoryWriter):
        super().__init__(name)
        self.workload = workload
        self.history = history
        self.seq = 0
        self.connection: HostConnection | None = None
        self._came = threading.Event()

    # --- the link's news (on its threads) ------------------------------------------------

    def connected(self, connection: HostConnection) -> None:
        self.connection = connection
        self.history.emit(ev.PROCESS_STARTED, process=self.name, role=self.role, pid=connection.pid)
        self._came.set()

    def gone(self, connection: HostConnection) -> None:
        if connection is not self.connection:
            return
        returncode = 0 if connection.said_bye else LOST
        self.history.emit(
            ev.PROCESS_EXITED, process=self.name, role=self.role, pid=connection.pid, returncode=returncode
        )

    # --- what MemberHost offers a HostedMember ------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self.connection.pid if self.connection else None

    def ensure_started(self) -> None:
        """Its worker starts it: wait for its link (aligned) until READY_TIMEOUT_S."""
        if not self._came.wait(READY_TIMEOUT_S):
            raise ClusterError(
                f"{self.name} did not connect to the host link within {READY_TIMEOUT_S:g}s "
                f"(its Locust worker's log: {self.workload.load.logs['stdout'].parent})"
            )
        if not self.running():
            raise ClusterError(f"{self.name}'s link is gone: its worker's member host ended")

    def send(self, command: str, member: str, **fields) -> int:
        """The next command over the link; its sequence number. A start's spec and a tell's content
        go inline: the host has none of the run's files."""
        self.ensure_started()
        if "spec_file" in fields:
            spec = json.loads(Path(fields.pop("spec_file")).read_text())
            # The run's files are not the host's: a host that opened these paths would share them (on
            # this machine) or fail late (on another); empty, it fails at once. It writes through its
            # link and keeps its members' control files in its own directory.
            fields["spec"] = {**spec, "history": "", "control_file": ""}
        if command == "tell":
            fields["control"] = json.loads(self.workload.services[member].control_file.read_text())
        self.seq += 1
        try:
            self.connection.command({"seq": self.seq, "command": command, "member": member, **fields})
        except OSError as e:
            raise ClusterError(f"{self.name}: its link broke sending {command} to {member}: {e}") from None
        return self.seq

    def status(self) -> dict:
        return self.connection.status if self.connection else {}

    def member_status(self, member: str) -> dict:
        return self.status().get("members", {}).get(member, {})

    def applied(self, seq: int) -> bool:
        return self.status().get("applied", 0) >= seq

    # --- a service ---------------------------------------------------------------------------

    @property
    def logs(self) -> dict[str, Path]:
        return {}  # on its worker's machine: its output is its worker's

    def start(self) -> None:
        self.ensure_started()

    def running(self) -> bool:
        return self.connection is not None and self.connection.connected

    def paused(self) -> bool:
        return False

    def pause(self) -> None:
        raise ClusterError(f"{self.name} is on a Locust worker: a member on it is paused alone (a modelled pause)")

    def resume(self) -> None:
        pass

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Its link cut without a bye: the host stops its members and ends (runtime/host_link.py)."""
        if self.connection:
            self.connection.line.close()
            self.connection.wait_gone(READY_TIMEOUT_S)

    def terminate(self) -> None:
        """Bye over its link: every member stops cleanly, their last events come, then its own bye."""
        if self.running():
            threading.Thread(target=self.connection.bye, daemon=True).start()

    def wait_stopped(self, deadline: float) -> None:
        if self.connection and not self.connection.wait_gone(max(deadline - time.monotonic(), 0)):
            self.connection.line.close()  # it did not say bye in time: the link dropped, it ends itself
            self.connection.wait_gone(5)


def serve_hosts(workload, history: HistoryWriter, port: int) -> HostLinkServer:
    """The run's host link on 127.0.0.1:``port``: each host that connects is the RemoteHost of its name."""
    return HostLinkServer(
        history,
        port,
        on_host=lambda c: workload.member_host(c.host).connected(c),
        on_gone=lambda c: workload.member_host(c.host).gone(c),
        report=workload.report,
    )
