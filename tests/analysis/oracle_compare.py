"""Compare the Spark per-run figures with the oracle's own, run by run (used by the tests)."""

from __future__ import annotations

from pathlib import Path

from oracle import check_history, load_history

REBALANCE_FIELDS = (
    "generation",
    "status",
    "superseded_by",
    "members",
    "leader",
    "trigger",
    "coordinator_reason",
    "duration_ms",
    "assigned_ms",
    "stabilized_ms",
    "detect_ms",
    "join_ms",
    "sync_ms",
    "coordinator_ms",
    "coordinator_members",
    "start_vs_coordinator_ms",
    "stabilized_vs_coordinator_ms",
    "partitions_moved",
    "max_unowned_ms",
)
RUN_FIGURES = ("duplicates", "lost", "commits_failed", "acked", "consumed", "deliveries", "teardown_rebalances")


def oracle_figures(run_dir: Path) -> dict:
    verdict = check_history(load_history(run_dir)).to_dict()
    no_loss = verdict["checks"]["no-loss"]
    return {
        "rebalances": [
            {
                **{k: r[k] for k in REBALANCE_FIELDS},
                "unowned_ms": r["unowned_ms"],
                "start_mono": r["start_mono_ms"],
                "end_mono": r["end_mono_ms"],
            }
            for r in verdict["rebalances"]
        ],
        "duplicates": {k: verdict["duplicates"][k] for k in ("count", "explained", "unexplained")},
        "lost": None if no_loss.get("skipped") else no_loss["detail"]["lost"],
        "commits_failed": verdict["stats"]["commits"]["failed"],
        "acked": verdict["stats"]["acked"],
        "consumed": verdict["stats"]["consumed"],
        "deliveries": verdict["stats"]["deliveries"],
        "teardown_rebalances": verdict["stats"]["teardown_rebalances"],
    }


def spark_figures(tables: dict[str, list[dict]], run: str) -> dict:
    runs = {r["run"]: r for r in tables["runs"]}
    r = runs[run]
    rebalances = sorted((x for x in tables["rebalances"] if x["run"] == run), key=lambda x: x["generation"])
    failed: dict[str, int] = {}
    for c in tables["commit_failures"]:
        if c["run"] == run:
            failed[c["error"]] = failed.get(c["error"], 0) + c["failed"]
    return {
        "rebalances": [
            {
                **{k: x[k] for k in REBALANCE_FIELDS},
                "unowned_ms": dict(x["unowned_ms"] or {}),
                "start_mono": x["start_mono"],
                "end_mono": x["end_mono"],
            }
            for x in rebalances
        ],
        "duplicates": {
            "count": r["duplicates"],
            "explained": r["duplicates_explained"],
            "unexplained": r["duplicates"] - r["duplicates_explained"],
        },
        "lost": r["lost_records"],
        "commits_failed": dict(sorted(failed.items())),
        "acked": r["acked"],
        "consumed": r["consumed"],
        "deliveries": r["deliveries"],
        "teardown_rebalances": r["teardown_rebalances"],
    }


def differences(tables: dict[str, list[dict]], run: str, run_dir: Path) -> list[str]:
    """Every figure where Spark and the oracle disagree, as readable lines (empty: they agree)."""
    ours, theirs = spark_figures(tables, run), oracle_figures(run_dir)
    out = []
    if len(ours["rebalances"]) != len(theirs["rebalances"]):
        out.append(f"{run}: {len(ours['rebalances'])} rebalances, the oracle {len(theirs['rebalances'])}")
    for a, b in zip(ours["rebalances"], theirs["rebalances"], strict=False):
        for k in b:
            if a[k] != b[k]:
                out.append(f"{run} generation {b['generation']} {k}: spark {a[k]!r}, oracle {b[k]!r}")
    for k in RUN_FIGURES:
        if ours[k] != theirs[k]:
            out.append(f"{run} {k}: spark {ours[k]!r}, oracle {theirs[k]!r}")
    return out
