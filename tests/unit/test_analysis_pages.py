"""Which runs get a page in an analysis (analysis/pages.py): pure, no Spark."""

import pytest

from analysis.pages import (
    EVERY_RUN_PAGE_UP_TO,
    PAGE,
    PAGE_PLOTS,
    remove_old_pages,
    runs_with_pages,
    shows_problem,
)

CLEAN = {"run": "clean", "outcome": "completed", "lost_records": 0, "duplicates": 4, "duplicates_explained": 4}


def run(name: str, **changes) -> dict:
    return {**CLEAN, "run": name, **changes}


@pytest.mark.parametrize(
    "changes, problem",
    [
        ({}, False),
        ({"outcome": "interrupted"}, True),
        ({"outcome": "error"}, True),
        ({"lost_records": 3}, True),
        ({"duplicates": 5}, True),  # one delivered twice that no rebalance explains
        ({"lost_records": None, "duplicates": None, "duplicates_explained": None}, False),  # a run with no records
    ],
)
def test_a_run_shows_a_problem_by_its_own_figures(changes, problem):
    assert shows_problem(run("r", **changes)) is problem


def test_a_run_whose_verdict_failed_shows_a_problem_whatever_its_figures():
    clean = run("r", run_key="k1")  # e.g. two owners at once: exclusive-ownership, nothing lost
    assert shows_problem(clean, frozenset({"k1"})) and not shows_problem(clean, frozenset({"k2"}))


def test_auto_draws_every_page_for_a_few_runs_and_only_the_problems_for_many():
    few = [run(f"r{i}") for i in range(EVERY_RUN_PAGE_UP_TO - 1)] + [run("lossy", lost_records=1)]
    assert runs_with_pages(few, "auto") == few
    many = few + [run("one-more")]
    assert [r["run"] for r in runs_with_pages(many, "auto")] == ["lossy"]
    assert runs_with_pages(many, "all") == many
    assert [r["run"] for r in runs_with_pages(few, "problems")] == ["lossy"]
    assert runs_with_pages(few, "none") == []


def test_an_unknown_choice_is_refused_by_name():
    with pytest.raises(ValueError, match="'some'"):
        runs_with_pages([CLEAN], "some")


def test_an_earlier_analysis_pages_go_and_nothing_else_under_runs(tmp_path):
    old = tmp_path / "runs" / "a-run-no-longer-analysed"
    old.mkdir(parents=True)
    for name in (PAGE, *PAGE_PLOTS):
        (old / name).write_text("drawn by an earlier analysis")
    real = tmp_path / "runs" / "a-real-run-directory"  # `--out .` beside the runs themselves
    real.mkdir()
    for name in ("history.jsonl", "verdict.json", PAGE):
        (real / name).write_text("{}")
    just_made = tmp_path / "runs" / "a-run-just-started"  # empty until its harness writes: not ours to remove
    just_made.mkdir()
    remove_old_pages(tmp_path)
    assert not old.exists() and just_made.is_dir()
    assert sorted(p.name for p in real.iterdir()) == ["history.jsonl", "verdict.json"]
    remove_old_pages(tmp_path / "nothing-here-yet")  # a first analysis: nothing to remove
