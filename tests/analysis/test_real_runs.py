"""The Spark analysis of real run directories: three short runs against real brokers (two
protocol generations on Kafka 3.9, KIP-848 on Kafka 4.1; pauses and a crash), analysed
in-process on `local[2]`, then again by `rebalance-lab analyze` on a standalone Spark
cluster (a master and a worker started here, on 127.0.0.1).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests

from analysis.job import analyze
from analysis.run_tables import DETECTION_GRACE_MS
from harness.cluster.ports import free_port
from harness.components.client_envs import default_client
from harness.components.versions import kafka_release
from tests.analysis.oracle_compare import differences
from tests.integration.conftest import lab, small_scenario

pytestmark = pytest.mark.integration

SHORT = {"duration_s": 16, "recovery": {"timeout_s": 30, "stable_for_s": 1}}
PAUSE = {"kind": "pause", "target": "consumer-2", "at_s": 3, "duration_s": 12}  # well past the 6 s session timeout


def _scenarios() -> dict[str, dict]:
    eager = small_scenario("an-eager-pause", faults=[PAUSE], **SHORT)
    cooperative = small_scenario(
        "an-coop-crash", faults=[{"kind": "crash", "target": "consumer-2", "at_s": 3, "restart_after_s": 4}], **SHORT
    )
    cooperative["workload"].update(protocol="classic-cooperative", assignor="cooperative-sticky")
    kip848 = small_scenario("an-kip848-pause", faults=[PAUSE], **SHORT)
    kip848["cluster"] = {"kafka": "4.1", "brokers": 1}
    kip848["workload"].update(protocol="consumer", assignor="uniform")
    return {"eager-pause": eager, "cooperative-crash": cooperative, "kip848-pause": kip848}


@pytest.fixture(scope="module")
def real_runs(components_installed, module_run) -> dict[str, Path]:
    return {name: module_run(name, scenario).run_dir for name, scenario in _scenarios().items()}


@pytest.fixture(scope="module")
def local_analysis(spark, real_runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("analysis-local")
    return analyze([str(d) for d in real_runs.values()], out, "local[2]", spark=spark, cache_dir=out / "cache")


def test_spark_figures_equal_the_oracles_on_real_runs(local_analysis, real_runs):
    for run_dir in real_runs.values():
        assert differences(local_analysis.tables, run_dir.name, run_dir) == []
        assert any(
            r["run"] == run_dir.name and r["status"] == "completed" and r["fault_kind"] != "none"
            for r in local_analysis.tables["rebalances"]
        ), f"{run_dir.name}: no rebalance caused by its fault"


def test_runs_are_compared_per_protocol_and_fault_kind(local_analysis):
    groups = {(r["protocol"], r["kafka"], r["faults"]) for r in local_analysis.by_group}
    # kafka: the exact release each run's history says its brokers ran (run_started.kafka)
    three, four = kafka_release("3.9").version, kafka_release("4.1").version
    assert groups == {
        ("classic-eager", three, "pause"),
        ("classic-cooperative", three, "crash"),
        ("consumer", four, "pause"),
    }
    by_dim = {(r["dimension"], r["group"]) for r in local_analysis.by_dimension if r["metric"] == "rebalance_ms"}
    assert {("fault_kind", "pause"), ("fault_kind", "crash"), ("assignor", "uniform"), ("kafka", four)} <= by_dim
    assert {r["client"] for r in local_analysis.runs} == {str(default_client("confluent-kafka"))}
    assert "Rebalance duration per protocol" in local_analysis.report.read_text()
    assert len(local_analysis.run_reports) == 3


def test_ownership_timeline_shows_the_paused_members_partitions_move_away_and_come_back(local_analysis, real_runs):
    run = real_runs["eager-pause"].name
    sessions = [s for s in local_analysis.tables["ownership"] if s["run"] == run]
    [pause] = [f for f in local_analysis.tables["faults"] if f["run"] == run]
    start, end = pause["start_s"], pause["end_s"]

    def owned_by(member: str, at: float) -> set[str]:
        return {
            s["partition_label"]
            for s in sessions
            if s["member"] == member and s["start_s"] <= at and (s["end_s"] is None or s["end_s"] > at)
        }

    paused = owned_by("consumer-2", start)
    assert paused, "consumer-2 owned nothing when it was paused"
    taken = {
        s["partition_label"]
        for s in sessions
        if s["member"] == "consumer-1" and start < s["start_s"] < end and s["partition_label"] in paused
    }
    assert taken == paused  # consumer-1 took them over while consumer-2 was stopped
    # consumer-2 rejoined after SIGCONT and owns partitions again (SIGCONT goes out just before the
    # heal's stamp, `end`: what it owns next is known by coming after the takeover)
    taken_at = max(
        s["start_s"]
        for s in sessions
        if s["member"] == "consumer-1" and s["partition_label"] in taken and start < s["start_s"] < end
    )
    back = {s["partition_label"] for s in sessions if s["member"] == "consumer-2" and s["start_s"] > taken_at}
    assert back
    marked = [
        r
        for r in local_analysis.tables["rebalances"]
        if r["run"] == run and start < r["start_s"] < end + DETECTION_GRACE_MS / 1000
    ]
    assert marked and {r["fault_kind"] for r in marked} == {"pause"}


# ------------------------------------------------------------------ a standalone Spark cluster


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the daemon's own process group (a worker's executors are in it), then SIGKILL."""
    for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(grace)
            break
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def standalone_master(tmp_path_factory):
    """(spark://127.0.0.1:PORT, the master's JSON status URL): a master and one 2-core worker,
    each in its own process group, everything on the loopback interface; both stopped when
    the module is done."""
    tmp = tmp_path_factory.mktemp("spark-standalone")
    env = {
        **os.environ,
        "SPARK_HOME": str(_spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(tmp),
        "SPARK_WORKER_DIR": str(tmp / "work"),
    }
    port, ui, worker_port, worker_ui = (free_port() for _ in range(4))
    url, status = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}/json/"
    daemons: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> None:
        with (tmp / f"{name}.log").open("w") as log:
            daemons.append(
                subprocess.Popen(
                    [str(_spark_home() / "bin" / "spark-class"), *args],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    try:
        start(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(ui),
        )
        start(
            "worker",
            "org.apache.spark.deploy.worker.Worker",
            url,
            "--host",
            "127.0.0.1",
            "--port",
            str(worker_port),
            "--webui-port",
            str(worker_ui),
            "--cores",
            "2",
            "--memory",
            "2g",
            "--work-dir",
            str(tmp / "work"),
        )
        deadline = time.monotonic() + 60
        while True:  # the master's JSON status page lists the worker once it registered
            try:
                if requests.get(status, timeout=2).json().get("aliveworkers"):
                    break
            except (requests.RequestException, ValueError):
                pass
            assert time.monotonic() < deadline, (tmp / "worker.log").read_text()[-3000:]
            assert all(d.poll() is None for d in daemons), (tmp / "master.log").read_text()[-3000:]
            time.sleep(0.5)
        yield url, status
    finally:
        for d in reversed(daemons):  # the worker (and its executors) first
            _stop(d)


def test_standalone_cluster_gives_the_same_results_as_local(local_analysis, real_runs, standalone_master, tmp_path):
    """The CLI on a real cluster: its executors read the histories, with the code the job sent them."""
    url, status = standalone_master
    proc = lab("analyze", *map(str, real_runs.values()), "--out", str(tmp_path / "out"), "--master", url, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [app] = requests.get(status, timeout=5).json()["completedapps"]  # the job ran on the cluster's executors
    assert app["name"] == "rebalance-lab-analyze" and app["cores"] == 2
    # the console table's cells are the console's business (tests/unit/test_output.py); here, that it came
    assert "Rebalances across runs" in proc.stdout
    assert "3 runs analysed (3 read, 0 from the cache)" in proc.stdout
    ours = sorted(p.name for p in (local_analysis.out / "csv").iterdir())
    assert ours == sorted(p.name for p in (tmp_path / "out" / "csv").iterdir()) and len(ours) == 13
    for name in ours:
        assert (tmp_path / "out" / "csv" / name).read_text() == (local_analysis.out / "csv" / name).read_text(), name
