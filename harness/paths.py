"""Where the lab keeps downloads, process registrations and runs."""

import os
from pathlib import Path


def lab_home() -> Path:
    """Per-user state: component cache and the registry of processes we started."""
    return Path(os.environ.get("REBALANCE_LAB_HOME", Path.home() / ".cache" / "rebalance-lab"))


def components_dir() -> Path:
    return lab_home() / "components"


def registry_dir() -> Path:
    return lab_home() / "processes"


def ports_dir() -> Path:
    """The ports each harness on this machine has claimed (harness.cluster.ports)."""
    return lab_home() / "ports"


def default_runs_dir() -> Path:
    return Path(os.environ.get("REBALANCE_LAB_RUNS", "runs"))
