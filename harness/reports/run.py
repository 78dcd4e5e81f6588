"""Presenting a verdict: a table on the terminal, summary.md in the run directory."""

from __future__ import annotations

import math
import re
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from oracle.checks.duplicates import summary as duplicates_summary
from oracle.checks.history_integrity import NAME as HISTORY_INTEGRITY
from oracle.explain import NOTABLE_MS
from oracle.integrity import LoadReport
from oracle.units import format_ms
from oracle.verdict import clocks_line, fault_lines, headline, migration_lines
from runtime.console import Column, fitted_table

_COLOUR = {"pass": "green", "fail": "red", "error": "red", "incomplete": "yellow"}


def _headline(verdict: dict) -> str:
    """'0 violations, 3 findings — no-loss, convergence skipped (…)' (after the status word)."""
    return headline(
        len(verdict["violations"]),
        len(verdict["findings"]),
        verdict.get("skipped_checks") or {},
        verdict.get("errored_checks") or {},
    )


_ms = format_ms  # one rule for every report's durations (oracle.units)


def _rebalance_rows(verdict: dict) -> list[tuple[str, ...]]:
    return [
        (
            str(r["generation"]),
            r["status"],
            _ms(r.get("stabilized_ms")),
            _ms(r.get("coordinator_ms")),
            _ms(r["duration_ms"]),
            _ms(r.get("join_ms")),
            _ms(r.get("sync_ms")),
            _ms(r.get("max_unowned_ms")),
            str(r.get("partitions_moved", "")),
            r.get("trigger") or "",
        )
        for r in verdict["rebalances"]
    ]


# Like with like: "stabilized" (the last JoinGroup answer) beside the coordinator's own Preparing → Stabilized;
# "assigned" (the last member has its partitions: the group works again) is the rebalance's duration.
_REBALANCE_HEADERS = (
    "gen",
    "status",
    "stabilized",
    "broker's view",
    "assigned",
    "join",
    "sync",
    "max unowned",
    "moved",
    "trigger",
)


def _explanations(verdict: dict, slow_only: bool) -> list[str]:
    """Each rebalance's critical path in a sentence (oracle/explain.py); ``slow_only``: those
    that waited a second or more somewhere, for the terminal."""
    return [
        f"{_ms(r['duration_ms'])} — {r['explanation']}"
        for r in verdict["rebalances"]
        if r.get("explanation")
        and (not slow_only or any((w.get("ms") or 0) >= NOTABLE_MS for w in r.get("critical_path") or ()))
    ]


def anomaly_line(a: dict) -> str:
    """A violation or finding in one line, as every report prints it: `[check/kind] message`."""
    return f"[{a['check']}/{a['kind']}] {a['message']}"


def verdict_figures(verdict: dict) -> dict:
    """A run's figures, as compare, suite.json and JUnit carry them: its completed rebalances
    (count, total / mean / p95 / max, the longest stop-the-world), duplicates and what failed.
    An empty dict (no verdict) gives the figures of nothing."""
    completed = [
        r for r in verdict.get("rebalances", []) if r["status"] == "completed" and r["duration_ms"] is not None
    ]
    durations = sorted(r["duration_ms"] for r in completed)
    unowned = [r.get("max_unowned_ms") or 0 for r in completed]
    return {
        "rebalances": len(completed),
        "rebalance_total_ms": round(sum(durations), 1),
        "rebalance_max_ms": round(max(durations, default=0), 1),
        "rebalance_mean_ms": round(sum(durations) / len(durations), 1) if durations else None,
        # nearest rank: a figure some rebalance of the run really took
        "rebalance_p95_ms": round(durations[math.ceil(0.95 * len(durations)) - 1], 1) if durations else None,
        "stop_the_world_max_ms": round(max(unowned, default=0), 1),
        "duplicates": (verdict.get("duplicates") or {}).get("count"),
        "violations": len(verdict.get("violations", [])),
        "violated_checks": sorted({x["check"] for x in verdict.get("violations", [])}),
        "unjudged_checks": sorted({*verdict.get("skipped_checks", {}), *verdict.get("errored_checks", {})}),
    }


def _checks_and_measurements(verdict: dict) -> list[tuple[str, dict]]:
    """The checks, then any always-on measurement that raised (rebalances, duplicates, stats)."""
    return [
        *verdict["checks"].items(),
        *((f"{name} measurement", m) for name, m in (verdict.get("measurements") or {}).items()),
    ]


# The terminal's rebalance table: what a narrow one leaves out first (the coordinator's view, then the
# join and sync phases; summary.md and verdict.json have them all), and the trigger folded, never cut.
_REBALANCE_COLUMNS = (
    Column("gen", justify="right"),
    Column("status"),
    Column("stabilized", justify="right", drop=2),
    Column("broker's view", justify="right", drop=5),
    Column("assigned", justify="right"),
    Column("join", justify="right", drop=4),
    Column("sync", justify="right", drop=3),
    Column("max unowned", justify="right", drop=1),
    Column("moved", justify="right"),
    Column("trigger", wrap=True, width=20),
)
assert tuple(c.header for c in _REBALANCE_COLUMNS) == _REBALANCE_HEADERS

_CHECK_COLUMNS = (
    Column("check"),
    Column("status"),
    Column("violations", justify="right"),
    Column("findings", justify="right"),
    Column("note", wrap=True, width=16),
)


_MEMBER_UUID = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
TRIGGER_CHARS = 44  # a trigger on the terminal: two or three lines of its column at most


def _short(trigger: str) -> str:
    """A trigger as the terminal's table shows it: a member id's UUID left out, the rest cut at
    TRIGGER_CHARS (summary.md and verdict.json have it whole)."""
    trigger = _MEMBER_UUID.sub("", trigger)
    return trigger if len(trigger) <= TRIGGER_CHARS else trigger[: TRIGGER_CHARS - 1].rstrip() + "…"


def verdict_line(verdict: dict, run_dir: Path | None = None) -> str:
    """The verdict in one greppable line (markup): 'PASS: 0 violations, 0 findings — runs/…'."""
    status = verdict["status"]
    return (
        f"[{_COLOUR[status]}]{status.upper()}[/]: "
        + escape(_headline(verdict))
        + (f" — {escape(str(run_dir))}" if run_dir else "")
    )


def print_verdict(console: Console, verdict: dict, run_dir: Path | None = None, brief: bool = False) -> None:
    """The verdict on the terminal: its tables and lines, then the verdict's line; ``brief`` (-q):
    the verdict's line, its violations and the checks that raised."""
    if brief:
        for name, c in _checks_and_measurements(verdict):
            if c["status"] == "error":
                console.print("[red]error[/] " + escape(f"[{name}] {c['reason']}"), highlight=False)
        for a in verdict["violations"]:
            console.print("[red]violation[/] " + escape(anomaly_line(a)), highlight=False)
        console.print(verdict_line(verdict, run_dir), highlight=False, soft_wrap=True)
        return
    rows = [
        tuple(escape(_short(c) if i == len(row) - 1 else c) for i, c in enumerate(row))  # never markup
        for row in _rebalance_rows(verdict)
    ]
    console.print(fitted_table("Rebalances", _REBALANCE_COLUMNS, rows, console.width))
    for line in _explanations(verdict, slow_only=True):
        console.print(escape(f"  {line}"), highlight=False)

    checks = []
    for name, c in _checks_and_measurements(verdict):
        colour = {"passed": "green", "failed": "red", "error": "red"}.get(c["status"], "yellow")
        checks.append(
            (name, f"[{colour}]{c['status']}[/]", str(c["violations"]), str(c["findings"]), escape(c.get("reason", "")))
        )
    console.print(fitted_table("Checks", _CHECK_COLUMNS, checks, console.width))

    console.print(escape(f"duplicates: {duplicates_summary(verdict['duplicates'])}"), highlight=False)
    if verdict.get("stats", {}).get("faults") is not None:  # a verdict written before they were recorded has none
        console.print(escape(clocks_line(verdict["stats"])), highlight=False)
        for line in fault_lines(verdict["stats"]):
            console.print(escape(f"fault {line}"), highlight=False)
        for line in migration_lines(verdict["stats"]):
            console.print(escape(f"migration {line}"), highlight=False)
    for name, c in _checks_and_measurements(verdict):
        if c["status"] == "error":  # where it raised; the whole traceback is in verdict.json
            console.print("[red]error[/] " + escape(f"[{name}] {c['reason']}{_raised_at(c)}"), highlight=False)
    for heading, colour in (("violations", "red"), ("findings", "yellow")):
        for a in verdict[heading]:
            console.print(f"[{colour}]{heading[:-1]}[/] " + escape(anomaly_line(a)), highlight=False)
    for line in faults_failed_lines(verdict):
        console.print("[yellow]fault[/] " + escape(line), highlight=False)
    for line in history_notes(verdict):
        console.print("[yellow]history[/] " + escape(line), highlight=False)
    console.print(verdict_line(verdict, run_dir), highlight=False, soft_wrap=True)  # one greppable line


def history_notes(verdict: dict) -> list[str]:
    """What the loader dropped, recovered or passed over in the history file (none: nothing)."""
    detail = (verdict["checks"].get(HISTORY_INTEGRITY) or {}).get("detail")
    return LoadReport.of(detail).notes() if detail else []


def faults_failed_lines(verdict: dict) -> list[str]:
    """A line per fault the run could not inject or heal (the verdict's stats say which)."""
    return [
        f"{f['fault_id']} ({f['kind']} {f['target']}) could not be "
        f"{'injected' if f['step'] == 'inject' else 'healed'}: {f['error']}"
        for f in verdict.get("stats", {}).get("faults_failed", ())
    ]


def _raised_at(result: dict) -> str:
    frames = [line.strip() for line in result["detail"].get("traceback", "").splitlines() if line.startswith("  File ")]
    return f", at {frames[-1].removeprefix('File ')}" if frames else ""


def run_state_note(state: dict | None) -> str | None:
    """What run.json says of a run that did not complete (None for a completed one)."""
    if not state or state.get("state") == "completed":
        return None
    if state.get("state") == "killed":
        killed = state.get("killed") or {}
        return (
            f"run.json: killed — its harness died without tearing down; {killed.get('by', '?')} stopped "
            f"{len(killed.get('processes', []))} of its processes at {killed.get('stopped_at', '?')}"
        )
    if state.get("state") == "running":
        return "run.json: running — its harness is still at work, or died and `rebalance-lab cleanup` has not run yet"
    return f"run.json: {state.get('state')}" + (f" ({state['error']})" if state.get("error") else "")


DUPLICATE_RANGES = 20  # summary.md lists this many re-delivered ranges; verdict.json has them all


def summary_markdown(verdict: dict, run_dir: Path, expectation: str | None = None) -> str:
    """``expectation``: what the scenario's `expect:` says of this run (harness/scenario/expect.py)."""
    s = verdict["stats"]
    lines = [
        f"# {verdict.get('scenario', s.get('scenario'))} — {verdict['status'].upper()}",
        "",
        f"**{verdict['status'].upper()}**: {_headline(verdict)}",
        "",
        *([f"{expectation[0].upper()}{expectation[1:]}.", ""] if expectation else []),
        f"Run `{run_dir.name}`, seed {verdict.get('seed')}, protocol {s.get('protocol')}. "
        + (
            f"{s['acked']} records acknowledged, {s['consumed']} consumed ({s['deliveries']} deliveries); "
            f"commits: {s['commits']['ok']} accepted, {sum(s['commits']['failed'].values())} rejected "
            f"{s['commits']['failed'] or ''}."
            if "acked" in s
            else "(no statistics: their measurement raised)"
        ),
        "",
        "## Checks",
        "",
        "| check | status | violations | findings |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {n} | {c['status']}{' — ' + c['reason'] if c.get('reason') else ''} | {c['violations']} | {c['findings']} |"
        for n, c in _checks_and_measurements(verdict)
    ]
    lines += [
        "",
        "## Rebalances",
        "",
        "| " + " | ".join(_REBALANCE_HEADERS) + " |",
        "|" + "---|" * len(_REBALANCE_HEADERS),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in _rebalance_rows(verdict)]
    if why := _explanations(verdict, slow_only=False):
        lines += ["", "What each rebalance waited for:", ""] + [f"- {line}" for line in why]
    if read := history_notes(verdict):
        lines += ["", "## The history file", ""] + [f"- {line}" for line in read]
    d = verdict["duplicates"]
    lines += ["", "## Duplicates", "", f"{duplicates_summary(d)}."]
    if d["ranges"]:
        lines += [""] + [
            f"- {r['partition']} offsets {r['offsets']}: first {r['first']}, again {r['second']}, {r['reason']}"
            for r in d["ranges"][:DUPLICATE_RANGES]
        ]
        if len(d["ranges"]) > DUPLICATE_RANGES:
            lines.append(f"- … and {len(d['ranges']) - DUPLICATE_RANGES} more ranges in `verdict.json`")
    if s.get("faults") is not None:
        lines += ["", "## Faults", "", clocks_line(s).replace("times: ", "Times: ", 1) + "."]
        lines += [""] + [f"- {line}" for line in fault_lines(s)] if s["faults"] else []
    if moved := migration_lines(s):
        lines += ["", "## Protocol migration hand-overs", "", "From the old incarnation's exit."]
        lines += [""] + [f"- {line}" for line in moved]
    if failed := faults_failed_lines(verdict):
        lines += ["", "## Faults not done", ""] + [f"- {line}" for line in failed]
    for heading in ("violations", "findings"):
        if verdict[heading]:
            lines += ["", f"## {heading.capitalize()}", ""]
            lines += [f"- **{a['check']} / {a['kind']}**: {a['message']}" for a in verdict[heading]]
    lines += [
        "",
        "Files: `history.jsonl` (events), `verdict.json` (this verdict as data), `cluster/logs/` (broker logs).",
        "",
        # Spark takes ~10 s to start: the report is drawn on demand, not by every run.
        f"Report (ownership timeline, lag, rebalance phases): `rebalance-lab analyze {run_dir} --out "
        f"{run_dir / 'analysis'}` writes [analysis/runs/{run_dir.name}/report.html]"
        f"(analysis/runs/{run_dir.name}/report.html).",
        "",
    ]
    return "\n".join(lines)


_COMPARISON = [
    ("protocol", "protocol"),
    ("kafka", "kafka"),
    ("client", "client"),
    ("loaded", "client_version"),  # what the members really loaded (librdkafka's version, the Java client's)
    ("seed", "seed"),
    ("rebalances", "rebalances"),
    ("total", "rebalance_total_ms"),
    ("mean", "rebalance_mean_ms"),
    ("max", "rebalance_max_ms"),
    ("stop-the-world", "stop_the_world_max_ms"),
    ("duplicates", "duplicates"),
    ("violations", "violations"),
]


_OPTIONAL = {"client", "client_version"}


# What a narrow terminal leaves out of the comparison first (compare.json and --json have it all).
_COMPARISON_DROP = {"total": 5, "mean": 4, "loaded": 3, "duplicates": 2, "stop-the-world": 1}
_COMPARISON_WRAP = {"client", "loaded"}


def print_comparison(console: Console, rows: list[dict], out: Path) -> None:
    # a column no run has a value for (the client versions of runs before they were recorded) is left out
    shown = [(h, k) for h, k in _COMPARISON if k not in _OPTIONAL or any(r.get(k) is not None for r in rows)]
    columns = [
        Column(
            h,
            wrap=h in _COMPARISON_WRAP,
            width=14,
            drop=_COMPARISON_DROP.get(h, 0),
            justify="left" if h in ("protocol", "kafka", "client", "loaded") else "right",
        )
        for h, _ in shown
    ] + [Column("result", wrap=True, width=14)]
    cells = []
    for r in rows:
        row = [_ms(r.get(k)) if k.endswith("_ms") else str(r[k] if r.get(k) is not None else "—") for _, k in shown]
        row = [escape(c) for c in row]
        status = r["status"]
        if status is None:  # no verdict: the run itself was interrupted or broke
            result = f"[red]{r['outcome'].upper()}[/]"
        else:
            which = r["violated_checks"] if status == "fail" else r["unjudged_checks"]
            result = f"[{_COLOUR[status]}]{status.upper()}[/] {', '.join(which)}".rstrip()
        if r["not_applicable"]:
            result += f" (n/a: {', '.join(r['not_applicable'])})"
        cells.append((*row, result))
    console.print(fitted_table("Side by side", columns, cells, console.width))
    console.print(
        f"stop-the-world: the longest time one partition had no consuming owner during a rebalance. "
        f"Runs and compare.json in {out}"
    )


_SUITE_COLOURS = {"passed": "green", "failed": "red", "broken": "red", "skipped": "yellow"}
# a variant's id folded, never cut: it is what --only and the replay command take
_SUITE_COLUMNS = (
    Column("variant", wrap=True, width=24),
    Column("result"),
    Column("time", justify="right"),
    Column("rebalances", justify="right", drop=2),
    Column("p95", justify="right", drop=1),
    Column("stop-the-world", justify="right", drop=3),
    Column("violated checks / reason", wrap=True, width=16),
)


def print_suite(console: Console, suite: dict, out: Path, brief: bool = False) -> None:
    """suite.json as a table: a row per variant (its id, how it ended, its figures); ``brief`` (-q): a
    line per variant that did not pass, then the suite's line."""
    if brief:
        for v in suite["variants"]:
            if v["state"] != "passed":
                console.print(
                    f"[{_SUITE_COLOURS[v['state']]}]{v['state'].upper()}[/] "
                    + escape(f"{v['id']}: {v.get('reason') or ''}".rstrip(": ")),
                    highlight=False,
                    soft_wrap=True,
                )
                if v.get("replay"):  # what runs it again
                    console.print(escape(f"  replay: {v['replay']}"), highlight=False, soft_wrap=True)
        console.print(escape(f"{suite['state']}: suite.json, junit.xml, index.html in {out}"), soft_wrap=True)
        return
    rows = []
    for v in suite["variants"]:
        f = v.get("figures") or {}
        why = (
            v["reason"]  # with an expectation: how it ended against it, met or not
            if v.get("expected")
            else ", ".join(f["violated_checks"])
            if v["state"] == "failed"
            else (v["reason"] if v["state"] != "passed" else "")
        )
        rows.append(
            (
                escape(v["id"]),
                f"[{_SUITE_COLOURS[v['state']]}]{v['state'].upper()}[/]",
                f"{v['seconds']:.0f} s",
                str(f.get("rebalances", "—")),
                _ms(f.get("rebalance_p95_ms")),
                _ms(f.get("stop_the_world_max_ms")),
                escape(why),
            )
        )
    console.print(fitted_table(f"Suite {suite['suite']}", _SUITE_COLUMNS, rows, console.width))
    for v in suite["variants"]:  # what to run again, one command each (`rebalance-lab run …`)
        if v["state"] in ("failed", "broken") and v.get("replay"):
            console.print(escape(f"replay {v['id']}: {v['replay']}"), soft_wrap=True, highlight=False)
    console.print(escape(f"{suite['state']}: suite.json, junit.xml, index.html in {out}"), soft_wrap=True)
