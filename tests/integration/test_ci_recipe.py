"""The CI recipe's script (docs/ci/rebalance-lab-ci.sh) as a CI job runs it: on a fresh checkout
of this commit (a clone: what is not committed is not in it), into a virtual environment of its
own, against the lab home's components, a one-variant suite; the JUnit it leaves at its fixed
path is checked against the run's own verdict and history. It is also the suite test's passing
variant (tests/integration/test_suite_and_plugin.py runs the failing one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from oracle import load_history
from runtime.errors import EXIT_OK
from tests.integration.conftest import REPO, alive_pids
from tests.junit_schema import assert_valid_junit

VARIANT = "quick-pause[classic-cooperative]"


def _fresh_checkout(dest: Path) -> Path:
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.fail(f"{REPO} is not a git checkout: {head.stderr.strip()}", pytrace=False)
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(REPO), str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", head.stdout.strip()], check=True)
    return dest


@pytest.mark.timeout(300)
def test_the_ci_script_runs_a_suite_on_a_fresh_checkout(tmp_path):
    checkout = _fresh_checkout(tmp_path / "checkout")
    suite = tmp_path / "ci.yaml"
    suite.write_text(
        "name: ci\n"
        f"scenarios: [{checkout / 'tests' / 'integration' / 'scenarios' / 'quick-pause.yaml'}]\n"
        "matrix: {protocol: [classic-cooperative]}\n"
    )
    out, venv = tmp_path / "out", tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the checkout's harness, not this one
    env.update(
        RL_CI_OUT=str(out),
        RL_CI_VENV=str(venv),
        RL_CI_PYTHON=sys.executable,
        # This machine's Python has the pinned dependencies: the venv sees them (nothing to download),
        # and the harness is installed into the venv, never over this Python's own installation.
        RL_CI_SYSTEM_SITE_PACKAGES="1",
    )
    proc = subprocess.run(
        [str(checkout / "docs" / "ci" / "rebalance-lab-ci.sh"), str(suite)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == EXIT_OK, (proc.stdout + proc.stderr)[-4000:]
    ran = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import harness; print(harness.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert Path(ran.stdout.strip()).is_relative_to(checkout), ran.stdout + ran.stderr

    [suite_dir] = (out / "runs").glob("suite-*-ci")
    data = json.loads((suite_dir / "suite.json").read_text())
    [variant] = data["variants"]
    assert (variant["id"], variant["state"], data["exit_code"]) == (VARIANT, "passed", EXIT_OK)
    run_dir = Path(variant["run_dir"])
    assert run_dir.is_relative_to(out / "runs")  # uploaded with the rest

    junit = out / "junit.xml"  # the fixed path the recipes publish
    assert_valid_junit(junit)
    root = ET.parse(junit).getroot()
    [case] = list(root.iter("testcase"))
    assert case.get("name") == VARIANT and case.find("failure") is None and case.find("error") is None
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    verdict = json.loads((run_dir / "verdict.json").read_text())
    completed = [r["duration_ms"] for r in verdict["rebalances"] if r["status"] == "completed"]
    # What CI reads is what the oracle measured on that run's history.
    assert props[f"{VARIANT}.rebalances"] == str(len(completed)) and len(completed) >= 2
    assert float(props[f"{VARIANT}.rebalance_max_ms"]) == round(max(completed), 1)
    assert props[f"{VARIANT}.protocol"] == "classic-cooperative"
    events = load_history(run_dir)
    # The paused member was evicted and the group went on.
    assert any(
        e["name"] == "coordinator_member_removed"
        and e.get("reason") == "failed"
        and str(e.get("member_id", "")).startswith("consumer-2-")
        for e in events
    )
    assert alive_pids(list(events)) == []
