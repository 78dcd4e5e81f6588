"""compare: each protocol's scenario variant differs only in what the protocol forces."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.scenario import Scenario
from harness.scenario.variants import Axes, variant
from oracle import CHECK_NAMES
from tests.lines import unlined

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


# -- version axes: one protocol generation side by side across Kafka releases and clients ---------


def _cli(*args: str):
    from click.testing import CliRunner

    from harness.cli import main

    return CliRunner().invoke(main, list(args))


COMPARE_PAUSE = Path(__file__).resolve().parents[2] / "scenarios" / "compare-pause.yaml"


def test_every_combination_of_the_axes_given_is_a_variant(tmp_path):
    from harness.campaigns.compare import plan_variants

    plans = plan_variants(BASE, COMPARE_PAUSE, ["classic-eager"], ["3.9", "4.1"], [], seeds=2)
    assert [(p.axes.label(), p.data["cluster"]["kafka"], p.data["seed"]) for p in plans] == [
        ("classic-eager, kafka 3.9", "3.9", 1),
        ("classic-eager, kafka 3.9", "3.9", 2),
        ("classic-eager, kafka 4.1", "4.1", 1),
        ("classic-eager, kafka 4.1", "4.1", 2),
    ]
    assert plans[2].data["name"] == "compare-pause-classic-eager-kafka4.1"
    # no --protocols: the scenario's own protocol, on each release
    assert [p.data["workload"]["protocol"] for p in plan_variants(BASE, COMPARE_PAUSE, [], ["4.1"], [], 1)] == [
        "classic-eager"
    ]


def test_a_combination_that_cannot_run_is_named_before_anything_is_made(tmp_path):
    from harness.campaigns.compare import plan_variants
    from runtime.errors import ScenarioError

    with pytest.raises(ScenarioError) as e:
        plan_variants(BASE, COMPARE_PAUSE, ["classic-eager", "consumer"], ["3.9", "4.1"], [], 1)
    assert [k for k, _ in e.value.problems] == ["consumer, kafka 3.9"]
    assert e.value.problems[0][1].startswith("consumer on Kafka 3.9: ")
    result = _cli(
        "compare", str(COMPARE_PAUSE), "--protocols", "consumer", "--kafka", "3.9", "--runs-dir", str(tmp_path / "r")
    )
    assert result.exit_code == 2 and "consumer, kafka 3.9: consumer on Kafka 3.9: " in result.output, result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "args, said",
    [
        ((), "nothing to compare: give --protocols, --kafka or --client"),
        (("--kafka", "2.0"), "--kafka"),
        (("--kafka", "3.9", "--kafka", "3.9"), "3.9 given twice"),
        (("--protocols", ""), "(none given)"),
        (("--client", " "), "an empty requirement"),
        (("--client", "kafka-clients==3.9.2"), "compare-pause.yaml: kafka-clients==3.9.2: workload.client: "),
    ],
)
def test_compare_options_are_refused_with_the_reason(tmp_path, args, said):
    from harness.scenario.variants import kafka_problem

    result = _cli("compare", str(COMPARE_PAUSE), *args, "--runs-dir", str(tmp_path / "r"))
    assert result.exit_code == 2 and said in unlined(result.output), result.output
    if "2.0" in args:  # in cluster.kafka's own words: there is no second list of releases
        assert kafka_problem("2.0").split("'")[0] in result.output
    assert not (tmp_path / "r").exists()


def test_a_row_says_what_ran_and_what_the_members_loaded(tmp_path):
    import json

    from harness.campaigns.compare import Entry
    from harness.run.loop import RunResult

    (tmp_path / "run.json").write_text(json.dumps({"kafka": "3.9.2", "client": "confluent-kafka==2.16.1"}))
    started = {"name": "consumer_started", "source": "consumer-1", "member": "consumer-1", "incarnation": 1}
    events = [
        {"name": "run_started", "source": "harness", "kafka": "3.9.2", "client": "confluent-kafka==2.16.1"},
        {**started, "client_library": "librdkafka", "client_version": "2.12.1"},
        {**started, "source": "consumer-2", "member": "consumer-2", "client_version": "2.12.1"},
    ]
    # each writer numbers its own events from 1 (docs/history.md, Promises)
    (tmp_path / "history.jsonl").write_text(
        "".join(json.dumps({"ts": 1.0 + i, "mono_ms": 1.0 + i, "seq": 1, **e}) + "\n" for i, e in enumerate(events))
    )
    row = Entry("classic-eager", 1, "3.9", RunResult(tmp_path, "completed", None), {}).row()
    assert (row["kafka"], row["client"], row["client_version"]) == ("3.9.2", "confluent-kafka==2.16.1", "2.12.1")
    empty = tmp_path / "empty"
    empty.mkdir()
    row = Entry("classic-eager", 1, "3.9", RunResult(empty, "error", None), {}, "confluent-kafka==2.3.0").row()
    assert (row["kafka"], row["client"], row["client_version"]) == ("3.9", "confluent-kafka==2.3.0", None)
