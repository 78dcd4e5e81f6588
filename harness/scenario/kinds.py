"""The kinds of file the lab reads — scenario, suite, capacity sweep, a known bug's bug.yaml, a run's
history — told apart by the top-level keys only each has, not by their names: a suite given to
`run` is named a suite, with the command that takes it (files.read_scenario_data).

Declared here, below the campaigns, so that reading a scenario can name a suite; each model
names its kind (``FILE_KIND``: Scenario, SuiteSpec, SweepSpec, BugFacts) and
tests/unit/test_input_edges.py holds each kind's keys to its model's fields and to no other's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileKind:
    """A kind of file the lab reads, told from the others by the top-level keys only it has."""

    name: str  # "a suite file"
    keys: tuple[str, ...]  # the keys only this kind has at its top level (any one of them tells it)
    command: str  # what takes it, FILE for its path: "rebalance-lab suite FILE"
    what: str  # what it is, said when the top level is not a mapping


FILE_KINDS = {
    "scenario": FileKind(
        "a scenario file",
        ("duration_s", "topics", "workload", "cluster", "faults", "random_faults", "checks", "recovery", "load"),
        "rebalance-lab run FILE",
        "a scenario is a mapping of keys such as name, duration_s, topics",
    ),
    "suite": FileKind(
        "a suite file",
        ("scenarios", "matrix", "exclude"),
        "rebalance-lab suite FILE",
        "a suite is a mapping of keys such as name, scenarios, matrix, exclude, expect",
    ),
    "sweep": FileKind(
        "a capacity sweep file",
        ("base", "sweep", "profile"),
        "rebalance-lab capacity FILE",
        "a sweep is a mapping of keys such as name, base, sweep, profile",
    ),
    "bug": FileKind(
        "a known bug's description (bug.yaml), whose scenario is affected.yaml",
        ("title", "component", "report", "fix", "affected", "trigger", "symptom"),
        "rebalance-lab run DIR/affected.yaml",
        "bug.yaml is a mapping: title, component, report, fix, affected, trigger, symptom",
    ),
    # a run's history.jsonl: one JSON event a line (oracle/history.py)
    "history": FileKind("a run's history", ("mono_ms", "source"), "rebalance-lab check DIR", ""),
}
