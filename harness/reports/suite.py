"""A suite's results for people and for CI: `junit.xml` and `index.html`, both drawn from
suite.json alone (so `rebalance-lab suite` and a re-render agree).

The JUnit file follows the Surefire / Jenkins schema (junit-10.xsd) that Jenkins,
GitLab, GitHub's test reporters, Azure and pytest itself read: one <testsuite> per
scenario, one <testcase> per variant. A failed check is a <failure> whose message
names the violated checks and whose text lists every violation; a run that broke,
raised or could not be judged is an <error>; a variant not run is <skipped>. That
schema has no per-testcase properties, so each variant's figures are its scenario
testsuite's properties, named `<variant id>.<figure>` (with the axes it ran: protocol,
kafka, client, seed, backend, and `<variant id>.replay`: the `rebalance-lab run` command that
replays it); system-out carries the run's summary.md, the replay command and the run directory
(with Jenkins' attachment marker for its history).
A variant expected to fail (`expect:`) that failed that way is a passing testcase whose
properties say the expectation, the attempts, the reproductions and each attempt's run
directory; one that did not is a <failure type="expectation"> saying how it ended.
"""

from __future__ import annotations

import html
import os
import socket
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from harness.reports.run import anomaly_line
from oracle.units import MISSING, format_ms, format_number, format_s
from runtime.secrets import redact

# How a variant ended, as suite.json, JUnit and the page say it.
PASSED, FAILED, BROKEN, SKIPPED = "passed", "failed", "broken", "skipped"
JUNIT_XML = "junit.xml"
INDEX_HTML = "index.html"

# suite.json figure -> how the page heads it; the same keys are the JUnit properties
_FIGURES = [
    ("rebalances", "rebalances"),
    ("rebalance_p95_ms", "p95"),
    ("rebalance_max_ms", "max"),
    ("stop_the_world_max_ms", "stop-the-world"),
    ("duplicates", "duplicates"),
    ("violations", "violations"),
]


def write_reports(suite: dict, out: Path, junit: Path | None = None) -> None:
    """junit.xml and index.html in ``out``; the JUnit file at ``junit`` too (`suite --junit PATH`)."""
    suite = redact(suite)  # no secret value in a report (runtime.secrets): an error may quote one
    xml = junit_xml(suite)
    (out / JUNIT_XML).write_bytes(xml)
    if junit is not None:
        junit.write_bytes(xml)
    (out / INDEX_HTML).write_text(html_page(suite, out))


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def junit_xml(suite: dict) -> bytes:
    by_scenario: dict[str, list[dict]] = defaultdict(list)
    for v in suite["variants"]:
        by_scenario[v["scenario"]].append(v)
    root = ET.Element(
        "testsuites",
        name=suite["suite"],
        tests=str(len(suite["variants"])),
        failures=str(_count(suite["variants"], FAILED)),
        errors=str(_count(suite["variants"], BROKEN)),
        time=_seconds(sum(v["seconds"] for v in suite["variants"])),
    )
    for scenario, variants in by_scenario.items():
        ts = ET.SubElement(
            root,
            "testsuite",
            name=f"{suite['suite']}.{scenario}",
            tests=str(len(variants)),
            failures=str(_count(variants, FAILED)),
            errors=str(_count(variants, BROKEN)),
            skipped=str(_count(variants, SKIPPED)),
            time=_seconds(sum(v["seconds"] for v in variants)),
            timestamp=suite["started"][:19],
            hostname=socket.gethostname(),
        )
        props = ET.SubElement(ts, "properties")
        for v in variants:
            for key, value in _properties(v):
                ET.SubElement(props, "property", name=f"{v['id']}.{key}", value=value)
        for v in variants:
            _testcase(ts, suite["suite"], v)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _count(variants: list[dict], state: str) -> int:
    return sum(v["state"] == state for v in variants)


def _properties(v: dict) -> list[tuple[str, str]]:
    # the axes as the variant ran them: kafka the exact release, client the requirement its members loaded
    out = [(k, str(v[k])) for k in ("protocol", "kafka", "client", "seed", "backend") if v.get(k) is not None]
    for key, _ in _FIGURES:
        value = (v.get("figures") or {}).get(key)
        if value is not None:
            out.append((key, str(value)))
    if v.get("run_dir"):
        out.append(("run_dir", v["run_dir"]))
    if v.get("replay"):
        out.append(("replay", v["replay"]))
    if v.get("expected"):  # what it had to fail with, and each attempt held to that
        attempts = v.get("attempts") or []
        out += [("expected", v["expected"]), ("attempts", str(len(attempts))), ("reproduced", str(v["reproduced"]))]
        out += [(f"attempt.{n}.run_dir", a["run_dir"]) for n, a in enumerate(attempts, 1)]
        out += [(f"attempt.{n}.result", _attempt_line(a)) for n, a in enumerate(attempts, 1)]
    return out


def _attempt_line(a: dict) -> str:
    """'reproduced: failed no-loss (3)' / 'not reproduced: passed'."""
    return f"{'reproduced' if a['reproduced'] else 'not reproduced'}: {a.get('said') or a['status'] or a['outcome']}"


def _testcase(parent: ET.Element, suite: str, v: dict) -> None:
    case = ET.SubElement(
        parent, "testcase", name=v["id"], classname=f"{suite}.{v['scenario']}", time=_seconds(v["seconds"])
    )
    if v["state"] == FAILED and v.get("expected"):  # it did not fail as expected: the reason says how
        failure = ET.SubElement(case, "failure", type="expectation", message=v["reason"])
        failure.text = "\n".join(
            [f"expected: {v['expected']}"]
            + [f"attempt {n}: {_attempt_line(a)} ({a['run_dir']})" for n, a in enumerate(v["attempts"], 1)]
            + [anomaly_line(x) for x in v["violations"]]
        )
    elif v["state"] == FAILED:
        checks = sorted({x["check"] for x in v["violations"]})
        failure = ET.SubElement(
            case, "failure", type="violation", message=f"{len(v['violations'])} violation(s): {', '.join(checks)}"
        )
        failure.text = "\n".join(map(anomaly_line, v["violations"]))
    elif v["state"] == BROKEN:
        kind = v["status"] or v["outcome"] or "error"  # error / incomplete verdicts, or a run that broke
        error = ET.SubElement(case, "error", type=kind, message=v["reason"] or f"verdict {kind}")
        error.text = f"outcome {v['outcome']}, verdict {v['status'] or 'none'}; see {v['run_dir']}"
    elif v["state"] == SKIPPED:
        ET.SubElement(case, "skipped", message=v["reason"])
    lines = [f"replay: {v['replay']}"] if v.get("replay") else []
    if v.get("run_dir"):
        run_dir = Path(v["run_dir"])
        summary = run_dir / "summary.md"
        text = summary.read_text() if summary.exists() else ""
        lines = [text, *lines, f"run directory: {run_dir}", f"[[ATTACHMENT|{run_dir / 'history.jsonl'}]]"]
    if lines:
        out = ET.SubElement(case, "system-out")
        out.text = "\n".join(lines) + "\n"


_COLOURS = {PASSED: "#1a7f37", FAILED: "#cf222e", BROKEN: "#bc4c00", SKIPPED: "#6e7781"}


def html_page(suite: dict, out: Path) -> str:
    """One table: a row per variant, its figures, its violations and links into its run."""
    rows = []
    for v in suite["variants"]:
        figures = v.get("figures") or {}
        cells = [
            f"<td class='w'><code>{html.escape(v['id'])}</code></td>",
            f"<td style='color:{_COLOURS[v['state']]};font-weight:bold'>{v['state'].upper()}</td>",
            f"<td>{format_s(v['seconds'])}</td>",
        ]
        cells += [f"<td>{_shown(figures.get(key), key)}</td>" for key, _ in _FIGURES]
        notes = [anomaly_line(x) for x in v["violations"][:5]]
        if len(v["violations"]) > 5:
            notes.append(f"… {len(v['violations']) - 5} more in verdict.json")
        if v["reason"] and (v["state"] != PASSED or v.get("expected")):
            notes.append(v["reason"])
        expected = html.escape(v.get("expected") or "passes")
        cells.append(f"<td class='w'>{expected}</td>")
        cells.append("<td class='w notes'>" + "<br>".join(html.escape(n) for n in notes) + "</td>")
        links = []
        if v.get("run_dir"):
            rel = os.path.relpath(v["run_dir"], out)
            links = [
                f"<a href='{html.escape(rel)}/{name}'>{name}</a>"
                for name in ("summary.md", "verdict.json", "history.jsonl")
                if (Path(v["run_dir"]) / name).exists()
            ]
            report = Path(v["run_dir"]) / "analysis" / "runs" / Path(v["run_dir"]).name / "report.html"
            if report.exists():
                links.append(f"<a href='{html.escape(os.path.relpath(report, out))}'>report</a>")
        if len(v.get("attempts") or []) > 1:  # the others: each attempt's summary, with how it ended
            links += [
                f"<br>attempt {n}: <a href='{html.escape(os.path.relpath(a['run_dir'], out))}/summary.md'>"
                f"{html.escape(_attempt_line(a))}</a>"
                for n, a in enumerate(v["attempts"], 1)
            ]
        cells.append("<td class='w'>" + " ".join(links) + "</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    counts = ", ".join(f"{_count(suite['variants'], s)} {s}" for s in (PASSED, FAILED, BROKEN, SKIPPED))
    heads = "".join(
        f"<th>{h}</th>"
        for h in ("variant", "result", "time", *(h for _, h in _FIGURES), "expected", "violations / notes", "run")
    )
    title = html.escape(f"suite {suite['suite']}")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{title}</title>
<style>body{{font-family:sans-serif;margin:2em}} h1,p{{overflow-wrap:anywhere}}
.scroll{{overflow-x:auto;max-width:100%}} table{{border-collapse:collapse}}
td,th{{border:1px solid #d0d7de;padding:4px 8px;vertical-align:top;text-align:left}} th{{background:#f6f8fa}}
table{{font-size:13px}} td{{white-space:nowrap}}
td.w{{white-space:normal;overflow-wrap:break-word;min-width:8em}}
td.notes{{overflow-wrap:anywhere;min-width:20em}}</style>
</head><body>
<h1>{title}</h1>
<p>{html.escape(suite.get("description") or "")}</p>
<p>{html.escape(suite["state"])}, started {html.escape(suite["started"])}: {counts}; exit code {suite.get("exit_code")}.
Files: <a href="suite.json">suite.json</a>, <a href="junit.xml">junit.xml</a>.
A variant expected to fail passes when it failed that way in enough attempts (expected: what it had to do).
Rebalance times are from the start of a rebalance to the last member's assignment (p95: nearest rank over the run's
completed rebalances); stop-the-world is the longest time one partition had no consuming owner.</p>
<div class="scroll"><table><tr>{heads}</tr>
{chr(10).join(rows)}
</table></div></body></html>
"""


def _shown(value, key: str) -> str:
    if value is None:
        return MISSING
    return format_ms(value) if key.endswith("_ms") else format_number(value)
