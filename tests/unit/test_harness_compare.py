"""compare: each protocol's scenario variant differs only in what the protocol forces."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.scenario import Scenario
from harness.scenario.variants import Axes, variant
from oracle import CHECK_NAMES

BASE = yaml.safe_load((Path(__file__).resolve().parents[2] / "scenarios" / "compare-pause.yaml").read_text())


def test_a_classic_variant_changes_only_the_protocol():
    data, skipped = variant(BASE, Axes(protocol="classic-cooperative"))
    assert data["workload"]["protocol"] == "classic-cooperative" and "assignor" not in data["workload"]
    assert data["cluster"]["kafka"] == "3.9" and data["faults"] == BASE["faults"] and skipped == {}
    assert set(data["checks"]) == set(CHECK_NAMES)
    assert Scenario.model_validate(data).workload.effective_assignor == "cooperative-sticky"


def test_kip848_runs_on_kafka_4_and_zk_eager_on_3_9_without_fencing_checks():
    consumer, _ = variant(BASE, Axes(protocol="consumer"))
    assert consumer["cluster"]["kafka"] == "4.4.0"
    assert Scenario.model_validate(consumer).broker_config()["group.consumer.session.timeout.ms"] == 6000
    zk, skipped = variant(BASE, Axes(protocol="zk-eager"))
    assert zk["cluster"]["kafka"] == "3.9" and "fenced-commits" in skipped and "fenced-commits" not in zk["checks"]
    Scenario.model_validate(zk)


def test_a_kraft_variant_of_a_three_node_zookeeper_scenario_drops_the_ensemble():
    base = {**BASE, "cluster": {**BASE["cluster"], "zookeeper_nodes": 3}}
    for axes in (Axes(protocol="consumer"), Axes(kafka="4.4.0")):
        data, _ = variant(base, axes)
        assert data["cluster"]["kafka"] == "4.4.0" and "zookeeper_nodes" not in data["cluster"]
        Scenario.model_validate(data)
    assert variant(base, Axes(seed=3))[0]["cluster"]["zookeeper_nodes"] == 3


def test_the_base_is_not_modified():
    variant(BASE, Axes(protocol="consumer"))
    assert BASE["workload"]["protocol"] == "classic-eager" and BASE["cluster"]["kafka"] == "3.9"


def test_a_row_is_ok_only_when_its_verdict_passed(tmp_path):
    from rich.console import Console

    from harness.campaigns.compare import Entry
    from harness.reports.run import print_comparison
    from harness.run.loop import RunResult

    def row(outcome, verdict):
        return Entry("classic-eager", 1, "3.9", RunResult(tmp_path, outcome, verdict), {}).row()

    base = {"rebalances": [], "duplicates": {"count": 0}, "violations": []}
    rows = [
        row("completed", {**base, "status": "pass", "ok": True}),
        row("completed", {**base, "status": "incomplete", "ok": False, "skipped_checks": {"no-loss": "…"}}),
        row("completed", {**base, "status": "error", "ok": False, "errored_checks": {"convergence": "KeyError"}}),
        row("interrupted", None),
    ]
    assert [(r["status"], r["ok"], r["unjudged_checks"]) for r in rows] == [
        ("pass", True, []),
        ("incomplete", False, ["no-loss"]),
        ("error", False, ["convergence"]),
        (None, False, []),
    ]
    console = Console(record=True, width=300)
    print_comparison(console, rows, tmp_path)
    results = [line.split("│")[-2].strip() for line in console.export_text().splitlines() if "classic-eager" in line]
    assert results == ["PASS", "INCOMPLETE no-loss", "ERROR convergence", "INTERRUPTED"]
