"""Starting, pausing and stopping the processes of a run — and finding them again.

Every process is started in its own session (so it has its own process group and
never sees the terminal's Ctrl-C: teardown is ours to order), and registered as a
small JSON file under ``registry_dir()``: pid, the kernel's start time for that
pid (so a recycled pid is never mistaken for ours), the owning harness, and what
it is. ``cleanup_leftovers`` reads those files after a harness died without
tearing down, resumes anything a pause fault left stopped, kills the group, and
marks the dead harness's run ``killed`` (harness.supervision.run_state). Nothing is ever killed
by name.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.paths import registry_dir
from harness.supervision.run_state import mark_killed, run_of
from harness.supervision.stop_signals import deferred
from harness.supervision.watchdog import ensure_watchdog

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def proc_stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/pid/stat from the third on (state, ppid, …; ``proc(5)`` numbers them
    from 1, so field n is index n - 3), or None once the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces; fields after the last ')' are fixed.
    return stat.rsplit(")", 1)[1].split()


def cpu_seconds(stat: list[str]) -> float:
    """User + system CPU time of a process (fields 14 and 15), from its ``proc_stat``."""
    return (int(stat[11]) + int(stat[12])) / CLOCK_TICKS


def proc_start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (field 22 of /proc/pid/stat)."""
    stat = proc_stat(pid)
    return int(stat[19]) if stat else None


def process_state(pid: int) -> str | None:
    """The kernel's one-letter state of ``pid`` (R, S, T = stopped, Z = zombie), or None if gone."""
    stat = proc_stat(pid)
    return stat[0] if stat else None


def _alive(pid: int, start_time: int | None) -> bool:
    return start_time is not None and proc_start_time(pid) == start_time


def owner_alive(pid: int, start_time: int | None) -> bool:
    """Whether the harness that registered something still runs. One that has exited and is not
    reaped yet (a zombie: its watchdog wakes before its parent reaps it) owns nothing any more."""
    return _alive(pid, start_time) and process_state(pid) != "Z"


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


@dataclass
class ManagedProcess:
    name: str
    role: str
    argv: list[str]
    log_path: Path
    popen: subprocess.Popen
    start_time: int | None
    registration: Path
    paused: bool = False
    meta: dict = field(default_factory=dict)
    stop_asked_at: float | None = None  # monotonic: when it was first asked to stop (SIGTERM)
    escalated_after_ms: float | None = None  # asked to stop, it was killed (SIGKILL) that long after

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None


@dataclass
class ProcessRecord:
    """What ``on_start``/``on_exit`` are told of a service that is not one of the supervisor's
    processes (a container): the same events, the same fields."""

    name: str
    role: str
    pid: int | None


class Supervisor:
    """Owns the processes of one harness invocation (a run, or a detached `cluster up`).

    ``on_start``/``on_exit`` let the run record process_started / process_exited
    events without this module knowing about histories.
    """

    def __init__(
        self,
        owner: str = "run",
        on_start: Callable[[ManagedProcess], None] | None = None,
        on_exit: Callable[[ManagedProcess, int], None] | None = None,
    ):
        self.owner = owner
        self.on_start = on_start
        self.on_exit = on_exit
        self.processes: dict[str, ManagedProcess] = {}

    def start(
        self,
        name: str,
        role: str,
        argv: list[str],
        log_path: Path,
        env: dict | None = None,
        cwd: Path | None = None,
        **meta,
    ) -> ManagedProcess:
        if name in self.processes and self.processes[name].running():
            raise RuntimeError(f"{name} is already running")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        registry = registry_dir()
        if not self.owner.startswith(DETACHED_OWNERS):  # what outlives a SIGKILLed harness: stopped
            ensure_watchdog()
        # A Ctrl-C between Popen and the table would leave a process nobody stops: it waits.
        with deferred():
            with open(log_path, "ab") as log:
                popen = subprocess.Popen(
                    argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env={**os.environ, **(env or {})},
                    cwd=cwd,
                    start_new_session=True,
                )
            registration = registry / f"{popen.pid}.json"
            try:
                start_time = proc_start_time(popen.pid)
                registry.mkdir(parents=True, exist_ok=True)
                # Written whole, then renamed: `registered()` in another process forgets a file it
                # cannot parse, and a half-written one would take a live process off the registry.
                written = registration.with_suffix(".tmp")
                written.write_text(
                    json.dumps(
                        {
                            "pid": popen.pid,
                            "start_time": start_time,
                            "name": name,
                            "role": role,
                            "owner": self.owner,
                            "owner_pid": os.getpid(),
                            "owner_start_time": proc_start_time(os.getpid()),
                            "argv": argv[:3],
                            "log": str(log_path),
                        }
                    )
                )
                os.replace(written, registration)
                proc = ManagedProcess(name, role, argv, log_path, popen, start_time, registration, meta=meta)
                # Copy on write: the fault scheduler's thread starts members while the run's thread walks
                # the table (poll_exits); rebinding is atomic, so a walk keeps the table it began with.
                self.processes = {**self.processes, name: proc}
            except BaseException:  # a full disk before it is in the table (a Ctrl-C waits: deferred)
                _signal_group(popen.pid, signal.SIGKILL)
                popen.wait()
                registration.unlink(missing_ok=True)
                raise
        if self.on_start:
            self.on_start(proc)
        return proc

    def run(
        self,
        name: str,
        role: str,
        argv: list[str],
        log_path: Path,
        timeout: float | None = None,
        env: dict | None = None,
        cwd: Path | None = None,
    ) -> int:
        """Start ``argv`` and wait for it to exit (``timeout``: subprocess.TimeoutExpired); returns its
        exit code. Its whole group goes on any way out — a Ctrl-C, an error, the timeout, or a leader
        that left children behind (the JVM ``mvn`` started, ``go``'s compilers)."""
        before = self.processes.get(name)
        try:
            return self.start(name, role, argv, log_path, env=env, cwd=cwd).popen.wait(timeout=timeout)
        finally:
            # Also when the Ctrl-C came while start() told on_start. A second Ctrl-C must not cut this
            # short: it waits for the kill. The group goes before the leader is reaped and unregistered
            # (a JVM a failed step left behind would still write its class archive as it exits); then
            # kill() reaps.
            with deferred():
                if (proc := self.processes.get(name)) is not before:
                    _signal_group(proc.pid, signal.SIGKILL)
                    self.kill(name)

    def record_start(self, name: str, role: str, pid: int | None) -> None:
        if self.on_start:
            self.on_start(ProcessRecord(name, role, pid))

    def record_exit(self, name: str, role: str, pid: int | None, code: int | None) -> None:
        if self.on_exit:
            self.on_exit(ProcessRecord(name, role, pid), code)

    def get(self, name: str) -> ManagedProcess:
        try:
            return self.processes[name]
        except KeyError:
            raise KeyError(f"no process named {name!r}; known: {', '.join(sorted(self.processes))}") from None

    # --- faults use these -------------------------------------------------------------

    def pause(self, name: str) -> None:
        """SIGSTOP the whole group: every thread stops, heartbeat threads included."""
        proc = self.get(name)
        if not proc.running():
            raise RuntimeError(f"{name} is not running")
        _signal_group(proc.pid, signal.SIGSTOP)
        proc.paused = True

    def resume(self, name: str) -> None:
        proc = self.get(name)
        _signal_group(proc.pid, signal.SIGCONT)
        proc.paused = False

    def kill(self, name: str, sig: int = signal.SIGKILL, timeout: float = 30.0) -> int | None:
        """Send ``sig`` to the group and wait for the leader; SIGKILL if it lingers."""
        proc = self.get(name)
        if not proc.running():
            return self._reap(proc)
        if proc.paused:  # a stopped process cannot act on SIGTERM
            _signal_group(proc.pid, signal.SIGCONT)
            proc.paused = False
        if sig == signal.SIGKILL:
            self._escalating(proc)
        elif sig == signal.SIGTERM and proc.stop_asked_at is None:
            proc.stop_asked_at = time.monotonic()
        _signal_group(proc.pid, sig)
        try:
            proc.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._escalating(proc)
            _signal_group(proc.pid, signal.SIGKILL)
            proc.popen.wait()
        # Anything else left in its group (a child of a child) goes too.
        _signal_group(proc.pid, signal.SIGKILL)
        return self._reap(proc)

    @staticmethod
    def _escalating(proc: ManagedProcess) -> None:
        """A process asked to stop that has not: its kill is the harness's, and its close did not end
        (process_exited's ``escalated_after_ms``: a client's close that hangs is a finding of its own)."""
        if proc.stop_asked_at is not None and proc.escalated_after_ms is None:
            proc.escalated_after_ms = round((time.monotonic() - proc.stop_asked_at) * 1000)

    def _reap(self, proc: ManagedProcess) -> int | None:
        code = proc.popen.poll()
        if proc.registration.exists():
            proc.registration.unlink()
            if self.on_exit:
                self.on_exit(proc, code)
        return code

    def poll_exits(self) -> list[ManagedProcess]:
        """Processes that exited on their own since the last call (recorded once)."""
        exited = [p for p in self.processes.values() if not p.running() and p.registration.exists()]
        for proc in exited:
            self._reap(proc)
        return exited

    def terminate(self, name: str) -> None:
        """SIGTERM the group without waiting (resumed first: a stopped process ignores SIGTERM)."""
        proc = self.get(name)
        if proc.running():
            if proc.paused:
                self.resume(name)
            if proc.stop_asked_at is None:
                proc.stop_asked_at = time.monotonic()
            _signal_group(proc.pid, signal.SIGTERM)

    def wait_stopped(self, name: str, deadline: float) -> None:
        """Wait for the process to exit until ``deadline``; SIGKILL it if it lingers, and reap it."""
        proc = self.get(name)
        try:
            proc.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        self.kill(name)  # SIGKILL if still there; reaps and unregisters

    def stop_all(self, tiers: list[list[str]] | None = None, timeout: float = 20.0) -> None:
        """Stop everything, one tier at a time (e.g. clients, brokers, quorum), each tier in
        parallel; what no tier names goes last, newest first. Stopped processes are resumed
        first, all of them: a client's LeaveGroup must not wait on a paused broker."""
        for proc in self.processes.values():
            if proc.running() and proc.paused:
                self.resume(proc.name)
        tiers = [list(t) for t in (tiers or [])]
        listed = {n for t in tiers for n in t}
        tiers.append([n for n in reversed(self.processes) if n not in listed])
        for tier in tiers:
            live = [n for n in tier if n in self.processes]
            for name in live:
                self.terminate(name)
            deadline = time.monotonic() + timeout
            for name in live:
                self.wait_stopped(name, deadline)


# ------------------------------------------------------------------------------ cleanup


@dataclass
class Leftover:
    pid: int
    name: str
    role: str
    owner: str
    state: str | None  # the kernel's letter (process_state): T stopped, Z exited and not yet reaped
    registration: Path
    owner_alive: bool = False
    owner_pid: int | None = None

    @property
    def stopped(self) -> bool:
        return self.state == "T"

    @property
    def run_dir(self) -> Path | None:
        """The run this process was started for, if a run's harness started it."""
        return run_of(self.owner)


def registered(include_live_owners: bool = True, forget_dead: bool = True) -> list[Leftover]:
    """Registered processes that are still alive. Dead ones whose owner is dead too are
    forgotten on the way (``forget_dead``); a live owner forgets its own, as it records their
    exit (Supervisor._reap: the registration it removes is what says "not recorded yet")."""
    found = []
    for path in sorted(registry_dir().glob("*.json")) if registry_dir().exists() else []:
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            if forget_dead:
                path.unlink(missing_ok=True)
            continue
        owned = owner_alive(entry.get("owner_pid", -1), entry.get("owner_start_time"))
        if not _alive(entry["pid"], entry.get("start_time")):
            if forget_dead and not owned:
                path.unlink(missing_ok=True)
            continue
        if owned and not include_live_owners:
            continue
        found.append(
            Leftover(
                entry["pid"],
                entry["name"],
                entry["role"],
                entry.get("owner", "?"),
                process_state(entry["pid"]),
                path,
                owned,
                entry.get("owner_pid"),
            )
        )
    return found


# Owners that outlive the harness that started them by design: a `cluster up` cluster, the
# project's Docker Engine (reused by the next run).
DETACHED_OWNERS = ("cluster:", "engine:")


def cleanup_leftovers(
    include_detached: bool = True,
    include_live_owners: bool = False,
    by: str = "rebalance-lab cleanup",
    owner_pid: int | None = None,
) -> list[Leftover]:
    """Stop registered processes whose harness is gone (or all of them, if asked), and mark
    the runs of dead harnesses ``killed`` (``by`` says who cleaned up, in their run.json);
    ``owner_pid``: only what that harness process started (its watchdog's share).

    A detached cluster (``cluster up``) has no living owner by design; the automatic
    cleanup at the start of a run leaves it alone, ``rebalance-lab cleanup`` does not.
    """
    victims = [
        p
        for p in registered(include_live_owners=include_live_owners)
        if (include_detached or not p.owner.startswith(DETACHED_OWNERS)) and owner_pid in (None, p.owner_pid)
    ]
    for p in victims:
        _signal_group(p.pid, signal.SIGCONT)  # resume what a pause fault left stopped
        _signal_group(p.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    for p in victims:
        while (
            Path(f"/proc/{p.pid}").exists() and process_state(p.pid) not in (None, "Z") and time.monotonic() < deadline
        ):
            time.sleep(0.05)
        p.registration.unlink(missing_ok=True)
    runs: dict[Path, list[dict]] = {}
    for p in victims:
        if p.run_dir and not p.owner_alive:  # a live harness writes its own run's final state
            runs.setdefault(p.run_dir, []).append(
                {"process": p.name, "role": p.role, "pid": p.pid, "paused": p.stopped}
            )
    for run_dir, stopped in runs.items():
        mark_killed(run_dir, by, stopped)
    return victims


def stop_owned(owner: str, role_tiers: list[list[str]], timeout: float = 20.0) -> list[Leftover]:
    """Stop the registered processes of one owner (a detached cluster) tier by tier:
    SIGCONT + SIGTERM to a tier, wait for it, SIGKILL what is left."""
    mine = [p for p in registered() if p.owner == owner]
    tiers = [[p for p in mine if p.role in roles] for roles in role_tiers]
    tiers.append([p for p in mine if not any(p in t for t in tiers)])
    for tier in tiers:
        for p in tier:
            _signal_group(p.pid, signal.SIGCONT)
            _signal_group(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in tier:
            while process_state(p.pid) not in (None, "Z") and time.monotonic() < deadline:
                time.sleep(0.1)
            _signal_group(p.pid, signal.SIGKILL)
            p.registration.unlink(missing_ok=True)
    return mine
