"""workloads/verifiable.py: the wrapper's process plumbing, with a stand-in for the JVM.

The stand-in prints what VerifiableConsumer prints and answers SIGTERM the way its
shutdown hook does (revoke, shutdown_complete), so stopping, process groups and
refusals are tested without a cluster; tests/integration/test_driver_verifiable.py
runs the real tool.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from oracle.protocols import GENERATIONS
from workloads import verifiable
from workloads.driver import MemberSpec, protocol_fields

FAKE_JVM = r"""
import json, signal, sys, time
def shutdown(*_):
    print(json.dumps({"name": "partitions_revoked", "partitions": [{"topic": "events", "partition": 0}]}), flush=True)
    print(json.dumps({"name": "shutdown_complete"}), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, shutdown)
print('{"timestamp":1,"name":"startup_complete"}', flush=True)
print("@@rl INFO ConsumerCoordinator [Consumer clientId=consumer-1, groupId=g] Successfully joined group with "
      "generation Generation{generationId=7, memberId='consumer-1-abc', protocol='range'}", flush=True)
print('{"timestamp":2,"name":"partitions_assigned","partitions":[{"topic":"events","partition":0}]}', flush=True)
while True:
    time.sleep(0.05)
"""


@pytest.fixture
def spec(tmp_path) -> MemberSpec:
    return MemberSpec(
        member="consumer-1",
        incarnation=1,
        history=str(tmp_path / "history.jsonl"),
        bootstrap_servers="127.0.0.1:9",
        group="g",
        topics=["events"],
        **protocol_fields(GENERATIONS["classic-eager"]),
        assignor="range",
        commit="sync",
        processing_ms=2,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        max_poll_interval_ms=300000,
        control_file=str(tmp_path / "consumer-1.json"),
        settings=verifiable.JavaSettings(),
    )


@pytest.fixture
def fake_jvm(monkeypatch, tmp_path):
    monkeypatch.setattr(verifiable, "kafka_tools", lambda spec: str(tmp_path / "kafka-tools.jar"))  # a classpath
    monkeypatch.setattr(verifiable, "command", lambda spec, classpath, config_dir: [sys.executable, "-c", FAKE_JVM])


def history(spec: MemberSpec) -> list[dict]:
    return [json.loads(line) for line in Path(spec.history).read_text().splitlines()]


def wait_for(spec: MemberSpec, name: str, timeout: float = 10.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if Path(spec.history).exists():
            found = [e for e in history(spec) if e["name"] == name]
            if found:
                return found[0]
        time.sleep(0.02)
    raise AssertionError(f"no {name} in {spec.history}")


def test_stop_terminates_the_jvm_which_revokes_and_says_shutdown_complete(spec, fake_jvm, capsys):
    stop, result = threading.Event(), []
    member = verifiable.JavaMember(spec, stop)
    runner = threading.Thread(target=lambda: result.append(member.run()))
    runner.start()
    assigned = wait_for(spec, "partitions_assigned")
    started = wait_for(spec, "consumer_started")
    # The JVM shares the wrapper's process group: a pause fault's SIGSTOP of the group stops it too.
    assert os.getpgid(started["jvm_pid"]) == os.getpgid(0)
    assert (assigned["generation"], assigned["member_id"]) == (7, "consumer-1-abc")
    stop.set()  # what SIGTERM does (stop_on_signals)
    runner.join(15)
    assert result == [0]
    names = [e["name"] for e in history(spec)]
    assert names == [
        "consumer_started",
        "group_joined",
        "partitions_assigned",
        "partitions_revoked",
        "consumer_stopped",
    ]
    events = history(spec)
    assert all(e["driver"] == "java" and e["member"] == "consumer-1" and e["incarnation"] == 1 for e in events)
    assert events[0]["processing_ms_ignored"] == 2 and events[0]["pid"] == os.getpid()
    assert events[-1]["reason"] == "end-of-run"
    assert '"name":"startup_complete"' in capsys.readouterr().out  # the member's log keeps the tool's own lines


def test_a_jvm_that_dies_on_its_own_is_an_error(spec, monkeypatch, tmp_path):
    monkeypatch.setattr(verifiable, "kafka_tools", lambda spec: str(tmp_path / "kafka-tools.jar"))  # a classpath
    exits_at_once = 'print(\'{"name":"startup_complete"}\')'
    monkeypatch.setattr(verifiable, "command", lambda *_: [sys.executable, "-c", exits_at_once])
    assert verifiable.JavaMember(spec, threading.Event()).run() == 1
    assert history(spec)[-1]["name"] == "consumer_stopped" and history(spec)[-1]["reason"] == "error"


def test_what_the_tool_cannot_do_stops_the_member_at_once(spec):
    assert verifiable.JavaMember(replace(spec, commit="before-processing"), threading.Event()).run() == 2
    started, error, stopped = history(spec)
    assert started["name"] == "consumer_started" and started["jvm_pid"] is None
    assert error["name"] == "consumer_error" and error["error"] == "UNSUPPORTED" and error["fatal"]
    assert "before processing" in error["message"]
    assert stopped["reason"] == "error"


def test_tools_not_installed_stop_the_member_and_say_so(spec, tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path / "empty-home"))
    assert verifiable.JavaMember(spec, threading.Event()).run() == 2
    error = next(e for e in history(spec) if e["name"] == "consumer_error")
    assert error["error"] == "NOT_INSTALLED" and "Run `rebalance-lab setup`" in error["message"]


def test_a_poll_stall_command_is_refused_in_the_history(spec, fake_jvm):
    Path(spec.control_file).write_text(json.dumps({"command": "poll-stall", "fault_id": "f1", "duration_s": 5}))
    stop = threading.Event()
    member = verifiable.JavaMember(spec, stop)
    member.command_pending.set()  # what SIGUSR1 does
    runner = threading.Thread(target=member.run)
    runner.start()
    refused = wait_for(spec, "client_log")
    stop.set()
    runner.join(15)
    assert refused["level"] == "WARN" and "cannot stall" in refused["message"] and "poll-stall" in refused["message"]
    assert not [e for e in history(spec) if e["name"].startswith("poll_stall")]
