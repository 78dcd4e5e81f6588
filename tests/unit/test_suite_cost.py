"""benchmarks/suite_cost.py: the test time per lane from pytest's JUnit XML, and the CPU
sampler's account of a process it saw start."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
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


def test_lanes_sum_test_time_per_module_and_the_three_broker_lane(suite_cost, tmp_path):
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
    assert figures["three_broker_lane_s"] == 90.5
    assert figures["modules_s"] == {"integration/test_compare": 300.0, "integration/test_fault_cluster": 80.5,
                                    "integration/test_teardown": 10.0, "unit/test_scenario": 0.5}


def test_the_sampler_counts_the_cpu_of_a_process_started_after_it(suite_cost):
    sampler = suite_cost.CpuSampler(interval=0.05)
    sampler.start()
    burner = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nwhile time.process_time() < 0.4: pass\n"
                               "print(time.process_time(), flush=True)\nsys.stdin.readline()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        spent = float(burner.stdout.readline())
        deadline = time.monotonic() + 30
        # Let it go once the sampler has read what it spent (its last reading, not a sleep).
        while time.monotonic() < deadline and not any(
                pid == str(burner.pid) and seconds >= spent - 0.02 for (pid, _), (_, seconds) in list(sampler.last.items())):
            time.sleep(0.05)
    finally:
        burner.communicate("\n", timeout=30)
    by_kind = sampler.stop()
    assert by_kind["other python"]["processes"] >= 1
    assert by_kind["other python"]["cpu_s"] >= spent - 0.05


def test_run_phases_sum_each_stretch_of_every_run_once(suite_cost, tmp_path):
    import json

    for name, phases, shared in (("a", {"start": 0, "cluster_ready": 5, "warmup": 5.5, "workload": 7.5, "recovery": 37.5,
                                        "drain": 40, "done": 41}, 2),
                                 ("b", {"start": 0, "cluster_ready": 1, "warmup": 1, "workload": 3, "recovery": 13}, None)):
        run = tmp_path / "popen-gw0" / f"{name}0" / "runs" / name
        run.mkdir(parents=True)
        (run / "run.json").write_text(json.dumps({"state": "completed", "phases": phases, "shared_cluster": shared}))
    (tmp_path / "popen-gw0" / "acurrent").symlink_to(tmp_path / "popen-gw0" / "a0")  # pytest's: not a second run
    (tmp_path / "popen-gw0" / "broken" / "runs" / "c").mkdir(parents=True)
    (tmp_path / "popen-gw0" / "broken" / "runs" / "c" / "run.json").write_text("{not json")
    figures = suite_cost.run_phases(tmp_path)
    assert figures == {"runs": 2, "on_a_shared_cluster": 1, "phases_s": {
        "workload": 40.0, "cluster start": 6.0, "recovery": 2.5, "warm-up": 4.0, "drain": 1.0, "topics and clients": 0.5}}
