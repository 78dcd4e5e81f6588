"""harness/supervision/service.py: services start, pause, stop and start again, declare their logs, and stop
in the order their tiers say — with real short-lived processes, no cluster."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from faults.base import MemberChanges
from harness.cluster.backend import BACKENDS, backend_class
from harness.cluster.local import LocalCluster
from harness.run.clients import Member, Observer, Producer, WorkloadProcesses
from harness.run.member_hosts import HostedMember, MemberHost
from harness.supervision.processes import Supervisor, process_state
from harness.supervision.service import (
    LocalProcess,
    Service,
    StopTier,
    role_tiers,
    stop_in_order,
)
from runtime.errors import ClusterError

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


class Sleeper(LocalProcess):
    role, tier = "sleeper", StopTier.CLIENTS

    def __init__(self, name, supervisor, logs_dir, script="import time; time.sleep(30)"):
        super().__init__(name, supervisor, logs_dir)
        self.script = script

    def command(self):
        return [sys.executable, "-c", self.script]


def eventually(predicate, timeout=5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def supervisor(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path / "home"))
    sup = Supervisor(owner="test")
    yield sup
    sup.stop_all(timeout=5)


def test_a_service_pauses_resumes_dies_and_starts_again_as_a_new_process(supervisor, tmp_path):
    s = Sleeper("s", supervisor, tmp_path / "logs")
    s.start()
    first = s.pid
    s.pause()
    assert s.paused() and eventually(lambda: process_state(first) == "T")  # a signal is delivered, not sent
    s.resume()
    assert not s.paused() and eventually(lambda: process_state(first) in ("S", "R"))
    s.kill(signal.SIGKILL)
    assert not s.running()
    s.start()  # what a crash fault's heal does
    assert s.running() and s.pid != first
    assert s.logs == {"stdout": tmp_path / "logs" / "s.stdout"} and s.logs["stdout"].exists()


def test_a_service_that_died_while_starting_says_so_with_the_end_of_its_log(supervisor, tmp_path):
    s = Sleeper("broken", supervisor, tmp_path / "logs", script="import sys; print('bad config: x'); sys.exit(3)")
    s.start()
    deadline = time.monotonic() + 10
    while s.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(ClusterError, match=r"broken exited with code 3 while starting:\nbad config: x"):
        s.check_alive()


def test_stop_resumes_a_paused_service_before_asking_it_to_stop(supervisor, tmp_path):
    s = Sleeper("s", supervisor, tmp_path / "logs")
    s.start()
    s.pause()
    t0 = time.monotonic()
    s.stop(timeout=10)
    assert not s.running() and time.monotonic() - t0 < 5  # SIGTERM acted: not the SIGKILL after 10 s
    assert supervisor.get("s").popen.returncode == -signal.SIGTERM


class Recorded(Service):
    """A service that only records what it is asked, for the order of a teardown."""

    def __init__(self, name, tier, log, paused=False):
        super().__init__(name)
        self.tier, self.log, self._paused = tier, log, paused

    logs = {}

    def start(self):
        self.log.append(("start", self.name))

    def running(self):
        return True

    def paused(self):
        return self._paused

    def pause(self):
        self._paused = True

    def resume(self):
        self._paused = False
        self.log.append(("resume", self.name))

    def kill(self, sig=signal.SIGKILL):
        self.log.append(("kill", self.name))

    def terminate(self):
        self.log.append(("terminate", self.name))

    def wait_stopped(self, deadline):
        self.log.append(("gone", self.name))


def test_teardown_goes_tier_by_tier_each_tier_asked_at_once_paused_ones_resumed_first():
    log = []
    services = [
        Recorded("toxiproxy", StopTier.NETWORK, log),
        Recorded("broker-1", StopTier.BROKERS, log, paused=True),
        Recorded("zookeeper-1", StopTier.QUORUM, log),
        Recorded("consumer-1", StopTier.CLIENTS, log),
        Recorded("broker-2", StopTier.BROKERS, log),
        Recorded("consumer-2", StopTier.CLIENTS, log),
    ]
    stop_in_order(services)
    assert log == [
        ("resume", "broker-1"),
        ("terminate", "consumer-1"),
        ("terminate", "consumer-2"),
        ("gone", "consumer-1"),
        ("gone", "consumer-2"),
        ("terminate", "broker-1"),
        ("terminate", "broker-2"),
        ("gone", "broker-1"),
        ("gone", "broker-2"),
        ("terminate", "zookeeper-1"),
        ("gone", "zookeeper-1"),
        ("terminate", "toxiproxy"),
        ("gone", "toxiproxy"),
    ]


def test_a_tier_waits_as_long_as_its_slowest_service_may_take_to_stop():
    # A member host closes its members in parallel within its own timeout: longer than a process's.
    waited = []

    class Host(Recorded):
        stop_timeout_s = MemberHost.stop_timeout_s

    class Waiting(Recorded):
        def wait_stopped(self, deadline):
            waited.append(round(deadline - time.monotonic()))

    stop_in_order([Waiting("consumer-1", StopTier.CLIENTS, []), Host("member-host-1", StopTier.CLIENTS, [])])
    stop_in_order([Waiting("consumer-1", StopTier.CLIENTS, [])])
    assert waited == [MemberHost.stop_timeout_s, Service.stop_timeout_s] and MemberHost.stop_timeout_s > 60


def test_the_stop_order_by_role_comes_from_the_services():
    assert role_tiers(LocalCluster.service_kinds) == [
        ["coordinator"],
        ["broker"],
        ["zookeeper", "controller"],
        ["toxiproxy", "message-proxy"],
    ]
    assert role_tiers([*WorkloadProcesses.service_kinds, *LocalCluster.service_kinds])[0] == [
        "producer",
        "consumer",
        "observer",
    ]
    assert {Producer.tier, Member.tier, Observer.tier} == {StopTier.CLIENTS}


def test_every_backend_declares_its_services_and_the_interface():
    from harness.cluster.backend import ClusterBackend

    wanted = {n for n in vars(ClusterBackend) if not n.startswith("_")} | set(ClusterBackend.__annotations__)
    for name in BACKENDS:
        cls = backend_class(name)
        assert cls.name == name
        assert all(isinstance(kind.role, str) and isinstance(kind.tier, StopTier) for kind in cls.service_kinds)
        instance_attributes = {"spec", "workdir", "services", "network", "kafka_admin"}
        missing = {n for n in wanted - instance_attributes if not hasattr(cls, n)}
        assert not missing, f"{name} lacks {missing}"


def test_fault_targets_resolve_to_services_of_the_cluster_or_the_workload():
    from types import SimpleNamespace

    from harness.run.targets import RunTargets

    log = []
    broker, member = Recorded("broker-1", StopTier.BROKERS, log), Recorded("consumer-1", StopTier.CLIENTS, log)
    cluster = SimpleNamespace(services={"broker-1": broker})
    workload = SimpleNamespace(services={"consumer-1": member}, scenario=SimpleNamespace(subscribes=None))
    targets = RunTargets(cluster, workload, observer=None, history=None)
    targets.pause("broker-1")
    targets.kill("consumer-1", signal.SIGTERM)
    targets.restart("consumer-1")
    assert log == [("kill", "consumer-1"), ("start", "consumer-1")] and broker.paused()
    assert targets.is_running("broker-1") and not targets.is_running("consumer-9")
    with pytest.raises(ClusterError, match=r"no service named 'consumer-9' in this run; known: broker-1, consumer-1"):
        targets.pause("consumer-9")
    with pytest.raises(ClusterError, match="broker-1 is not a member of the group"):
        targets.command("broker-1", {"command": "poll-stall"})


def test_overlapping_pauses_of_one_service_stop_it_for_their_union():
    from types import SimpleNamespace

    from harness.run.targets import RunTargets

    log = []
    member = Recorded("consumer-2", StopTier.CLIENTS, log)
    targets = RunTargets(
        SimpleNamespace(services={}),
        SimpleNamespace(services={"consumer-2": member}, scenario=SimpleNamespace(subscribes=None)),
        observer=None,
        history=None,
    )
    targets.pause("consumer-2")  # f1: a long pause
    targets.pause("consumer-2")  # f2: a short one inside it
    targets.resume("consumer-2")  # f2 heals: f1 still holds it
    assert member.paused()
    targets.resume("consumer-2")  # f1 heals
    assert not member.paused()
    targets.pause("consumer-2")  # and a later pause stops it again
    assert member.paused()


def test_a_pause_of_a_process_started_again_meanwhile_stops_it():
    from types import SimpleNamespace

    from harness.run.targets import RunTargets

    member = Recorded("consumer-2", StopTier.CLIENTS, [])
    targets = RunTargets(
        SimpleNamespace(services={}),
        SimpleNamespace(services={"consumer-2": member}, scenario=SimpleNamespace(subscribes=None)),
        observer=None,
        history=None,
    )
    targets.pause("consumer-2")  # f1
    member.resume()  # a crash and restart: a new process, running
    targets.pause("consumer-2")  # f2 stops the new one
    assert member.paused()
    targets.resume("consumer-2")  # f1 heals: f2 still holds it
    assert member.paused()
    targets.resume("consumer-2")
    assert not member.paused()


class FakeHost(MemberHost):
    """A member host's process stood in by a script: what the harness does around it, no members."""

    def __init__(self, supervisor, run_dir: Path, script: str):
        super().__init__("member-host-1", supervisor, run_dir, workload=None)
        self.script = script

    def write_spec(self):
        pass

    def environment(self):
        return None

    def command(self):
        return [sys.executable, "-c", self.script.replace("STATUS", str(self.status_file))]


# Writes its status as a member host does once its signal handler is set, then waits.
UP = "import json, os, signal, time; signal.signal(signal.SIGUSR1, lambda *_: None); open('STATUS', 'w').write(json.dumps({'pid': os.getpid(), 'applied': 0})); time.sleep(30)"


def test_a_host_is_sent_commands_while_it_starts_and_one_that_dies_starting_is_an_error(supervisor, tmp_path):
    host = FakeHost(supervisor, tmp_path, "import sys, time; time.sleep(0.3); sys.exit(3)")
    assert host.send("start", "consumer-1") == 1  # written at once, unsignalled: it is not up yet
    assert sorted(p.name for p in host.commands_dir.iterdir()) == ["00000001.json"]
    assert not host.applied(1)
    assert eventually(lambda: not host.running())
    with pytest.raises(ClusterError, match="exited with code 3 while starting"):
        host.send("start", "consumer-2")


def test_a_host_started_again_does_not_replay_its_predecessor_s_commands(supervisor, tmp_path):
    host = FakeHost(supervisor, tmp_path, UP)
    host.send("start", "consumer-1")
    assert eventually(lambda: host.status().get("pid") == host.pid)
    first = host.pid
    host.send("freeze", "consumer-1")  # up now: signalled
    supervisor.kill(host.name, signal.SIGKILL)
    assert eventually(lambda: not host.running())
    assert host.send("start", "consumer-2") == 3 and host.pid != first
    assert sorted(p.name for p in host.commands_dir.iterdir()) == ["00000003.json"]


def test_a_hosted_stop_stuck_in_its_close_is_waited_for_to_its_bound(monkeypatch):
    """A hosted member whose close hangs is sent a crash, but its thread leaves only when the close
    returns: the harness waits up to the close's bound (the rebalance timeout plus a socket timeout),
    not just a crash's. Here the close ends 0.5 s after the crash, past a crash's 0.2 s."""
    import harness.run.member_hosts as hosts

    monkeypatch.setattr(hosts, "CRASH_TIMEOUT_S", 0.2)
    sent, gone_at = [], []

    class Stuck:
        _last_command = "stop"

        def _send(self, command):
            sent.append(command)
            self._last_command = command
            gone_at.append(time.monotonic() + 0.5)

        def running(self):
            return not gone_at or time.monotonic() < gone_at[0]

        def _close_bound_s(self):
            return 1.0

    HostedMember.wait_stopped(Stuck(), time.monotonic() + 0.1)
    assert sent == ["crash"]
    w = SimpleNamespace(max_poll_interval_ms=300_000)
    member = SimpleNamespace(workload=SimpleNamespace(scenario=SimpleNamespace(workload=w)), changes=MemberChanges())
    assert HostedMember._close_bound_s(member) == 300 + hosts.CRASH_TIMEOUT_S
    member.changes = MemberChanges(max_poll_interval_ms=9000)
    assert HostedMember._close_bound_s(member) == 9 + hosts.CRASH_TIMEOUT_S


def test_a_hosted_leaver_still_closing_is_crashed_with_the_close_s_bound():
    """A leaver not gone in time is killed (Workload.reap_leavers): it is inside its close, so the
    crash waits as long as the close may take; a crash out of the blue waits a crash's time."""
    import harness.run.member_hosts as hosts

    waited = []

    class Member:
        def __init__(self, last):
            self._last_command = last

        def running(self):
            return True

        def _send(self, command):
            self._last_command = command

        def _close_bound_s(self):
            return 375.0

        def wait_stopped(self, deadline):
            waited.append(round(deadline - time.monotonic()))

    HostedMember.kill(Member("stop"), signal.SIGKILL)
    HostedMember.kill(Member("start"), signal.SIGKILL)
    HostedMember.kill(Member("start"), signal.SIGTERM)
    assert waited == [375, hosts.CRASH_TIMEOUT_S, hosts.STOP_TIMEOUT_S]
