"""`rebalance-lab compare`: one scenario under several protocol generations, Kafka releases
and client versions (and seeds), side by side.

Each variant of the scenario differs only in what its axes set — ``workload.protocol``
(and what that forces: its default assignor, and the Kafka line it exists on — KIP-848
needs 4.x, the ZooKeeper-era consumer needs ZooKeeper, so 3.9), ``cluster.kafka``,
``workload.client`` — every combination of the values given (harness.scenario.variants).
Every variant is validated like any scenario before anything starts (an impossible pair is
named, exit 2, and nothing is created), then run in turn; each run directory is kept.
Consecutive variants whose cluster spec matches run on one cluster (harness.cluster.shared),
as a suite's do: the protocols of one Kafka release are then compared on the same
warmed-up brokers. Each row says what really ran: the exact Kafka release and the client
requirement (run.json), and the client library version the members loaded (the history).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.cluster.shared import ClusterPool, runs_in_a_row
from harness.components.install import installed_for
from harness.paths import new_stamped_dir
from harness.reports.run import verdict_figures
from harness.run.loop import Run, RunResult
from harness.scenario import (
    Scenario,
    load_scenario,
    load_scenario_data,
    read_scenario_data,
)
from harness.scenario.overrides import scenario_text
from harness.scenario.variants import Axes, Impossible, variant
from harness.supervision.run_state import read_state
from oracle import vocabulary as ev
from oracle.history import HistoryError, load_history
from runtime.errors import ScenarioError


@dataclass
class Entry:
    protocol: str
    seed: int
    kafka: str
    result: RunResult
    skipped_checks: dict[str, str]
    client: str | None = None  # the client requirement the members ran (None: the driver's default)

    def row(self) -> dict:
        v = self.result.verdict or {}
        ran = read_state(self.result.run_dir) or {}
        return {
            "protocol": self.protocol,
            # what ran (run.json: the exact release, the requirement with the default spelled out),
            # else what was asked (a run that never wrote it)
            "kafka": ran.get("kafka") or self.kafka,
            "client": ran.get("client") or self.client,
            "client_version": loaded_client_versions(self.result.run_dir),
            "seed": self.seed,
            "outcome": self.result.outcome,
            # a run without a verdict (interrupted, broken) has no status: it did not pass either
            "status": v.get("status"),
            "ok": v.get("status") == "pass",
            **verdict_figures(v),
            "not_applicable": self.skipped_checks,
            "run_dir": str(self.result.run_dir),
        }


def loaded_client_versions(run_dir: Path) -> str | None:
    """The client library versions the members really loaded (consumer_started.client_version),
    '+'-joined when they differ (a rolling client upgrade); None when the history says none."""
    try:
        loaded = {
            str(e["client_version"])
            for e in load_history(run_dir)
            if e["name"] == ev.CONSUMER_STARTED and e.get("client_version")
        }
    except (HistoryError, OSError):
        return None
    return "+".join(sorted(loaded)) or None


@dataclass
class _Plan:
    axes: Axes
    data: dict
    skipped: dict[str, str]
    scenario: Scenario


def plan_variants(
    base: dict,
    source: Path,
    protocols: list[str],
    kafka: list[str],
    clients: list[str],
    seeds: int,
    client_config: Path | None = None,
) -> list[_Plan]:
    """Every combination of the axes given (an axis not given keeps the scenario's own), each seed,
    validated: ScenarioError (exit 2) naming each variant that cannot run and why."""
    plans, problems = [], []
    for protocol, release, client in itertools.product(protocols or [None], kafka or [None], clients or [None]):
        axes = Axes(protocol=protocol, kafka=release, client=client)
        try:
            data, skipped = variant(base, axes)
        except Impossible as e:
            problems.append((axes.label(), str(e)))
            continue
        data["name"] = axes.run_name(data["name"])
        try:
            scenario = load_scenario_data(data, source, client_config)
        except ScenarioError as e:
            problems += [(axes.label(), f"{key}: {reason}") for key, reason in e.problems]
            continue
        plans += [_Plan(axes, {**data, "seed": int(base.get("seed", 0)) + i}, skipped, scenario) for i in range(seeds)]
    if problems:
        raise ScenarioError(source, problems)
    return plans


def compare(
    scenario_file: Path,
    protocols: list[str],
    seeds: int,
    runs_dir: Path,
    report: Callable[[str], None],
    backend: str | None = None,
    share_clusters: bool = True,
    client_config: Path | None = None,
    kafka: list[str] | None = None,
    clients: list[str] | None = None,
) -> tuple[Path, list[Entry], bool]:
    load_scenario(scenario_file, client_config, backend)  # the base itself must be valid
    base = read_scenario_data(scenario_file)
    if backend:  # every variant on it (written into each variant's scenario file)
        base.setdefault("cluster", {})["backend"] = backend
    plans = plan_variants(base, scenario_file, protocols, kafka or [], clients or [], seeds, client_config)
    for p in plans:  # a release or client not yet on this machine, installed now (or SetupError, nothing made)
        installed_for(p.scenario)
    out = new_stamped_dir(runs_dir, base["name"], kind="compare")
    runs = []
    for p in plans:
        path = out / f"{p.data['name']}-s{p.data['seed']}.yaml"
        # The file holds no secret value (runtime.secrets); the run is made from the data itself.
        path.write_text(scenario_text(p.data))
        runs.append((p, load_scenario_data(p.data, path, client_config), path))
    entries: list[Entry] = []
    interrupted = False
    pool = (
        ClusterPool(
            out / "clusters", f"compare:{out.resolve()}", report, lanes=max(len(s.member_slots()) for _, s, _ in runs)
        )
        if share_clusters
        else None
    )
    try:
        with runs_in_a_row(pool):
            for p, scenario, path in runs:
                w = scenario.workload
                report(
                    f"compare: {w.protocol} (Kafka {scenario.cluster.kafka}, {_client_of(p.data)}), seed {scenario.seed}"
                )
                result = Run(scenario, path, out, report, pool=pool).execute()
                entries.append(
                    Entry(w.protocol, scenario.seed, scenario.cluster.kafka, result, p.skipped, p.axes.client)
                )
                if result.stopped:
                    interrupted = True
                    break
    except KeyboardInterrupt:  # between two runs: the rows so far are still written
        interrupted = True
    (out / "compare.json").write_text(json.dumps([e.row() for e in entries], indent=2) + "\n")
    return out, entries, interrupted


def _client_of(data: dict) -> str:
    return (data.get("workload") or {}).get("client") or "the default client"
