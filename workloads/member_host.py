"""A member host: many members of the group in one process, each its own client handle.

    python -m workloads.member_host HOST_SPEC.json

A member process costs an interpreter and ~30 MB; a client handle costs librdkafka's threads
and buffers only. A host runs as many members as the harness starts in it, each a driver
instance (one that ``hosts_many``: the librdkafka ``Member``) on a thread of its own, with its
own spec, history writer, member id and faults. The harness talks to it through files in the
run directory (harness/run/member_hosts.py):

- commands: ``commands_dir/<seq>.json``, applied in ``seq`` order once SIGUSR1 says there are
  new ones (and every half second regardless: a signal that came before the handler was set is
  not lost): ``start`` a new incarnation from its spec file; ``stop`` it cleanly (revoke,
  commit, LeaveGroup); ``crash`` it (its handle destroyed unclosed: ``client_destroyed``);
  ``freeze`` / ``thaw`` its poll loop; ``tell`` it that its control file holds a command
  (a poll stall, as SIGUSR1 tells a member process);
- status: ``status_file``, rewritten after every change: the host's pid, the last command
  applied, each member's incarnation and state (``running``, ``frozen``, ``gone``) and how it
  went (``stop``, ``crash``, ``error``).

SIGTERM / SIGINT stops every member cleanly, all at once, and the host exits once they are
gone. librdkafka's lines reach each member's reader through one tap (client_log.TapRouter).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path

from runtime.child import read_spec
from workloads.client_log import TapRouter
from workloads.driver import Driver, MemberSpec, driver_of, read_member_spec

POLL_S = 0.5  # commands are looked for this often even without a signal
STOP_TIMEOUT_S = 60.0  # members asked to stop at the host's end are waited for this long


@dataclass(frozen=True)
class HostSpec:
    host: str  # its process name, as consumer_started's ``host`` says it: "member-host-1"
    history: str
    commands_dir: str
    status_file: str
    driver_module: str  # the driver its members run ("workloads.consumer")


@dataclass
class Hosted:
    """One incarnation of a member in this host."""

    spec: MemberSpec
    member: Driver
    stop: threading.Event
    thread: threading.Thread | None = None
    how: str | None = None  # how it went: stop, crash, error (None while it runs)

    @property
    def state(self) -> str:
        if not self.thread.is_alive() and self.how is not None:
            return "gone"
        return "frozen" if not self.member.thawed.is_set() else "running"


class MemberHost:
    def __init__(self, spec: HostSpec):
        self.spec = spec
        self.driver = driver_of(spec.driver_module)
        if not self.driver.hosts_many:
            raise SystemExit(f"{spec.driver_module}: its driver runs one member per process")
        self.commands_dir = Path(spec.commands_dir)
        self.members: dict[str, Hosted] = {}
        self.applied = 0
        self.pending = threading.Event()  # SIGUSR1: new commands; a member thread ended: new status
        self.stopping = threading.Event()
        self.status_lock = threading.Lock()
        self.tap = TapRouter()

    # --- the loop ---------------------------------------------------------------------

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: (self.stopping.set(), self.pending.set()))
        signal.signal(signal.SIGUSR1, lambda *_: self.pending.set())
        self.write_status()  # the harness sends no signal before it has seen this
        while not self.stopping.is_set():
            self.pending.wait(POLL_S)
            self.pending.clear()
            self.apply_new()
            self.write_status()
        self.stop_all()
        self.write_status()
        self.tap.tap.stop()
        return 0

    def apply_new(self) -> None:
        for path in sorted(self.commands_dir.glob("*.json")):
            seq = int(path.stem)
            if seq <= self.applied:
                continue
            command = json.loads(path.read_text())
            try:
                self.apply(command)
            except Exception:  # one bad command must not take the other members down
                traceback.print_exc()
            self.applied = seq

    def apply(self, command: dict) -> None:
        name, what = command["member"], command["command"]
        hosted = self.members.get(name)
        if what == "start":
            if hosted and hosted.thread.is_alive():
                raise RuntimeError(f"{name}: started while its incarnation {hosted.spec.incarnation} still runs")
            self.members[name] = self.start(read_member_spec(["", command["spec_file"]], self.driver.Settings))
        elif hosted is None or hosted.how is not None:
            return  # gone already: a stop or crash of nothing is nothing
        elif what == "stop":
            hosted.member.stop.set()
        elif what == "crash":
            hosted.member.crash()
        elif what == "freeze":
            hosted.member.thawed.clear()
        elif what == "thaw":
            hosted.member.thawed.set()
        elif what == "tell":
            hosted.member.command_pending.set()
        else:
            raise ValueError(f"unknown command {what!r}")

    def start(self, spec: MemberSpec) -> Hosted:
        stop = threading.Event()
        member = self.driver(spec, stop, tap=self.tap, host=self.spec.host)
        hosted = Hosted(spec, member, stop)
        hosted.thread = threading.Thread(target=self._run, args=(hosted,), name=spec.member, daemon=True)
        hosted.thread.start()
        return hosted

    def _run(self, hosted: Hosted) -> None:
        try:
            code = hosted.member.run()
            hosted.how = "crash" if hosted.member.crashed.is_set() else ("stop" if code == 0 else "error")
        except BaseException:
            traceback.print_exc()
            hosted.how = "error"
        finally:
            self.pending.set()  # its state changed: the loop writes the status

    def stop_all(self) -> None:
        for hosted in self.members.values():
            hosted.member.thawed.set()
            hosted.stop.set()
        for hosted in self.members.values():
            hosted.thread.join(STOP_TIMEOUT_S)

    def write_status(self) -> None:
        status = {
            "pid": os.getpid(),
            "applied": self.applied,
            "members": {
                name: {"incarnation": h.spec.incarnation, "state": h.state, "how": h.how}
                for name, h in self.members.items()
            },
        }
        with self.status_lock:
            tmp = Path(self.spec.status_file + ".tmp")
            tmp.write_text(json.dumps(status))
            os.replace(tmp, self.spec.status_file)


def main(argv: list[str]) -> int:
    return MemberHost(read_spec(HostSpec, argv)).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
