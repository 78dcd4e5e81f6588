"""Fixtures for tests against real ZooKeeper, Kafka brokers and Toxiproxy.

These need `rebalance-lab setup` to have run (the README's test command does it).
Missing components are an error, not a skip: a suite that silently skips its
real-cluster tests proves nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from harness.cluster.shared import ClusterPool
from harness.components.install import (
    default_kafka_releases,
    installed_for,
    jolokia_agent,
    kafka_dist,
    kafka_tools,
    toxiproxy_binary,
)
from harness.pytest_plugin import SESSION_LANES
from harness.run.loop import Run
from harness.scenario import load_scenario
from harness.supervision.processes import proc_start_time, process_state, registered
from oracle import load_history
from runtime.errors import SetupError
from tests.conftest import signals_at_default

REPO = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def components_installed():
    try:
        for line in default_kafka_releases():
            kafka_dist(line), kafka_tools(line)
        toxiproxy_binary()
        jolokia_agent()
    except SetupError as e:
        pytest.fail(f"real components missing: {e}", pytrace=False)


@dataclass
class RunOutcome:
    exit_code: int
    output: str
    run_dir: Path | None

    @property
    def verdict(self) -> dict:
        return json.loads((self.run_dir / "verdict.json").read_text())

    @property
    def events(self) -> list[dict]:
        return load_history(self.run_dir / "history.jsonl")

    def named(self, name: str) -> list[dict]:
        return [e for e in self.events if e["name"] == name]

    def fired_by(self, fault: dict) -> dict:
        """The event that fired an `on:` fault: the one with every field its copy in `trigger` has
        (source and seq alone are not enough: a restarted member or coordinator counts from 1 again)."""
        trigger = fault["trigger"]
        [event] = [e for e in self.events if all(e.get(k) == v for k, v in trigger.items())]
        return event

    def topic(self, name: str) -> str:
        """The scenario's topic as the run named it: with the run's id in front on a shared cluster
        (Scenario.isolated), as written on a cluster of its own."""
        prefix = f"rl-{self.run_dir.name}-"
        [started] = self.named("run_started")
        return prefix + name if started["group"].startswith(prefix) else name

    def started_after(self, process: str, event: dict) -> list[dict]:
        """`process_started` of that process after the event (a fault): its restarts. A shared
        cluster's first start is before the run, in the pool's hands, so it is not counted."""
        return [e for e in self.named("process_started") if e["process"] == process and e["mono_ms"] > event["mono_ms"]]

    def before_recovery(self, name: str) -> list[dict]:
        """Events of that name before the recovery phase — not the teardown's leaves and rejoins."""
        events = self.events
        recovery = next(
            (e["mono_ms"] for e in events if e["name"] == "phase" and e["phase"] == "recovery"), float("inf")
        )
        return [e for e in events if e["name"] == name and e["mono_ms"] < recovery]


def lab(*args: str, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


# The suite's own scenarios let a record wait 50 ms for others of its partition (librdkafka's default
# is 5): the brokers do less per record — one smoke run took 58 CPU-seconds against 76 — and the
# suite is bound by CPU (tests/conftest.py). A scenario that says its own linger_ms keeps it.
SUITE_LINGER_MS = 50


# The timing the fault modules run members with and read their histories by (test_message_faults.py,
# test_network_one_way.py): a short session, so an eviction comes soon.
SESSION_MS = 6000
HEARTBEAT_INTERVAL_MS = 1000
# Two members committing each batch at once, under a light producer, evicted SESSION_MS after they fall silent.
FAULTED_WORKLOAD = {
    "consumers": 2,
    "commit": "sync",
    "processing_ms": 1,
    "session_timeout_ms": SESSION_MS,
    "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
    "producer": {"rate": 100},
}
# A broker's log lines are stamped to the millisecond and turned into mono_ms with an offset
# measured at each read of the log (docs/history.md, clock domains).
BROKER_CLOCK_MS = 50
# librdkafka stamps its log lines to the millisecond (clock: client), and the proxy stamps its
# event once it decided: a member's reaction to an answer can carry a stamp up to 1 ms before it.
CLIENT_CLOCK_MS = 1


def write_scenario(path: Path, scenario: dict) -> Path:
    workload = scenario.get("workload")
    if isinstance(workload, dict):
        producer = workload.get("producer") or {}
        scenario = {**scenario, "workload": {**workload, "producer": {"linger_ms": SUITE_LINGER_MS, **producer}}}
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return path


def only_run_dir(runs: Path) -> Path | None:
    dirs = [d for d in runs.iterdir() if d.is_dir() and not d.is_symlink()] if runs.exists() else []  # not runs/latest
    assert len(dirs) <= 1, dirs
    return dirs[0] if dirs else None


@pytest.fixture(scope="session")
def shared_clusters(tmp_path_factory):
    """This worker's clusters, lent to one run after another (harness.cluster.shared): each run
    gets its own topics and group; a cluster a run left unhealthy is replaced. Runs that cannot
    share (the project's coordinator, topic faults) start their own."""
    workdir = tmp_path_factory.mktemp("shared-clusters")
    pool = ClusterPool(workdir, f"pytest:{workdir}", lanes=SESSION_LANES)
    yield pool
    pool.close()


def run_in_process(path: Path, runs: Path, pool: ClusterPool | None) -> RunOutcome:
    """`rebalance-lab run` without its process: what the scenario needs installed first (a Kafka
    release beyond setup's defaults comes on first use), the same Run, its messages and summary as output."""
    lines: list[str] = []
    scenario = load_scenario(path)
    installed_for(scenario, report=lines.append)
    result = Run(scenario, path, runs, lines.append, pool=pool).execute()
    summary = result.run_dir / "summary.md"
    output = "\n".join([*lines, summary.read_text() if summary.exists() else f"no verdict: {result.error}"])
    return RunOutcome(result.exit_code, output, result.run_dir)


@pytest.fixture
def run_scenario(tmp_path, shared_clusters):
    """Run a scenario (a dict or a path) as `rebalance-lab run` does, on a shared cluster where it can."""

    def run(scenario: dict | Path, timeout: float = 600) -> RunOutcome:
        path = scenario if isinstance(scenario, Path) else write_scenario(tmp_path / "scenario.yaml", scenario)
        return run_in_process(path, tmp_path / "runs", shared_clusters)

    return run


def start_harness(scenario_path: Path, runs: Path) -> subprocess.Popen:
    """The harness in its own session, so a test can signal it like a terminal would."""
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", str(scenario_path), "--runs-dir", str(runs)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=signals_at_default,
    )


def wait_for_event(history: Path, predicate, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if history.exists():
            for line in history.read_text().splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if predicate(event):
                    return event
        time.sleep(0.3)
    raise AssertionError(f"no matching event in {history} within {timeout}s")


def processes_of(run_dir: Path) -> list:
    """Registered processes of one run that are still alive."""
    return [p for p in registered() if p.owner == f"run:{run_dir}"]


def alive_pids(events: list[dict]) -> list[tuple[str, int, str]]:
    """(name, pid, /proc state) of every process a history says was started and that still exists
    — but a shared cluster's (a broker restarted during the run): those are the pool's, kept by design."""
    pooled = {p.pid for p in registered() if p.owner.startswith("pytest:")}
    suspended_ms = (time.clock_gettime(time.CLOCK_BOOTTIME) - time.monotonic()) * 1000
    out = []
    for e in events:
        if e["name"] == "process_started" and e["pid"] not in pooled:
            state, started_ticks = process_state(e["pid"]), proc_start_time(e["pid"])
            if state is None or started_ticks is None:
                continue
            # pids wrap (32768 here, every few minutes in this suite): one that started after the
            # event is another process (/proc's start time counts on CLOCK_BOOTTIME: suspends too)
            if started_ticks * 1000 / os.sysconf("SC_CLK_TCK") - suspended_ms > e["mono_ms"] + 1000:
                continue
            if state != "Z":  # a zombie is dead; only its parent's wait() is missing
                out.append((e["process"], e["pid"], state))
    return out


def small_scenario(name: str, **overrides) -> dict:
    """One broker, one topic, two consumers: the quickest real group to reason about."""
    scenario = {
        "name": name,
        "seed": 7,
        "duration_s": 30,
        "cluster": {"kafka": "3.9", "brokers": 1},
        "topics": [{"name": "events", "partitions": 4}],
        "workload": {
            "group": name,
            "protocol": "classic-eager",
            "assignor": "range",
            "consumers": 2,
            "commit": "sync",
            "processing_ms": 1,
            "session_timeout_ms": 6000,
            "heartbeat_interval_ms": 1000,
            "producer": {"rate": 100},
        },
        "faults": [],
        "recovery": {"timeout_s": 60, "stable_for_s": 2},
    }
    scenario.update(overrides)
    return scenario


def interrupt(proc: subprocess.Popen, sig: int = signal.SIGINT) -> None:
    os.kill(proc.pid, sig)


def assert_healed(run: RunOutcome) -> None:
    """After any run: no proxy kept a toxic or stayed disabled, no process stayed stopped,
    and nothing the run started is still alive."""
    [check] = run.named("heal_checked")
    assert check["stopped_processes"] == [], check
    assert check["proxies"] > 0 and check["proxies_with_toxics"] == [] and check["proxies_disabled"] == [], check
    assert alive_pids(run.events) == []


def assert_observer_ran_throughout(run: RunOutcome) -> None:
    """The observer sampled the whole run in one process: it never died and was started again
    (it used to segfault on the admin API's NOT_COORDINATOR, first thing on a fresh cluster)."""
    lives = [(e["name"], e.get("returncode")) for e in run.events if e.get("process") == "observer"]
    assert lives == [("process_started", None), ("process_exited", 0)], lives


@pytest.fixture(scope="module")
def module_run(tmp_path_factory, shared_clusters):
    """Run a scenario once for a whole test module (several assertions on one real run)."""
    cache: dict[str, RunOutcome] = {}

    def run(name: str, scenario: dict) -> RunOutcome:
        if name not in cache:
            tmp = tmp_path_factory.mktemp(name)
            outcome = run_in_process(write_scenario(tmp / f"{name}.yaml", scenario), tmp / "runs", shared_clusters)
            assert outcome.run_dir and (outcome.run_dir / "verdict.json").exists(), outcome.output[-3000:]
            cache[name] = outcome
        return cache[name]

    return run
