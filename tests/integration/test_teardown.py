"""Every process the harness starts, it stops: on a clean exit, on Ctrl-C, and —
through `rebalance-lab cleanup` — after the harness itself was SIGKILLed."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from harness.cluster import ClusterSpec, TopicSpec, local_cluster
from harness.paths import lab_home
from harness.supervision.processes import process_state, registered
from runtime.logs import QUIET_CLIENT_LOG
from tests.integration.conftest import (
    alive_pids,
    interrupt,
    lab,
    small_scenario,
    start_harness,
    wait_for_event,
    write_scenario,
)


def _pids_alive(pids):
    return [pid for pid in pids if process_state(pid) not in (None, "Z")]


@pytest.mark.parametrize("kafka,quorum", [("3.9", "zookeeper-1"), ("4.4", "controller-1")])
def test_cluster_up_is_ready_and_down_leaves_no_process(tmp_path, kafka, quorum):
    spec = ClusterSpec(kafka=kafka, brokers=3, topics=[TopicSpec("events", 6)])
    with local_cluster(spec, tmp_path / "cluster") as cluster:
        pids = [p.pid for p in cluster.supervisor.processes.values()]
        assert set(cluster.supervisor.processes) == {quorum, "broker-1", "broker-2", "broker-3", "toxiproxy"}
        # Asked for by name: a brand-new client's full-metadata request can be answered by its bootstrap
        # request for brokers only (seen once under load: brokers [1, 2, 3] and no topics; librdkafka #3543).
        md = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "logger": QUIET_CLIENT_LOG}).list_topics(
            "events", timeout=10
        )
        assert sorted(md.brokers) == [1, 2, 3]
        assert all(p.leader in (1, 2, 3) for p in md.topics["events"].partitions.values())
        assert all(port and 1024 < port < 65536 for port in cluster.broker_ports.values())
        assert len(_pids_alive(pids)) == 5
    assert _pids_alive(pids) == []
    assert not [p for p in registered() if p.owner == f"api:{tmp_path / 'cluster'}"]
    # The brokers' logs carry the GroupCoordinator's INFO lines (the coordinator clock).
    assert "GroupCoordinator" in (tmp_path / "cluster" / "logs" / "broker-1.log").read_text()


def test_cli_cluster_up_status_down(tmp_path):
    if (lab_home() / "cluster.json").exists():
        pytest.fail("a standalone cluster is already up; run `rebalance-lab cluster down` first", pytrace=False)
    # What an earlier `cluster up` of Kafka 4.4 left in the workdir: a ZooKeeper-mode broker refuses
    # to start on a KRaft node's meta.properties, so the next `cluster up` has to start from nothing.
    workdir = tmp_path / "c"
    (workdir / "data" / "broker-1").mkdir(parents=True)
    (workdir / "data" / "broker-1" / "meta.properties").write_text(
        "node.id=1\nversion=1\ncluster.id=wsler39HReCXbuDjoatPeQ\n"
    )
    (workdir / ".rebalance-lab-cluster").write_text("")
    up = lab("cluster", "up", "--brokers", "1", "--topic", "events:3", "--workdir", str(workdir))
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "bootstrap.servers=127.0.0.1:" in up.stdout
        state = json.loads((lab_home() / "cluster.json").read_text())
        status = lab("cluster", "status")
        assert status.returncode == 0 and "metadata: brokers [1]" in status.stdout and "events" in status.stdout
    finally:
        down = lab("cluster", "down")
    assert down.returncode == 0 and "stopped 3 processes" in down.stdout, down.stdout
    assert _pids_alive(state["processes"].values()) == []


def _pausing_scenario(tmp_path: Path) -> Path:
    # consumer-1 is stopped (SIGSTOP) for most of the run: the harness dies with it stopped.
    return write_scenario(
        tmp_path / "long-pause.yaml",
        small_scenario(
            "long-pause", duration_s=60, faults=[{"kind": "pause", "target": "consumer-1", "at_s": 3, "duration_s": 50}]
        ),
    )


def _harness_mid_pause(tmp_path: Path):
    """A harness whose run has consumer-1 stopped right now: (harness process, run dir)."""
    runs = tmp_path / "runs"
    harness = start_harness(_pausing_scenario(tmp_path), runs)
    try:
        deadline = time.monotonic() + 60
        while not (runs.exists() and any(runs.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.2)
        run_dir = next(d for d in runs.iterdir() if not d.is_symlink())  # not runs/latest
        wait_for_event(run_dir / "history.jsonl", lambda e: e["name"] == "fault_started")
    except BaseException:
        harness.kill()
        raise
    return harness, run_dir


def test_ctrl_c_during_run_heals_and_stops_everything(tmp_path):
    harness, run_dir = _harness_mid_pause(tmp_path)
    try:
        interrupt(harness, signal.SIGINT)
        output, _ = harness.communicate(timeout=120)
    finally:
        if harness.poll() is None:
            harness.kill()
    assert harness.returncode == 130, output[-2000:]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["state"] == "interrupted"
    assert not (run_dir / "verdict.json").exists()  # an interrupted run never looks complete
    events = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    assert alive_pids(events) == []
    healed = [e for e in events if e["name"] == "fault_healed"]
    assert healed and healed[0]["how"] == "end-of-run"
    assert any(e["name"] == "run_finished" and e["outcome"] == "interrupted" for e in events)

    # Judged again, an unfinished run is no pass: no-loss and convergence could not judge it.
    check = lab("check", str(run_dir))
    assert check.returncode == 4, check.stdout[-2000:] + check.stderr
    [headline] = [line for line in check.stdout.splitlines() if line.startswith("INCOMPLETE: 0 violations")]
    assert "no-loss" in headline and "convergence" in headline and "skipped (no `phase: done` event" in headline
    assert check.stdout.rstrip().endswith("run.json: interrupted"), check.stdout[-500:]


def test_sigkill_of_harness_leaves_nothing_ten_seconds_later(tmp_path):
    harness, run_dir = _harness_mid_pause(tmp_path)
    events = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    running = alive_pids(events)
    assert any(name == "consumer-1" and state == "T" for name, _, state in running), running  # stopped right now
    assert {"broker-1", "zookeeper-1", "toxiproxy"} <= {name for name, _, _ in running}
    harness.kill()  # SIGKILL, as a CI job's timeout does: no teardown at all
    harness.wait()
    killed_at = time.monotonic()
    while alive_pids(events) and time.monotonic() - killed_at < 10:
        time.sleep(0.2)
    left = alive_pids(events)
    assert left == [], f"{len(left)} processes alive 10 s after the harness was killed: {left}"

    # Its watchdog stopped them and marked the run (or a run starting meanwhile on another xdist
    # worker did: a run's start cleans up after dead harnesses too, and marks their runs the same way).
    run = json.loads((run_dir / "run.json").read_text())
    assert run["state"] == "killed", run
    cleaner = run["killed"]["by"]
    assert cleaner == f"the watchdog of harness {harness.pid}" or cleaner.startswith("the start of run "), run
    stopped = {p["process"]: p for p in run["killed"]["processes"]}
    assert {"consumer-1", "broker-1", "zookeeper-1", "toxiproxy"} <= set(stopped) and stopped["consumer-1"]["paused"]
    assert (
        "stopped consumer-1" in (lab_home() / "watchdog.log").read_text()
        or cleaner != f"the watchdog of harness {harness.pid}"
    )

    cleanup = lab("cleanup")  # nothing of this run is left for it
    assert cleanup.returncode == 0 and f"run {run_dir.resolve()}" not in cleanup.stdout, cleanup.stdout
    check = lab("check", str(run_dir))
    assert check.returncode == 4 and "INCOMPLETE: 0 violations" in check.stdout, check.stdout[-2000:] + check.stderr
    assert "run.json: killed — its harness died without tearing down" in check.stdout
