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

    python -m workloads.member_host --link HOST:PORT --host NAME [--driver-module MODULE]

A host on another machine (a Locust worker's, workloads/load/member_hosts.py) shares no file
with the run: the same commands, status and history events go over its link to the harness
(runtime/host_link.py). A ``start`` carries the member's spec; a ``tell`` carries what the
member's control file is to hold, written to a file of the host's own. The harness's bye, or
the link dropping, stops every member as SIGTERM does; the host says bye after their last
events and exits.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path

from runtime.child import read_spec
from runtime.host_link import HARD_EXIT_AFTER_S, HostLink, parse_address
from workloads.client_log import TapRouter
from workloads.driver import Driver, MemberSpec, driver_of, read_member_spec

POLL_S = 0.5  # commands are looked for this often even without a signal
WAKE_S = 0.02  # how soon the loop notices a signal's flag
STOP_TIMEOUT_S = 60.0  # members asked to stop at the host's end are waited for this long
STACKS_SIGNAL = signal.SIGUSR2  # write every thread's stack to the log


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
    def __init__(self, spec: HostSpec, link: HostLink | None = None, control_dir: Path | None = None):
        """``link``: a host on another machine, talking through it (``run_linked``); its members'
        control files in ``control_dir``, its own."""
        self.spec = spec
        self.link = link
        self.control_dir = control_dir
        self.inbox: list[dict] = []  # commands the link brought, not applied yet
        self.inbox_lock = threading.Lock()
        self.driver = driver_of(spec.driver_module)
        if not self.driver.hosts_many:
            raise SystemExit(f"{spec.driver_module}: its driver runs one member per process")
        self.commands_dir = Path(spec.commands_dir)
        self.members: dict[str, Hosted] = {}
        self.applied = 0
        self.pending = threading.Event()  # a member's state changed: a new status to write
        self.stop_asked = False  # SIGTERM / SIGINT
        self.commands_sent = False  # SIGUSR1
        self.status_lock = threading.Lock()
        self.tap = TapRouter()

    # --- the loop ---------------------------------------------------------------------

    def run(self) -> int:
        # The handlers only set flags: a handler runs on the main thread between two bytecodes, and
        # one that took a lock the main thread held (an Event's) would wait for itself forever.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: setattr(self, "stop_asked", True))
        signal.signal(signal.SIGUSR1, lambda *_: setattr(self, "commands_sent", True))
        # Every thread's stack into the host's log (fd 1: fd 2 is the tap's, whose reader may be
        # what is stuck): the harness asks for them before it kills a host whose close hung.
        faulthandler.register(STACKS_SIGNAL, file=sys.stdout, all_threads=True)
        self.write_status()  # the harness sends no signal before it has seen this
        polled = 0.0
        while not self.stop_asked:
            self.pending.wait(WAKE_S)
            now = time.monotonic()
            if self.commands_sent or now - polled > POLL_S:
                self.commands_sent, polled = False, now
                if self.apply_new():
                    self.pending.set()
            if self.pending.is_set():
                self.pending.clear()
                self.write_status()
        self.stop_all()
        self.write_status()
        if self.link:
            self.link.bye()  # after every member's last event
        self.tap.tap.stop()
        return 0

    def take(self, command: dict) -> None:
        """A command from the link (its reader thread): applied by the loop, in order."""
        with self.inbox_lock:
            self.inbox.append(command)
        self.commands_sent = True
        self.pending.set()  # wakes the loop now

    def end(self, _reason: str) -> None:
        """The harness said bye, or the link dropped: every member stops, as on SIGTERM."""
        self.stop_asked = True
        self.pending.set()

    def apply_new(self) -> bool:
        """Apply the commands not applied yet, in order; whether there were any."""
        before = self.applied
        if self.link:
            with self.inbox_lock:
                commands, self.inbox = self.inbox, []
            for command in commands:
                if command["seq"] > self.applied:
                    self._apply_one(command)
                    self.applied = command["seq"]
            return self.applied != before
        for path in sorted(self.commands_dir.glob("*.json")):
            seq = int(path.stem)
            if seq <= self.applied:
                continue
            self._apply_one(json.loads(path.read_text()))
            self.applied = seq
        return self.applied != before

    def _apply_one(self, command: dict) -> None:
        try:
            self.apply(command)
        except Exception:  # one bad command must not take the other members down
            traceback.print_exc()

    def apply(self, command: dict) -> None:
        name, what = command["member"], command["command"]
        hosted = self.members.get(name)
        if what == "start":
            if hosted and hosted.thread.is_alive():
                raise RuntimeError(f"{name}: started while its incarnation {hosted.spec.incarnation} still runs")
            self.members[name] = self.start(self._member_spec(command))
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
            if "control" in command:  # over a link: what the control file is to hold
                path = Path(hosted.spec.control_file)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(command["control"]))
                os.replace(tmp, path)
            hosted.member.command_pending.set()
        else:
            raise ValueError(f"unknown command {what!r}")

    def _member_spec(self, command: dict) -> MemberSpec:
        if "spec" not in command:
            return read_member_spec(["", command["spec_file"]], self.driver.Settings)
        spec = MemberSpec(**command["spec"])  # over a link: its control file is the host's own
        control = self.control_dir / f"{spec.member}.json"
        return replace(spec, settings=self.driver.Settings(**spec.settings), control_file=str(control))

    def start(self, spec: MemberSpec) -> Hosted:
        stop = threading.Event()
        linked = {"link": self.link} if self.link else {}
        member = self.driver(spec, stop, tap=self.tap, host=self.spec.host, **linked)
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
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for hosted in self.members.values():
            hosted.thread.join(max(deadline - time.monotonic(), 0))  # one deadline for them all

    def write_status(self) -> None:
        status = {
            "pid": os.getpid(),
            "applied": self.applied,
            "members": {
                name: {"incarnation": h.spec.incarnation, "state": h.state, "how": h.how}
                for name, h in self.members.items()
            },
        }
        if self.link:
            self.link.status(status)
            return
        with self.status_lock:
            tmp = Path(self.spec.status_file + ".tmp")
            tmp.write_text(json.dumps(status))
            os.replace(tmp, self.spec.status_file)


def run_linked(argv: list[str]) -> int:
    """``--link HOST:PORT --host NAME``: a host that talks to the harness over its link only."""
    parser = argparse.ArgumentParser(prog="python -m workloads.member_host")
    parser.add_argument("--link", required=True, help="the harness's host link, HOST:PORT")
    parser.add_argument("--host", required=True, help="this host's process name, e.g. member-host-w1")
    parser.add_argument("--driver-module", default="workloads.consumer")
    args = parser.parse_args(argv)
    try:
        address = parse_address(args.link)
    except ValueError as e:
        parser.error(f"--link: {e}")
    spec = HostSpec(host=args.host, history="", commands_dir="", status_file="", driver_module=args.driver_module)
    with tempfile.TemporaryDirectory(prefix=f"{args.host}-control-") as control_dir:
        host = MemberHost(spec, control_dir=Path(control_dir))
        # The process's own link: it ends the process if its members outlive a drop. (A link in a
        # process of other business, a test's, never does: that is this process's call alone.)
        host.link = HostLink(
            address, args.host, on_command=host.take, on_close=host.end, hard_exit_after_s=HARD_EXIT_AFTER_S
        )
        try:
            host.link.connect()
        except OSError as e:
            print(f"{args.host}: cannot reach the host link at {args.link}: {e}", file=sys.stderr, flush=True)
            return 1
        return host.run()


def main(argv: list[str]) -> int:
    if "--link" in argv:
        return run_linked(argv[1:])
    return MemberHost(read_spec(HostSpec, argv)).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
