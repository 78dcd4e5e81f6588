"""check_history / Verdict: selecting checks, options, and the JSON-ready verdict."""
import json

import pytest

from oracle import CHECK_NAMES, History, Verdict, check_history, load_history


def test_check_names():
    assert CHECK_NAMES == ("exclusive-ownership", "fenced-commits", "commit-monotonicity", "no-loss",
                           "contiguity", "duplicates", "convergence", "assignment-validity")


def test_no_checks_named_means_all_checks_with_defaults(pause_story):
    for checks in (None, {}):
        verdict = check_history(pause_story.build(), checks)
        assert isinstance(verdict, Verdict) and list(verdict.checks) == list(CHECK_NAMES)


def test_only_the_named_checks_run(pause_story):
    verdict = check_history(pause_story.build(), {"no-loss": {}, "duplicates": None})
    assert list(verdict.checks) == ["no-loss", "duplicates"]


@pytest.mark.parametrize("checks, error", [
    ({"no-los": {}}, "unknown check 'no-los'"),
    ({"exclusive-ownership": {"spilt_brain": "fail"}}, "has no option 'spilt_brain'; it accepts: split_brain"),
    ({"exclusive-ownership": {"split_brain": "panic"}}, "split_brain must be one of"),
])
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
    assert set(d) == {"ok", "violations", "findings", "checks", "rebalances", "duplicates", "stats"}
    assert d["ok"] is False
    assert {(v["check"], v["kind"]) for v in d["violations"]} == {
        ("fenced-commits", "commit-after-handover"), ("no-loss", "lost-write")}
    lost = next(v for v in d["violations"] if v["check"] == "no-loss")
    assert (lost["partition"], lost["offsets"], lost["count"]) == ("events-3", "5-9", 5)
    fenced = next(v for v in d["violations"] if v["check"] == "fenced-commits")
    assert fenced["members"] == ["consumer-2", "consumer-1"] and fenced["generation"] == 1
    assert set(fenced["times"]["taken_over"]) == {"ts", "mono_ms"}
    assert d["checks"]["no-loss"] == {"status": "failed", "violations": 1, "findings": 0,
                                      "detail": {"acked": 10, "lost": 5}}
    assert d["checks"]["exclusive-ownership"]["status"] == "passed"
    assert [(r["generation"], r["status"]) for r in d["rebalances"]] == [(1, "completed"), (2, "completed"),
                                                                        (3, "completed")]
    assert all("duration_ms" in r for r in d["rebalances"])
    assert d["duplicates"] == {"count": 0, "explained": 0, "unexplained": 0, "ranges": []}
    assert d["stats"]["acked"] == 10 and d["stats"]["consumed"] == 5
    assert d["stats"]["commits"] == {"ok": 1, "failed": {}}
    assert d["stats"]["members"] == ["consumer-1", "consumer-2"]


def test_a_clean_run_is_ok_and_renders(history_builder):
    b = history_builder(topics={"events": 1})
    c1 = b.consumer("consumer-1").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0]}, at=0)
    b.at(50).acked(0, 0, 9)
    c1.at(60).consumed(0, 0, 9).committed(0, 10)
    b.at(100).done()
    verdict = check_history(b.build())
    assert verdict.ok and verdict.violations == [] and verdict.findings == []
    text = verdict.render()
    assert text.startswith("PASS: 0 violations, 0 findings")
    assert "rebalance to generation 1: 15 ms, trigger group_join_sent by consumer-1" in text


def test_round_trip_through_a_history_file(tmp_path, pause_story):
    lines = [json.dumps(e) for e in reversed(failing_run(pause_story).build())]
    (tmp_path / "history.jsonl").write_text("\n".join(lines) + '\n{"name": "recor', encoding="utf-8")
    from_file = check_history(load_history(tmp_path)).to_dict()
    assert from_file == check_history(History(pause_story.build())).to_dict()
