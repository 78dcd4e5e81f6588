"""Self-contained HTML pages: one per run, one per analysis. Images are inlined as base64
PNG (the PNG files are written next to the pages as well), so a page can be mailed
or attached to a CI job on its own."""

from __future__ import annotations

import base64
import html
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from oracle.units import MISSING, format_ms, format_number, format_offset_s, format_s

from . import plots
from .pages import EVERY_RUN_PAGE_UP_TO, PAGE, PAGE_PLOTS
from .schema import GROUP

# Narrow windows: a wide table scrolls in its own box, a figure shrinks to the page's width (its
# labels laid out apart in the PNG stay apart), a long path or name wraps anywhere; a figure in a
# table never wraps, a text cell wraps between words.
CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px;margin-bottom:4px;overflow-wrap:anywhere}
h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
.meta{color:#666;font-size:13px}
p,.meta{overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:12px;margin:8px 0}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right;vertical-align:top}
th{background:#f3f3f3}td.l,th.l{text-align:left}
td{white-space:nowrap}td.l{white-space:normal;min-width:10em;max-width:40em;overflow-wrap:break-word}
img{display:block;max-width:100%;height:auto;border:1px solid #eee;margin:6px 0}
.bad{color:#b00}.ok{color:#070}
details summary{cursor:pointer;font-weight:600;margin:8px 0}
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


# How a column's figures are written: by the unit its name ends in (`_ms`, `_s`), one rule for every
# page (oracle.units, the console's too). A statistic of a metric (by_group: `p95` of `rebalance_ms`,
# the comparison's `rebalance_ms.p95`) is in its metric's unit; a count of it is a count.
OFFSETS = frozenset({"start_s", "end_s", "t_s"})  # moments of the run (the timeline's x), not durations
STATISTICS = frozenset({"sum", "mean", "min", "p50", "p95", "p99", "max"})


def unit_of(key: str, row: dict | None = None) -> str | None:
    """'ms', 's', 'offset' or None (a count, a rate, anything else) for the column ``key``."""
    metric, _, stat = key.rpartition(".")
    if metric and stat not in STATISTICS:
        return None
    name = metric or (row.get("metric") if key in STATISTICS and row and row.get("metric") else key)
    if name in OFFSETS:
        return "offset"
    return "ms" if name.endswith("_ms") else "s" if name.endswith("_s") else None


def fmt(value: Any, key: str = "", row: dict | None = None) -> str:
    if value is None:
        return MISSING
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        unit = unit_of(key, row)
        if unit == "ms":
            return format_ms(value)
        if unit == "s":
            return format_s(value)
        return format_offset_s(value) if unit == "offset" else format_number(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def table(rows: Sequence[dict], columns: Sequence[str | tuple[str, str]], left: Iterable[str] = ()) -> str:
    cols = [(c, c) if isinstance(c, str) else c for c in columns]
    left = set(left)
    head = "".join(f'<th class="{"l" if k in left else ""}">{esc(title)}</th>' for k, title in cols)
    body = []
    for r in rows:
        cells = []
        for k, _ in cols:
            v = r.get(k)
            raw = isinstance(v, Markup)
            cells.append(f'<td class="{"l" if k in left else ""}">{v if raw else esc(fmt(v, k, r))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<div class='scroll'><table><tr>{head}</tr>{''.join(body)}</table></div>"


class Markup(str):
    """Already-escaped HTML for a table cell."""


def img(png: bytes, alt: str) -> str:
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def page(title: str, body: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{esc(title)}</title>"
        f"<style>{CSS}</style></head><body>{body}</body></html>\n"
    )


def _write_png(directory: Path, name: str, png: bytes) -> None:
    (directory / name).write_bytes(png)


# ------------------------------------------------------------------------------ one run

RUN_FIELDS = (
    "scenario",
    "protocol",
    "assignor",
    "kafka",
    "client",
    "client_version",
    "seed",
    "faults",
    "outcome",
    "done",
    "duration_s",
    "events",
    "acked",
    "consumed",
    "deliveries",
    "duplicates",
    "duplicates_explained",
    "lost_records",
    "unconsumed",
    "rebalances",
    "rebalances_completed",
    "teardown_rebalances",
    "rebalance_total_ms",
    "rebalance_max_ms",
    "stw_total_ms",
    "stw_max_ms",
    "peak_lag",
    "final_lag",
    "produce_rps",
    "consume_rps",
    "commits_ok",
    "commits_failed",
    "faults_injected",
    "faults_detected",
)


def run_report(directory: Path, run: dict, data: dict[str, list[dict]], index_href: str | None = None) -> Path:
    """Write directory/report.html (+ PNGs). `data`: this run's rows of ownership, faults,
    rebalances, lag, commit_failures, duplicates."""
    directory.mkdir(parents=True, exist_ok=True)
    rebalances = sorted(data.get("rebalances", []), key=lambda r: r["generation"])
    faults = sorted(data.get("faults", []), key=lambda f: (f["start_s"], f["fault_id"] or ""))
    timeline = plots.ownership_timeline(run, data.get("ownership", []), faults, rebalances)
    lag = plots.lag_over_time(run, data.get("lag", []), faults, rebalances)
    durations = plots.rebalance_durations(run, rebalances)
    for name, png in zip(PAGE_PLOTS, (timeline, lag, durations), strict=False):
        _write_png(directory, name, png)

    summary = [{"k": k, "v": fmt(run.get(k), k)} for k in RUN_FIELDS]  # each in its own unit
    reb_rows = [{**r, "members": ", ".join(r.get("members") or []), "start_s": r.get("start_s")} for r in rebalances]
    parts = [
        f"<h1>Run {esc(run['run'])}</h1>",
        f"<div class='meta'>{esc(run.get('path'))}"
        + (f" · <a href='{esc(index_href)}'>analysis</a>" if index_href else "")
        + "</div>",
        "<h2>Ownership timeline</h2>",
        "<p class='meta'>Partitions as rows, time across; bars coloured by the owning member (a hatched lower lane: "
        "a second member owned the partition at the same time). Red: fault windows. Blue: rebalances "
        "(line at the start, shaded until the last member had its assignment; dotted: not completed).</p>",
        img(timeline, "ownership timeline"),
        "<h2>Summary</h2>",
        table(summary, [("k", "metric"), ("v", "value")], left=("k", "v")),
        "<h2>Rebalances</h2>",
        table(
            reb_rows,
            [
                "generation",
                "status",
                ("start_s", "start s"),
                ("stabilized_ms", "stabilized"),
                ("duration_ms", "assigned"),
                ("detect_ms", "detect"),
                ("join_ms", "join"),
                ("sync_ms", "sync"),
                ("coordinator_ms", "broker's view"),
                ("partitions_moved", "moved"),
                ("max_unowned_ms", "max unowned"),
                ("fault_kind", "fault"),
                "members",
                "trigger",
                ("explanation", "what it waited for"),
            ],
            left=("status", "fault_kind", "members", "trigger", "explanation"),
        ),
        img(durations, "rebalance durations"),
        "<h2>Lag</h2>",
        img(lag, "lag over time"),
        "<h2>Faults</h2>",
        table(
            faults,
            [
                "fault_id",
                "kind",
                "target",
                ("start_s", "start s"),
                ("end_s", "end s"),
                "healed_how",
                ("detection_ms", "start → detection"),
                ("detected_generation", "generation"),
            ],
            left=("fault_id", "kind", "target", "healed_how"),
        )
        if faults
        else "<p>No faults.</p>",
        "<h2>Commit failures</h2>",
        table(data.get("commit_failures", []), ["error_code", "error", "failed"], left=("error_code", "error"))
        if data.get("commit_failures")
        else "<p>None.</p>",
        "<h2>Duplicates</h2>",
        table(
            data.get("duplicates", []),
            ["partition_label", "duplicates", "explained", "unexplained"],
            left=("partition_label",),
        )
        if data.get("duplicates")
        else "<p>None.</p>",
    ]
    path = directory / PAGE
    path.write_text(page(f"run {run['run']}", "\n".join(parts)), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------ the analysis

TABLE_METRICS = (
    ("rebalance_ms", ("count", "p50", "p95", "p99", "max")),
    ("unowned_ms", ("p95", "max")),
    ("fault_to_detection_ms", ("p50", "max")),
    ("duplicates", ("sum",)),
    ("lost_records", ("sum",)),
    ("peak_lag", ("max",)),
)
GROUP_COLUMNS = GROUP


def comparison_rows(by_group: list[dict]) -> list[dict]:
    """One row per group: the headline figures of the comparison table."""
    groups: dict[tuple, dict] = {}
    for r in by_group:
        key = tuple(r[c] for c in GROUP_COLUMNS)
        g = groups.setdefault(key, {c: r[c] for c in GROUP_COLUMNS})
        g.setdefault("runs", 0)
        g["runs"] = max(g["runs"], r["runs"])
        if r["metric"] == "rebalances":
            g["rebalances"] = int(r["sum"] or 0)
        for metric, stats in TABLE_METRICS:
            if r["metric"] == metric:
                for s in stats:
                    g[f"{metric}.{s}"] = r[s]
    return [groups[k] for k in sorted(groups, key=lambda k: tuple(map(str, k)))]


COMPARISON_COLUMNS = (
    [(c, c) for c in GROUP_COLUMNS]
    + [("runs", "runs"), ("rebalances", "rebalances")]
    + [
        (f"rebalance_ms.{s}", f"rebalance {s}" if s != "count" else "completed")
        for s in ("count", "p50", "p95", "p99", "max")
    ]
    + [
        ("unowned_ms.p95", "stop-the-world p95"),
        ("unowned_ms.max", "stop-the-world max"),
        ("fault_to_detection_ms.p50", "fault→detection p50"),
        ("fault_to_detection_ms.max", "fault→detection max"),
        ("duplicates.sum", "duplicates"),
        ("lost_records.sum", "lost"),
        ("peak_lag.max", "peak lag"),
    ]
)

DISTRIBUTIONS = (
    ("rebalance_ms", "protocol", "Rebalance duration per protocol", "ms"),
    ("rebalance_ms", "fault_kind", "Rebalance duration per fault kind", "ms"),
    ("unowned_ms", "protocol", "Stop-the-world per partition, per protocol", "ms"),
    ("fault_to_detection_ms", "fault_kind", "Fault start → detection, per fault kind", "ms"),
    ("duplicates", "protocol", "Duplicates per run, per protocol", "records"),
    ("peak_lag", "protocol", "Peak lag per run, per protocol", "records"),
)


def analysis_report(
    out: Path,
    runs: list[dict],
    skipped: list[dict],
    by_group: list[dict],
    by_dimension: list[dict],
    metric_values: list[dict],
    run_pages: dict[str, Path],
    timings: dict[str, float],
) -> Path:
    plots_dir = out / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    figures = []
    for metric, dim, title, unit in DISTRIBUTIONS:
        values: dict[str, list[float]] = {}
        for r in metric_values:
            if r["metric"] != metric:
                continue
            keys = r["fault_kinds"] if dim == "fault_kind" else [r[dim]]
            for k in keys:
                values.setdefault(str(k), []).append(r["value"])
        png = plots.distributions(values, title, unit)
        name = f"{metric}-by-{dim}.png"
        _write_png(plots_dir, name, png)
        figures.append(img(png, title))

    run_rows = []
    for r in sorted(runs, key=lambda r: r["run"]):
        page_path = run_pages.get(r["run"])
        link = (
            Markup(f"<a href='{esc(quote(os.path.relpath(page_path, out)))}'>{esc(r['run'])}</a>")
            if page_path
            else r["run"]
        )
        run_rows.append({**r, "run": link})
    parts = [
        "<h1>Rebalance analysis</h1>",
        f"<div class='meta'>{len(runs)} runs analysed"
        + (f", <span class='bad'>{len(skipped)} skipped</span>" if skipped else "")
        + " · "
        + ", ".join(f"{k} {format_s(v)}" for k, v in timings.items())
        + "</div>",
        "<h2>Comparison</h2>",
        table(comparison_rows(by_group), COMPARISON_COLUMNS, left=GROUP_COLUMNS),
        "<h2>Distributions</h2>",
        *figures,
        "<h2>Runs</h2>",
        *(
            [
                f"<p class='meta'>Pages drawn for {len(run_pages)} of the {len(runs)} runs. <code>--run-reports</code>: "
                f"auto draws every run's page up to {EVERY_RUN_PAGE_UP_TO} runs, above that the pages of the runs that "
                "show a problem (not completed, lost records, unexplained duplicates); all draws every run's.</p>"
            ]
            if len(run_pages) < len(runs)
            else []
        ),
        table(
            run_rows,
            [
                "run",
                "scenario",
                "protocol",
                "assignor",
                "kafka",
                "client",
                "faults",
                "outcome",
                "rebalances",
                "rebalance_total_ms",
                "rebalance_max_ms",
                "stw_max_ms",
                "duplicates",
                "lost_records",
                "peak_lag",
                "consume_rps",
                "commits_failed",
            ],
            left=("run", "scenario", "protocol", "assignor", "kafka", "client", "faults", "outcome"),
        ),
    ]
    if skipped:
        parts += ["<h2>Skipped run directories</h2>", table(skipped, ["path", "reason"], left=("path", "reason"))]
    parts += [
        "<details><summary>Every metric per dimension</summary>",
        table(
            by_dimension,
            ["dimension", "group", "metric", "runs", "count", "sum", "mean", "p50", "p95", "p99", "max"],
            left=("dimension", "group", "metric"),
        ),
        "</details>",
        "<details><summary>Every metric per group</summary>",
        table(
            by_group,
            [*GROUP_COLUMNS, "metric", "runs", "count", "sum", "mean", "p50", "p95", "p99", "max"],
            left=(*GROUP_COLUMNS, "metric"),
        ),
        "</details>",
    ]
    path = out / "report.html"
    path.write_text(page("rebalance analysis", "\n".join(parts)), encoding="utf-8")
    return path
