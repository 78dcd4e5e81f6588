"""Secrets never written: a run against a cluster that requires SASL/PLAIN (`cluster up --sasl-plain`), as
the external target, with the password from a `--client-config` properties file and once from `${ENV}`;
every byte of the run directory and of the console is searched for the password. A wrong password is
bad input (exit 2) said at the first refusal, not after a readiness timeout. One cluster, three short runs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from harness.paths import lab_home
from tests.integration.conftest import lab, only_run_dir, write_scenario

USER = "chaos"
PASSWORD = "rl-Secret-4f9c2e7a1b"  # what no byte of a run may hold
PASSWORD_VAR = "RL_TEST_SASL_PASSWORD"


def scenario(bootstrap: str, client_config: dict) -> dict:
    return {
        "name": "external-sasl",
        "seed": 1,
        "duration_s": 6,
        "cluster": {
            "backend": "external",
            "kafka": "3.9",
            "bootstrap_servers": bootstrap,
            "client_config": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", **client_config},
        },
        "topics": [{"name": "events", "partitions": 2}],
        "workload": {"group": "sasl", "protocol": "classic-eager", "consumers": 2, "producer": {"rate": 50}},
        "recovery": {"timeout_s": 30, "stable_for_s": 1},
    }


def hits(needle: str, *places: Path | str) -> list[str]:
    """Every file under ``places`` (and every text given) holding ``needle``, and how many bytes were read."""
    found, needle_bytes = [], needle.encode()
    read = 0
    for place in places:
        if isinstance(place, str):
            read += len(place.encode())
            found += ["(console)"] if needle_bytes in place.encode() else []
            continue
        for path in (
            [place] if place.is_file() else sorted(p for p in place.rglob("*") if p.is_file() and not p.is_symlink())
        ):
            data = path.read_bytes()
            read += len(data)
            found += [str(path)] if needle_bytes in data else []
    hits.bytes_read = read
    return found


@pytest.fixture(scope="module")
def sasl_cluster(tmp_path_factory):
    if (lab_home() / "cluster.json").exists():
        pytest.fail("a standalone cluster is already up; run `rebalance-lab cluster down` first", pytrace=False)
    up = lab(
        "cluster",
        "up",
        "--brokers",
        "1",
        "--sasl-plain",
        f"{USER}:{PASSWORD_VAR}",
        "--workdir",
        str(tmp_path_factory.mktemp("sasl-cluster")),
        env={**os.environ, PASSWORD_VAR: PASSWORD},
    )
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert PASSWORD not in up.stdout + up.stderr  # `cluster up` never echoes it
        state = (lab_home() / "cluster.json").read_text()
        assert PASSWORD not in state
        yield json.loads(state)["sasl_bootstrap_servers"]
    finally:
        down = lab("cluster", "down")
        assert down.returncode == 0, down.stdout + down.stderr


def assert_passed_without_the_password(proc, runs: Path) -> None:
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    run_dir = only_run_dir(runs)
    assert json.loads((run_dir / "verdict.json").read_text())["status"] == "pass"
    assert (run_dir / "workload" / "producer-1.json").exists() and (run_dir / "logs").is_dir()
    assert hits(PASSWORD, runs, proc.stdout, proc.stderr) == []
    print(f"searched {hits.bytes_read} bytes of {run_dir.name} and its console for the password: 0 hits")
    assert hits.bytes_read > 100_000  # the history, the logs, the specs: a whole run was searched
    spec = json.loads((run_dir / "workload" / "consumer-1-1.json").read_text())
    assert spec["client_settings"]["sasl.password"] == "***"


def test_the_password_from_a_properties_file_reaches_the_clients_and_no_file(sasl_cluster, tmp_path):
    properties = tmp_path / "client.properties"
    properties.write_text(f"# Kafka's own format\nsasl.username={USER}\nsasl.password : {PASSWORD}\n")
    proc = lab(
        "run",
        str(write_scenario(tmp_path / "sasl.yaml", scenario(sasl_cluster, {}))),
        "--client-config",
        str(properties),
        "--runs-dir",
        str(tmp_path / "runs"),
    )
    assert_passed_without_the_password(proc, tmp_path / "runs")


def test_the_password_from_the_environment(sasl_cluster, tmp_path):
    path = write_scenario(
        tmp_path / "sasl.yaml",
        scenario(sasl_cluster, {"sasl.username": USER, "sasl.password": "${" + PASSWORD_VAR + "}"}),
    )
    proc = lab("run", str(path), "--runs-dir", str(tmp_path / "runs"), env={**os.environ, PASSWORD_VAR: PASSWORD})
    assert_passed_without_the_password(proc, tmp_path / "runs")
    # the copy keeps the reference, not the value: the run can be made again where the variable is set
    assert "${" + PASSWORD_VAR + "}" in (only_run_dir(tmp_path / "runs") / "scenario.yaml").read_text()


def test_a_wrong_password_is_bad_input_said_at_once(sasl_cluster, tmp_path):
    wrong = "not-the-Password-71d3"
    path = write_scenario(
        tmp_path / "sasl.yaml", scenario(sasl_cluster, {"sasl.username": USER, "sasl.password": "${RL_TEST_WRONG}"})
    )
    t0 = time.monotonic()
    proc = lab("run", str(path), "--runs-dir", str(tmp_path / "runs"), env={**os.environ, "RL_TEST_WRONG": wrong})
    took = time.monotonic() - t0
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "refused the client settings' credentials" in proc.stderr and "Authentication failed" in proc.stderr, (
        proc.stderr
    )
    assert took < 30, f"{took:.0f}s: the refusal waited for a timeout"  # the readiness wait alone is 60 s
    assert hits(wrong, tmp_path / "runs", proc.stdout, proc.stderr) == []
