"""One run's tables (analysis.run_tables), without Spark: the shapes of history a Spark task
must read without losing the run — mixed error codes, faults without an id, an explanation
that cannot be worked out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis import run_tables
from analysis.run_tables import RunRef, tables_of
from tests.unit.conftest import HistoryBuilder


def _tables(tmp_path: Path, events: list[dict]) -> dict:
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    key, tables = tables_of(RunRef("k", "run-1", str(tmp_path)))
    assert key == "k" and isinstance(tables, dict), tables
    return tables


def _story() -> tuple[HistoryBuilder, object]:
    b = HistoryBuilder(topics={"events": 2})
    c1 = b.consumer("consumer-1").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0, 1]}, at=10)
    return b, c1


def test_failed_commits_with_and_without_an_error_code_are_counted_per_code(tmp_path):
    b, c1 = _story()
    c1.at(100).committed(0, 5, success=False, error="REBALANCE_IN_PROGRESS")  # error_code 22 (the builder's)
    events = b.build()
    failed = [e for e in events if e["name"] == "offsets_committed"]
    # VerifiableConsumer writes no code for a CommitFailedException
    events.append(
        {
            **failed[0],
            "seq": failed[0]["seq"] + 1,
            "mono_ms": failed[0]["mono_ms"] + 1,
            "error_code": None,
            "error": "CommitFailedException",
        }
    )
    rows = _tables(tmp_path, events)["commit_failures"]
    assert sorted((r["error_code"], r["error"], r["failed"]) for r in rows) == [
        ("22", "REBALANCE_IN_PROGRESS", 1),
        ("none", "CommitFailedException", 1),
    ]


def test_a_heal_without_a_fault_id_ends_no_other_faults_window(tmp_path):
    b, _ = _story()
    b.at(1000).fault("pause", "consumer-1", fault_id=None)
    b.at(2000).fault("pause", "consumer-2", fault_id=None)
    b.at(3000).healed("pause", "consumer-1", fault_id=None)
    b.at(9000).phase("done")
    faults = _tables(tmp_path, b.build())["faults"]
    assert [(f["target"], f["end_mono"], f["healed_how"]) for f in faults] == [
        ("consumer-1", 9000.0, None),
        ("consumer-2", 9000.0, None),
    ]  # nothing says which one was healed


def test_a_run_whose_explanation_fails_keeps_its_figures(tmp_path, monkeypatch):
    def broken(history):
        raise RuntimeError("boom")

    monkeypatch.setattr(run_tables, "explain_rebalances", broken)
    b, _ = _story()
    [r] = _tables(tmp_path, b.build())["rebalances"]
    assert r["status"] == "completed" and r["duration_ms"] is not None
    assert (r["cause"], r["waited_for"], r["explanation"]) == (None, None, None)


def test_sums_over_nothing_are_still_milliseconds(tmp_path):
    b, _ = _story()  # one rebalance, nothing handed over
    [run] = _tables(tmp_path, b.build())["runs"]
    assert run["stw_total_ms"] == 0.0 and isinstance(run["stw_total_ms"], float)


@pytest.mark.parametrize("broken", ["not json\n", ""])
def test_a_history_the_oracle_cannot_read_is_named_not_raised(tmp_path, broken):
    (tmp_path / "history.jsonl").write_text(broken)
    key, reason = tables_of(RunRef("k", "run-1", str(tmp_path)))
    assert key == "k" and isinstance(reason, str) and "history.jsonl" in reason


@pytest.mark.parametrize("reason_on, drain_s", [(None, 7.5), ("drain", None), ("done", None)])
def test_drain_time_is_the_wait_for_a_stable_drained_group_and_none_when_the_harness_gave_up(
    tmp_path, reason_on, drain_s
):
    b, _ = _story()
    b.at(2000).phase("recovery").at(4000).phase("drain").at(9500).phase("done")
    events = b.build()
    for e in events:
        if e["name"] == "phase" and e["phase"] == reason_on:
            e["reason"] = "lag not drained after 120s" if reason_on == "done" else "group not stable after 120s"
    [run] = _tables(tmp_path, events)["runs"]
    assert run["drain_s"] == drain_s
