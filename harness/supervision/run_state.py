"""A run's state file, ``run.json``: ``running``, then ``completed``, ``interrupted`` or ``error``
— or ``killed``.

The run's harness writes it (harness.run.loop). A harness that dies without tearing down
(SIGKILL, the OOM killer) cannot: whoever then stops its leftover processes —
`rebalance-lab cleanup`, or the start of the next run — marks its run ``killed``,
so no run says ``running`` after its harness is gone.
"""

from __future__ import annotations

import fcntl
import json
import os
from datetime import UTC, datetime
from pathlib import Path

from runtime.secrets import redact

RUN_STATE = "run.json"
_RUN_OWNER = "run:"  # a run's processes are registered as owned by "run:<absolute run dir>"


def run_owner(run_dir: Path) -> str:
    return f"{_RUN_OWNER}{Path(run_dir).resolve()}"


def run_of(owner: str) -> Path | None:
    """The run directory of a process owner, if the owner is a run's harness."""
    return Path(owner.removeprefix(_RUN_OWNER)) if owner.startswith(_RUN_OWNER) else None


def write_json_atomically(path: Path, data: dict) -> None:
    """Readers see the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(redact(data), indent=2, sort_keys=False) + "\n")  # no secret value (runtime.secrets)
    os.replace(tmp, path)


def read_state(run_dir: Path) -> dict | None:
    try:
        state = json.loads((run_dir / RUN_STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


# The scenario's own phases, as run.json names them; a run's time outside them (starting or
# borrowing the cluster, topics and clients, teardown) is the harness's overhead.
SCENARIO_PHASES = ("warmup", "workload", "recovery", "drain")


def phase_seconds(state: dict) -> dict[str, float]:
    """How long each of a run's phases lasted. run.json's "phases" are the seconds from the run's
    start at which each began; a phase lasts until the next began (`done`, the last, is a mark).
    Empty for a run.json without them."""
    phases = state.get("phases")
    if not isinstance(phases, dict):
        return {}
    began = sorted(phases.items(), key=lambda phase: float(phase[1]))  # stable: ties keep the harness's order
    return {name: float(t_next) - float(t) for (name, t), (_, t_next) in zip(began, began[1:], strict=False)}


def mark_killed(run_dir: Path, by: str, stopped: list[dict]) -> bool:
    """Mark a run ``killed`` — when, by whom, which of its processes were stopped — if its
    run.json still says ``running``. True if this call marked it.

    Cleaners lock the run directory, so two of them (a `cleanup` and the start of a run)
    never both mark it, nor does one overwrite the other's record.
    """
    try:
        fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # the run directory was deleted since: nothing left to mark
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        state = read_state(run_dir)
        if state is None or state.get("state") != "running":
            return False
        write_json_atomically(
            run_dir / RUN_STATE,
            {
                **state,
                "state": "killed",
                # when its leftovers were stopped: the harness itself died some time before
                "killed": {"stopped_at": datetime.now(UTC).isoformat(), "by": by, "processes": stopped},
            },
        )
        return True
    finally:
        os.close(fd)  # releases the lock
