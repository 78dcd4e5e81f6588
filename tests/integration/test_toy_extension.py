"""The toy extension's driver, fault kind and check in one real run: tests/fixtures/toy_extension
installed the way a user installs one — its distribution on the harness's path, and so on its
members' — and its toy.yaml run as docs/extending.md runs it. Two toy members form the group on a
real broker, consume and commit, one naps, and the oracle judges the history with the toy check
among its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.integration.conftest import REPO, only_run_dir

TOY = REPO / "tests" / "fixtures" / "toy_extension"


def test_toy_members_join_consume_commit_and_pass(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, (REPO, TOY)))}
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "toy.yaml", "--runs-dir", str(tmp_path / "runs")],
        cwd=TOY,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    run_dir = only_run_dir(tmp_path / "runs")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    events = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["status"] == "pass" and verdict["checks"]["toy-commits"]["status"] == "passed", verdict["checks"]

    members = [e for e in events if e.get("member")]
    # The toy's members, not the librdkafka driver's: it reads no generation (librdkafka's does).
    started = [e for e in members if e["name"] == "consumer_started"]
    assert {e["member"] for e in started} == {"consumer-1", "consumer-2"}
    assert all(e["generation"] is None and "processing" not in e for e in started)
    assigned = [e for e in members if e["name"] == "partitions_assigned"]
    assert {e["member"] for e in assigned} == {"consumer-1", "consumer-2"}
    assert all(e["member_id"].startswith(e["member"] + "-") for e in assigned)  # the broker's member id
    assert {(p["topic"], p["partition"]) for e in assigned for p in e["partitions"]} == {("events", 0), ("events", 1)}
    committed = {e["member"] for e in members if e["name"] == "offsets_committed" and e["success"]}
    assert committed == {"consumer-1", "consumer-2"}

    # The toy kind was injected and healed by the run, like a built-in one.
    assert [(e["name"], e["kind"], e["target"]) for e in events if e["name"] in ("fault_started", "fault_healed")] == [
        ("fault_started", "toy-nap", "consumer-1"),
        ("fault_healed", "toy-nap", "consumer-1"),
    ]
    # What the run had installed, in its history and its state file.
    [run_started] = [e for e in events if e["name"] == "run_started"]
    recorded = {(p["group"], p["name"], p["distribution"], p["version"]) for p in run_started["plugins"]}
    assert recorded == {
        ("rebalance_lab.fault_kinds", "toy-nap", "rebalance-lab-toy", "0.1.0"),
        ("rebalance_lab.checks", "toy-commits", "rebalance-lab-toy", "0.1.0"),
        ("rebalance_lab.drivers", "toy", "rebalance-lab-toy", "0.1.0"),
    }
    assert json.loads((run_dir / "run.json").read_text())["plugins"] == run_started["plugins"]

    # Judged again where the toy is not installed: its nap is read by its effects, not its kind;
    # the toy check the run had is said not to be judged here.
    fault = next(e for e in events if e["name"] == "fault_started")
    assert fault["effects"]["down"] == "paused" and fault["effects"]["silenced_as"] == "napping"
    again = subprocess.run(
        [sys.executable, "-m", "harness.cli", "check", str(run_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr
    assert "check 'toy-commits' from rebalance-lab-toy 0.1.0, not installed here: not judged" in again.stderr
