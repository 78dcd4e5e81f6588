"""Figures for people, one rule everywhere (oracle/units.py): the run page, the analysis page,
the suite's index.html and the console's tables write a duration as whole milliseconds below
10 s and seconds with two decimals above (one from 100 s), never to a thousandth of a millisecond."""

from __future__ import annotations

import re

import pytest

from analysis import plots
from analysis.report import run_report, table, unit_of
from analysis.synthetic import crowded_page
from harness.reports import run as console_reports
from harness.reports.suite import html_page
from oracle.units import format_ms, format_number, format_offset_s, format_s

# a figure printed finer than the rule allows: three decimals or more
TOO_PRECISE = re.compile(r"\d\.\d{3,}")


@pytest.mark.parametrize(
    "ms, text",
    [
        (None, "—"),
        (0.4, "0 ms"),
        (812.3456, "812 ms"),
        (4974.0, "4974 ms"),
        (9999.4, "9999 ms"),
        (9999.6, "10.00 s"),  # rounds to 10 s: seconds from there
        (12345.678, "12.35 s"),
        (99996.0, "100.0 s"),
        (123456.789, "123.5 s"),
        (-42.4, "-42 ms"),  # a phase measured from before the rebalance began
    ],
)
def test_a_duration_is_whole_ms_below_10_s_and_seconds_above(ms, text):
    assert format_ms(ms) == text


def test_seconds_and_moments():
    assert format_s(60.123456) == "60.12 s" and format_s(0.0421) == "42 ms" and format_s(None) == "—"
    assert format_offset_s(22.449999) == "22.45" and format_offset_s(3) == "3.00"


@pytest.mark.parametrize(
    "value, text",
    [
        (None, "—"),
        (7, "7"),
        (1234567, "1234567"),
        (4.0, "4"),
        (199.8765, "200"),
        (12.34567, "12.3"),
        (0.01234, "0.0123"),
    ],
)
def test_other_figures_have_three_significant_digits_at_most_below_100(value, text):
    assert format_number(value) == text


@pytest.mark.parametrize(
    "key, row, unit",
    [
        ("duration_ms", None, "ms"),
        ("drain_s", None, "s"),
        ("start_s", None, "offset"),  # a moment of the run, not a duration
        ("consume_rps", None, None),
        ("rebalance_ms.p95", None, "ms"),  # the comparison's column: a statistic of a duration
        ("rebalance_ms.count", None, None),  # how many: a count
        ("p95", {"metric": "unowned_ms"}, "ms"),  # by_group: in the row's metric's unit
        ("count", {"metric": "unowned_ms"}, None),
        ("max", {"metric": "peak_lag"}, None),
    ],
)
def test_a_column_is_in_the_unit_its_name_says(key, row, unit):
    assert unit_of(key, row) == unit


def test_the_by_group_table_writes_each_row_in_its_metric_unit():
    rows = [
        {"metric": "rebalance_ms", "count": 3, "mean": 1234.5678, "p95": 15000.25},
        {"metric": "peak_lag", "count": 3, "mean": 12.3456, "p95": 4000.0},
    ]
    html = table(rows, ["metric", "count", "mean", "p95"], left=("metric",))
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    assert cells == ["rebalance_ms", "3", "1235 ms", "15.00 s", "peak_lag", "3", "12.3", "4000"]
    assert html.startswith("<div class='scroll'>")  # a wide table scrolls in its own box


def _page_text(html: str) -> str:
    html = re.sub(r"<img[^>]*>", "", html)  # the figures' base64
    return re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", "", html, flags=re.S))


def test_the_run_page_has_no_figure_to_a_thousandth(tmp_path, monkeypatch):
    for name in ("ownership_timeline", "lag_over_time", "rebalance_durations"):
        monkeypatch.setattr(plots, name, lambda *args: b"")  # the tables only: the figures have their own test
    run, tables = crowded_page()
    text = _page_text(run_report(tmp_path, run, tables).read_text())
    assert not TOO_PRECISE.findall(text)
    for shown in ("60.12 s", "123.5 s", "9877 ms", "812 ms", "200", "12.3"):  # the run's own figures
        assert f" {shown} " in text
    first = tables["rebalances"][0]
    assert f" {format_offset_s(first['start_s'])} " in text and f" {format_ms(first['duration_ms'])} " in text


def test_the_suite_page_has_no_figure_to_a_thousandth(tmp_path):
    variant = {
        "id": "smoke[classic-eager, seed 1]",
        "scenario": "smoke",
        "state": "passed",
        "seconds": 42.123456,
        "figures": {"rebalances": 3, "rebalance_p95_ms": 812.3456, "rebalance_max_ms": 12345.678},
        "violations": [],
        "reason": "",
    }
    suite = {"suite": "s", "state": "completed", "started": "2026-11-28T17:00:00Z", "variants": [variant]}
    text = _page_text(html_page(suite, tmp_path))
    assert not TOO_PRECISE.findall(text)
    assert " 42.12 s " in text and " 812 ms " in text and " 12.35 s " in text


def test_the_console_tables_write_durations_by_the_same_rule():
    assert console_reports._ms is format_ms
