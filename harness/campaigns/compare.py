"""`rebalance-lab compare`: one scenario, several protocol generations (and seeds), side by side.

Each protocol gets a variant of the scenario that differs only in
``workload.protocol`` (and what that forces: its default assignor, and the Kafka
line it exists on — KIP-848 needs 4.x, the ZooKeeper-era consumer needs ZooKeeper,
so 3.9). Every variant is validated like any scenario before anything starts,
then run in turn; each run directory is kept. Consecutive variants whose cluster spec
matches run on one cluster (harness.cluster.shared), as a suite's do: the protocols
of one Kafka line are then compared on the same warmed-up brokers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.cluster.shared import ClusterPool, runs_in_a_row
from harness.paths import new_stamped_dir
from harness.reports.run import verdict_figures
from harness.run.loop import Run, RunResult
from harness.scenario import (
    load_scenario,
    load_scenario_data,
    read_scenario_data,
    redact_scenario_data,
)
from harness.scenario.variants import Axes, variant


@dataclass
class Entry:
    protocol: str
    seed: int
    kafka: str
    result: RunResult
    skipped_checks: dict[str, str]

    def row(self) -> dict:
        v = self.result.verdict or {}
        return {
            "protocol": self.protocol,
            "kafka": self.kafka,
            "seed": self.seed,
            "outcome": self.result.outcome,
            # a run without a verdict (interrupted, broken) has no status: it did not pass either
            "status": v.get("status"),
            "ok": v.get("status") == "pass",
            **verdict_figures(v),
            "not_applicable": self.skipped_checks,
            "run_dir": str(self.result.run_dir),
        }


def compare(
    scenario_file: Path,
    protocols: list[str],
    seeds: int,
    runs_dir: Path,
    report: Callable[[str], None],
    backend: str | None = None,
    share_clusters: bool = True,
    client_config: Path | None = None,
) -> tuple[Path, list[Entry], bool]:
    load_scenario(scenario_file, client_config, backend)  # the base itself must be valid
    base = read_scenario_data(scenario_file)
    if backend:  # every variant on it (written into each variant's scenario file)
        base.setdefault("cluster", {})["backend"] = backend
    out = new_stamped_dir(runs_dir, base["name"], kind="compare")
    plans = []
    for protocol in protocols:
        axes = Axes(protocol=protocol)
        data, skipped = variant(base, axes)
        data["name"] = axes.run_name(data["name"])
        for i in range(seeds):
            data = {**data, "seed": int(base.get("seed", 0)) + i}
            path = out / f"{data['name']}-s{data['seed']}.yaml"
            # The file holds no secret value (runtime.secrets); the run is made from the data itself.
            path.write_text(yaml.safe_dump(redact_scenario_data(data), sort_keys=False))
            plans.append(
                (protocol, data["seed"], load_scenario_data(data, path, client_config), path, skipped)
            )  # validate all first
    entries: list[Entry] = []
    interrupted = False
    pool = (
        ClusterPool(
            out / "clusters", f"compare:{out.resolve()}", report, lanes=max(len(p[2].member_slots()) for p in plans)
        )
        if share_clusters
        else None
    )
    try:
        with runs_in_a_row(pool):
            for protocol, seed, scenario, path, skipped in plans:
                report(f"compare: {protocol} (Kafka {scenario.cluster.kafka}), seed {seed}")
                result = Run(scenario, path, out, report, pool=pool).execute()
                entries.append(Entry(protocol, seed, scenario.cluster.kafka, result, skipped))
                if result.stopped:
                    interrupted = True
                    break
    except KeyboardInterrupt:  # between two runs: the rows so far are still written
        interrupted = True
    (out / "compare.json").write_text(json.dumps([e.row() for e in entries], indent=2) + "\n")
    return out, entries, interrupted
