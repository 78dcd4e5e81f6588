"""`rebalance-lab compare`: one scenario (a member paused past its session timeout during
steady load) under the five real-Kafka protocol generations and the project coordinator's
three variants, side by side, every run passing the checks that apply to it."""

from __future__ import annotations

import json

import pytest

from tests.integration.conftest import REPO, lab

PROTOCOLS = [
    "zk-eager",
    "classic-eager",
    "classic-cooperative",
    "classic-static",
    "consumer",
    "coordinator-v1",
    "coordinator-v2",
    "coordinator-v3",
]


@pytest.mark.timeout(2500)  # eight whole runs, one after another (about 5 min here)
def test_compare_every_protocol_generation(tmp_path):
    proc = lab(
        "compare",
        str(REPO / "scenarios" / "compare-pause.yaml"),
        "--protocols",
        ",".join(PROTOCOLS),
        "--runs-dir",
        str(tmp_path),
        timeout=2400,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    [out] = list(tmp_path.glob("compare-*"))
    rows = json.loads((out / "compare.json").read_text())
    assert [r["protocol"] for r in rows] == PROTOCOLS
    assert {r["protocol"]: r["kafka"] for r in rows} == {
        "zk-eager": "3.9.2",
        "classic-eager": "3.9.2",
        "classic-cooperative": "3.9.2",
        "classic-static": "3.9.2",
        "consumer": "4.4.0",
        "coordinator-v1": "3.9.2",
        "coordinator-v2": "3.9.2",
        "coordinator-v3": "3.9.2",
    }
    for r in rows:
        assert r["ok"] and r["outcome"] == "completed", r
        assert r["rebalances"] >= 2 and r["rebalance_max_ms"] > 0, r  # the initial join and the eviction at least
        assert (out / r["run_dir"].rsplit("/", 1)[-1] / "verdict.json").exists()
    assert set(rows[0]["not_applicable"]) == {"fenced-commits", "commit-monotonicity"}
    # Consecutive runs of one cluster spec shared it; the project's coordinator's runs have their own.
    lent = {
        r["protocol"]: json.loads((out / r["run_dir"].rsplit("/", 1)[-1] / "run.json").read_text()).get(
            "shared_cluster"
        )
        for r in rows
    }
    assert max(n or 0 for n in lent.values()) >= 2, lent
    assert all(lent[p] is None for p in PROTOCOLS if p.startswith("coordinator-")), lent
    table = proc.stdout
    assert "Side by side" in table and all(p in table for p in PROTOCOLS)
