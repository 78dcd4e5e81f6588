"""Settings for the whole suite: how pytest-xdist shares it between three workers.

A real-cluster run waits a lot (session timeouts, fault durations), so several side by side
take less time on the 2-core CI machine than one after another — as long as they do not
starve each other. Three is where it stops paying: an experiment with a fourth worker (and,
against the rule below, the three-broker modules in two lanes) kept the cores 98.6 % busy and
the suite took no less time. Where the time and the CPU go (most of the CPU in the brokers'
request handling, most of the wall time in the scenarios' own workloads) is what
benchmarks/suite_cost.py measures; its figures are in the README (Benchmarks).

Tests that meet only at three workers must not share what they clean up: cleaners of a dead
harness's leftovers take turns (harness.cluster.compose), and no test pins a port a
neighbour's cluster may hold. Hence:

- a test module is one unit of work (its module-scoped runs happen once, on one worker);
- the modules whose runs start three brokers or Java clients are ONE unit together:
  two of those at once on two cores delay heartbeats and pipes enough to change what
  the runs show, so they run in turn on one worker (about 20 min),
  beside the lighter ones on the other two;
- the longest units start first (the three-broker modules, then LONGEST_FIRST, longest
  first, as CI measured them), so no worker is left with one of them at the end: `shrink`
  (~170 s, and mostly waiting) in file order was the last unit of one worker, which ran on
  alone for ~3 min after the two others had finished;
- each worker's clusters take ports from their own slice (harness.cluster.ports.free_port),
  so two clusters starting at once never pick the same port.
"""

import os
import signal

import pytest

# Modules by their path under tests/, without .py (tests/unit has modules of the same names).
# test_external_target, test_external_secrets and test_teardown all start the standalone cluster
# (`cluster up`, one per lab home): in one unit, they never meet (a trial with two such units had one
# take the other's down; a third module outside the unit found the cluster up).
HEAVY_MODULES = frozenset(
    f"integration/{m}"
    for m in (
        "test_compose_backend",
        "test_driver_verifiable",
        "test_fault_cluster",
        "test_fault_network",
        "test_external_target",
        "test_external_secrets",
        "test_fault_zookeeper_scenario",
        "test_old_versions",
        "test_shared_cluster",
        "test_shipped_scenarios",
        "test_suite_and_plugin",
        "test_teardown",
        "test_zookeeper_expiry",
    )
)

# Scenario files kept as test data, not chaos items for rebalance-lab's pytest plugin (`pytest tests/`).
collect_ignore_glob = ["fixtures/*", "integration/scenarios/*"]

# Set at import, so every run a worker starts inherits it.
_worker, _count = os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT")
if _worker and _count:
    os.environ["REBALANCE_LAB_PORT_SLICE"] = f"{int(_worker.removeprefix('gw'))}/{_count}"


# After the three-broker modules, the others from the longest (CI, quiet, 2026-11-27, test time with setup:
# project_coordinator 390 s, compare 336 s, then 194 down to 106 s); every other module under 100 s.
LONGEST_FIRST = (
    "integration/test_project_coordinator",
    "integration/test_compare",
    "integration/test_capacity",
    "integration/test_shrink",
    "analysis/test_real_runs",
    "integration/test_protocol_zk_eager",
    "integration/test_fault_rebalance_timing",
    "integration/test_fault_churn",
    "analysis/test_histories",
    "integration/test_protocols",
    "integration/test_fault_triggers",
    "integration/test_load",
)


def signals_at_default() -> None:
    """preexec_fn of a harness a test stops as a terminal would: Ctrl-C, SIGTERM and SIGHUP at
    their defaults, even where pytest runs with some ignored (a background job, nohup) — which
    the harness would keep ignoring (harness.supervision.stop_signals)."""
    from harness.supervision.stop_signals import INTERRUPTS

    for sig in INTERRUPTS:
        signal.signal(sig, signal.SIG_DFL)


@pytest.fixture
def as_from_a_terminal():
    """In the test's own process: the handlers of a foreground process (Ctrl-C raises
    KeyboardInterrupt, SIGTERM and SIGHUP at their defaults), whatever pytest runs with."""
    from harness.supervision.stop_signals import INTERRUPTS

    previous = {sig: signal.getsignal(sig) for sig in INTERRUPTS}
    signals_at_default()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def _module(nodeid: str) -> str:
    """``tests/integration/test_compare.py::test_x`` -> ``integration/test_compare``"""
    return nodeid.split("::", 1)[0].removeprefix("tests/").removesuffix(".py")


def _rank(module: str) -> int:
    if module in HEAVY_MODULES:
        return 0
    return 1 + LONGEST_FIRST.index(module) if module in LONGEST_FIRST else 1 + len(LONGEST_FIRST)


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: _rank(_module(item.nodeid)))  # stable: file order otherwise


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "three-broker modules" if _module(nodeid) in HEAVY_MODULES else nodeid.split("::", 1)[0]

    config.option.loadscopereorder = False  # keep the order above, not "most tests first"
    return ModuleScheduling(config, log)


def pytest_sessionfinish(session, exitstatus):
    """Every real run the suite made kept its history's promises (docs/history.md, Promises): no
    record set aside by `history-integrity`, no field the oracle does not know. A run whose history
    broke a promise it refuses has already failed its own test (exit 3). Checked once, by the
    process that is not an xdist worker, over every run directory under the session's basetemp."""
    if hasattr(session.config, "workerinput") or session.testscollected == 0:
        return
    from tests.integrity_audit import audit_runs

    faults = audit_runs(session.config._tmp_path_factory.getbasetemp())
    if faults:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for line in ["real runs whose history broke a promise (issue 39):", *faults]:
            reporter.write_line(line, red=True) if reporter else print(line)
        session.exitstatus = 1
