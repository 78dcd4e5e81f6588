"""ZooKeeper session expiry of brokers, as a scenario line: server-side and the network way."""

from __future__ import annotations

import re

import pytest

from tests.integration.conftest import assert_healed


@pytest.fixture(scope="module")
def expiries(module_run):
    return module_run(
        "zk-expiry",
        {
            "name": "zk-expiry",
            "seed": 5,
            "duration_s": 45,
            "cluster": {"kafka": "3.9", "brokers": 3},
            "topics": [{"name": "events", "partitions": 6}],
            "workload": {"group": "zk-expiry", "consumers": 2, "processing_ms": 1, "producer": {"rate": 100}},
            "faults": [
                {"kind": "zk-session-expiry", "target": "broker-2", "method": "server", "at_s": 8},
                {"kind": "zk-session-expiry", "target": "broker-3", "method": "network", "at_s": 20},
            ],
            "recovery": {"timeout_s": 60},
        },
    )


def _registrations(run, broker: str) -> list[str]:
    log = (run.run_dir / "cluster" / "logs" / f"{broker}.log").read_text()
    return re.findall(rf"Registered broker {broker[-1]} at path /brokers/ids/{broker[-1]}", log)


@pytest.mark.parametrize("broker,fault_id", [("broker-2", "f1"), ("broker-3", "f2")])
def test_the_expired_broker_registers_again(expiries, broker, fault_id):
    [started] = [e for e in expiries.named("fault_started") if e["fault_id"] == fault_id]
    assert started["target"] == broker
    log = (expiries.run_dir / "cluster" / "logs" / f"{broker}.log").read_text()
    assert "Session expired" in log or "has expired" in log
    assert len(_registrations(expiries, broker)) >= 2  # at start, and again with the new session


def test_the_server_way_names_the_session_and_the_network_way_the_link(expiries):
    server, network = expiries.named("fault_started")
    assert re.fullmatch(r"0x[0-9a-f]+", server["details"]["session_id"])
    assert network["details"]["proxies"] == ["broker-3.to.zookeeper-1"] and network["details"]["cut_s"] > 6


def test_the_group_keeps_or_regains_a_full_assignment(expiries):
    assert expiries.exit_code == 0, expiries.output[-3000:]
    assert expiries.verdict["checks"]["convergence"]["status"] == "passed"
    assert_healed(expiries)
