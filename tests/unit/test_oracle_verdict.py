"""check_history / Verdict: selecting checks, options, and the JSON-ready verdict."""

import json

import pytest

from oracle import CHECK_NAMES, History, Verdict, check_history, load_history


def test_check_names():
    assert CHECK_NAMES == (
        "exclusive-ownership",
        "fenced-commits",
        "commit-monotonicity",
        "no-loss",
        "contiguity",
        "duplicates",
        "convergence",
        "assignment-validity",
        "client-health",
    )


def test_no_checks_named_means_all_checks_with_defaults(pause_story):
    for checks in (None, {}):
        verdict = check_history(pause_story.build(), checks)
        assert isinstance(verdict, Verdict) and list(verdict.checks) == ["history-integrity", *CHECK_NAMES]


def test_only_the_named_checks_run(pause_story):
    verdict = check_history(pause_story.build(), {"no-loss": {}, "duplicates": None})
    assert list(verdict.checks) == ["history-integrity", "no-loss", "duplicates"]  # the history's promises: always


@pytest.mark.parametrize(
    "checks, error",
    [
        ({"no-los": {}}, "unknown check 'no-los'"),
        ({"exclusive-ownership": {"spilt_brain": "fail"}}, "has no option 'spilt_brain'; it accepts: split_brain"),
        ({"exclusive-ownership": {"split_brain": "panic"}}, "split_brain must be one of"),
    ],
)
def test_typos_in_scenario_options_are_errors(pause_story, checks, error):
    with pytest.raises(ValueError, match=error):
        check_history(pause_story.build(), checks)


def failing_run(b):
    """The pause story with a zombie commit accepted and a record lost."""
    b.at(100).acked(3, 0, 9)
    b["consumer-2"].at(4000).consumed(3, 0, 4)
    b["consumer-2"].at(20005).committed(3, 5, sent_at=20004)
    b.at(30000).done()
    return b


def test_verdict_dict_shape(pause_story):
    d = check_history(failing_run(pause_story).build()).to_dict()
    json.dumps(d)  # JSON-ready as is
    assert set(d) == {
        "status",
        "ok",
        "skipped_checks",
        "errored_checks",
        "violations",
        "findings",
        "checks",
        "measurements",
        "rebalances",
        "duplicates",
        "stats",
    }
    assert d["status"] == "fail" and d["ok"] is False
    assert d["skipped_checks"] == {} and d["errored_checks"] == {} and d["measurements"] == {}
    assert {(v["check"], v["kind"]) for v in d["violations"]} == {
        ("fenced-commits", "commit-after-handover"),
        ("no-loss", "lost-write"),
    }
    lost = next(v for v in d["violations"] if v["check"] == "no-loss")
    assert (lost["partition"], lost["offsets"], lost["count"]) == ("events-3", "5-9", 5)
    fenced = next(v for v in d["violations"] if v["check"] == "fenced-commits")
    assert fenced["members"] == ["consumer-2", "consumer-1"] and fenced["generation"] == 1
    assert set(fenced["times"]["taken_over"]) == {"ts", "mono_ms"}
    assert d["checks"]["no-loss"] == {
        "status": "failed",
        "violations": 1,
        "findings": 0,
        "detail": {"acked": 10, "lost": 5},
    }
    assert d["checks"]["exclusive-ownership"]["status"] == "passed"
    assert [(r["generation"], r["status"]) for r in d["rebalances"]] == [
        (1, "completed"),
        (2, "completed"),
        (3, "completed"),
    ]
    assert all("duration_ms" in r for r in d["rebalances"])
    assert d["duplicates"] == {
        "count": 0,
        "explained": 0,
        "unexplained": 0,
        "ranges": [],
        "by_cause": {"hand-over": 0, "zombie": 0, "below-commit": 0, "same-session": 0, "non-owner": 0},
    }
    assert d["stats"]["acked"] == 10 and d["stats"]["consumed"] == 5
    assert d["stats"]["commits"] == {"ok": 1, "failed": {}}
    assert d["stats"]["members"] == ["consumer-1", "consumer-2"]


def test_a_clean_run_is_ok_and_renders(history_builder):
    verdict = check_history(clean_run(history_builder).build())
    assert verdict.ok and verdict.violations == [] and verdict.findings == []
    text = verdict.render()
    assert text.startswith("PASS: 0 violations, 0 findings")
    assert "rebalance to generation 1: 15 ms, trigger group_join_sent by consumer-1" in text


def test_round_trip_through_a_history_file(tmp_path, pause_story):
    # out of time order, as several appending writers leave it; each writer's own lines in its order
    lines = [
        json.dumps(e)
        for e in sorted(
            failing_run(pause_story).build(), key=lambda e: (e["source"], e.get("incarnation") or 1, e["seq"])
        )
    ]
    (tmp_path / "history.jsonl").write_text("\n".join(lines) + '\n{"name": "recor', encoding="utf-8")
    from_file = check_history(load_history(tmp_path)).to_dict()
    loaded = from_file["checks"]["history-integrity"].pop("detail")  # what the loader saw of the file
    assert loaded["torn"] == [[len(lines) + 1, len('{"name": "recor')]] and not loaded["duplicates"]
    in_memory = check_history(History(pause_story.build())).to_dict()
    assert in_memory["checks"]["history-integrity"].pop("detail") == {}
    assert from_file == in_memory


# -- status: pass, fail, incomplete, error -------------------------------------------------------


def clean_run(history_builder, done: bool = True):
    b = history_builder(topics={"events": 1})
    c1 = b.consumer("consumer-1").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0]}, at=0)
    b.at(50).acked(0, 0, 9)
    c1.at(60).consumed(0, 0, 9).committed(0, 10)
    if done:
        b.at(100).done()
    return b


def test_a_run_that_never_reached_done_is_incomplete_not_a_pass(history_builder):
    verdict = check_history(clean_run(history_builder, done=False).build())
    assert verdict.violations == [] and verdict.status == "incomplete" and not verdict.ok
    assert set(verdict.skipped_checks) == {"no-loss", "convergence"}
    assert all("phase: done" in why for why in verdict.skipped_checks.values())
    headline = verdict.render().splitlines()[0]
    assert headline.startswith(
        "INCOMPLETE: 0 violations, 0 findings — no-loss, convergence skipped (no `phase: done` event"
    )
    assert "convergence skipped (" in headline
    d = verdict.to_dict()
    assert d["status"] == "incomplete" and d["ok"] is False and d["skipped_checks"] == verdict.skipped_checks


def test_a_violation_fails_the_run_even_when_checks_were_skipped(pause_story):
    pause_story.at(100).acked(3, 0, 9)
    pause_story["consumer-2"].at(20005).committed(3, 5, sent_at=20004)  # a zombie's commit accepted
    verdict = check_history(pause_story.build())  # and no `phase: done`
    assert verdict.status == "fail" and verdict.skipped_checks
    assert verdict.render().startswith("FAIL: 1 violations, ")


def boom(history, options):
    raise RuntimeError("checker bug")


def test_a_check_that_raises_is_its_error_and_the_others_still_run(history_builder, monkeypatch):
    from oracle.checks import CHECKS

    monkeypatch.setattr(CHECKS["convergence"], "check", boom)
    verdict = check_history(clean_run(history_builder).build())
    assert verdict.status == "error" and not verdict.ok
    assert verdict.errored_checks == {"convergence": "RuntimeError: checker bug"}
    assert [n for n, r in verdict.checks.items() if r.status == "passed"] == [
        "history-integrity",
        *(n for n in CHECK_NAMES if n != "convergence"),
    ]
    result = verdict.to_dict()["checks"]["convergence"]
    assert result["status"] == "error" and result["reason"] == "RuntimeError: checker bug"
    assert "in boom" in result["detail"]["traceback"] and "checker bug" in result["detail"]["traceback"]
    assert verdict.render().startswith("ERROR: 0 violations, 0 findings — convergence raised RuntimeError: checker bug")


def test_a_violation_outranks_a_check_that_raised(pause_story, monkeypatch):
    from oracle.checks import CHECKS

    monkeypatch.setattr(CHECKS["contiguity"], "check", boom)
    verdict = check_history(failing_run(pause_story).build())
    assert verdict.status == "fail" and "contiguity" in verdict.errored_checks
    assert {v.check for v in verdict.violations} == {"fenced-commits", "no-loss"}


def test_a_measurement_that_raises_is_an_error_too(history_builder, monkeypatch):
    import oracle.verdict

    monkeypatch.setattr(oracle.verdict, "run_rebalances", lambda history: 1 / 0)
    verdict = check_history(clean_run(history_builder).build())
    assert verdict.status == "error" and verdict.rebalances == []
    assert verdict.errored_checks == {"rebalances measurement": "ZeroDivisionError: division by zero"}
    d = verdict.to_dict()
    assert d["measurements"]["rebalances"]["status"] == "error" and d["rebalances"] == []
    json.dumps(d)


def test_an_interrupt_inside_a_check_is_not_taken_for_a_checker_bug(history_builder, monkeypatch):
    from oracle.checks import CHECKS

    def interrupted(history, options):
        raise KeyboardInterrupt

    monkeypatch.setattr(CHECKS["no-loss"], "check", interrupted)
    with pytest.raises(KeyboardInterrupt):
        check_history(clean_run(history_builder).build())


def test_an_empty_history_does_not_crash_the_oracle():
    assert check_history([]).status == "incomplete"


def test_partitions_added_mid_run_say_how_long_until_the_last_was_owned(history_builder):
    """The group noticing new partitions and rebalancing to them (librdkafka's KIP-848 claim is
    about this): from `partitions_added` to the first assignment of the last new one."""
    b = history_builder(topics={"events": 2})
    c1 = b.consumer("consumer-1").start()
    b.rebalance(1, {"consumer-1": [0, 1]}, at=0)
    b.at(1000).emit("partitions_added", "harness", topic="events", partitions=4, subscribed=True)
    c1.at(4000).revoked().join_sent()
    c1.at(4010).joined(2, leader=True)
    c1.at(4020).synced().assigned(0, 1, 2, 3)
    b.at(5000).emit("partitions_added", "harness", topic="events", partitions=6, subscribed=True)  # never noticed
    stats = check_history(b.build()).to_dict()["stats"]
    assert stats["partitions_added"] == [
        {"topic": "events", "partitions": 4, "added": 2, "owned_after_ms": pytest.approx(3020, abs=1)},
        {"topic": "events", "partitions": 6, "added": 2, "owned_after_ms": None},
    ]
