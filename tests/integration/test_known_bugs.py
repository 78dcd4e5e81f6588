"""The corpus of known bugs in CI, in its small form: one bug with its fixed pair, run as
`rebalance-lab suite suites/known-bugs.yaml --only '<bug>-*'` against real brokers and the real
client releases. The affected release must fail as its expectation names it — and the history
must show why — and the first fixed release must pass. The whole corpus is
`rebalance-lab suite suites/known-bugs.yaml` (docs/known-bugs.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.campaigns import bug_corpus
from oracle import History, load_history
from tests.integration.conftest import lab

pytestmark = pytest.mark.integration

# librdkafka #4527 reproduces 5 of 5 (its measured.json), the pair in ~70 s on the default Kafka
# line, and its two client releases are small wheels: the cheapest deterministic pair.
CI_BUG = "librdkafka-4527"


@pytest.mark.timeout(600)
def test_a_known_bug_fails_as_named_on_its_affected_release_and_passes_on_the_fixed_one(tmp_path):
    [bug] = [b for b in bug_corpus.load_corpus() if b.id == CI_BUG]
    proc = lab(
        "suite", "suites/known-bugs.yaml", "--only", f"{CI_BUG}-*", "--runs-dir", str(tmp_path / "runs"), timeout=580
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    [out] = (tmp_path / "runs").glob("suite-*-known-bugs")
    variants = {v["scenario"]: v for v in json.loads((out / "suite.json").read_text())["variants"]}
    affected, fixed = variants[f"{CI_BUG}-affected"], variants[f"{CI_BUG}-fixed"]

    assert affected["state"] == "passed" and affected["reproduced"] >= 1
    expected = {entry.split("/")[0] for entry in bug.expectation["fails"]}
    reproducing = [a for a in affected["attempts"] if a["reproduced"]]
    assert all(set(a["failed_checks"]) == expected for a in reproducing)
    # what the history of a reproducing attempt shows: a member asked to stop, killed when its close hung
    history = History(load_history(Path(reproducing[0]["run_dir"]) / "history.jsonl"))
    hung = [e for e in history.named("process_exited") if e.get("escalated_after_ms") is not None]
    assert [e["role"] for e in hung] == ["consumer"], hung
    assert history.first("run_started")["client"] == bug.affected["workload"]["client"]

    assert fixed["state"] == "passed" and fixed["status"] == "pass"
    history = History(load_history(Path(fixed["run_dir"]) / "history.jsonl"))
    assert not [e for e in history.named("process_exited") if e.get("escalated_after_ms") is not None]
    assert history.first("run_started")["client"] == bug.fixed["workload"]["client"]
