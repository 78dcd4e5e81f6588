"""The compose backend on a real Docker Engine: the shipped scenarios and the protocols run in
containers and the oracle judges them as it judges local runs; `compose render` gives a project
plain `docker compose` starts; nothing of a run remains in the engine after it ends, however
it ends.

Needs `rebalance-lab setup --compose` (the README's test command runs it): a missing engine or
image is a failure, not a skip. The project's dockerd, if these tests started it, is stopped at
the end of the module.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest
from confluent_kafka.admin import AdminClient

from harness.cluster.compose_topology import OWNER_LABEL
from harness.components.containers import engine as engines
from harness.components.containers.images import missing
from runtime.logs import QUIET_CLIENT_LOG
from tests.integration.conftest import (
    REPO,
    RunOutcome,
    assert_healed,
    lab,
    only_run_dir,
    small_scenario,
    start_harness,
    wait_for_event,
    write_scenario,
)
from tests.integration.test_project_coordinator import coordinator_scenario


@pytest.fixture(scope="module")
def engine():
    was_running = engines.find_engine()
    try:
        found = engines.ensure_engine()
    except Exception as e:
        pytest.fail(f"no Docker Engine: {e} (run `rebalance-lab setup --compose`)", pytrace=False)
    if absent := missing(found.docker_host, ["3.9", "4.4"]):
        pytest.fail(f"images not built: {', '.join(absent)} (run `rebalance-lab setup --compose`)", pytrace=False)
    yield found
    if not was_running and found.ours:
        engines.stop_engine()


def leftovers(engine, owner: str) -> dict[str, list]:
    """What the engine still has of one run: containers, networks, volumes."""
    import docker

    client = docker.DockerClient(base_url=engine.docker_host)
    try:
        label = {"label": f"{OWNER_LABEL}={owner}"}
        # docker-py lists, then inspects each: one removed in between (the watchdog at work) is gone
        containers = client.containers.list(all=True, filters=label, ignore_removed=True)
        return {
            "containers": [c.name for c in containers],
            "networks": [n.name for n in client.networks.list(filters=label)],
            "volumes": [v.name for v in client.volumes.list(filters=label)],
        }
    finally:
        client.close()


NOTHING = {"containers": [], "networks": [], "volumes": []}


@pytest.fixture
def compose_run(tmp_path, engine):
    def run(scenario, timeout: float = 900) -> RunOutcome:
        path = scenario if not isinstance(scenario, dict) else write_scenario(tmp_path / "scenario.yaml", scenario)
        runs = tmp_path / "runs"
        proc = lab("run", str(path), "--runs-dir", str(runs), "--backend", "compose", timeout=timeout)
        outcome = RunOutcome(proc.returncode, proc.stdout + proc.stderr, only_run_dir(runs))
        assert outcome.run_dir and (outcome.run_dir / "history.jsonl").exists(), outcome.output[-3000:]
        assert leftovers(engine, f"run:{outcome.run_dir}") == NOTHING
        return outcome

    return run


def test_smoke_in_containers_passes_with_the_eviction_after_the_pause(compose_run):
    run = compose_run(REPO / "scenarios" / "smoke.yaml")
    assert run.exit_code == 0, run.output[-3000:]
    [started] = run.named("run_started")
    assert started["backend"] == "compose"
    verdict = run.verdict
    assert verdict["ok"] and all(c["status"] == "passed" for c in verdict["checks"].values()), verdict["checks"]
    # The paused container's member was evicted by the broker's coordinator (its log, from the container).
    removed = [e for e in run.named("coordinator_member_removed") if e.get("reason") == "failed"]
    assert any(e["member_id"].startswith("consumer-2-") for e in removed), removed
    [pause] = [e for e in run.named("fault_started") if e["kind"] == "pause"]
    after = [r for r in verdict["rebalances"] if r["status"] == "completed" and r["start_mono_ms"] > pause["mono_ms"]]
    assert after, verdict["rebalances"]
    # The crashed broker container came back: two starts, a new pid each.
    starts = [e for e in run.named("process_started") if e["process"] == "broker-2"]
    assert len(starts) == 2 and starts[0]["pid"] != starts[1]["pid"]
    assert_healed(run)


def test_faulty_consumer_in_containers_fails_no_loss_naming_the_offsets(compose_run):
    run = compose_run(REPO / "scenarios" / "faulty-consumer.yaml")
    assert run.exit_code == 1, run.output[-3000:]
    lost = [v for v in run.verdict["violations"] if v["check"] == "no-loss"]
    assert lost and all("consumer-1" in v["members"] and f"offsets {v['offsets']}" in v["message"] for v in lost)


def test_coordinator_v3_leader_paused_in_its_container_the_other_instance_takes_over(compose_run):
    scenario = coordinator_scenario(
        "compose-failover",
        "v3",
        instances=2,
        duration_s=30,
        faults=[{"kind": "pause", "target": "coordinator", "at_s": 6, "duration_s": 10}],
    )
    run = compose_run(scenario)
    assert run.exit_code == 0, run.output[-3000:]
    [pause] = run.named("fault_started")
    elected = run.named("coordinator_elected")
    assert elected[0]["instance"] == pause["target"]
    successor = next(e for e in elected if e["mono_ms"] > pause["mono_ms"])
    assert successor["instance"] != pause["target"]
    assert run.verdict["checks"]["no-loss"]["status"] == "passed"


def test_kraft_4_with_the_consumer_protocol_in_containers(compose_run):
    scenario = small_scenario(
        "compose-kip848", duration_s=25, faults=[{"kind": "pause", "target": "consumer-2", "at_s": 6, "duration_s": 10}]
    )
    scenario["cluster"] = {"kafka": "4.4", "brokers": 1}
    scenario["workload"].update(protocol="consumer", assignor="uniform")
    run = compose_run(scenario)
    assert run.exit_code == 0, run.output[-3000:]
    assert [e for e in run.named("coordinator_member_removed") if e.get("detail") == "the member session expired"]
    assert {e["process"] for e in run.named("process_started")} >= {"controller-1", "broker-1", "toxiproxy"}


def test_a_network_cut_through_the_toxiproxy_container_and_a_server_side_zookeeper_expiry(compose_run):
    scenario = small_scenario(
        "compose-net-zk",
        duration_s=34,
        faults=[
            {
                "kind": "network",
                "target": "consumer-1",
                "link": "coordinator",
                "effect": "blackhole",
                "at_s": 6,
                "duration_s": 12,
            },
            {"kind": "zk-session-expiry", "target": "broker-1", "method": "server", "at_s": 22},
        ],
    )
    run = compose_run(scenario)
    assert run.exit_code == 0, run.output[-3000:]
    cut, expiry = run.named("fault_started")
    assert cut["details"]["proxies"] == ["lane-1.broker-1"]  # the member's own lane, in the Toxiproxy container
    removed = [e for e in run.named("coordinator_member_removed") if e.get("reason") == "failed"]
    assert any(e["member_id"].startswith("consumer-1-") and e["mono_ms"] > cut["mono_ms"] for e in removed), removed
    # Expired through the Jolokia agent of the ZooKeeper container; the broker registered again.
    assert (
        re.fullmatch(r"0x[0-9a-f]+", expiry["details"]["session_id"])
        and expiry["details"]["zookeeper"] == "zookeeper-1"
    )
    log = (run.run_dir / "cluster" / "logs" / "broker-1.log").read_text()
    assert len(re.findall(r"Registered broker 1 at path /brokers/ids/1", log)) >= 2
    assert_healed(run)


def test_a_rendered_project_starts_with_plain_docker_compose(tmp_path, engine):
    out = tmp_path / "project"
    rendered = lab("compose", "render", str(REPO / "scenarios" / "smoke.yaml"), "-o", str(out))
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    env = {**os.environ, **engines.compose_env(engine)}
    up = subprocess.run(
        ["docker", "compose", "up", "-d", "--wait"], cwd=out, env=env, capture_output=True, text=True, timeout=300
    )
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        [bootstrap] = [
            line.split("|")[2].strip()
            for line in (out / "PORTS.md").read_text().splitlines()
            if line.startswith("| bootstrap")
        ]
        assert all(a.startswith("127.0.0.1:") for a in bootstrap.split(","))
        md = AdminClient({"bootstrap.servers": bootstrap, "logger": QUIET_CLIENT_LOG}).list_topics(timeout=30)
        assert sorted(md.brokers) == [1, 2, 3]
    finally:
        subprocess.run(["docker", "compose", "down", "--volumes"], cwd=out, env=env, capture_output=True, timeout=300)
    assert leftovers(engine, f"render:{out.resolve()}") == NOTHING


def _harness_mid_run(tmp_path, paused: str | None = None):
    """A harness in its run's workload phase (with `paused`: once that member's container is frozen)."""
    tmp_path.mkdir(parents=True)
    faults = [{"kind": "pause", "target": paused, "at_s": 1, "duration_s": 50}] if paused else []
    scenario = write_scenario(
        tmp_path / "long.yaml",
        {
            **small_scenario("compose-long", duration_s=60, faults=faults),
            "cluster": {"kafka": "3.9", "brokers": 1, "backend": "compose"},
        },
    )
    runs = tmp_path / "runs"
    harness = start_harness(scenario, runs)
    deadline = time.monotonic() + 180
    while not (runs.exists() and any(runs.iterdir())) and time.monotonic() < deadline:
        time.sleep(0.2)
    run_dir = next(d for d in runs.iterdir() if not d.is_symlink())  # not runs/latest
    wait_for_event(run_dir / "history.jsonl", lambda e: e["name"] == "phase" and e["phase"] == "workload", timeout=240)
    if paused:
        wait_for_event(run_dir / "history.jsonl", lambda e: e["name"] == "fault_started", timeout=60)
    return harness, run_dir


def test_ctrl_c_and_sigkill_leave_nothing_in_the_engine(tmp_path, engine):
    harness, run_dir = _harness_mid_run(tmp_path / "a")
    assert leftovers(engine, f"run:{run_dir}")["containers"]  # it really runs in containers
    os.kill(harness.pid, signal.SIGINT)
    harness.communicate(timeout=180)
    assert harness.returncode == 130
    assert leftovers(engine, f"run:{run_dir}") == NOTHING

    harness, run_dir = _harness_mid_run(tmp_path / "b", paused="consumer-1")
    assert leftovers(engine, f"run:{run_dir}")["containers"]
    harness.kill()  # SIGKILL, as a CI job's timeout does: no teardown at all, a container left frozen
    harness.wait()
    killed_at = time.monotonic()

    def state() -> dict:
        return json.loads((run_dir / "run.json").read_text())

    # Its watchdog (or a run starting meanwhile on another pytest worker) removes the project,
    # then marks the run: wait for both, the mark comes a moment after the containers go.
    while (
        leftovers(engine, f"run:{run_dir}")["containers"] or state()["state"] != "killed"
    ) and time.monotonic() - killed_at < 10:
        time.sleep(0.5)
    assert leftovers(engine, f"run:{run_dir}") == NOTHING, "left 10 s after the harness was killed"
    assert state()["state"] == "killed" and state()["killed"]["by"], state()
    cleanup = lab("cleanup")
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    found = engines.find_engine()
    if found and not found.ours:  # the user's engine stays; check it holds nothing of the run
        assert leftovers(found, f"run:{run_dir}") == NOTHING
    else:  # ours (stopped by cleanup unless another harness's project is on it) must hold nothing of the run
        assert leftovers(engines.ensure_engine(), f"run:{run_dir}") == NOTHING
