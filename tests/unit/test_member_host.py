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

from oracle.protocols import GENERATIONS
from tests.unit.test_client_log import REPO, mock_cluster  # noqa: F401 - the fixture
from workloads.consumer import LibrdkafkaSettings
from workloads.driver import MemberSpec, protocol_fields
from workloads.member_host import HostSpec


class Host:
    def __init__(self, tmp_path: Path, bootstrap: str):
        self.tmp, self.bootstrap, self.seq = tmp_path, bootstrap, 0
        self.history = tmp_path / "history.jsonl"
        spec = HostSpec(
            "member-host-1",
            str(self.history),
            str(tmp_path / "commands"),
            str(tmp_path / "status.json"),
            "workloads.consumer",
        )
        (tmp_path / "commands").mkdir()
        (tmp_path / "host.json").write_text(json.dumps(asdict(spec)))
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
        raise AssertionError(f"no {what} within {timeout}s: {self.status()}")

    def send(self, command: str, member: str, **fields) -> None:
        self.seq += 1
        path = self.tmp / "commands" / f"{self.seq:08d}.json"
        path.write_text(json.dumps({"seq": self.seq, "command": command, "member": member, **fields}))
        os.kill(self.proc.pid, signal.SIGUSR1)

    def start(self, member: str, incarnation: int = 1) -> None:
        spec = MemberSpec(
            member=member,
            incarnation=incarnation,
            history=str(self.history),
            bootstrap_servers=self.bootstrap,
            group=f"g-{self.tmp.name}",
            topics=["events"],
            **protocol_fields(GENERATIONS["classic-eager"]),
            assignor="range",
            commit="sync",
            processing_ms=0,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            max_poll_interval_ms=30000,
            settings=LibrdkafkaSettings(),
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


@pytest.fixture
def host(tmp_path, mock_cluster):  # noqa: F811 - the fixture imported above
    h = Host(tmp_path, mock_cluster[0])
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


def test_a_frozen_member_stops_polling_until_thawed(host):
    host.start("consumer-1")
    host.wait(lambda _s: consuming(host, "consumer-1"), "an assignment", timeout=30)
    host.send("freeze", "consumer-1")
    host.wait(lambda s: s["members"]["consumer-1"]["state"] == "frozen", "the freeze")
    time.sleep(0.3)  # a poll in flight when frozen returns within its timeout (0.2 s)
    before = len(host.events("records_consumed")) + len(host.events("offsets_committed"))
    time.sleep(1.0)
    assert len(host.events("records_consumed")) + len(host.events("offsets_committed")) == before
    host.send("thaw", "consumer-1")
    host.wait(lambda s: s["members"]["consumer-1"]["state"] == "running", "the thaw")
    assert host.stop() == 0
