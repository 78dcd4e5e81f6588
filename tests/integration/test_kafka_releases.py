"""An old Kafka release, for real: the smoke scenario on Kafka 3.3.2 (the oldest supported, in
ZooKeeper mode), installed from Maven Central on first use. The history names the release the
brokers ran, their GroupCoordinator lines were recognised, and the oracle passed the run.

The whole release matrix is benchmarks/kafka_releases.py (docs/inputs.md, Kafka releases)."""

from __future__ import annotations

import yaml

from harness.components.install import install_kafka
from tests.integration.conftest import REPO

RELEASE = "3.3.2"


def test_smoke_on_the_oldest_release_names_it_and_passes(run_scenario):
    install_kafka(RELEASE, print)  # what a run does on first use (harness.components.install.installed_for)
    scenario = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    scenario["cluster"]["kafka"] = RELEASE
    run = run_scenario(scenario)
    [started] = run.named("run_started")
    assert (started["kafka"], started["metadata"]) == (RELEASE, "zookeeper")
    assert run.exit_code == 0, run.output[-3000:]
    assert run.verdict["status"] == "pass", run.verdict["skipped_checks"]
    assert not run.named("log_unrecognised")
    # The brokers' own account of the group, read in 3.3's wording: a generation per rebalance.
    stabilized = [e for e in run.named("coordinator_stabilized") if e["group"] == started["group"]]
    assert len(stabilized) >= 2
    assert {e["generation"] for e in stabilized} <= {e["generation"] for e in run.named("group_joined")}
