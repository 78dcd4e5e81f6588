"""backend: external against a cluster started separately (`rebalance-lab cluster up`), as if
it were someone else's staging cluster: the run drives its own producer and members against
it, pauses and crashes them, and leaves no topic or group behind; a fault that needs the
brokers is refused before anything starts."""

from __future__ import annotations

import json
import re
import time

import pytest
from confluent_kafka.admin import AdminClient

from harness.paths import lab_home
from runtime.logs import QUIET_CLIENT_LOG
from tests.integration.conftest import alive_pids, lab, only_run_dir, write_scenario


def scenario(bootstrap: str, faults: list[dict]) -> dict:
    return {
        "name": "external-smoke",
        "seed": 3,
        "duration_s": 26,
        "cluster": {
            "backend": "external",
            "kafka": "3.9",
            "bootstrap_servers": bootstrap,
            "client_config": {"security.protocol": "PLAINTEXT", "socket.keepalive.enable": True},
        },
        "topics": [{"name": "events", "partitions": 4}],
        "workload": {
            "group": "ext",
            "protocol": "classic-eager",
            "consumers": 2,
            "commit": "sync",
            "session_timeout_ms": 6000,
            "heartbeat_interval_ms": 1000,
            "producer": {"rate": 100},
        },
        "faults": faults,
        "recovery": {"timeout_s": 60, "stable_for_s": 2},
    }


@pytest.fixture(scope="module")
def someone_elses_cluster(tmp_path_factory):
    if (lab_home() / "cluster.json").exists():
        pytest.fail("a standalone cluster is already up; run `rebalance-lab cluster down` first", pytrace=False)
    up = lab(
        "cluster", "up", "--brokers", "1", "--topic", "theirs:2", "--workdir", str(tmp_path_factory.mktemp("theirs"))
    )
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield json.loads((lab_home() / "cluster.json").read_text())["bootstrap_servers"]
    finally:
        down = lab("cluster", "down")
        assert down.returncode == 0, down.stdout + down.stderr


def test_a_run_on_an_external_cluster_touches_only_what_it_created(someone_elses_cluster, tmp_path):
    bootstrap = someone_elses_cluster
    # Paused twice its session timeout: the takeover (~6-7 s in) is well inside the pause on a busy machine.
    faults = [
        {"kind": "pause", "target": "consumer-2", "at_s": 3, "duration_s": 12},
        {"kind": "crash", "target": "consumer-1", "at_s": 18, "restart_after_s": 2},
    ]
    proc = lab(
        "run",
        str(write_scenario(tmp_path / "ext.yaml", scenario(bootstrap, faults))),
        "--runs-dir",
        str(tmp_path / "runs"),
    )
    run_dir = only_run_dir(tmp_path / "runs")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    from oracle import load_history

    events = load_history(run_dir)
    started = next(e for e in events if e["name"] == "run_started")
    prefix = f"rl-{run_dir.name}-"
    assert started["backend"] == "external" and started["group"] == prefix + "ext"
    assert [t["topic"] for t in started["topics"]] == [prefix + "events"]
    consumed = {r["topic"] for e in events if e["name"] == "records_consumed" for r in e["ranges"]}
    assert consumed == {prefix + "events"}
    # The pause outlived the session: consumer-1 was given consumer-2's partitions while it was stopped.
    pause = next(e for e in events if e["name"] == "fault_started" and e["kind"] == "pause")
    healed = next(e for e in events if e["name"] == "fault_healed" and e.get("fault_id") == pause["fault_id"])
    took_over = [
        e
        for e in events
        if e["name"] == "partitions_assigned"
        and e["member"] == "consumer-1"
        and pause["mono_ms"] < e["mono_ms"] < healed["mono_ms"]
        and len(e["partitions"]) == 4
    ]
    assert took_over, "consumer-1 never owned all four partitions during the pause"
    # The crash killed consumer-1 and the harness started it again.
    assert len([e for e in events if e["name"] == "process_started" and e["process"] == "consumer-1"]) == 2
    assert not [e for e in events if e["name"].startswith("coordinator_")]  # no broker log is ours to read
    assert json.loads((run_dir / "verdict.json").read_text())["status"] == "pass"
    assert alive_pids(list(events)) == []

    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": QUIET_CLIENT_LOG})
    # Their own topic listed is the sign of a whole answer (a new client's first full-metadata
    # request can come back with brokers only: librdkafka #3543); then ours must be gone.
    deadline = time.monotonic() + 20
    while "theirs" not in (topics := set(admin.list_topics(timeout=10).topics)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "theirs" in topics and not [t for t in topics if t.startswith("rl-")], topics
    groups = admin.list_consumer_groups(request_timeout=10).result()
    assert not [g.group_id for g in groups.valid if g.group_id.startswith("rl-")]


def test_a_fault_on_their_brokers_is_refused_before_anything_starts(someone_elses_cluster, tmp_path):
    faults = [{"kind": "crash", "target": "broker-1", "at_s": 5, "restart_after_s": 5}]
    proc = lab(
        "run",
        str(write_scenario(tmp_path / "ext.yaml", scenario(someone_elses_cluster, faults))),
        "--runs-dir",
        str(tmp_path / "runs"),
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = re.sub(r" \(line \d+\)", "", proc.stderr)  # the line is the written file's, not the point here
    assert (
        "faults[1].target: the external backend cannot pause, stop or restart the cluster's brokers, ZooKeeper "
        "or coordinator: it does not run them; faults act only on the processes the run starts "
        "(consumer-1, consumer-2, producer), not 'broker-1'"
    ) in said
    assert not (tmp_path / "runs").exists()
