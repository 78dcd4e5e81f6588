"""A verdict's status on the terminal, in summary.md and in `check`'s exit code:
PASS 0, FAIL 1, ERROR 3 (a check raised), INCOMPLETE 4 (a check could not judge)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from harness.cli import main
from harness.reports.run import print_verdict, summary_markdown
from oracle import check_history
from oracle.checks import CHECKS
from oracle.verdict import STATUSES
from runtime.errors import EXIT_FOR_VERDICT


def story(b, *, done: bool = True, lost: bool = False):
    """One member consumes and commits what was acknowledged (all of it, unless `lost`)."""
    c1 = b.consumer("consumer-1").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0]}, at=0)
    b.at(50).acked(0, 0, 9)
    c1.at(60).consumed(0, 0, 4 if lost else 9).committed(0, 5 if lost else 10)
    if done:
        b.at(100).done()
    return b.build()


def boom(history, options):
    raise RuntimeError("checker bug [/bold]")  # rich markup in a message must print as text


def judged(events) -> dict:
    return {"run_id": "run-1", "scenario": "unit", "seed": 7, **check_history(events).to_dict()}


def printed(verdict: dict) -> list[str]:
    console = Console(record=True, width=400)
    print_verdict(console, verdict, Path("runs/r1"))
    return console.export_text().splitlines()


def test_every_status_has_an_exit_code():
    assert set(EXIT_FOR_VERDICT) == set(STATUSES)
    assert EXIT_FOR_VERDICT == {"pass": 0, "fail": 1, "error": 3, "incomplete": 4}


def test_headlines_name_the_status_and_what_was_not_judged(history_builder, monkeypatch):
    lines = printed(judged(story(history_builder(topics={"events": 1}), done=False)))
    assert lines[-1].startswith(
        "INCOMPLETE: 0 violations, 0 findings — no-loss, convergence skipped (no `phase: done` event"
    )
    assert "convergence skipped" in lines[-1] and lines[-1].endswith(" — runs/r1")

    lines = printed(judged(story(history_builder(topics={"events": 1}), lost=True)))
    assert lines[-1] == "FAIL: 1 violations, 0 findings — runs/r1"

    lines = printed(judged(story(history_builder(topics={"events": 1}))))
    assert lines[-1] == "PASS: 0 violations, 0 findings — runs/r1"

    monkeypatch.setattr(CHECKS["contiguity"], "check", boom)
    lines = printed(judged(story(history_builder(topics={"events": 1}))))
    assert (
        lines[-1] == "ERROR: 0 violations, 0 findings — contiguity raised RuntimeError: checker bug [/bold] — runs/r1"
    )
    where = next(line for line in lines if line.startswith("error [contiguity]"))
    assert "test_harness_verdict_status.py" in where and "in boom" in where


def test_summary_md_headlines_the_status(tmp_path, history_builder, monkeypatch):
    text = summary_markdown(judged(story(history_builder(topics={"events": 1}), done=False)), tmp_path)
    assert text.startswith(
        "# unit — INCOMPLETE\n\n**INCOMPLETE**: 0 violations, 0 findings — no-loss, convergence skipped ("
    )
    monkeypatch.setattr(CHECKS["convergence"], "check", boom)
    text = summary_markdown(judged(story(history_builder(topics={"events": 1}))), tmp_path)
    assert text.startswith("# unit — ERROR\n\n**ERROR**: 0 violations, 0 findings — convergence raised RuntimeError")
    assert "| convergence | error — RuntimeError: checker bug [/bold] | 0 | 0 |" in text


def test_a_fault_the_run_could_not_inject_is_said_beside_a_pass(tmp_path, history_builder):
    b = history_builder(topics={"events": 1})
    b.at(30).emit(
        "fault_failed",
        "harness",
        fault_id="f1",
        kind="pause",
        target="consumer-3",
        error="no service named 'consumer-3' in this run",
    )
    verdict = judged(story(b))
    assert verdict["status"] == "pass"
    line = "f1 (pause consumer-3) could not be injected: no service named 'consumer-3' in this run"
    assert f"fault {line}" in printed(verdict)
    assert f"## Faults not done\n\n- {line}" in summary_markdown(verdict, tmp_path)


def test_a_measurement_that_raised_is_in_the_table_and_summary(tmp_path, history_builder, monkeypatch):
    import oracle.verdict

    def stats(history):
        return {}["x"]

    monkeypatch.setattr(oracle.verdict, "run_stats", stats)
    verdict = judged(story(history_builder(topics={"events": 1})))
    assert verdict["status"] == "error" and verdict["errored_checks"] == {"stats measurement": "KeyError: 'x'"}
    assert any(line.startswith("error [stats measurement] KeyError: 'x'") for line in printed(verdict))
    assert "(no statistics: their measurement raised)" in summary_markdown(verdict, tmp_path)


# -- `rebalance-lab check` ---------------------------------------------------------------------------


def run_dir(tmp_path: Path, events: list[dict], state: dict | None = None) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    (d / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    if state:
        (d / "run.json").write_text(json.dumps(state))
    return d


def check(*args: str):
    return CliRunner().invoke(main, ["check", *args])


@pytest.mark.parametrize(
    "shape, code, headline",
    [
        (dict(), 0, "PASS: 0 violations"),
        (dict(lost=True), 1, "FAIL: 1 violations"),
        (dict(done=False), 4, "INCOMPLETE: 0 violations"),
    ],
)
def test_check_exits_with_its_verdicts_status(tmp_path, history_builder, shape, code, headline):
    result = check(str(run_dir(tmp_path, story(history_builder(topics={"events": 1}), **shape))))
    assert result.exit_code == code, result.output
    assert headline in result.output


def test_check_write_rewrites_the_verdict_run_json_says(tmp_path, history_builder):
    d = run_dir(
        tmp_path, story(history_builder(topics={"events": 1}), lost=True), {"state": "completed", "verdict": "pass"}
    )
    assert check(str(d), "--write").exit_code == 1
    assert json.loads((d / "run.json").read_text()) == {"state": "completed", "verdict": "fail"}
    assert json.loads((d / "verdict.json").read_text())["status"] == "fail"


def test_check_exits_3_when_a_check_raised(tmp_path, history_builder, monkeypatch):
    monkeypatch.setattr(CHECKS["no-loss"], "check", boom)
    d = run_dir(tmp_path, story(history_builder(topics={"events": 1})))
    result = check(str(d), "--write")
    assert result.exit_code == 3, result.output
    assert "ERROR: 0 violations, 0 findings — no-loss raised RuntimeError: checker bug" in result.output
    assert "Traceback" not in result.output
    written = json.loads((d / "verdict.json").read_text())
    assert written["status"] == "error" and written["ok"] is False
    assert "in boom" in written["checks"]["no-loss"]["detail"]["traceback"]


def test_check_of_a_killed_run_is_incomplete_and_says_why(tmp_path, history_builder):
    state = {
        "state": "killed",
        "killed": {
            "stopped_at": "2025-01-01T00:00:00+00:00",
            "by": "rebalance-lab cleanup",
            "processes": [{"process": "consumer-1"}, {"process": "broker-1"}],
        },
    }
    result = check(str(run_dir(tmp_path, story(history_builder(topics={"events": 1}), done=False), state)))
    assert result.exit_code == 4, result.output
    assert (
        "INCOMPLETE: 0 violations, 0 findings — no-loss, convergence skipped (no `phase: done` event" in result.output
    )
    assert (
        "run.json: killed — its harness died without tearing down; rebalance-lab cleanup stopped 2 of its "
        "processes at 2025-01-01T00:00:00+00:00"
    ) in result.output


def test_analysis_skips_a_run_whose_rewritten_verdict_is_incomplete(tmp_path, history_builder):
    from analysis.runs import find_runs

    d = run_dir(tmp_path, story(history_builder(topics={"events": 1}), done=False), {"state": "interrupted"})
    assert check(str(d), "--write").exit_code == 4
    runs, skipped = find_runs([str(d)])
    assert runs == [] and [s.reason for s in skipped] == [
        "unfinished: its verdict is INCOMPLETE (the run never reached `phase: done`)"
    ]
