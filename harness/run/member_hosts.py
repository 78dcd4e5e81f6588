"""Members that share a process: member hosts (workloads/member_host.py) and their members.

With ``workload.members_per_host`` above 1, member ``consumer-k`` is a client handle in the
member host its number falls in (``Workload.host_of``), and the harness acts on it through
that host: numbered command files and SIGUSR1 to start, stop, crash, freeze or tell it, and
the host's status file to see it. A ``HostedMember`` is still a service of its own, so every
fault, the load profile and the teardown act on it by name as on a member process:

- a crash (SIGKILL) destroys its handle without closing it: no LeaveGroup, no commit, its
  sockets closed, as a killed process's are — the host writes ``client_destroyed``;
- a clean stop (SIGTERM) closes it: revoke, commit, LeaveGroup, ``consumer_stopped``;
- a pause cannot be SIGSTOP (it would stop every member of the host), so it is modelled: the
  member's poll loop stops and its own lane is cut both ways (a Toxiproxy ``timeout`` toxic,
  what a blackhole is): nothing of it reaches a broker nor comes back, as with a process
  stopped whole, while its neighbours' handles go on. The difference left: its handle's own
  threads still run their timers, so it may notice its session is gone before it is resumed;
- a poll stall is the member's own control file, as for a process, announced through the host.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from faults import network
from harness.components import client_envs
from harness.run.clients import Client, Member, run_client
from harness.supervision.processes import Supervisor
from oracle.fields import MEMBER_HOST_ROLE
from runtime import secrets
from runtime.errors import ClusterError
from workloads.member_host import STACKS_SIGNAL, HostSpec
from workloads.member_host import STOP_TIMEOUT_S as HOST_STOP_TIMEOUT_S

HOST_MODULE = "workloads.member_host"
READY_TIMEOUT_S = 60.0  # a host's interpreter and confluent-kafka imported, its first status written
STOP_TIMEOUT_S = 30.0  # a member asked to stop has closed by then, else it is crashed
# A member asked to crash leaves its loop at its next step, and a synchronous commit it is in waits
# for its answer up to librdkafka's socket.timeout.ms (60 s): while the coordinator holds the
# member's JoinGroup in a join phase, it answers nothing else on that connection. A 1,000-member
# run had a crash wait 57 s so. Gone by then, or its host is not answering.
CRASH_TIMEOUT_S = 75.0
FREEZE_TOXIC = "freeze"  # the toxic a modelled pause puts on each of the member's lane proxies


class MemberHost(Client):
    """One member host process: it runs the client handles of the members it hosts."""

    role, module = MEMBER_HOST_ROLE, HOST_MODULE
    # At its end the host closes its members in parallel and waits for them up to its own stop
    # timeout: fifty closes at once, beside a thousand others, took more than a process's 20 s.
    stop_timeout_s = HOST_STOP_TIMEOUT_S + 10.0
    STACKS_WRITTEN_S = 1.0  # faulthandler writes them at once, from its signal handler

    def wait_stopped(self, deadline: float) -> None:
        """As a process's, but a host still there at ``deadline`` first writes every thread's
        stack to its log: what its close hung in, for the close-hang the oracle will name."""
        if self.process is not None and self.running():
            try:
                self.process.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                if self._ready_pid == self.pid:  # before, the signal's default action would kill it
                    os.kill(self.process.pid, STACKS_SIGNAL)
                    time.sleep(self.STACKS_WRITTEN_S)
        super().wait_stopped(deadline)

    def __init__(self, name: str, supervisor: Supervisor, run_dir: Path, workload):
        super().__init__(name, supervisor, run_dir)
        self.workload = workload
        self.commands_dir = run_dir / "control" / name
        self.status_file = run_dir / "control" / f"{name}.status.json"
        self.seq = 0
        self._ready_pid: int | None = None
        self._started_at = 0.0
        self._sending = threading.Lock()
        self._status: dict = {}
        self._status_stamp: tuple[int, int] | None = None

    @property
    def spec_file(self) -> Path:
        return self.run_dir / "workload" / f"{self.name}.json"

    def spec(self) -> HostSpec:
        w = self.workload.scenario.workload
        return HostSpec(
            host=self.name,
            history=self.workload.history,
            commands_dir=str(self.commands_dir),
            status_file=str(self.status_file),
            driver_module=w.generation.drivers[w.driver],
        )

    def start(self) -> None:
        # A host started again starts from no command: it would apply its predecessor's from the first.
        self.commands_dir.mkdir(parents=True, exist_ok=True)
        for old in self.commands_dir.glob("*.json"):
            old.unlink()
        self.status_file.unlink(missing_ok=True)
        self._ready_pid = None
        self._started_at = time.monotonic()
        super().start()

    def environment(self) -> dict | None:
        # Secret client settings reach the host's members through its environment, never a file.
        client = run_client(self.workload.scenario)
        return {
            **secrets.child_env(dict(self.workload.scenario.cluster.client_config)),
            **client_envs.member_environment(client),
        } or None

    def command(self) -> list[str]:
        client = run_client(self.workload.scenario)
        return [client_envs.member_python(client, self.workload.report), "-m", self.module, str(self.spec_file)]

    # --- talking to it -----------------------------------------------------------------

    def ensure_started(self) -> None:
        """Started on first use, and again if it exited after it was up; one that exited while
        starting is broken (ClusterError, with the end of its log)."""
        if self.process is not None and self._ready_pid != self.pid:
            self.check_alive()
        if not self.running():
            self.start()

    def status(self) -> dict:
        """What the host last said of itself and its members ({} before it said anything). Read
        again only when the file changed: a 1,000-member run asks after every member each tick."""
        try:
            st = self.status_file.stat()
            stamp = (st.st_ino, st.st_mtime_ns)  # rewritten by os.replace: a new file each time
            if stamp != self._status_stamp:
                self._status, self._status_stamp = json.loads(self.status_file.read_text()), stamp
        except (OSError, ValueError):
            return {}
        return self._status

    def _ready(self) -> bool:
        """Whether it has written a status: its signal handler is set then (SIGUSR1 before would
        kill it). A host not there within READY_TIMEOUT_S of its start is broken."""
        if self._ready_pid == self.pid:
            return True
        if self.status().get("pid") == self.pid:
            self._ready_pid = self.pid
            return True
        self.check_alive()
        if time.monotonic() - self._started_at > READY_TIMEOUT_S:
            raise ClusterError(f"{self.name} wrote no status within {READY_TIMEOUT_S:g}s (log: {self.logs['stdout']})")
        return False

    def send(self, command: str, member: str, **fields) -> int:
        """Write the next numbered command and announce it; its sequence number. Never waits for a
        host still starting (interpreter, confluent-kafka: seconds on a loaded machine, and a
        1,000-member ramp starts one every few seconds): it applies every command in its
        directory as it starts, and looks again every POLL_S without a signal."""
        with self._sending:  # the run loop and the fault scheduler's thread both send
            self.ensure_started()
            self.seq += 1
            path = self.commands_dir / f"{self.seq:08d}.json"
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"seq": self.seq, "command": command, "member": member, **fields}))
            os.replace(tmp, path)  # the host never reads half a command
            if self._ready():
                os.kill(self.pid, signal.SIGUSR1)
            return self.seq

    def member_status(self, member: str) -> dict:
        return self.status().get("members", {}).get(member, {})

    def applied(self, seq: int) -> bool:
        return self._ready() and self.status().get("applied", 0) >= seq


class HostedMember(Member):
    """A member slot whose incarnations are client handles in a member host (the module's docstring)."""

    def __init__(self, name: str, supervisor: Supervisor, run_dir: Path, workload, subscription=None):
        super().__init__(name, supervisor, run_dir, workload, subscription)
        self.host: MemberHost = workload.member_host(workload.host_of(name))  # or a RemoteHost (remote_hosts.py)
        self._last_seq = 0  # the last command it was sent
        self._frozen = False

    # --- what a service is --------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self.host.pid

    def start(self) -> None:
        self.incarnation += 1
        self.write_spec()
        self._frozen = False
        self._last_command = "start"
        self._last_seq = self.host.send("start", self.name, spec_file=str(self.spec_file))

    def _state(self) -> str:
        """running, frozen or gone, as the host says; until it has applied the last command, running
        (a start pending is as good as started, a stop or crash pending has not happened yet)."""
        if not self.host.running():
            return "gone"
        if not self.host.applied(self._last_seq):
            return "running"
        said = self.host.member_status(self.name)
        return said.get("state", "gone") if said.get("incarnation") == self.incarnation else "gone"

    def running(self) -> bool:
        return self.incarnation > 0 and self._state() != "gone"

    def paused(self) -> bool:
        return self._frozen and self.running()

    def pause(self) -> dict:
        # The lane first: nothing it sends from now on gets out, then its poll loop stops.
        toxiproxy, proxies = self.workload.cluster.toxiproxy, self._lane_proxies()
        for proxy in proxies:
            for kind, stream, attributes in network.toxics_for("blackhole", {"direction": "both"}):
                toxiproxy.add_toxic(proxy, f"{FREEZE_TOXIC}-{stream}", kind, stream, **attributes)
        self._send("freeze")
        self._frozen = True
        return {
            "modelled": "hosted in " + self.host.name + ": its poll loop frozen, its lane cut both ways",
            "proxies": proxies,
        }

    def resume(self) -> None:
        self._send("thaw")
        toxiproxy = self.workload.cluster.toxiproxy
        for proxy in self._lane_proxies():
            for _, stream, _ in network.toxics_for("blackhole", {"direction": "both"}):
                toxiproxy.remove_toxic(proxy, f"{FREEZE_TOXIC}-{stream}")
        self._frozen = False

    def _lane_proxies(self) -> list[str]:
        plan, net = self.workload.scenario.lane_plan, self.workload.cluster.network
        if not plan.has_own_lane(self.name):
            raise ClusterError(f"{self.name} shares a crowd lane: a pause of it would cut its lane-mates too")
        return net.lane_proxies(plan.lane_of(self.name))

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if not self.running():
            return
        if sig != signal.SIGKILL:
            command, timeout = "stop", STOP_TIMEOUT_S
        else:  # one already in its close (a leaver not gone) leaves only when the close returns
            command, timeout = "crash", self._close_bound_s() if self._last_command == "stop" else CRASH_TIMEOUT_S
        self._send(command)
        self.wait_stopped(time.monotonic() + timeout)

    def terminate(self) -> None:
        if self.running():
            self._send("stop")

    def wait_stopped(self, deadline: float) -> None:
        while self.running():
            if time.monotonic() > deadline:
                if self._last_command != "crash":  # its close hangs: destroyed, as a killed process would be
                    self._send("crash")
                    # A thread cannot be killed: inside its close, it leaves only when the close returns.
                    deadline = time.monotonic() + self._close_bound_s()
                    continue
                raise ClusterError(f"{self.name} did not go within its host {self.host.name}'s stop timeout")
            time.sleep(0.05)

    def _close_bound_s(self) -> float:
        """How long a close may take: its LeaveGroup waits behind its JoinGroup (a broker reads one
        request at a time from a connection), which the coordinator answers when the join phase
        ends, within the rebalance timeout (max.poll.interval.ms), then its own socket timeout.
        A 1,000-member classic-cooperative group's join phases lasted its leader's assignment."""
        w = self.workload.scenario.workload
        return (self.changes.max_poll_interval_ms or w.max_poll_interval_ms) / 1000 + CRASH_TIMEOUT_S

    def tell(self, command: dict) -> None:
        tmp = self.control_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(command))
        os.replace(tmp, self.control_file)
        self._send("tell")

    def _send(self, command: str) -> None:
        self._last_command = command
        self._last_seq = self.host.send(command, self.name)

    _last_command = "start"
