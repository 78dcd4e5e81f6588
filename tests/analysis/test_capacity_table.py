"""The capacity table (analysis/capacity.py) in Spark over synthetic runs, one point each: its new
columns — stop-the-world p50/p95/max, a joining member's first partition, a single member's
restart — equal the run's own tables (analysis.run_tables, held to the events by
tests/unit/test_capacity_columns.py), and each protocol gets its plot."""

from __future__ import annotations

import math

from analysis.capacity import capacity_report
from analysis.run_tables import RunRef, tables_of
from analysis.synthetic import SynthSpec, write_run


def _rank(values, q):
    values = sorted(values)
    return values[math.ceil(q * len(values)) - 1]


def test_the_table_s_new_columns_are_the_runs_figures(spark, tmp_path):
    points = []
    for i, (protocol, members) in enumerate([("classic-eager", 3), ("classic-eager", 5), ("consumer", 4)]):
        run = write_run(
            tmp_path / "runs" / f"p{i}",
            SynthSpec(
                seed=i + 1, protocol=protocol, fault="none", consumers=members, partitions=2 * members, restart_at_s=8
            ),
        )
        points.append(
            {
                "run_dir": str(run),
                "run": run.name,
                "protocol": protocol,
                "members": members,
                "partitions": 2 * members,
                "rate": 200.0,
            }
        )
    result = capacity_report(points, tmp_path / "out", spark=spark, title="synthetic")
    assert len(result.rows) == 3
    for p in points:
        [row] = [r for r in result.rows if r["run"] == p["run"]]
        _, t = tables_of(RunRef("k", p["run"], p["run_dir"]))
        stw = [r["unowned_ms"] for r in t["stop_the_world"] if r["status"] == "completed"]
        first = [j["first_partition_ms"] for j in t["joins"] if j["first_partition_ms"] is not None]
        assert (row["stw_p50_ms"], row["stw_p95_ms"], row["stw_max_ms"]) == tuple(
            round(v, 1) for v in (_rank(stw, 0.5), _rank(stw, 0.95), max(stw))
        )
        assert (row["first_partition_p50_ms"], row["first_partition_p95_ms"], row["first_partition_max_ms"]) == tuple(
            round(v, 1) for v in (_rank(first, 0.5), _rank(first, 0.95), max(first))
        )
        [summary] = t["runs"]
        assert row["restart_rebalances"] == summary["restart_rebalances"] >= 2
        assert row["restart_rebalance_ms"] == round(summary["restart_rebalance_ms"], 1)
        assert row["restart_partitions_moved"] == summary["restart_partitions_moved"] > 0
    for name in ("classic-eager.png", "consumer.png", "first_partition_vs_members.png", "restart_vs_members.png"):
        assert (tmp_path / "out" / "plots" / name).stat().st_size > 5000
    page = result.report.read_text()
    assert "classic-eager: how its figures grow with the group" in page and "first_partition_p95_ms" in page
