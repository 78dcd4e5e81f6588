"""The shipped small capacity sweep (profiles/capacity-small.yaml: 3 group sizes x 3 protocols),
each point a real load run; the capacity table Spark builds from the histories equals each
point's verdict, the plots and the page are written, and a second run resumes with nothing to do."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from harness.campaigns.capacity import CAPACITY_JSON, CapacityRun, load_sweep

SWEEP = Path(__file__).resolve().parents[2] / "profiles" / "capacity-small.yaml"


def test_the_small_sweep_runs_every_point_and_its_table_is_the_verdicts(tmp_path, components_installed):
    sweep = load_sweep(SWEEP)
    assert len(sweep.points) == 9
    run = CapacityRun(sweep, tmp_path)
    ran = run.run_points()
    assert [p["outcome"] for p in ran] == ["completed"] * 9, [(p["id"], p["error"]) for p in ran]
    result = run.table()

    rows = list(csv.DictReader((run.dir / "analysis" / "capacity.csv").open()))
    assert {(r["protocol"], int(r["members"])) for r in rows} == {
        (p, m) for p in ("classic-eager", "classic-cooperative", "classic-static") for m in (2, 3, 4)
    }
    for point in ran:
        verdict = json.loads((Path(point["run_dir"]) / "verdict.json").read_text())
        completed = [r for r in verdict["rebalances"] if r["status"] == "completed"]
        durations = [r["duration_ms"] for r in completed]
        [row] = [r for r in result.rows if r["run"] == Path(point["run_dir"]).name]
        assert row["rebalances"] == len(durations), (point["id"], row, durations)
        # The group at its largest: the coordinator counted at least every member that joined one
        # generation together, and never more than the profile started. Not necessarily the point's
        # size: on a loaded machine the churning member may be stopped before its process even
        # started, or after its JoinGroup went out but before it read the answer (CI saw both).
        peak = max(r["coordinator_members"] or 0 for r in verdict["rebalances"])
        assert max(len(r["members"] or ()) for r in verdict["rebalances"]) <= peak <= point["members"], (
            point["id"],
            [(r["generation"], r["coordinator_members"], r["members"]) for r in verdict["rebalances"]],
        )
        assert abs(row["rebalance_max_ms"] - max(durations)) < 0.1, (point["id"], row, durations)
        # by nearest rank, as the run's own figures (compare, suite.json, JUnit) give it: a time one rebalance took
        p95 = sorted(durations)[math.ceil(0.95 * len(durations)) - 1]
        assert abs(row["rebalance_p95_ms"] - p95) < 0.06, (point["id"], row, durations)
        assert row["drain_s"] is not None and row["consumed_per_member_rps"] > 0, row
    for name in ("rebalance_vs_members.png", "lag_vs_rate.png", "stw_vs_partitions.png"):
        assert (run.dir / "analysis" / "plots" / name).stat().st_size > 5000
    page = result.report.read_text()
    assert "Rebalance time (p95) vs group size" in page and page.count("<tr>") == 10

    # Run again: every point was judged, so nothing runs; capacity.json still lists them all.
    again = CapacityRun(load_sweep(SWEEP), tmp_path)
    started = []
    again.run_points(lambda i, p, skipped: started.append(p.id) if not skipped else None)
    assert started == []
    assert len(json.loads((run.dir / CAPACITY_JSON).read_text())["points"]) == 9
