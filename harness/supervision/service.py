"""A service: one process of a run — a ZooKeeper node, a broker, Toxiproxy, a member —
with what it is, how it starts, where it logs and when it stops.

The shape is ducktape's Service: a service knows how to start itself, how to tell it
is ready, how to stop it, and declares its logs, so a backend (plain processes here,
containers next) changes how, never what. Faults act on services by name (pause,
resume, kill, start again); the run stops them in the order their tiers say.
"""

from __future__ import annotations

import signal
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from enum import IntEnum
from pathlib import Path
from typing import ClassVar

from harness.supervision.processes import ManagedProcess, Supervisor
from runtime.errors import ClusterError


class StopTier(IntEnum):
    """When a service stops in a clean teardown: lower first, one tier at a time, a tier
    in parallel. Clients go before what they talk to (their LeaveGroup reaches a live
    coordinator), brokers before their metadata quorum (a controlled shutdown needs it),
    and the proxies everything talks through last."""

    CLIENTS = 0
    COORDINATOR = 1
    BROKERS = 2
    QUORUM = 3
    NETWORK = 4


class Service(ABC):
    role: ClassVar[str]  # what it is, as the history's process events and the registry name it
    tier: ClassVar[StopTier]
    stop_timeout_s: ClassVar[float] = 20.0  # how long a clean stop may take before it is killed

    def __init__(self, name: str):
        self.name = name

    @property
    @abstractmethod
    def logs(self) -> dict[str, Path]:
        """Its logs by what they hold (``stdout``, ``server`` …): where to look when it fails."""

    @abstractmethod
    def start(self) -> None:
        """Start it (again, after a stop or a crash: the same service, a new process)."""

    def wait_ready(self, deadline: float) -> None:  # noqa: B027 - most services are ready once started
        """Return once it serves; raise ClusterError (naming its log) if it died or the deadline passed."""

    @abstractmethod
    def running(self) -> bool: ...

    @abstractmethod
    def paused(self) -> bool: ...

    @abstractmethod
    def pause(self) -> dict | None:
        """Freeze it whole (every thread: heartbeats stop too), as a long GC pause would; details
        worth recording where the freeze is modelled rather than a SIGSTOP (a hosted member)."""

    @abstractmethod
    def resume(self) -> None: ...

    @abstractmethod
    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` and wait until it is gone (what a crash fault does)."""

    @abstractmethod
    def terminate(self) -> None:
        """Ask it to stop cleanly and return at once (a stopped one is resumed first)."""

    def stop(self, timeout: float = 20.0) -> None:
        """Stop it cleanly; kill it if it has not gone within ``timeout`` seconds."""
        self.terminate()
        self.wait_stopped(time.monotonic() + timeout)

    @abstractmethod
    def wait_stopped(self, deadline: float) -> None:
        """Wait for it to go until ``deadline``, then kill what is left."""


class LocalProcess(Service):
    """A service that is one process group on this machine, owned by a Supervisor (which
    registers it, so `cleanup` finds it if the harness dies)."""

    def __init__(self, name: str, supervisor: Supervisor, logs_dir: Path):
        super().__init__(name)
        self.supervisor = supervisor
        self.logs_dir = logs_dir

    @abstractmethod
    def command(self) -> list[str]:
        """Its command line (called at each start)."""

    @property
    def logs(self) -> dict[str, Path]:
        return {"stdout": self.logs_dir / f"{self.name}.stdout"}

    @property
    def process(self) -> ManagedProcess | None:
        return self.supervisor.processes.get(self.name)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def environment(self) -> dict | None:
        """Variables its process gets on top of the harness's environment (secrets: runtime.secrets)."""
        return None

    def history_fields(self) -> dict:
        """What its ``process_started`` says beyond its name, role and pid (a Kafka node: its release)."""
        return {}

    def start(self) -> None:
        self.supervisor.start(
            self.name, self.role, self.command(), self.logs["stdout"], env=self.environment(), **self.history_fields()
        )

    def running(self) -> bool:
        return self.process is not None and self.process.running()

    def check_alive(self) -> None:
        """Raise, with the end of its log, if it has exited (while starting, say)."""
        if not self.running():
            code = self.process.popen.returncode if self.process else None
            tail = next((t for t in (_tail(path) for path in self.logs.values()) if t), "")
            raise ClusterError(f"{self.name} exited with code {code} while starting:\n{tail}")

    def paused(self) -> bool:
        return self.running() and self.process.paused

    def wait_answering(self, ask: Callable[[], object], refused: type[Exception], what: str, deadline: float) -> None:
        """Until ``ask()`` stops raising ``refused``: its API is up. ClusterError naming ``what`` if
        the deadline passes first, or (with the end of its log) if the process exits meanwhile."""
        while True:
            self.check_alive()
            try:
                ask()
                return
            except refused:
                if time.monotonic() > deadline:
                    raise ClusterError(f"{what} did not answer") from None
                time.sleep(0.1)

    def pause(self) -> None:
        self.supervisor.pause(self.name)

    def resume(self) -> None:
        self.supervisor.resume(self.name)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        self.supervisor.kill(self.name, sig)

    def terminate(self) -> None:
        if self.running():
            self.supervisor.terminate(self.name)

    def wait_stopped(self, deadline: float) -> None:
        if self.process:
            self.supervisor.wait_stopped(self.name, deadline)


def stop_in_order(services: Iterable[Service], timeout: float | None = None) -> None:
    """Stop services tier by tier (StopTier), each tier in parallel: ask them all, then wait up to
    ``timeout``, else the longest stop_timeout_s of the tier. Paused ones are resumed first, all of
    them: a client's LeaveGroup must not wait on a paused broker."""
    services = list(services)
    for service in services:
        if service.paused():
            service.resume()
    for tier in sorted({s.tier for s in services}):
        members = [s for s in services if s.tier == tier]
        for service in members:
            service.terminate()
        deadline = time.monotonic() + (timeout or max(s.stop_timeout_s for s in members))
        for service in members:
            service.wait_stopped(deadline)


def role_tiers(kinds: Iterable[type[Service]]) -> list[list[str]]:
    """The stop order as roles, for processes known only by their registration (a detached
    cluster stopped by `cluster down`, from another harness)."""
    tiers: dict[StopTier, list[str]] = {}
    for kind in kinds:
        tiers.setdefault(kind.tier, []).append(kind.role)
    return [tiers[t] for t in sorted(tiers)]


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
