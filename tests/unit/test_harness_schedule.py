"""Seeded random fault schedules reproduce exactly, and `rebalance-lab schedule` prints them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from harness.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
RANDOM = REPO / "scenarios" / "random-chaos.yaml"


def schedule_bytes(*args: str) -> bytes:
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "schedule", str(RANDOM), *args], cwd=REPO, capture_output=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_same_seed_gives_the_same_schedule_byte_for_byte():
    first, second = schedule_bytes(), schedule_bytes()
    assert first == second
    faults = json.loads(first)
    assert len(faults) == 6 and [f["fault_id"] for f in faults] == [f"f{i}" for i in range(1, 7)]
    assert [f["at_s"] for f in faults] == sorted(f["at_s"] for f in faults)
    assert all(5 <= f["at_s"] <= 70 for f in faults)


def test_another_seed_gives_another_schedule():
    assert schedule_bytes("--seed", "43") != schedule_bytes()
    assert schedule_bytes("--seed", "43") == schedule_bytes("--seed", "43")


def test_drawn_faults_are_valid_and_complete(tmp_path):
    faults = load_scenario(RANDOM).schedule()
    kinds = {f["kind"] for f in faults}
    assert kinds <= {"pause", "crash", "network", "poll-stall"}
    for f in faults:
        assert f["target"] in {"consumer-1", "consumer-2", "consumer-3"}
        if f["kind"] == "network":
            assert f["link"] == "brokers" and f["effect"] in {"blackhole", "refuse", "latency"}
            assert {"latency_ms", "jitter_ms", "rate_kbps"} <= set(f)  # defaults filled, as in written faults
        if f["kind"] in ("pause", "poll-stall", "network"):
            assert 3 <= f["duration_s"] <= 15


def test_written_and_random_faults_merge_in_time_order(tmp_path):
    data = yaml.safe_load(RANDOM.read_text())
    data["faults"] = [
        {"kind": "pause", "target": "consumer-2", "at_s": 1, "duration_s": 2},
        {"kind": "crash", "target": "broker-1", "at_s": 80},
    ]
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump(data))
    faults = load_scenario(path).schedule()
    assert faults[0]["kind"] == "pause" and faults[0]["at_s"] == 1 and faults[-1]["target"] == "broker-1"
    assert len(faults) == 8


def test_draws_leave_a_process_alone_while_a_written_fault_has_it(tmp_path):
    """A written crash has broker-2 down 20..34 s (and the recovery margin after): no draw lands on
    it then, or the drawn pause would act on nothing."""
    data = {
        "name": "mixed",
        "duration_s": 60,
        "topics": [{"name": "events", "partitions": 4}],
        "faults": [{"kind": "crash", "target": "broker-2", "at_s": 20, "restart_after_s": 14}],
        "random_faults": {
            "count": 8,
            "kinds": ["pause"],
            "targets": ["broker-2", "broker-3"],
            "start_s": 15,
            "end_s": 40,
            "duration_s": [2, 4],
        },
    }
    drawn = []
    for seed in range(20):
        (tmp_path / "s.yaml").write_text(yaml.safe_dump({**data, "seed": seed}))
        drawn += [f for f in load_scenario(tmp_path / "s.yaml").schedule() if f["kind"] == "pause"]
    on_broker_2 = [(f["at_s"], f["duration_s"]) for f in drawn if f["target"] == "broker-2"]
    assert on_broker_2 and all(at + length + 5 <= 20 or at >= 39 for at, length in on_broker_2), on_broker_2
