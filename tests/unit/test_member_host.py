"""workloads/member_host.py as the harness runs it (numbered command files, SIGUSR1, a status file),
its members on librdkafka's mock cluster: each member its own handle and history, a crash
destroys one handle unclosed, a stop closes one, a freeze stops one poll loop, SIGTERM stops all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from runtime.child import POLL_STALL
from tests.unit.test_client_log import REPO, mock_member_spec
from workloads.consumer import HOSTED_CONFIG, client_config
from workloads.member_host import STACKS_SIGNAL, HostSpec


class Host:
    def __init__(self, tmp_path: Path, bootstrap: str, before_start=lambda host: None):
        self.tmp, self.bootstrap, self.seq = tmp_path, bootstrap, 0
        self.history = tmp_path / "history.jsonl"
        self.proc = None
        spec = HostSpec(
            "member-host-1",
            str(self.history),
            str(tmp_path / "commands"),
            str(tmp_path / "status.json"),
            "workloads.consumer",
        )
        (tmp_path / "commands").mkdir()
        (tmp_path / "host.json").write_text(json.dumps(asdict(spec)))
        before_start(self)  # commands written while it starts: it is not signalled then
        self.log = open(tmp_path / "host.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "workloads.member_host", str(tmp_path / "host.json")],
            cwd=REPO,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.wait(lambda s: s.get("pid") == self.proc.pid, "its first status")

    def status(self) -> dict:
        try:
            return json.loads((self.tmp / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def wait(self, done, what: str, timeout: float = 20) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if done(status := self.status()):
                return status
            assert self.proc.poll() is None, (self.tmp / "host.log").read_text()[-2000:]
            time.sleep(0.05)
        group = [  # what the group last did, to tell a slow mock rebalance from a stuck member
            (e["member"], e["name"], e.get("generation"))
            for e in (lines(self) if self.history.exists() else [])
            if e["name"] not in ("records_consumed", "offsets_committed")
        ][-20:]
        raise AssertionError(f"no {what} within {timeout}s: {self.status()}; the history's last events: {group}")

    def send(self, command: str, member: str, **fields) -> None:
        self.seq += 1
        path = self.tmp / "commands" / f"{self.seq:08d}.json"
        tmp = path.with_suffix(".tmp")  # as the harness does: the host also looks without a signal
        tmp.write_text(json.dumps({"seq": self.seq, "command": command, "member": member, **fields}))
        os.replace(tmp, path)
        if self.proc is not None:
            self.proc.send_signal(signal.SIGUSR1)  # not once it is reaped: its pid may be another's

    def start(self, member: str, incarnation: int = 1, **overrides) -> None:
        spec = mock_member_spec(
            self.history, self.bootstrap, f"g-{self.tmp.name}", member=member, incarnation=incarnation, **overrides
        )
        path = self.tmp / f"{member}-{incarnation}.json"
        path.write_text(json.dumps(asdict(spec)))
        self.send("start", member, spec_file=str(path))

    def events(self, name: str) -> list[dict]:
        lines = self.history.read_text().splitlines() if self.history.exists() else []
        return [e for line in lines if (e := json.loads(line))["name"] == name]

    def state(self, member: str) -> str | None:
        return self.status().get("members", {}).get(member, {}).get("state")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        finally:
            self.log.close()


# librdkafka's mock cluster, in a process of its own: handles destroyed unclosed (a crash) end
# their connections abruptly, and should the mock broker abort on that, it must not take the
# test's process (a pytest worker) with it.
MOCK_CLUSTER = """
import re, sys
from confluent_kafka import Producer
found = []
producer = Producer({"test.mock.num.brokers": 1, "bootstrap.servers": "unused:1", "debug": "mock"},
                    logger=type("L", (), {"log": lambda self, level, fmt, *a: found.append(fmt % a if a else fmt)})())
producer.poll(0.1)
for i in range(40):
    producer.produce("events", value=b"x", partition=i % 4)
assert producer.flush(10) == 0
print(next(m[1] for line in found if (m := re.search(r"replaced with (\\S+)", line))), flush=True)
sys.stdin.read()  # until the test closes it
"""


@pytest.fixture(scope="module")
def mock_cluster():
    proc = subprocess.Popen(
        [sys.executable, "-c", MOCK_CLUSTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        bootstrap = proc.stdout.readline().strip()
        assert bootstrap, "the mock cluster printed no bootstrap address"
        yield bootstrap
    finally:
        proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def host(tmp_path, mock_cluster):
    h = Host(tmp_path, mock_cluster)
    yield h
    if h.proc.poll() is None:
        h.proc.kill()
        h.proc.wait()
    h.log.close()


def consuming(host: Host, member: str) -> bool:
    return any(e["member"] == member for e in host.events("partitions_assigned") if e["partitions"])


def test_each_member_is_its_own_handle_and_a_crash_destroys_only_its_own(host):
    for member in ("consumer-1", "consumer-2", "consumer-3"):
        host.start(member)
    host.wait(lambda s: len(s.get("members", {})) == 3, "three members")
    started = {e["member"]: e for e in host.events("consumer_started")}
    assert sorted(started) == ["consumer-1", "consumer-2", "consumer-3"]
    assert {e["host"] for e in started.values()} == {"member-host-1"}
    assert {e["pid"] for e in started.values()} == {host.proc.pid}
    host.wait(lambda _s: all(consuming(host, f"consumer-{k}") for k in (1, 2, 3)), "three assignments", 30)
    assert len({e["member_id"] for e in host.events("group_joined")}) == 3  # three members of one group

    host.send("crash", "consumer-2")
    host.wait(lambda s: s["members"]["consumer-2"] == {"incarnation": 1, "state": "gone", "how": "crash"}, "the crash")
    [destroyed] = host.events("client_destroyed")
    assert destroyed["member"] == "consumer-2"
    assert not [e for e in host.events("consumer_stopped") if e["member"] == "consumer-2"]  # no close
    assert [host.state(m) for m in ("consumer-1", "consumer-3")] == ["running", "running"]

    host.start("consumer-2", incarnation=2)  # its next incarnation, in the same host
    host.wait(lambda s: s["members"]["consumer-2"]["incarnation"] == 2, "the restart")
    host.send("stop", "consumer-1")
    host.wait(lambda s: s["members"]["consumer-1"]["state"] == "gone", "the clean stop")
    assert [e["reason"] for e in host.events("consumer_stopped")] == ["end-of-run"]

    assert host.stop() == 0  # SIGTERM: the others stop cleanly, the host exits
    stopped = sorted(e["member"] for e in host.events("consumer_stopped"))
    assert stopped == ["consumer-1", "consumer-2", "consumer-3"]
    assert {m["state"] for m in host.status()["members"].values()} == {"gone"}


def proc_cost(pid: int) -> tuple[int, int, int]:
    """Threads, open files, resident KiB of a process, from /proc."""
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    files = len(os.listdir(f"/proc/{pid}/fd"))
    return int(status["Threads"]), files, int(status["VmRSS"].split()[0])


def lines(host: Host) -> list[dict]:
    return [json.loads(line) for line in host.history.read_text().splitlines()]


def test_commands_written_before_it_started_are_applied_as_it_starts(tmp_path, mock_cluster):
    """The harness never waits for a starting host (harness/run/member_hosts.py, MemberHost.send):
    what it was sent meanwhile, unsignalled, it applies in order as it starts."""
    host = Host(
        tmp_path, mock_cluster, lambda h: (h.start("consumer-1"), h.start("consumer-2"), h.send("stop", "consumer-1"))
    )
    try:
        host.wait(lambda s: s.get("applied") == 3, "the three commands applied")
        host.wait(lambda _s: consuming(host, "consumer-2"), "consumer-2 consuming")
        assert [e["member"] for e in host.events("consumer_started")] == ["consumer-1", "consumer-2"]
        assert host.wait(lambda _s: host.state("consumer-1") == "gone", "consumer-1 stopped")
        assert [e["member"] for e in host.events("consumer_stopped")] == ["consumer-1"]
    finally:
        assert host.stop() == 0


def test_a_tell_a_freeze_and_a_crash_each_hit_one_member(host):
    """A poll stall told to one member; one frozen (its poll loop stops, librdkafka's own threads go
    on: they say it has not polled for max.poll.interval.ms and leave the group; thawed, its first
    poll hears so) while another crashes (its handle destroyed: its threads and files given back, the
    handle really gone, not merely forgotten; no LeaveGroup). The per-handle cost on the way."""
    bare = proc_cost(host.proc.pid)
    control = host.tmp / "consumer-2.control"
    for member in ("consumer-1", "consumer-2", "consumer-3", "consumer-4"):
        own = {"consumer-2": {"control_file": str(control)}, "consumer-4": {"max_poll_interval_ms": 6000}}
        host.start(member, **own.get(member, {}))
    host.wait(lambda _s: all(consuming(host, f"consumer-{k}") for k in (1, 2, 3, 4)), "four assignments", 30)
    threads, files, rss = proc_cost(host.proc.pid)
    per_handle = ((threads - bare[0]) / 4, (files - bare[1]) / 4, (rss - bare[2]) / 4)
    print(
        f"per handle, one mock broker: {per_handle[0]:.1f} threads, {per_handle[1]:.1f} files, {per_handle[2]:.0f} KiB"
    )
    # A handle: its poll thread, librdkafka's main and internal threads, a thread per broker it
    # knows (bootstrap, the broker by id, its group coordinator); no interpreter of its own.
    assert 3 <= per_handle[0] <= 8, per_handle
    assert per_handle[2] < 16 * 1024, per_handle

    control.write_text(json.dumps({"command": POLL_STALL, "fault_id": "stall-1", "duration_s": 0.5}))
    host.send("tell", "consumer-2")
    host.wait(lambda _s: host.events("poll_stall_ended"), "the stall's end")
    assert [(e["member"], e["fault_id"]) for e in host.events("poll_stall_started")] == [("consumer-2", "stall-1")]

    host.send("freeze", "consumer-4")
    host.send("crash", "consumer-3")
    host.wait(lambda s: s["members"]["consumer-3"]["state"] == "gone", "the crash")
    assert host.status()["members"]["consumer-3"]["how"] == "crash"
    [destroyed] = host.events("client_destroyed")
    assert destroyed["member"] == "consumer-3" and destroyed["incarnation"] == 1
    after = proc_cost(host.proc.pid)
    assert threads - after[0] >= per_handle[0] - 1, (threads, after)  # its librdkafka threads are gone

    # No LeaveGroup: the others take its partitions over once its session has lapsed, in a later generation.
    def owners() -> set[tuple[str, int, str]]:  # (member, partition, topic) assigned after the crash
        history = lines(host)
        later = history[next(i for i, e in enumerate(history) if e["name"] == "client_destroyed") :]
        return {
            (e["member"], p["partition"], p["topic"])
            for e in later
            if e["name"] == "partitions_assigned"
            for p in e["partitions"]
        }

    # The mock's timers (rdkafka_mock_cgrp.c): consumer-3 is removed within its session and the
    # mock's 1 s check, which opens a join window of the session less 1 s: about 12 s. A member
    # whose JoinGroup misses a window (a loaded machine) opens another of 5 s; 45 s allows several.
    takeover = {(k, "events") for k in range(4)}
    host.wait(lambda _s: {(k, t) for _m, k, t in owners()} >= takeover, "the take-over", 45)
    assert {m for m, _k, _t in owners()} <= {"consumer-1", "consumer-2", "consumer-4"}
    assert not [e for e in host.events("consumer_stopped") if e["member"] == "consumer-3"]

    def exceeded() -> int | None:  # where consumer-4's librdkafka says it was not polled
        return next(
            (
                i
                for i, e in enumerate(lines(host))
                if e["member"] == "consumer-4" and "maximum poll interval" in e.get("message", "")
            ),
            None,
        )

    host.wait(lambda _s: exceeded() is not None, "consumer-4's max.poll.interval.ms", timeout=20)
    assert host.state("consumer-4") == "frozen"
    assert [e["member"] for e in lines(host) if "maximum poll interval" in e.get("message", "")] == ["consumer-4"]
    host.send("thaw", "consumer-4")
    # Its first poll after the thaw is told what its librdkafka saw while it was frozen.
    host.wait(
        lambda _s: [e for e in host.events("consumer_error") if e["member"] == "consumer-4"],
        "consumer-4's poll after the thaw",
    )
    [polled] = host.events("consumer_error")
    assert (polled["member"], polled["error"]) == ("consumer-4", "_MAX_POLL_EXCEEDED")

    assert host.stop() == 0
    assert sorted(e["member"] for e in host.events("consumer_stopped")) == ["consumer-1", "consumer-2", "consumer-4"]


def test_a_hosted_member_has_small_buffers_unless_its_scenario_says_otherwise():
    spec = mock_member_spec(Path("h"), "b", "g", client_settings={"fetch.max.bytes": 8 * 1024 * 1024})
    alone, hosted = client_config(spec), client_config(spec, hosted=True)
    assert not (set(HOSTED_CONFIG) - {"fetch.max.bytes"}) & set(alone)  # a member process keeps librdkafka's defaults
    assert hosted == alone | HOSTED_CONFIG | {"fetch.max.bytes": 8 * 1024 * 1024}


def test_a_host_asked_for_its_stacks_writes_every_thread_s_to_its_log_and_goes_on(host):
    # What the harness asks of a host whose close hung, before it kills it (MemberHost.wait_stopped).
    host.start("consumer-1")
    host.wait(lambda s: s.get("members", {}).get("consumer-1", {}).get("state") == "running", "consumer-1 running")
    host.proc.send_signal(STACKS_SIGNAL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "in run" not in (host.tmp / "host.log").read_text(errors="replace"):
        time.sleep(0.05)
    log = (host.tmp / "host.log").read_text(errors="replace")
    assert log.count("Thread 0x") >= 2 and "member_host.py" in log, log[-2000:]  # the main loop and the member's
    assert host.proc.poll() is None and host.stop() == 0
