"""Presenting a verdict: a table on the terminal, summary.md in the run directory."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table


def _ms(value) -> str:
    if value is None:
        return "—"
    return f"{value:.0f} ms" if value < 1000 else f"{value / 1000:.2f} s"


def _rebalance_rows(verdict: dict) -> list[tuple[str, ...]]:
    return [
        (str(r["generation"]), r["status"], _ms(r["duration_ms"]), _ms(r.get("coordinator_ms")),
         _ms(r.get("join_ms")), _ms(r.get("sync_ms")), _ms(r.get("max_unowned_ms")),
         str(r.get("partitions_moved", "")), r.get("trigger") or "")
        for r in verdict["rebalances"]
    ]


_REBALANCE_HEADERS = ("gen", "status", "duration", "broker's view", "join", "sync", "max unowned", "moved", "trigger")


def print_verdict(console: Console, verdict: dict, run_dir: Path | None = None) -> None:
    table = Table(title="Rebalances", title_justify="left")
    for h in _REBALANCE_HEADERS:
        table.add_column(h, overflow="fold")
    for row in _rebalance_rows(verdict):
        table.add_row(*row)
    console.print(table)

    checks = Table(title="Checks", title_justify="left")
    for h in ("check", "status", "violations", "findings", "note"):
        checks.add_column(h, overflow="fold")
    for name, c in verdict["checks"].items():
        colour = {"passed": "green", "failed": "red"}.get(c["status"], "yellow")
        checks.add_row(name, f"[{colour}]{c['status']}[/]", str(c["violations"]), str(c["findings"]), c.get("reason", ""))
    console.print(checks)

    d = verdict["duplicates"]
    console.print(f"duplicates: {d['count']} re-delivered records ({d['explained']} explained by uncommitted "
                  f"progress at revocation, {d['unexplained']} unexplained)")
    for heading, colour in (("violations", "red"), ("findings", "yellow")):
        for a in verdict[heading]:
            console.print(f"[{colour}]{heading[:-1]}[/] [{a['check']}/{a['kind']}] {a['message']}", highlight=False)
    outcome = "[green]PASS[/]" if verdict["ok"] else "[red]FAIL[/]"
    console.print(f"{outcome}: {len(verdict['violations'])} violations, {len(verdict['findings'])} findings"
                  + (f" — {run_dir}" if run_dir else ""))


def summary_markdown(verdict: dict, run_dir: Path) -> str:
    s = verdict["stats"]
    lines = [
        f"# {verdict.get('scenario', s.get('scenario'))} — {'PASS' if verdict['ok'] else 'FAIL'}",
        "",
        f"Run `{run_dir.name}`, seed {verdict.get('seed')}, protocol {s.get('protocol')}. "
        f"{s['acked']} records acknowledged, {s['consumed']} consumed ({s['deliveries']} deliveries); "
        f"commits: {s['commits']['ok']} accepted, {sum(s['commits']['failed'].values())} rejected "
        f"{s['commits']['failed'] or ''}.",
        "",
        "## Checks",
        "",
        "| check | status | violations | findings |",
        "|---|---|---|---|",
    ]
    lines += [f"| {n} | {c['status']}{' — ' + c['reason'] if c.get('reason') else ''} | {c['violations']} | {c['findings']} |"
              for n, c in verdict["checks"].items()]
    lines += ["", "## Rebalances", "", "| " + " | ".join(_REBALANCE_HEADERS) + " |",
              "|" + "---|" * len(_REBALANCE_HEADERS)]
    lines += ["| " + " | ".join(row) + " |" for row in _rebalance_rows(verdict)]
    d = verdict["duplicates"]
    lines += ["", "## Duplicates", "",
              f"{d['count']} re-delivered records: {d['explained']} explained, {d['unexplained']} unexplained."]
    for heading in ("violations", "findings"):
        if verdict[heading]:
            lines += ["", f"## {heading.capitalize()}", ""]
            lines += [f"- **{a['check']} / {a['kind']}**: {a['message']}" for a in verdict[heading]]
    lines += ["", "Files: `history.jsonl` (events), `verdict.json` (this verdict as data), `cluster/logs/` (broker logs).",
              "",
              # Spark takes ~10 s to start: the report is drawn on demand, not by every run.
              f"Report (ownership timeline, lag, rebalance phases): `rebalance-lab analyze {run_dir} --out "
              f"{run_dir / 'analysis'}` writes [analysis/runs/{run_dir.name}/report.html]"
              f"(analysis/runs/{run_dir.name}/report.html).", ""]
    return "\n".join(lines)


_COMPARISON = [("protocol", "protocol"), ("kafka", "kafka"), ("seed", "seed"), ("rebalances", "rebalances"),
               ("total", "rebalance_total_ms"), ("mean", "rebalance_mean_ms"), ("max", "rebalance_max_ms"),
               ("stop-the-world", "stop_the_world_max_ms"), ("duplicates", "duplicates"), ("violations", "violations")]


def print_comparison(console: Console, rows: list[dict], out: Path) -> None:
    table = Table(title="Protocols side by side", title_justify="left")
    for header, _ in _COMPARISON:
        table.add_column(header, overflow="fold")
    table.add_column("result", overflow="fold")
    for r in rows:
        cells = [_ms(r[k]) if k.endswith("_ms") else str(r[k] if r[k] is not None else "—") for _, k in _COMPARISON]
        result = "[green]PASS[/]" if r["ok"] else f"[red]FAIL[/] {', '.join(r['violated_checks']) or r['outcome']}"
        if r["not_applicable"]:
            result += f" (n/a: {', '.join(r['not_applicable'])})"
        table.add_row(*cells, result)
    console.print(table)
    console.print(f"stop-the-world: the longest time one partition had no consuming owner during a rebalance. "
                  f"Runs and compare.json in {out}")
