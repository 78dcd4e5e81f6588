"""run.json always reaches a final state, whatever the run, its teardown or the oracle does;
verdict.json is written last and only when there is a verdict; no traceback on the terminal.

The run's phases are replaced by a few events (no cluster): what is under test is the
path from the end of the phases to the files on disk.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

import harness.run.loop
from harness.run.loop import Interrupted, Run
from harness.scenario import load_scenario
from harness.supervision.stop_signals import INTERRUPTS
from oracle.checks import CHECKS

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "smoke.yaml"

pytestmark = pytest.mark.usefixtures("as_from_a_terminal")  # tests/conftest.py


def phases_that_finish(run: Run) -> None:
    run.history.emit(
        "run_started",
        run_id=run.run_dir.name,
        scenario="smoke",
        seed=1,
        topics=[],
        group="g",
        protocol="classic-eager",
        assignor="range",
        members=[],
        checks={},
    )
    run._phase("workload")
    run._phase("done")


@pytest.fixture
def execute(tmp_path, monkeypatch):
    monkeypatch.setattr(Run, "_run_phases", phases_that_finish)
    reported: list[str] = []

    def execute():
        result = Run(load_scenario(SCENARIO), SCENARIO, tmp_path / "runs", reported.append).execute()
        events = [json.loads(line) for line in (result.run_dir / "history.jsonl").read_text().splitlines()]
        return result, json.loads((result.run_dir / "run.json").read_text()), events, reported

    return execute


def raise_(exc: BaseException):
    def raiser(*args, **kwargs):
        raise exc

    return raiser


def test_a_judged_run_writes_its_state_then_its_verdict(execute):
    result, state, events, _ = execute()
    assert (result.outcome, result.exit_code, state["state"], state["verdict"]) == ("completed", 0, "completed", "pass")
    assert (result.run_dir / "verdict.json").stat().st_mtime_ns >= (result.run_dir / "run.json").stat().st_mtime_ns
    assert json.loads((result.run_dir / "verdict.json").read_text())["status"] == "pass"
    assert events[-1]["name"] == "run_finished" and events[-1]["outcome"] == "completed"


def test_run_json_records_the_plugins_installed_from_start_to_end(execute, monkeypatch):
    from oracle import extensions

    toy = extensions.Plugin(extensions.CHECKS, "toy-commits", "toy_extension.check", "rebalance-lab-toy", "0.1.0")
    monkeypatch.setattr(extensions, "installed", lambda: (toy,))
    seen = []
    monkeypatch.setattr(
        Run,
        "_run_phases",
        lambda run: (seen.append(json.loads((run.run_dir / "run.json").read_text())), phases_that_finish(run)),
    )
    _, state, _, _ = execute()
    assert seen[0]["state"] == "running" and state["state"] == "completed"
    assert (
        seen[0]["plugins"]
        == state["plugins"]
        == [
            {
                "group": "rebalance_lab.checks",
                "name": "toy-commits",
                "value": "toy_extension.check",
                "distribution": "rebalance-lab-toy",
                "version": "0.1.0",
            }
        ]
    )


def test_a_check_that_raises_is_in_the_verdict_and_exits_3(execute, monkeypatch):
    monkeypatch.setattr(CHECKS["convergence"], "check", raise_(RuntimeError("checker bug")))
    result, state, _, _ = execute()
    assert (result.outcome, result.exit_code, state["state"], state["verdict"]) == (
        "completed",
        3,
        "completed",
        "error",
    )
    verdict = json.loads((result.run_dir / "verdict.json").read_text())
    assert verdict["errored_checks"] == {"convergence": "RuntimeError: checker bug"}
    assert verdict["checks"]["no-loss"]["status"] == "passed"  # the others still ran


def test_an_oracle_that_breaks_leaves_an_error_state_and_no_verdict(execute, monkeypatch, capsys):
    monkeypatch.setattr(harness.run.loop, "check_history", raise_(TypeError("oracle bug")))
    result, state, events, reported = execute()
    assert (result.outcome, result.exit_code, state["state"]) == ("error", 3, "error")
    assert state["error"].startswith("TypeError during judging: oracle bug (traceback in harness-error.txt)")
    assert "oracle bug" in (result.run_dir / "harness-error.txt").read_text()
    assert not (result.run_dir / "verdict.json").exists() and not (result.run_dir / "summary.md").exists()
    assert events[-1]["name"] == "run_finished" and events[-1]["outcome"] == "completed"  # the run itself did
    assert "Traceback" not in capsys.readouterr().err + "".join(reported)


def test_a_run_whose_own_history_breaks_a_promise_broke_and_has_no_verdict(execute, monkeypatch):
    def a_harness_that_starts_twice(run: Run) -> None:
        phases_that_finish(run)
        phases_that_finish(run)  # a second run_started in one history

    monkeypatch.setattr(Run, "_run_phases", a_harness_that_starts_twice)
    result, state, events, reported = execute()
    assert (result.outcome, result.exit_code, state["state"]) == ("error", 3, "error")
    assert state["error"].startswith("the run wrote a broken history: ") and "run-bounds" in state["error"]
    assert not (result.run_dir / "verdict.json").exists() and not (result.run_dir / "harness-error.txt").exists()
    assert any("broken history" in line for line in reported)


def test_a_teardown_that_breaks_still_ends_the_run(execute, monkeypatch):
    monkeypatch.setattr(Run, "_teardown", raise_(OSError("teardown bug")))
    result, state, events, _ = execute()
    assert (result.outcome, result.exit_code, state["state"]) == ("error", 3, "error")
    assert "OSError during teardown: teardown bug" in state["error"]
    assert events[-1]["name"] == "run_finished" and events[-1]["outcome"] == "error"
    assert not (result.run_dir / "verdict.json").exists()


@pytest.mark.parametrize("signal_", [KeyboardInterrupt(), Interrupted("SIGTERM")])
def test_an_interrupt_while_judging_is_an_interrupted_run(execute, monkeypatch, signal_):
    monkeypatch.setattr(harness.run.loop, "check_history", raise_(signal_))
    result, state, _, _ = execute()
    assert (result.outcome, result.exit_code, state["state"]) == ("interrupted", 130, "interrupted")
    assert "rebalance-lab check" in state["error"]
    assert not (result.run_dir / "verdict.json").exists()


@pytest.fixture
def handlers_kept():
    """The handlers a run found are the ones it leaves."""
    before = {s: signal.getsignal(s) for s in INTERRUPTS}
    yield
    assert {s: signal.getsignal(s) for s in INTERRUPTS} == before


def test_a_ctrl_c_while_the_run_installs_its_handlers_is_an_interrupted_run(execute, monkeypatch, handlers_kept):
    install = signal.signal

    def ctrl_c_amid_the_installs(signum, handler):
        if signum == signal.SIGTERM and callable(handler):  # SIGINT's is in by now
            monkeypatch.setattr(signal, "signal", install)
            signal.raise_signal(signal.SIGINT)
        return install(signum, handler)

    monkeypatch.setattr(signal, "signal", ctrl_c_amid_the_installs)
    result, state, events, reported = execute()
    assert (result.outcome, result.exit_code, state["state"]) == ("interrupted", 130, "interrupted")
    assert state["error"] == "interrupted before the run began" and reported == [state["error"]]
    assert events == [] and not (result.run_dir / "verdict.json").exists()


def test_a_ctrl_c_during_the_teardown_waits_for_it_and_the_run_goes_unjudged(execute, monkeypatch, handlers_kept):
    teardown = Run._teardown

    def ctrl_c_then_teardown(run, interrupted):
        signal.raise_signal(signal.SIGINT)
        teardown(run, interrupted)
        run.history.emit("teardown_done")

    monkeypatch.setattr(Run, "_teardown", ctrl_c_then_teardown)
    result, state, events, _ = execute()
    assert [e["name"] for e in events[-2:]] == ["teardown_done", "run_finished"]
    assert events[-1]["outcome"] == "completed"  # the run itself did: only its verdict is left to `check`
    assert (result.outcome, result.exit_code, state["state"]) == ("interrupted", 130, "interrupted")
    assert "rebalance-lab check" in state["error"] and not (result.run_dir / "verdict.json").exists()


@pytest.mark.parametrize("oracle", ["passes", "breaks"])
def test_a_ctrl_c_during_the_last_words_waits_for_them_and_asks_the_caller_to_stop(
    execute, monkeypatch, handlers_kept, oracle
):
    if oracle == "breaks":
        monkeypatch.setattr(harness.run.loop, "check_history", raise_(TypeError("oracle bug")))
    write_state = Run._state

    def ctrl_c_then_write(run, state, **extra):
        if state != "running":
            signal.raise_signal(signal.SIGINT)
        write_state(run, state, **extra)

    monkeypatch.setattr(Run, "_state", ctrl_c_then_write)
    result, state, _, _ = execute()
    assert result.stop_requested and result.stopped  # a suite or a compare stops after this run
    if oracle == "passes":
        assert (result.exit_code, state["state"], state["verdict"]) == (0, "completed", "pass")
        assert json.loads((result.run_dir / "verdict.json").read_text())["status"] == "pass"
    else:
        assert (result.exit_code, state["state"]) == (3, "error") and "oracle bug" in state["error"]
        assert not (result.run_dir / "verdict.json").exists()


def test_a_ctrl_c_once_judged_leaves_no_verdict(execute, monkeypatch, handlers_kept):
    summary = harness.run.loop.reporting.summary_markdown

    def ctrl_c_then_summary(verdict, run_dir, expectation=None):
        signal.raise_signal(signal.SIGINT)
        return summary(verdict, run_dir, expectation)

    monkeypatch.setattr(harness.run.loop.reporting, "summary_markdown", ctrl_c_then_summary)
    result, state, _, _ = execute()
    assert (result.outcome, result.verdict, state["state"]) == ("interrupted", None, "interrupted")
    assert "verdict" not in state and not (result.run_dir / "verdict.json").exists()
    assert not (result.run_dir / "summary.md").exists()


def test_a_ctrl_c_while_a_failed_run_says_why_keeps_the_reason_and_still_tears_down(
    execute, monkeypatch, handlers_kept
):
    from runtime.errors import LabError

    def phases_that_fail(run):
        phases_that_finish(run)
        run.report = lambda _msg: signal.raise_signal(signal.SIGINT)  # as it says "run failed: …"
        raise LabError("the cluster never became ready")

    monkeypatch.setattr(Run, "_run_phases", phases_that_fail)
    result, state, events, _ = execute()
    assert (result.outcome, state["state"], state["error"]) == ("error", "error", "the cluster never became ready")
    assert events[-1]["name"] == "run_finished" and events[-1]["outcome"] == "error"
    assert result.stop_requested
