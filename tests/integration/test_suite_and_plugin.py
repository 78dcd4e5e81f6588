"""`suite` and the pytest plugin on real clusters: a passing and a deliberately faulty
scenario, with what CI reads (JUnit XML, suite.json) checked against the runs' own verdicts
and histories."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from oracle import load_history
from tests.integration.conftest import REPO, alive_pids, lab
from tests.junit_schema import assert_valid_junit

QUICK = REPO / "tests" / "integration" / "scenarios" / "quick-pause.yaml"
FAULTY = REPO / "scenarios" / "faulty-consumer.yaml"


def _evicted(run_dir: Path, member: str) -> bool:
    return any(
        e["name"] == "coordinator_member_removed"
        and e.get("reason") == "failed"
        and str(e.get("member_id", "")).startswith(f"{member}-")
        for e in load_history(run_dir)
    )


@pytest.mark.timeout(900)
def test_a_suite_runs_every_variant_and_reports_them_as_junit(tmp_path):
    # Its passing variant, quick-pause[classic-cooperative], is the CI recipe's run
    # (tests/integration/test_ci_recipe.py): the same checks, on the JUnit the script leaves.
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"""
name: ci
scenarios: [{QUICK}, {FAULTY}]
matrix: {{protocol: [classic-cooperative, classic-eager]}}
exclude: [{{scenario: quick-pause}}, {{scenario: faulty-consumer, protocol: classic-cooperative}}]
""")
    proc = lab("suite", str(suite), "--runs-dir", str(tmp_path / "runs"), timeout=840)
    assert proc.returncode == 1, (proc.stdout + proc.stderr)[-4000:]  # the faulty consumer's check failed
    [out] = (tmp_path / "runs").glob("suite-*-ci")
    data = json.loads((out / "suite.json").read_text())
    assert data["state"] == "completed" and data["exit_code"] == 1
    states = {v["id"]: v["state"] for v in data["variants"]}
    assert states == {"faulty-consumer[classic-eager]": "failed"}

    assert_valid_junit(out / "junit.xml")
    root = ET.parse(out / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == set(states)
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    [v] = data["variants"]
    verdict = json.loads((Path(v["run_dir"]) / "verdict.json").read_text())
    completed = [r["duration_ms"] for r in verdict["rebalances"] if r["status"] == "completed"]
    # What CI reads is what the oracle measured on that run's history.
    assert props[f"{v['id']}.rebalances"] == str(len(completed))
    assert float(props[f"{v['id']}.rebalance_max_ms"]) == round(max(completed), 1)
    assert props[f"{v['id']}.protocol"] == "classic-eager"
    failure = cases["faulty-consumer[classic-eager]"].find("failure")
    lost = [x for x in verdict["violations"] if x["check"] == "no-loss"]
    assert lost and failure.get("message").endswith("no-loss")
    assert all(f"[no-loss/{x['kind']}] {x['message']}" in failure.text for x in lost)
    page = (out / "index.html").read_text()
    assert page.count("<tr>") == 2 and "FAILED" in page
    assert alive_pids(list(load_history(v["run_dir"]))) == []  # the run stopped its own


@pytest.mark.timeout(900)
def test_scenario_files_are_pytest_items(tmp_path):
    for source in (QUICK, FAULTY):
        shutil.copy(source, tmp_path / source.name)
    (tmp_path / "notes.yaml").write_text("just: some yaml\n")  # not a scenario: not collected
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(tmp_path),
            f"--junitxml={tmp_path / 'out.xml'}",
            "--chaos-runs-dir",
            str(tmp_path / "runs"),
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-o",
            "addopts=",
            "-rA",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=840,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "1 failed, 1 passed" in output, output[-4000:]
    root = ET.parse(tmp_path / "out.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"quick-pause", "faulty-consumer"}
    failure = cases["faulty-consumer"].find("failure")
    assert failure is not None and "[no-loss/" in failure.get("message", "") + (failure.text or "")
    assert "run directory:" in failure.text
    props = {p.get("name"): p.get("value") for p in cases["quick-pause"].iter("property")}
    run_dir = Path(props["run_dir"])
    assert json.loads((run_dir / "verdict.json").read_text())["status"] == "pass" and _evicted(run_dir, "consumer-2")
    assert int(props["rebalances"]) >= 2
    assert all(alive_pids(list(load_history(d))) == [] for d in (tmp_path / "runs").glob("*-s1"))


@pytest.mark.timeout(600)
def test_an_expected_failure_passes_the_suite_and_an_unexpected_pass_fails_it(tmp_path):
    import yaml

    # the faulty consumer on one broker (quick-pause's cluster: both variants run on it), a short run
    faulty = yaml.safe_load(FAULTY.read_text())
    faulty.update(duration_s=18)
    faulty["cluster"]["brokers"] = 1
    faulty["topics"][0]["replication_factor"] = 1
    (tmp_path / "faulty.yaml").write_text(yaml.safe_dump(faulty))
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"""
name: expected
scenarios: [{QUICK}, {tmp_path / "faulty.yaml"}]
expect:
  - {{scenario: faulty-consumer, fails: [no-loss/lost-write, contiguity/skip-at-handover], may_also_fail: [convergence/stalled], attempts: 3}}
  - {{scenario: quick-pause, fails: [no-loss]}}
""")
    proc = lab("suite", str(suite), "--runs-dir", str(tmp_path / "runs"), timeout=540)
    assert proc.returncode == 1, (proc.stdout + proc.stderr)[-4000:]  # quick-pause passed: not what it expected
    [out] = (tmp_path / "runs").glob("suite-*-expected")
    data = json.loads((out / "suite.json").read_text())
    by_id = {v["id"]: v for v in data["variants"]}
    quick, lost = by_id["quick-pause"], by_id["faulty-consumer"]
    assert (quick["state"], quick["reason"]) == (
        "failed",
        "expected to fail no-loss in ≥ 1 of 1 attempts: reproduced 0 (1 passed)",
    )
    assert lost["state"] == "passed" and lost["reproduced"] == 1
    # each attempt as its run's own verdict says: the ones before the reproduction passed
    for a in lost["attempts"]:
        verdict = json.loads((Path(a["run_dir"]) / "verdict.json").read_text())
        kinds = {(x["check"], x["kind"]) for x in verdict["violations"]}
        expected = {("no-loss", "lost-write"), ("contiguity", "skip-at-handover")}
        assert a["reproduced"] == (kinds - {("convergence", "stalled")} == expected)  # a stall allowed beside
        assert a["status"] == verdict["status"]
    assert [a["reproduced"] for a in lost["attempts"]][-1] and {a["status"] for a in lost["attempts"][:-1]} <= {"pass"}
    assert (
        "Expected: fails no-loss/lost-write and contiguity/skip-at-handover (convergence/stalled may fail with it)"
        " in at least 1 of 3 attempts" in (Path(lost["run_dir"]) / "summary.md").read_text()
    )

    assert_valid_junit(out / "junit.xml")
    root = ET.parse(out / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["faulty-consumer"].find("failure") is None
    assert cases["quick-pause"].find("failure").get("type") == "expectation"
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert (
        props["faulty-consumer.expected"]
        == "fails no-loss/lost-write and contiguity/skip-at-handover (convergence/stalled may fail with it) in at least 1 of 3 attempts"
    )
    assert props["faulty-consumer.attempts"] == str(len(lost["attempts"]))
    assert all(alive_pids(list(load_history(a["run_dir"]))) == [] for v in data["variants"] for a in v["attempts"])
