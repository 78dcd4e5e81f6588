"""What harnesses left behind, removed by the backends that left it.

Each backend knows what of its clusters can outlive a harness and removes it itself
(``ClusterBackend.clean_up``): the local backend, the registered processes of this machine;
the compose backend, projects by their owner's label, and the project's Docker Engine. Four
callers ask every backend in turn, each with its scope:

- `rebalance-lab cleanup`: everything whose harness is gone, `cluster up` clusters and the engine too;
- the start of every run: what harnesses that died left, detached clusters excepted;
- a harness's watchdog: what that harness left, the moment it is gone (``main`` below);
- `cluster down`: one `cluster up` cluster, stopped in its backend's order.

The watchdog is this module run as a process of its own session (harness.supervision.watchdog
starts it): ``python -m harness.cluster.cleanup HARNESS_PID``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from harness.cluster.backend import (
    BACKENDS,
    Cleaned,
    Cleanup,
    CleanupScope,
    backend_class,
)
from harness.supervision.watchdog import wait_until_gone

Report = Callable[[str], None]


def clean_up(scope: CleanupScope, report: Report) -> Cleanup:
    """Every backend removes what it left in ``scope``, backwards through the registry: the
    process registry (the local backend's) last, since the engine a compose project runs on is
    one of its processes and must still answer while the project is removed."""
    done = Cleanup()
    for name in reversed(BACKENDS):
        part = backend_class(name).clean_up(scope, report)
        done.cleaned += part.cleaned
        done.problems += part.problems
    return done


def clean_up_after_dead_harnesses(by: str, report: Report, owner_pid: int | None = None) -> None:
    """Stop and remove what harnesses that died without teardown left (``owner_pid``: that one),
    and mark their runs killed. What cannot be removed (an engine that does not answer) is said,
    not fatal: it is not this run's."""
    for problem in clean_up(CleanupScope(by, owner_pid=owner_pid), report).problems:
        report(problem)


def tally(cleaned: list[Cleaned], names: bool = True) -> str:
    """ "3 processes: zookeeper-1, broker-1, toxiproxy; 1 compose projects: rl-…", or "nothing"."""
    counted: dict[str, list[str]] = {}
    for thing in cleaned:
        counted.setdefault(thing.counted_as, []).append(thing.name)
    return (
        "; ".join(
            f"{len(things)} {what}" + (f": {', '.join(things)}" if names else "") for what, things in counted.items()
        )
        or "nothing"
    )


def main(argv: list[str]) -> int:
    """The watchdog of harness ``argv[1]``: when it is gone, however it went, do for it what the
    start of the next run would. After a harness that tore down normally there is nothing left."""
    harness = int(argv[1])
    for name in BACKENDS:  # loaded now: when the harness dies, act at once
        backend_class(name)
    wait_until_gone(harness)
    by = f"the watchdog of harness {harness}"

    def report(message: str) -> None:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {by}: {message}", flush=True)

    clean_up_after_dead_harnesses(by, report, owner_pid=harness)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
