"""rebalance-lab's pytest plugin (entry point `pytest11`: loaded wherever the package is installed).

- Scenario files are test items: `pytest scenarios/smoke.yaml` runs the scenario against a
  real cluster and the item fails with the oracle's violations. YAML files are collected
  only when named on the command line (a file, or a directory holding them) or when the
  ini option `chaos_scenarios = true` says so, and only if they look like scenarios
  (`workload` and `topics` at the top).
- `chaos_run(scenario, **overrides)` runs a scenario (a path or plain data) from a test
  and returns a `ChaosResult`: the verdict, the history's events, the run directory.
  `protocol=`, `kafka=`, `client=`, `seed=`, `backend=` change what `suite` varies (with what a
  protocol forces: its Kafka line, its default assignor); other overrides are the scenario's own
  keys, nested with `__`: `workload__consumers=4`; `expect={"fails": ["no-loss"], "attempts": 3}` (or the
  scenario's own `expect:`) runs it until that is decided, as a suite's variant: `.met`, `.assert_met()`.
- Scenario runs of one session share clusters (harness.cluster.shared: each run gets its own
  topics and group, a cluster a fault left unhealthy is replaced); `--chaos-fresh-clusters`
  gives every run a cluster of its own.
- `lab_cluster`: one cluster for the whole session, for tests that drive their own clients.
- `--chaos-protocol`, `--chaos-kafka`, `--chaos-client`, `--chaos-seed`, `--chaos-backend` apply
  to every scenario run (items and `chaos_run`); `--chaos-runs-dir` keeps the runs (default ./runs).
  `--chaos-kafka` takes what `cluster.kafka` takes (a release or a line) and is refused in its words.
- Every item and every test using these fixtures is marked `chaos`: `-m "not chaos"`
  leaves them out.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from harness.cluster.backend import BACKENDS, started_backends
from harness.components import versions
from harness.paths import default_runs_dir, make_dirs
from oracle.extensions import ExtensionError
from oracle.protocols import PROTOCOLS
from runtime.errors import LabError, ScenarioError

if TYPE_CHECKING:
    from harness.cluster.shared import ClusterPool

MARKER = "chaos"
SESSION_LANES = 8  # client lanes of a session's shared clusters (a run that needs more gets a wider one)
PYTEST_SCENARIOS = "pytest-scenarios"  # under the runs directory: each scenario as it ran


def _kafka_release(text: str) -> str:
    """--chaos-kafka's value, as written (exact or a line), once the catalogue accepts it
    (argparse shows the reason if not)."""
    import argparse

    try:
        versions.kafka_release(text)
        return text
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rebalance-lab", "chaos scenarios against a real Kafka cluster (rebalance-lab)")
    group.addoption("--chaos-protocol", choices=PROTOCOLS, default=None, help="Run every scenario with this protocol.")
    group.addoption(
        "--chaos-kafka",
        type=_kafka_release,
        default=None,
        metavar="RELEASE",
        help="Run every scenario on this Kafka release: exact (3.7.2) or a line (3.7 = its newest tested release).",
    )
    group.addoption(
        "--chaos-client",
        default=None,
        metavar="REQUIREMENT",
        help="Run every scenario's members on this client (as workload.client takes it: confluent-kafka==2.3.0).",
    )
    group.addoption("--chaos-seed", type=int, default=None, help="Run every scenario with this seed.")
    group.addoption(
        "--chaos-backend", choices=list(BACKENDS), default=None, help="Cluster backend (default: the scenario's)."
    )
    group.addoption("--chaos-runs-dir", default=None, help="Where runs are kept (default: ./runs).")
    group.addoption(
        "--chaos-fresh-clusters",
        action="store_true",
        default=False,
        help="A cluster of its own for every scenario run (default: runs whose cluster spec matches share one).",
    )
    parser.addini(
        "chaos_scenarios",
        "collect scenario YAML files found without being named on the command line",
        type="bool",
        default=False,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: runs a chaos scenario against a real cluster (rebalance-lab)")
    if (seed := config.getoption("chaos_seed", None)) is not None:
        from harness.scenario import seed_problem

        if why := seed_problem(seed):
            raise pytest.UsageError(f"--chaos-seed {seed}: {why}")


_POOL = pytest.StashKey["ClusterPool"]()


def cluster_pool(config: pytest.Config) -> ClusterPool | None:
    """The session's shared clusters, started on first use (None: --chaos-fresh-clusters)."""
    if config.getoption("chaos_fresh_clusters"):
        return None
    if _POOL not in config.stash:
        import os

        from harness.cluster.shared import ClusterPool

        workdir = _runs_dir(config) / f"pytest-clusters-{os.getpid()}"
        config.stash[_POOL] = ClusterPool(workdir, f"pytest:{workdir}", lanes=SESSION_LANES)
    return config.stash[_POOL]


def pytest_sessionfinish(session: pytest.Session) -> None:
    if (pool := session.config.stash.get(_POOL, None)) is not None:
        pool.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:  # a test that runs scenarios or uses the cluster is a chaos test (-m "not chaos")
        if {"chaos_run", "lab_cluster"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(MARKER)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    config = parent.config
    named = config.args_source == pytest.Config.ArgsSource.ARGS
    if not (named or config.getini("chaos_scenarios")):
        return None  # a project's own YAML under testpaths is not a scenario to run
    try:  # the first scenario module imported loads the plugins' fault kinds, checks and drivers
        if _named_exactly(file_path, config) or (
            not _lab_output(file_path, config) and _looks_like_scenario(file_path)
        ):
            return ScenarioFile.from_parent(parent, path=file_path)
    except ExtensionError as e:  # a plugin that cannot be used: said as the collection's error, no traceback
        raise pytest.Collector.CollectError(str(e)) from None
    return None


def _lab_output(path: Path, config: pytest.Config) -> bool:
    """A copy the lab wrote of a scenario it ran (a run's, a suite's, a sweep's, this plugin's):
    collected, every session would run its archive again."""
    from harness.campaigns.capacity import CAPACITY_JSON
    from harness.campaigns.suite import SUITE_JSON
    from harness.supervision.run_state import RUN_STATE

    runs_dir = _runs_dir(config)
    for directory in path.resolve().parents:
        if (
            directory == runs_dir
            or directory.name == PYTEST_SCENARIOS
            or any((directory / mark).exists() for mark in (RUN_STATE, SUITE_JSON, CAPACITY_JSON))
        ):
            return True
        if directory == config.rootpath:
            return False
    return False


def _named_exactly(path: Path, config: pytest.Config) -> bool:
    return any(Path(a.split("::")[0]).resolve() == path.resolve() for a in config.args)


def _looks_like_scenario(path: Path) -> bool:
    from harness.scenario import read_scenario_data

    try:
        data = read_scenario_data(path)
    except ScenarioError:  # a scenario that cannot be read (a key written twice) is still one: refused when collected
        try:
            root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader) if _small(path) else None
        except (OSError, UnicodeError, yaml.YAMLError):
            return False
        data = {k.value: None for k, _ in root.value} if isinstance(root, yaml.MappingNode) else {}
    return "workload" in data and "topics" in data


def _small(path: Path) -> bool:
    from harness.scenario.files import MAX_SCENARIO_BYTES

    return path.stat().st_size <= MAX_SCENARIO_BYTES


class ScenarioFile(pytest.File):
    def collect(self):
        # Validated here, with the session's --chaos-* axes: a scenario that cannot run is the collection's
        # error (file, key, line, reason), not a test failing once the session got to it.
        try:
            _prepared(self.config, self.path, {})
        except (LabError, ExtensionError) as e:
            message = str(e)
            raise self.CollectError(
                message if message.startswith(str(self.path)) else f"{self.path}: {message}"
            ) from None
        yield ScenarioItem.from_parent(self, name=self.path.stem)


class ChaosFailure(Exception):
    """A scenario run that did not pass: its result says why."""

    def __init__(self, result: ChaosResult):
        super().__init__(result.explain())
        self.result = result


class ScenarioItem(pytest.Item):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_marker(MARKER)

    def runtest(self) -> None:
        result = _run(self.config, self.path, {}, self.path.stem)
        for key, value in result.figures().items():  # --junitxml writes them as the testcase's properties
            self.user_properties.append((key, value))
        for key, value in (("kafka", result.kafka), ("client", result.client)):  # the versions it ran
            if value is not None:
                self.user_properties.append((key, value))
        self.user_properties.append(("run_dir", str(result.run_dir)))
        if result.expected:  # its `expect:`: what it had to fail with, and each attempt held to it
            self.user_properties += [
                ("expected", result.expected),
                ("attempts", len(result.attempts)),
                ("reproduced", result.reproduced),
            ]
            self.user_properties += [(f"attempt.{n}.run_dir", str(a.run_dir)) for n, a in enumerate(result.attempts, 1)]
        if not result.met:
            raise ChaosFailure(result)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ChaosFailure):
            return excinfo.value.result.explain()
        if isinstance(excinfo.value, (LabError, ExtensionError)):  # a ScenarioError names its file itself
            message = str(excinfo.value)
            return message if message.startswith(str(self.path)) else f"{self.path}: {message}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"chaos scenario {self.path.name}"


@dataclass
class ChaosResult:
    """One scenario run as a test sees it."""

    run_dir: Path
    outcome: str  # completed | interrupted | error
    verdict: dict | None
    error: str | None
    exit_code: int
    # With an expectation (the scenario's `expect:`, or chaos_run(..., expect={...})): what it says, every
    # attempt (this result is the last), how many reproduced it, whether it was met and how it ended.
    expected: str | None = None
    attempts: list[ChaosResult] = field(default_factory=list)
    reproduced: int | None = None
    expectation_met: bool | None = None
    expectation: str = ""

    @property
    def status(self) -> str | None:
        return self.verdict["status"] if self.verdict else None

    @property
    def passed(self) -> bool:
        """This run's verdict passed (with an expectation: see `met`)."""
        return self.status == "pass"

    @property
    def met(self) -> bool:
        """What the test asks: the expectation met over the attempts, else this run passed."""
        return self.passed if self.expectation_met is None else self.expectation_met

    def assert_met(self) -> None:
        assert self.met, self.explain()

    @property
    def violations(self) -> list[dict]:
        return (self.verdict or {}).get("violations", [])

    @cached_property
    def ran(self) -> dict:
        """The run's run.json."""
        from harness.supervision.run_state import read_state

        return read_state(self.run_dir) or {}

    @property
    def kafka(self) -> str | None:
        """The exact Kafka release the run's cluster ran (None: not recorded, e.g. an external cluster)."""
        return self.ran.get("kafka")

    @property
    def client(self) -> str | None:
        """The client requirement the members ran (the default spelled out)."""
        return self.ran.get("client")

    @cached_property
    def history(self) -> list[dict]:
        """The run's events, in time order (history.jsonl as the oracle read it)."""
        from oracle import load_history

        return [dict(e) for e in load_history(self.run_dir)]

    def figures(self) -> dict:
        from harness.reports.run import verdict_figures

        return verdict_figures(self.verdict or {})

    def explain(self) -> str:
        if self.expected is not None:
            lines = [self.expectation]
            lines += [f"  attempt {n}: {a._said()}" for n, a in enumerate(self.attempts, 1)]
            return "\n".join(lines)
        return self._said()

    def _said(self) -> str:
        if self.verdict is None:
            return f"the run {self.outcome}: {self.error or 'no verdict'} ({self.run_dir})"
        from harness.reports.run import anomaly_line
        from oracle.verdict import headline

        v = self.verdict
        lines = [
            f"{v['status'].upper()}: "
            + headline(
                len(v["violations"]), len(v["findings"]), v.get("skipped_checks") or {}, v.get("errored_checks") or {}
            )
        ]
        lines += [f"  {anomaly_line(a)}" for a in v["violations"]]
        lines.append(f"run directory: {self.run_dir}")
        return "\n".join(lines)

    def assert_passed(self) -> None:
        assert self.passed, self.explain()


def _prepared(config: pytest.Config, scenario: str | Path | dict, overrides: dict[str, Any]):
    """The scenario with the axes (the call's, else the command line's) and the overrides, validated:
    its data and the Scenario; ScenarioError naming the file, the key, the line and the reason."""
    overrides = dict(overrides)
    from pydantic import ValidationError

    from harness.scenario import (
        Scenario,
        load_scenario,
        read_scenario_data,
        validation_problems,
    )
    from harness.scenario.expect import not_applicable_problems
    from harness.scenario.variants import Axes, Impossible, variant

    if isinstance(scenario, dict):
        base, source = copy.deepcopy(scenario), "<chaos_run data>"
    else:
        load_scenario(scenario)  # names the file's own problems
        base, source = read_scenario_data(scenario), str(scenario)
    # protocol / kafka / client / seed / backend as `compare` and `suite` apply them (with what a
    # protocol forces); a value is validated as the scenario key it sets, with the variant
    axes = {
        axis: overrides.pop(axis, config.getoption(f"chaos_{axis}"))
        for axis in ("protocol", "kafka", "client", "seed", "backend")
    }
    try:
        data, skipped = variant(base, Axes(**axes))
    except Impossible as e:  # e.g. --chaos-kafka 3.9 for a `consumer` (KIP-848) scenario
        given = ", ".join(f"{axis} {value}" for axis, value in axes.items() if value is not None)
        raise ScenarioError(source, [(given, str(e))]) from None
    for key, value in overrides.items():
        _set(data, key.split("__"), value)
    # a check the protocol does not run cannot be expected to fail: said with the protocol's reason
    if dropped := not_applicable_problems(data.get("expect"), skipped, axes["protocol"]):
        raise ScenarioError(source, [(p.split(": ", 1)[0], p.split(": ", 1)[1]) for p in dropped])
    try:
        return data, Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(source, validation_problems(e)) from None


def _run(config: pytest.Config, scenario: str | Path | dict, overrides: dict[str, Any], name: str) -> ChaosResult:
    """The scenario with the axes (the call's, else the command line's) and the overrides,
    run like `rebalance-lab run`."""
    from harness.campaigns.expectation import run_attempts
    from harness.reports.suite import PASSED
    from harness.run.loop import Run

    data, parsed = _prepared(config, scenario, overrides)
    runs_dir = _runs_dir(config)
    scenarios = make_dirs(runs_dir / PYTEST_SCENARIOS)
    path = scenarios / f"{name}-{parsed.run_name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")

    def report(message: str) -> None:  # progress a release engineer can follow with -s; quiet otherwise
        if reporter is not None and capture is not None and not capture.is_globally_capturing():
            reporter.write_line(f"{parsed.name}: {message}")

    from harness.components.install import installed_for

    installed_for(parsed)

    def attempt(n: int):
        said = report if not parsed.expect or parsed.expect.attempts == 1 else lambda m: report(f"attempt {n}: {m}")
        result = Run(parsed, path, runs_dir, said, pool=cluster_pool(config)).execute()
        if result.stop_requested:  # a Ctrl-C as the run ended: the session stops, as it would have a moment before
            raise KeyboardInterrupt
        return result

    # held to its expectation over attempts as a suite's variant is (harness/campaigns/expectation.py)
    ran = run_attempts(parsed.expect, attempt)
    runs = [
        ChaosResult(r.run_dir, r.outcome, r.verdict, r.error, r.exit_code) for r in (a.result for a in ran.attempts)
    ]
    last = runs[-1]
    if parsed.expect:
        last.expected, last.attempts, last.reproduced = parsed.expect.describe(), runs, ran.reproduced
        last.expectation_met, last.expectation = ran.state == PASSED, ran.message
    return last


def _runs_dir(config: pytest.Config) -> Path:
    return Path(config.getoption("chaos_runs_dir") or default_runs_dir()).resolve()


def _set(data: dict, keys: list[str], value: Any) -> None:
    for key in keys[:-1]:
        data = data.setdefault(key, {})
    data[keys[-1]] = value


@pytest.fixture
def chaos_run(request: pytest.FixtureRequest):
    """`chaos_run(scenario, protocol=…, kafka=…, client=…, seed=…, **overrides) -> ChaosResult`: run a scenario (a path
    or plain data) against a real cluster (the session's shared one, where it can); overrides nest with `__` (`workload__consumers=4`);
    `expect={...}` (a scenario's `expect:`; None: none) holds it to an expected failure over attempts (`.met`)."""

    def run(scenario: str | Path | dict, **overrides: Any) -> ChaosResult:
        return _run(request.config, scenario, overrides, request.node.name.replace("/", "_")[:60])

    return run


@pytest.fixture(scope="session")
def lab_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A real cluster (3 brokers; ZooKeeper on 3.9, KRaft on 4.x) for the whole session:
    `.bootstrap_servers`, `.zookeeper_connect`, `.create_topics([TopicSpec(...)])`."""
    from harness.cluster import ClusterSpec
    from harness.cluster.backend import open_cluster
    from harness.components.install import installed_for
    from harness.supervision.processes import Supervisor

    kafka = request.config.getoption("chaos_kafka") or "3.9"
    backend = request.config.getoption("chaos_backend") or "local"
    if backend not in started_backends():
        pytest.fail(f"lab_cluster starts a cluster; --chaos-backend {backend} has none to start", pytrace=False)
    installed_for(None, kafka)
    workdir = tmp_path_factory.mktemp("lab-cluster")
    cluster = open_cluster(
        backend, ClusterSpec(kafka=kafka, brokers=3), workdir, Supervisor(owner=f"pytest:{workdir}"), lambda _m: None
    )
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
