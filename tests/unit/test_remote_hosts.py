"""Member hosts on Locust's workers as the harness sees them (harness/run/remote_hosts.py), and how a
worker starts its host (workloads/load/member_hosts.py): a fake host over a real link."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.run.remote_hosts import LOST, RemoteHost, serve_hosts
from oracle import vocabulary as ev
from runtime.history import HistoryWriter
from runtime.host_link import HostLink, HostLinkServer
from workloads.load import member_hosts

ROOT = Path(__file__).resolve().parents[2]
# A new interpreter importing the project (and confluent-kafka) on a loaded machine: a limit, not an anchor.
START_LIMIT_S = 60


class FakeWorkload:
    """What a RemoteHost asks of WorkloadProcesses."""

    def __init__(self, tmp_path: Path):
        self.services: dict = {}
        self.reports: list[str] = []
        self.report = self.reports.append
        self.load = SimpleNamespace(logs={"stdout": tmp_path / "logs" / "load-worker-1.stdout"})
        self.history = HistoryWriter(tmp_path / "history.jsonl", "harness")
        self.tmp_path = tmp_path

    def member_host(self, name: str) -> RemoteHost:
        if name not in self.services:
            self.services[name] = RemoteHost(name, self, self.history)
        return self.services[name]

    def member(self, name: str):
        self.services[name] = SimpleNamespace(control_file=self.tmp_path / f"{name}.control.json")
        return self.services[name]


@pytest.fixture
def workload(tmp_path):
    w = FakeWorkload(tmp_path)
    w.link = serve_hosts(w, w.history, 0)
    yield w
    w.link.close(timeout=2)


def events(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]


def test_commands_carry_what_the_host_has_no_file_for_and_its_status_comes_back(workload, tmp_path):
    got = []
    both = threading.Event()

    def received(command: dict) -> None:  # the link's reader thread: both commands are in when it fires
        got.append(command)
        if len(got) == 2:
            both.set()

    link = HostLink(("127.0.0.1", workload.link.port), "member-host-w2", on_command=received, on_close=lambda _r: None)
    link.connect()
    host = workload.member_host("member-host-w2")
    host.ensure_started()
    spec = {"member": "consumer-2", "incarnation": 1, "history": "/the/harness/history.jsonl"}
    (tmp_path / "consumer-2-1.json").write_text(json.dumps(spec))
    workload.member("consumer-2").control_file.write_text(json.dumps({"command": "poll-stall", "duration_s": 3}))
    assert host.send("start", "consumer-2", spec_file=str(tmp_path / "consumer-2-1.json")) == 1
    assert host.send("tell", "consumer-2") == 2
    link.status({"pid": os.getpid(), "applied": 2, "members": {"consumer-2": {"incarnation": 1, "state": "running"}}})
    assert host.connection.wait_status(lambda s: s.get("applied") == 2, timeout=5)
    assert both.wait(timeout=5), got
    assert got == [
        {"seq": 1, "command": "start", "member": "consumer-2", "spec": {**spec, "history": "", "control_file": ""}},
        {"seq": 2, "command": "tell", "member": "consumer-2", "control": {"command": "poll-stall", "duration_s": 3}},
    ]
    assert host.applied(2) and host.member_status("consumer-2")["state"] == "running"
    assert host.running() and host.pid == os.getpid()
    started = [e for e in events(tmp_path) if e["name"] == ev.PROCESS_STARTED]
    assert started == [
        {**started[0], "process": "member-host-w2", "role": "member-host", "pid": os.getpid(), ev.SOURCE: "harness"}
    ]


@pytest.mark.parametrize(("says_bye", "returncode"), [(True, 0), (False, LOST)])
def test_its_end_is_a_process_exited_after_its_last_events(workload, tmp_path, says_bye, returncode):
    link = None

    def on_close(_reason):
        link.writer("consumer-1", member="consumer-1", incarnation=1).emit(ev.CONSUMER_STOPPED, reason="shutdown")
        if says_bye:
            link.bye()
        else:
            link._line.close()

    link = HostLink(("127.0.0.1", workload.link.port), "member-host-w1", on_command=lambda _c: None, on_close=on_close)
    link.connect()
    host = workload.member_host("member-host-w1")
    host.start()
    host.terminate()
    host.wait_stopped(time.monotonic() + 5)
    assert not host.running()
    names = [(e["name"], e.get("returncode")) for e in events(tmp_path)]
    assert names[-2:] == [(ev.CONSUMER_STOPPED, None), (ev.PROCESS_EXITED, returncode)]


def test_a_host_that_never_connects_is_an_error_naming_its_worker(workload, monkeypatch):
    monkeypatch.setattr("harness.run.remote_hosts.READY_TIMEOUT_S", 0.05)
    with pytest.raises(Exception, match="member-host-w3 did not connect to the host link within 0.05s"):
        workload.member_host("member-host-w3").send("start", "consumer-3", spec_file="/nowhere")


WORKER = textwrap.dedent(
    """
    import sys, time
    from workloads.load import member_hosts
    member_hosts.host_command = lambda link, host, driver: [sys.executable, "-c", "import time; time.sleep(60)"]
    proc, workdir = member_hosts.start_member_host("127.0.0.1:1", "member-host-w1", "workloads.consumer")
    print(proc.pid, workdir, flush=True)
    time.sleep(60)
    """
)


def test_a_workers_member_host_dies_with_it_and_works_in_a_directory_of_its_own():
    worker = subprocess.Popen([sys.executable, "-c", WORKER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        pid, workdir = worker.stdout.readline().split()
        assert Path(f"/proc/{pid}/cwd").resolve() == Path(workdir).resolve()
        assert Path(workdir).name.startswith("rebalance-lab-member-host-w1-")
        worker.kill()  # SIGKILL: no handler of the worker's runs; the kernel tells its child
        worker.wait()
        deadline = time.monotonic() + 5
        while _alive(int(pid)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(int(pid))
        os.rmdir(workdir)
    finally:
        worker.kill()
        worker.wait()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie (no parent to reap it yet... init will) is dead


def test_members_go_to_the_workers_hosts_by_turns(tmp_path):
    """consumer-1 on the first worker's host, consumer-2 on the second's, …: any group has both."""
    from harness.run.clients import WorkloadProcesses
    from harness.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: t\nduration_s: 60\ntopics: [{name: events, partitions: 6}]\nworkload: {consumers: 3}\n"
        "load: {stages: [{kind: hold, for_s: 10}], workers: 2, member_hosts: on-workers}\n"
    )
    w = WorkloadProcesses(load_scenario(str(path)), tmp_path, cluster=None, supervisor=None)
    assert w.hosted and w.on_workers
    assert [w.host_of(f"consumer-{k}") for k in (1, 2, 3)] == ["member-host-w1", "member-host-w2", "member-host-w1"]
    assert member_hosts.host_command("127.0.0.1:7", "member-host-w1", "workloads.consumer")[1:] == [
        "-m",
        "workloads.member_host",
        "--link",
        "127.0.0.1:7",
        "--host",
        "member-host-w1",
        "--driver-module",
        "workloads.consumer",
    ]


@pytest.mark.parametrize("end", ["bye", "drop"])
def test_the_member_host_runs_over_a_link_and_ends_with_it(tmp_path, end):
    """workloads.member_host --link: its status comes over the link; the harness's bye (or the link
    dropping) ends it, exit 0, in the bye case after its own bye."""
    history = HistoryWriter(tmp_path / "history.jsonl", "harness")
    server = HostLinkServer(history, realign_every_s=3600)
    cmd = [sys.executable, "-m", "workloads.member_host", "--link", server.address, "--host", "member-host-w1"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        (host,) = server.wait_for_hosts(1, timeout=START_LIMIT_S)
        assert host.wait_status(lambda s: s.get("pid") == proc.pid, timeout=START_LIMIT_S)
        if end == "bye":
            assert server.close(timeout=START_LIMIT_S) == {"member-host-w1": True}
        else:
            host.line.close()
        assert proc.wait(timeout=START_LIMIT_S) == 0
        assert list(tmp_path.iterdir()) == [tmp_path / "history.jsonl"]  # its files were its own, and gone
    finally:
        proc.kill()
        proc.wait()
        server.close(timeout=1)


def test_a_bad_link_address_is_a_usage_error(tmp_path):
    cmd = [sys.executable, "-m", "workloads.member_host", "--link", "nowhere", "--host", "member-host-w1"]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=START_LIMIT_S)
    assert result.returncode == 2 and "--link: 'nowhere' is not HOST:PORT" in result.stderr


def test_a_link_nobody_listens_on_is_said_plainly():
    with socket.create_server(("127.0.0.1", 0)) as taken:  # a port that is ours, and not listening after
        port = taken.getsockname()[1]
    cmd = [sys.executable, "-m", "workloads.member_host", "--link", f"127.0.0.1:{port}", "--host", "member-host-w1"]
    result = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=START_LIMIT_S)
    assert result.returncode == 1
    assert f"member-host-w1: cannot reach the host link at 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
