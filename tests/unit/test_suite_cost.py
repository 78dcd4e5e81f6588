"""benchmarks/suite_cost.py: the test time from pytest's JUnit XML, the CPU sampler's account
of a process it saw start, and the real runs' phases."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def suite_cost():
    spec = importlib.util.spec_from_file_location("suite_cost", REPO / "benchmarks" / "suite_cost.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lanes_sum_test_time_per_module_and_the_three_broker_modules(suite_cost, tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text("""<?xml version="1.0"?><testsuites><testsuite name="pytest">
<testcase classname="tests.integration.test_fault_cluster" name="test_a" time="80.5"/>
<testcase classname="tests.integration.test_teardown" name="test_b" time="10"/>
<testcase classname="tests.integration.test_compare" name="test_c" time="300"/>
<testcase classname="tests.unit.test_scenario.TestTopics" name="test_d" time="0.25"/>
<testcase classname="tests.unit.test_scenario" name="test_e" time="0.25"/>
</testsuite></testsuites>""")
    figures = suite_cost.lanes(junit)
    assert figures["test_s"] == 391.0
    assert figures["three_broker_modules_s"] == 90.5
    assert figures["modules_s"] == {
        "integration/test_compare": 300.0,
        "integration/test_fault_cluster": 80.5,
        "integration/test_teardown": 10.0,
        "unit/test_scenario": 0.5,
    }


def test_the_sampler_counts_the_cpu_of_a_child_of_its_root(suite_cost):
    sampler = suite_cost.CpuSampler(interval=0.05)
    sampler.root = str(os.getpid())  # this test's process stands for pytest: its children are the suite's
    sampler.start()
    burner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nwhile time.process_time() < 0.4: pass\n"
            "print(time.process_time(), flush=True)\nsys.stdin.readline()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        spent = float(burner.stdout.readline())
        deadline = time.monotonic() + 30
        # Let it go once the sampler has read what it spent (its reading, not a sleep).
        while time.monotonic() < deadline and not any(
            key[0] == str(burner.pid) and entry.get("cpu_s", 0) >= spent - 0.02
            for key, entry in list(sampler.seen.items())
        ):
            time.sleep(0.05)
        burner.communicate("\n", timeout=30)
    finally:
        burner.kill()
        sampled = sampler.stop()
    [entry] = [e for (pid, _), e in sampler.seen.items() if pid == str(burner.pid)]
    assert entry["kind"] == "other python" and entry["suite"] and entry["in_tree"]
    assert entry["cpu_s"] >= spent - 0.02
    assert sampled["by_kind"]["other python"]["cpu_s"] >= spent - 0.05 and sampled["tree_seen_s"] >= spent - 0.05


def test_run_phases_sum_each_stretch_of_every_real_run_once(suite_cost):
    runs = {
        "a": {
            "start": 0,
            "cluster_ready": 5,
            "warmup": 5.5,
            "workload": 7.5,
            "recovery": 37.5,
            "drain": 40,
            "done": 41,
        },
        # phases that began at once keep run.py's order: the clients, then the warm-up
        "b": {"start": 0, "cluster_ready": 1, "warmup": 1, "workload": 3, "recovery": 13},
        "unit": {"start": 0, "workload": 0.001, "done": 0.002},
    }  # a unit test's run: no cluster, not counted
    with tempfile.TemporaryDirectory() as root:  # not under this session's basetemp: suite_cost would count these
        for name, phases in runs.items():
            run = Path(root) / f"{name}0" / "runs" / name
            run.mkdir(parents=True)
            (run / "run.json").write_text(
                json.dumps({"state": "completed", "phases": phases, "shared_cluster": 2 if name == "a" else None})
            )
        (Path(root) / "torn" / "run.json").parent.mkdir()
        (Path(root) / "torn" / "run.json").write_text('{"phases": {"start": 0, "cluster_')
        figures = suite_cost.run_phases(Path(root))
    assert figures == {
        "runs": 2,
        "on_a_shared_cluster": 1,
        "phases_s": {
            "workload": 40.0,
            "cluster start": 6.0,
            "recovery": 2.5,
            "warm-up": 4.0,
            "drain": 1.0,
            "topics and clients": 0.5,
        },
    }
