"""Output for people and for scripts: tables that fit the terminal (80 columns included) and pad no
line when piped; -q / -v; --json (one document on stdout, valid against its model, docs/reference/json.md
generated from the models); --version; run.json's harness_version and components."""

from __future__ import annotations

import gzip
import io
import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.components import inventory
from harness.reports import json_output
from harness.reports.run import print_comparison, print_suite, print_verdict
from harness.run.loop import RunResult
from oracle import check_history, load_history
from runtime.console import LabConsole

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "histories"
WIDTHS = (80, 120)
MAX_CELL_LINES = 3  # a cell may fold onto this many lines at most


def _fixture_run(tmp: Path, name: str) -> Path:
    run_dir = tmp / name
    run_dir.mkdir()
    with gzip.open(FIXTURES / f"{name}.jsonl.gz") as src, open(run_dir / "history.jsonl", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("runs")
    return {n: _fixture_run(tmp, n) for n in ("zk-eager", "protocol-migration")}


@pytest.fixture(scope="module")
def verdicts(runs) -> dict[str, dict]:
    out = {}
    for name, run_dir in runs.items():
        events = load_history(run_dir / "history.jsonl", compact_events=True)
        out[name] = {"run_id": name, "scenario": name, "seed": 1, **check_history(events, {}).to_dict()}
    return out


def _piped(width: int) -> LabConsole:
    c = LabConsole(file=io.StringIO(), highlight=False, width=width)
    assert not c.is_terminal
    return c


_TABLE_CHARS = ("┏", "┃", "┡", "│", "└", "┗", "┣", "┠")


def _assert_fits(text: str, width: int) -> None:
    lines = text.splitlines()
    assert lines
    for line in lines:
        # a table's lines fit; a message is never folded when piped (grep finds it whole)
        assert len(line) <= width or line[:1] not in _TABLE_CHARS, f"wider than {width}: {line!r}"
        assert line == line.rstrip(" "), f"padded: {line!r}"
        if line[:1] in ("┏", "┃", "┡", "│", "└"):  # a table's line: whole, not cut at the console's edge
            assert line[-1] in ("┓", "┃", "┩", "│", "┘"), f"cut: {line!r}"


def _tallest_row(text: str, title: str) -> int:
    """The most lines one row of the table titled ``title`` takes (its first column is blank on the
    lines a row folds onto)."""
    lines = text.splitlines()
    start = lines.index(title)
    body, tallest, height = False, 0, 0
    for line in lines[start + 1 :]:
        if line.startswith(("┡", "├")):
            body = True
            continue
        if line.startswith("└"):
            break
        if body:
            first = line.split("│")[1] if "│" in line else line
            height = height + 1 if not first.strip() else 1
            tallest = max(tallest, height)
    return tallest


@pytest.mark.parametrize("width", WIDTHS)
def test_the_verdict_fits(verdicts, width):
    for name, verdict in verdicts.items():
        c = _piped(width)
        print_verdict(c, verdict, Path("runs") / name)
        text = c.file.getvalue()
        _assert_fits(text, width)
        assert _tallest_row(text, "Rebalances") <= MAX_CELL_LINES, text
        assert _tallest_row(text, "Checks") <= MAX_CELL_LINES, text
        assert "trigger" in text and "assigned" in text  # what the table is for stays
    wide = _piped(200)
    print_verdict(wide, verdicts["zk-eager"])
    assert "broker's view" in wide.file.getvalue()  # dropped only when it does not fit


def _suite() -> dict:
    variants = []
    for i, state in enumerate(("passed", "failed", "broken", "skipped")):
        variants.append(
            {
                "id": f"random-chaos/classic-cooperative/kafka-4.4.0/confluent-kafka==2.12.0/seed-{i}",
                "state": state,
                "status": {"passed": "pass", "failed": "fail"}.get(state),
                "exit_code": {"passed": 0, "failed": 1, "broken": 3}.get(state),
                "reason": "" if state == "passed" else "the run broke: a broker did not start within 60 s",
                "seconds": 61.0,
                "run_dir": f"runs/suite/{i}",
                "figures": {
                    "rebalances": 12,
                    "rebalance_p95_ms": 3100.0,
                    "stop_the_world_max_ms": 2900.0,
                    "violated_checks": ["no-loss", "contiguity"] if state == "failed" else [],
                },
            }
        )
    return {"suite": "release", "state": "failed", "exit_code": 3, "variants": variants}


def _comparison_rows(verdicts) -> list[dict]:
    from harness.reports.run import verdict_figures

    rows = []
    for protocol, status in (("classic-eager", "pass"), ("consumer", "fail"), ("classic-cooperative", None)):
        rows.append(
            {
                "protocol": protocol,
                "kafka": "4.4.0",
                "client": "confluent-kafka==2.12.0",
                "client_version": "2.12.0",
                "seed": 7,
                "outcome": "completed" if status else "error",
                "status": status,
                "ok": status == "pass",
                **verdict_figures(verdicts["zk-eager"]),
                "not_applicable": ["fenced-commits"] if protocol == "consumer" else [],
                "run_dir": f"runs/compare/{protocol}",
            }
        )
    return rows


@pytest.mark.parametrize("width", WIDTHS)
def test_the_suite_comparison_and_capacity_tables_fit(verdicts, width):
    from harness.cli.campaigns import capacity_table

    c = _piped(width)
    print_suite(c, _suite(), Path("runs/suite"))
    text = c.file.getvalue()
    _assert_fits(text, width)
    assert _tallest_row(text, "Suite release") <= MAX_CELL_LINES, text

    c = _piped(width)
    print_comparison(c, _comparison_rows(verdicts), Path("runs/compare"))
    text = c.file.getvalue()
    _assert_fits(text, width)
    assert _tallest_row(text, "Side by side") <= MAX_CELL_LINES, text

    from analysis.capacity import COLUMNS

    rows = [{c: (p if c == "protocol" else 1234.5) for c in COLUMNS} for p in ("classic-eager", "consumer")]
    c = _piped(width)
    c.print(capacity_table("sweep", rows, width))
    text = c.file.getvalue()
    _assert_fits(text, width)
    assert _tallest_row(text, "Capacity — sweep") <= MAX_CELL_LINES, text


def test_quiet_brief_lines(verdicts):
    c = _piped(80)
    print_suite(c, _suite(), Path("runs/suite"), brief=True)
    lines = c.file.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == ["FAILED", "BROKEN", "SKIPPED", "failed:"]
    suite = _suite()
    suite["variants"][1]["replay"] = "rebalance-lab run scenarios/random-chaos.yaml --seed 1"
    c = _piped(80)
    print_suite(c, suite, Path("runs/suite"), brief=True)
    assert "  replay: rebalance-lab run scenarios/random-chaos.yaml --seed 1" in c.file.getvalue().splitlines()


# ----------------------------------------------------------------------------- the command line


def test_piped_check_uses_columns_and_pads_nothing(runs):
    r = CliRunner().invoke(main, ["check", str(runs["zk-eager"])], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    _assert_fits(r.stdout, 80)
    assert not re.search(r"\d\d:\d\d:\d\d|\w+\.py:\d+", r.stdout)  # no timestamps, no source lines


def test_quiet_and_verbose_before_or_after_the_command(runs):
    for argv in (["-q", "check", str(runs["zk-eager"])], ["check", str(runs["zk-eager"]), "--quiet"]):
        r = CliRunner().invoke(main, argv)
        assert r.exit_code == 0, r.output
        assert r.stdout.splitlines() == [f"PASS: 0 violations, 0 findings — {runs['zk-eager']}"]
    r = CliRunner().invoke(main, ["check", str(runs["zk-eager"])])  # the next invocation: back to normal
    assert "Rebalances" in r.stdout
    assert CliRunner().invoke(main, ["-v", "check", str(runs["zk-eager"])]).exit_code == 0


def _json(r) -> dict:
    doc = json.loads(r.stdout)  # exactly one document: json.loads refuses trailing text
    assert isinstance(doc, dict)
    return doc


def test_check_json(runs):
    r = CliRunner().invoke(main, ["check", str(runs["protocol-migration"]), "--json"])
    doc = _json(r)
    out = json_output.CheckOutput.model_validate(doc)
    assert doc["schema"] == "rebalance-lab.check/1"
    assert out.exit_code == r.exit_code == 0
    assert out.verdict.rebalances.count == len(out.verdict.rebalances.durations_ms) > 0
    assert "Rebalances" not in r.stdout + r.stderr  # the document says it all


def test_check_json_on_bad_input(tmp_path):
    r = CliRunner().invoke(main, ["check", str(tmp_path), "--json"])
    assert r.exit_code == 2
    assert json_output.ErrorOutput.model_validate(_json(r)).error.endswith("no history in this directory")


def test_schedule_json_and_its_old_output():
    scenario = str(REPO / "scenarios" / "random-chaos.yaml")
    plain = CliRunner().invoke(main, ["schedule", scenario])
    assert plain.exit_code == 0 and isinstance(json.loads(plain.stdout), list)  # as before --json
    r = CliRunner().invoke(main, ["schedule", scenario, "--json", "--seed", "5"])
    out = json_output.ScheduleOutput.model_validate(_json(r))
    assert r.exit_code == out.exit_code == 0
    assert out.seed == 5 and out.faults and out.random_asked


def _fake_run(verdict: dict):
    class FakeRun:
        def __init__(self, scenario, path, runs_dir, report, progress=None, detail=None, **_):
            self.run_dir = Path(runs_dir) / f"{scenario.name}-{len(list(Path(runs_dir).iterdir()))}"
            self.report, self.detail = report, detail

        def execute(self):
            self.run_dir.mkdir(parents=True)
            self.report("phase: workload")
            if self.detail:
                self.detail("started broker-1 (broker, pid 1)")
            (self.run_dir / "run.json").write_text(
                json.dumps({"state": "completed", "harness_version": "0.1.0", "components": {"kafka": "3.9.2"}})
            )
            return RunResult(self.run_dir, "completed", verdict)

    return FakeRun


@pytest.fixture
def no_install(monkeypatch):
    import harness.cli.campaigns
    import harness.cli.runs

    monkeypatch.setattr(harness.cli.runs, "installed_for", lambda scenario: None)
    monkeypatch.setattr(harness.cli.campaigns, "installed_for", lambda scenario: None)


def test_run_json_quiet_and_verbose(verdicts, tmp_path, monkeypatch, no_install):
    import harness.run.loop

    monkeypatch.setattr(harness.run.loop, "Run", _fake_run(verdicts["zk-eager"]))
    argv = ["run", str(REPO / "scenarios" / "smoke.yaml"), "--runs-dir", str(tmp_path)]
    r = CliRunner().invoke(main, [*argv, "--json"])
    out = json_output.RunOutput.model_validate(_json(r))
    assert r.exit_code == out.exit_code == 0 and out.status == "pass"
    assert out.components == {"kafka": "3.9.2"} and out.harness_version == "0.1.0"
    assert "phase: workload" in r.stderr  # progress: stderr, never the document's stdout

    r = CliRunner().invoke(main, ["-q", *argv])
    assert r.stdout.splitlines()[-1].startswith("PASS: ") and "phase:" not in r.stdout
    r = CliRunner().invoke(main, [*argv, "-v"])
    assert "started broker-1" in r.stdout and "phase: workload" in r.stdout
    r = CliRunner().invoke(main, argv)
    assert "started broker-1" not in r.stdout and "phase: workload" in r.stdout


def test_suite_json(verdicts, tmp_path, monkeypatch, no_install):
    import harness.campaigns.suite

    monkeypatch.setattr(harness.campaigns.suite, "Run", _fake_run(verdicts["zk-eager"]))
    suite = tmp_path / "s.yaml"
    suite.write_text(f"name: s\nscenarios: [{REPO / 'scenarios' / 'smoke.yaml'}]\nmatrix:\n  seed: [1, 2]\n")
    r = CliRunner().invoke(main, ["suite", str(suite), "--runs-dir", str(tmp_path / "runs"), "--json"])
    out = json_output.SuiteOutput.model_validate(_json(r))
    assert r.exit_code == out.exit_code == 0, r.stderr
    assert [v.state for v in out.variants] == ["passed", "passed"]
    assert all(v.run_dir for v in out.variants)
    r = CliRunner().invoke(main, ["suite", str(suite), "--list", "--json"])
    listed = json_output.SuiteOutput.model_validate(_json(r))
    assert r.exit_code == 0 and listed.status == "listed" and len(listed.variants) == 2


def test_compare_json(verdicts, tmp_path, monkeypatch):
    import harness.campaigns.compare

    rows = _comparison_rows(verdicts)

    class Entry:
        def __init__(self, row):
            self._row = row
            self.result = SimpleNamespace(exit_code=0 if row["ok"] else 1)  # as `run` would exit

        def row(self):
            return self._row

    monkeypatch.setattr(
        harness.campaigns.compare, "compare", lambda *a, **k: (tmp_path, [Entry(r) for r in rows], False)
    )
    argv = ["compare", str(REPO / "scenarios" / "smoke.yaml"), "--protocols", "classic-eager,consumer"]
    r = CliRunner().invoke(main, [*argv, "--runs-dir", str(tmp_path), "--json"])
    out = json_output.CompareOutput.model_validate(_json(r))
    assert r.exit_code == out.exit_code == 1 and out.status == "failed"
    assert [row.protocol for row in out.rows] == [r["protocol"] for r in rows]


def test_the_json_reference_is_current():
    assert json_output.DOC.read_text() == json_output.reference_markdown(), (
        "docs/reference/json.md is stale: python3 -m harness.reports.json_output"
    )


def test_version():
    r = CliRunner().invoke(main, ["--version"])
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0] == f"rebalance-lab {inventory.harness_version()}"
    assert [line.split()[0] for line in lines[1:]] == [
        "kafka",
        "confluent-kafka",
        "librdkafka",
        "toxiproxy",
        "kio",
        "java",
        "python",
    ]


def test_run_components(tmp_path):
    history = tmp_path / "history.jsonl"
    history.write_text(
        "\n".join(
            json.dumps({"name": "consumer_started", "client_library": "librdkafka", "client_version": v})
            for v in ("2.12.0", "2.12.0")
        )
        + "\n"
    )
    c = inventory.run_components(
        kafka="4.4.0", metadata_mode="kraft", client="confluent-kafka==2.12.0", toxiproxy=True, history=history
    )
    assert c["kafka"] == "4.4.0" and "zookeeper" not in c
    assert c["librdkafka"] == "2.12.0" and c["client"] == "confluent-kafka==2.12.0"
    assert c["toxiproxy"] and c["python"]


def test_run_json_keys_are_documented(tmp_path):
    from harness.run.loop import Run
    from harness.scenario import load_scenario

    path = REPO / "scenarios" / "smoke.yaml"
    run = Run(load_scenario(path), path, tmp_path, lambda m: None)
    run._state("running", started="now", components=run._components())
    written = set(json.loads((run.run_dir / "run.json").read_text()))
    run._state("completed", error=None, verdict="pass", phases={}, components=run._components())
    written |= set(json.loads((run.run_dir / "run.json").read_text()))
    doc = (REPO / "docs" / "reference" / "run-json.md").read_text()
    documented = set(re.findall(r"^\| `(\w+)` \|", doc, flags=re.M))
    assert written <= documented, written - documented
    assert documented - written <= {"shared_cluster", "killed"}
    assert {"harness_version", "components"} <= written
    components = json.loads((run.run_dir / "run.json").read_text())["components"]
    assert {"kafka", "client", "java", "python"} <= set(components)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_analysis_table_fits(width):
    from analysis.cli import comparison_table

    row = {
        "protocol": "classic-cooperative",
        "assignor": "cooperative-sticky",
        "kafka": "3.9.2",
        "client": "confluent-kafka==2.16.1",
        "faults": "crash+pause",
        "scenario": "random-chaos",
        "runs": 3,
        "metric": "rebalances",
        "sum": 4,
    }
    c = _piped(width)
    c.print(comparison_table([row], width))
    text = c.file.getvalue()
    _assert_fits(text, width)
    assert _tallest_row(text, text.splitlines()[0]) <= MAX_CELL_LINES, text
    assert "classic-cooperative" in text and "3.9.2" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_the_known_bugs_table_fits(width):
    r = CliRunner().invoke(main, ["bugs"], env={"COLUMNS": str(width)})
    assert r.exit_code == 0, r.output
    _assert_fits(r.stdout, width)
    assert r.stdout.splitlines()[1].endswith("┓")  # whole, not cut at the console's edge


def test_each_document_has_a_json_schema():
    schemas = json_output.json_schemas()
    assert sorted(schemas) == sorted(
        f"rebalance-lab.{n}/1" for n in ("run", "check", "suite", "compare", "schedule", "error")
    )
    assert all(s["properties"]["schema"]["const"] == name for name, s in schemas.items())
