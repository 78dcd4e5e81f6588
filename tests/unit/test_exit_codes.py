"""One exit-code contract for every command (runtime/errors.py): each command of `rebalance-lab`
under every exit path it has, held to it — 0 passed, 1 a check failed, 2 bad input or setup, 3
the run or a check broke, 4 incomplete, 130 interrupted; many runs exit with the worst
(worst_exit: 130 > 2 > 3 > 1 > 4 > 0).

Driven in-process (click's CliRunner) with the real runs stood in for: a fake `Run` returns each
outcome a real one can end with, a fake cluster, Spark, shrink or clean-up each ending. The codes
real runs end with are asserted by the integration tests: tests/integration/test_compose_backend.py
(run 0 and 1, Ctrl-C 130), tests/integration/test_shipped_scenarios.py and test_fault_triggers.py
(run 1), tests/integration/test_teardown.py (Ctrl-C of `run` 130, then `check` 4),
tests/integration/test_external_target.py and test_external_secrets.py (2: the cluster refuses the
credentials), tests/integration/test_suite_and_plugin.py (suite 1), tests/integration/test_compare.py
(compare 0).

The table must name every command of the group (test_every_command_has_its_exit_paths_in_the_table):
a new command without its rows fails here.
"""

from __future__ import annotations

import gzip
import json
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import click
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cluster.backend import Cleanup
from harness.run.loop import RunResult
from runtime.errors import (
    EXIT_CODES_TEXT,
    EXIT_MEANINGS,
    EXIT_SEVERITY,
    ClusterError,
    LabError,
    ScenarioError,
    SetupError,
    worst_exit,
)

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "scenarios" / "smoke.yaml"
HISTORIES = REPO / "tests" / "fixtures" / "histories"


def verdict(status: str) -> dict:
    lost = {"check": "no-loss", "kind": "lost-records", "message": "events-3: offsets 1..2 never processed"}
    return {
        "status": status,
        "violations": [lost] if status == "fail" else [],
        "findings": [],
        "skipped_checks": {"convergence": "no `phase: done` event"} if status == "incomplete" else {},
        "errored_checks": {"contiguity": "RuntimeError: bug"} if status == "error" else {},
        "duplicates": {"count": 0},
        "stats": {"protocol": "classic-eager"},
        "rebalances": [],
        "checks": {},
    }


# How a run can end (harness.run.loop.RunResult), as the fakes below return it.
ENDINGS = {
    "pass": lambda d: RunResult(d, "completed", verdict("pass")),
    "fail": lambda d: RunResult(d, "completed", verdict("fail")),
    "error": lambda d: RunResult(d, "completed", verdict("error")),  # a check raised
    "incomplete": lambda d: RunResult(d, "completed", verdict("incomplete")),
    "broke": lambda d: RunResult(d, "error", None, "cluster never became ready"),
    "refused": lambda d: RunResult(d, "error", None, "authentication failed", bad_input=True),
    "interrupted": lambda d: RunResult(d, "interrupted", None),
}


class FakeRun:
    """Stands in for harness.run.loop.Run: ends as `ending(scenario name)` says."""

    ending: Callable[[str], str] = staticmethod(lambda _name: "pass")

    def __init__(self, scenario, path, runs_dir, report, *args, **kwargs):
        self.scenario, self.run_dir = scenario, runs_dir / f"{scenario.name}-s{scenario.seed}"

    def execute(self) -> RunResult:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        return ENDINGS[FakeRun.ending(self.scenario.name)](self.run_dir)


@pytest.fixture
def env(tmp_path, monkeypatch, history_builder):
    """A lab home of its own, runs stood in for, nothing installed on demand."""
    import harness.campaigns.capacity as capacity
    import harness.campaigns.compare as compare
    import harness.campaigns.suite as suite
    import harness.cli.campaigns as campaigns_cli
    import harness.cli.runs as runs_cli
    import harness.run.loop as loop

    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)  # a command's default ./runs is made here, never in the checkout
    for module in (loop, suite, compare, capacity):
        monkeypatch.setattr(module, "Run", FakeRun)
    for module in (runs_cli, campaigns_cli, compare):
        monkeypatch.setattr(module, "installed_for", lambda *_a, **_k: None)
    monkeypatch.setattr(FakeRun, "ending", staticmethod(lambda _name: "pass"))
    handler = signal.getsignal(signal.SIGINT)
    yield SimpleNamespace(tmp=tmp_path, mp=monkeypatch, runs=str(tmp_path / "runs"), history=history_builder)
    signal.signal(signal.SIGINT, handler)  # `analyze` installs its own


def ending(env, by_name: dict[str, str] | str) -> None:
    pick = (lambda _n: by_name) if isinstance(by_name, str) else (lambda n: by_name.get(n, "pass"))
    env.mp.setattr(FakeRun, "ending", staticmethod(pick))


def raises(error: BaseException):
    def fake(*_a, **_k):
        raise error

    return fake


# ------------------------------------------------------------------------------------ the paths


def run_path(outcome: str):
    def setup(env):
        ending(env, outcome)
        return ["run", str(SMOKE), "--runs-dir", env.runs]

    return setup


def run_not_installed(env):
    import harness.cli.runs as runs_cli

    env.mp.setattr(runs_cli, "installed_for", raises(SetupError("Kafka 3.9.2 is not installed")))
    return ["run", str(SMOKE), "--runs-dir", env.runs]


def check_dir(env, events: list[dict]) -> str:
    d = env.tmp / "run"
    d.mkdir()
    (d / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return str(d)


def recorded() -> list[dict]:
    """A real run's whole history (tests/fixtures/histories: every check passes it)."""
    with gzip.open(HISTORIES / "classic-eager-range.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


def check_passed(env):
    return ["check", check_dir(env, recorded())]


def check_incomplete(env):
    events = recorded()  # cut where it was done: as a killed run's
    cut = next(i for i, e in enumerate(events) if e["name"] == "phase" and e.get("phase") == "done")
    return ["check", check_dir(env, events[:cut])]


def check_failed(env):
    from tests.unit.test_harness_verdict_status import story

    return ["check", check_dir(env, story(env.history(topics={"events": 1}), lost=True))]  # records lost


def check_raised(env):
    from oracle.checks import CHECKS

    env.mp.setattr(CHECKS["contiguity"], "check", raises(RuntimeError("checker bug")))
    return ["check", check_dir(env, recorded())]


def suite_file(env, extra: str = "") -> str:
    path = env.tmp / "suite.yaml"
    path.write_text(
        f"name: s\nscenarios: [{SMOKE}]\nmatrix: {{protocol: [classic-eager, classic-cooperative]}}\n{extra}"
    )
    return str(path)


def suite_path(endings: dict[str, str]):
    def setup(env):
        ending(env, endings)
        return ["suite", suite_file(env), "--runs-dir", env.runs]

    return setup


def compare_path(endings: dict[str, str]):
    def setup(env):
        ending(env, endings)
        return ["compare", str(SMOKE), "--protocols", "classic-eager,classic-cooperative", "--runs-dir", env.runs]

    return setup


SMALL_SWEEP = REPO / "profiles" / "capacity-small.yaml"


def sweep_file(env) -> str:
    """Two points of the shipped base: small-classic-eager-m2-p8-r100, small-classic-cooperative-…"""
    path = env.tmp / "sweep.yaml"
    base = REPO / "profiles" / "capacity-base.yaml"
    path.write_text(
        f"name: small\nbase: {base}\nsweep: {{members: [2], protocol: [classic-eager, classic-cooperative], "
        "partitions: [8], rate: [100]}\n"
    )
    return str(path)


def capacity_path(endings: dict[str, str]):
    def setup(env):
        import sys

        from harness.campaigns.capacity import CapacityRun

        ending(env, endings)
        env.mp.setattr(CapacityRun, "table", lambda *_a, **_k: SimpleNamespace(rows=[], report="capacity.html"))
        env.mp.setitem(sys.modules, "analysis.capacity", SimpleNamespace(COLUMNS=[]))  # not matplotlib: no table
        return ["capacity", sweep_file(env), "--runs-dir", env.runs]

    return setup


def shrink_path(state: str):
    def setup(env):
        import harness.campaigns.shrink as shrink

        minimal = SimpleNamespace(describe=lambda: "1 fault") if state == "done" else None
        result = SimpleNamespace(state=state, minimal=minimal, confirmed=(5, 5), out=env.tmp, error="broke")
        env.mp.setattr(shrink, "shrink", lambda *_a, **_k: result)
        return ["shrink", str(env.tmp), "--runs-dir", env.runs]

    return setup


def shrink_interrupted(env):
    return shrink_path("interrupted")(env)


def setup_with(effect):
    def setup(env):
        import harness.components.install as install

        env.mp.setattr(install, "setup_all", effect)
        return ["setup"]

    return setup


def cluster_up_with(start):
    def setup(env):
        import harness.cli.cluster as cluster_cli
        import harness.cluster.backend as backend

        fake = SimpleNamespace(start=start, describe=dict, bootstrap_servers="127.0.0.1:1", zookeeper_connect=None)
        env.mp.setattr(backend, "open_cluster", lambda *_a, **_k: fake)
        env.mp.setattr(cluster_cli, "_stop_detached", lambda _owner: Cleanup())
        return ["cluster", "up", "--brokers", "1"]

    return setup


def cluster_state(env) -> None:
    home = env.tmp / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "cluster.json").write_text(json.dumps({"owner": "cluster:x", "bootstrap_servers": "127.0.0.1:1"}))


def cluster_already_up(env):
    cluster_state(env)
    return ["cluster", "up"]


def cluster_down_with(problems: list[str]):
    def setup(env):
        import harness.cli.cluster as cluster_cli

        cluster_state(env)
        env.mp.setattr(cluster_cli, "_stop_detached", lambda _owner: Cleanup(problems=problems))
        return ["cluster", "down"]

    return setup


def cluster_status_up(env):
    import confluent_kafka.admin

    import harness.supervision.processes as processes

    cluster_state(env)
    env.mp.setattr(processes, "registered", list)
    env.mp.setattr(confluent_kafka.admin, "AdminClient", raises(RuntimeError("no broker")))
    return ["cluster", "status"]


def cleanup_with(problems: list[str]):
    def setup(env):
        import harness.cluster.cleanup as cleanup

        env.mp.setattr(cleanup, "clean_up", lambda *_a, **_k: Cleanup(problems=problems))
        return ["cleanup"]

    return setup


def render_with(render):
    def setup(env):
        import harness.cluster.compose_topology as topology
        import harness.components.containers.images as images

        env.mp.setattr(images, "image_set", lambda *_a, **_k: None)
        env.mp.setattr(topology, "render", render)
        return ["compose", "render", str(SMOKE), "-o", str(env.tmp / "project")]

    return setup


def rendered(_spec, output: Path, *_a, **_k):
    (output / "PORTS.md").write_text("ports\n")
    return SimpleNamespace(compose_file=output / "compose.yaml")


def render_into_a_full_directory(env):
    argv = render_with(rendered)(env)
    (env.tmp / "project").mkdir()
    (env.tmp / "project" / "compose.yaml").write_text("theirs\n")
    return argv


def bugs_with(stale: dict):
    def setup(env):
        import harness.campaigns.bug_corpus as corpus

        env.mp.setattr(corpus, "load_corpus", lambda *_a: [])
        env.mp.setattr(corpus, "stale_docs", lambda *_a, **_k: stale)
        return ["bugs", "--check-docs"]

    return setup


def bugs_bad_corpus(env):
    import harness.campaigns.bug_corpus as corpus

    env.mp.setattr(corpus, "load_corpus", raises(ScenarioError("bugs/x/bug.yaml", [("title", "Field required")])))
    return ["bugs"]


def analyze_with(spark_session):
    def setup(env):
        import analysis.job
        import analysis.runs
        import analysis.session

        env.mp.setattr(analysis.runs, "find_runs", lambda _p: ([object()], []))
        env.mp.setattr(analysis.session, "spark_session", spark_session)
        done = SimpleNamespace(
            by_group=[], runs=[1], parsed=[1], cached=[], skipped=[], timings={}, out=env.tmp, report="r.html"
        )
        env.mp.setattr(analysis.job, "analyze", lambda *_a, **_k: done)
        return ["analyze", str(env.tmp), "--out", str(env.tmp / "out")]

    return setup


def bad_file(*command: str):
    return lambda env: [*command, str(env.tmp / "nowhere.yaml")]


@dataclass
class Path_:
    command: str
    path: str
    argv: Callable
    code: int


def image_build_with(build):
    def setup(env):
        import harness.components.containers.harness_image as harness_image

        env.mp.setattr(harness_image, "build_harness_image", build)
        return ["image", "build"]

    return setup


BUILT = {"size_bytes": 1e9, "tag": "rebalance-lab/harness:0", "digest_tag": "d", "kafka": ["3.9.2"], "built": True}


P = Path_
EXIT_PATHS = [
    P("setup", "installed", setup_with(lambda *_a, **_k: True), 0),
    P("setup", "a bad --kafka", lambda env: ["setup", "--kafka", "1.0"], 2),
    P("setup", "a download failed", setup_with(raises(SetupError("Maven Central unreachable"))), 2),
    P("setup", "interrupted", setup_with(raises(KeyboardInterrupt())), 130),
    P("cluster up", "up", cluster_up_with(lambda: None), 0),
    P("cluster up", "a bad option", lambda env: ["cluster", "up", "--brokers", "0"], 2),
    P("cluster up", "one is up already", cluster_already_up, 2),
    P("cluster up", "the cluster did not start", cluster_up_with(raises(ClusterError("broker-1 exited"))), 3),
    P("cluster up", "interrupted", cluster_up_with(raises(KeyboardInterrupt())), 130),
    P("cluster down", "none is up", lambda env: ["cluster", "down"], 0),
    P("cluster down", "stopped", cluster_down_with([]), 0),
    P("cluster down", "something could not be stopped", cluster_down_with(["pid 7 did not stop"]), 3),
    P("cluster status", "up", cluster_status_up, 0),
    P("cluster status", "none is up (the status check fails)", lambda env: ["cluster", "status"], 1),
    P("run", "passed", run_path("pass"), 0),
    P("run", "a check failed", run_path("fail"), 1),
    P("run", "bad scenario file", bad_file("run"), 2),
    P("run", "a bad --set", lambda env: ["run", str(SMOKE), "--set", "workload.consumers=many"], 2),
    P("run", "a bad --kafka", lambda env: ["run", str(SMOKE), "--kafka", "2.1"], 2),
    P("run", "not installed", run_not_installed, 2),
    P("run", "the cluster refused the credentials", run_path("refused"), 2),
    P("run", "the run broke", run_path("broke"), 3),
    P("run", "a check raised", run_path("error"), 3),
    P("run", "incomplete", run_path("incomplete"), 4),
    P("run", "interrupted", run_path("interrupted"), 130),
    P("schedule", "printed", lambda env: ["schedule", str(SMOKE)], 0),
    P("schedule", "bad scenario file", bad_file("schedule"), 2),
    P("schedule", "a bad --seed", lambda env: ["schedule", str(SMOKE), "--seed", "-1"], 2),
    P("check", "passed (a recorded history)", check_passed, 0),
    P("check", "a check failed", check_failed, 1),
    P("check", "no history", lambda env: ["check", str(env.tmp)], 2),
    P("check", "a check raised", check_raised, 3),
    P("check", "incomplete (cut before `phase: done`)", check_incomplete, 4),
    P("compare", "every run passed", compare_path({}), 0),
    P("compare", "a check failed", compare_path({"smoke-classic-eager": "fail"}), 1),
    P("compare", "a bad --protocols", lambda env: ["compare", str(SMOKE), "--protocols", "eager"], 2),
    P(
        "compare",
        "a run broke, another failed",
        compare_path({"smoke-classic-eager": "fail", "smoke-classic-cooperative": "broke"}),
        3,
    ),
    P("compare", "a run incomplete", compare_path({"smoke-classic-cooperative": "incomplete"}), 4),
    P("compare", "interrupted", compare_path({"smoke-classic-eager": "interrupted"}), 130),
    P("suite", "every variant passed", suite_path({}), 0),
    P("suite", "--list", lambda env: ["suite", suite_file(env), "--list"], 0),
    P("suite", "a check failed", suite_path({"smoke-classic-eager": "fail"}), 1),
    P(
        "suite",
        "a check failed, another incomplete",
        suite_path({"smoke-classic-eager": "fail", "smoke-classic-cooperative": "incomplete"}),
        1,
    ),
    P("suite", "bad suite file", lambda env: ["suite", suite_file(env, "matrix2: 1\n")], 2),
    P("suite", "an --out that is not empty", lambda env: ["suite", suite_file(env), "--out", str(env.tmp)], 2),
    P(
        "suite",
        "a variant broke, another failed",
        suite_path({"smoke-classic-eager": "fail", "smoke-classic-cooperative": "broke"}),
        3,
    ),
    P("suite", "a variant incomplete", suite_path({"smoke-classic-cooperative": "incomplete"}), 4),
    P("suite", "interrupted", suite_path({"smoke-classic-eager": "interrupted"}), 130),
    P("capacity", "every point passed", capacity_path({}), 0),
    P("capacity", "--dry-run", lambda env: ["capacity", str(SMALL_SWEEP), "--dry-run", "--runs-dir", env.runs], 0),
    P("capacity", "a check failed", capacity_path({"small-classic-eager-m2-p8-r100": "fail"}), 1),
    P("capacity", "bad sweep file", bad_file("capacity"), 2),
    P("capacity", "bad sweep file, --dry-run", lambda env: ["capacity", str(SMOKE), "--dry-run"], 2),
    P("capacity", "a point broke", capacity_path({"small-classic-cooperative-m2-p8-r100": "broke"}), 3),
    P("capacity", "a point incomplete", capacity_path({"small-classic-cooperative-m2-p8-r100": "incomplete"}), 4),
    P("capacity", "interrupted", capacity_path({"small-classic-eager-m2-p8-r100": "interrupted"}), 130),
    P("shrink", "a minimal scenario written", shrink_path("done"), 0),
    P("shrink", "the failure did not reproduce", shrink_path("not-reproduced"), 1),
    P("shrink", "not a failed run", lambda env: ["shrink", str(env.tmp), "--runs-dir", env.runs], 2),
    P("shrink", "its runs broke", shrink_path("broken"), 3),
    P("shrink", "interrupted", shrink_interrupted, 130),
    P("bugs", "the docs are current", bugs_with({}), 0),
    P("bugs", "a generated page is stale", bugs_with({Path("docs/known-bugs.md"): "x"}), 1),
    P("bugs", "a bad bug folder", bugs_bad_corpus, 2),
    P("cleanup", "cleaned", cleanup_with([]), 0),
    P("cleanup", "something could not be stopped", cleanup_with(["container rl-x: engine gone"]), 3),
    P("compose render", "written", render_with(rendered), 0),
    P(
        "compose render",
        "bad scenario file",
        lambda env: ["compose", "render", str(env.tmp / "no.yaml"), "-o", str(env.tmp / "p")],
        2,
    ),
    P("compose render", "an output directory in use", render_into_a_full_directory, 2),
    P("compose render", "the project cannot be made of it", render_with(raises(LabError("no image for it"))), 2),
    P("image build", "built", image_build_with(lambda *_a, **_k: {**BUILT, "seconds": 1.0}), 0),
    P("image build", "a bad --kafka", lambda env: ["image", "build", "--kafka", "1.0"], 2),
    P("image build", "the build failed", image_build_with(raises(SetupError("building image x failed"))), 2),
    P("image build", "interrupted", image_build_with(raises(KeyboardInterrupt())), 130),
    P("analyze", "written", analyze_with(lambda *_a, **_k: object()), 0),
    P("analyze", "nothing to analyse", lambda env: ["analyze", str(env.tmp / "none")], 2),
    P("analyze", "Spark failed", analyze_with(raises(RuntimeError("JVM gone"))), 3),
    P("analyze", "interrupted", analyze_with(raises(KeyboardInterrupt())), 130),
]


@pytest.mark.parametrize("case", EXIT_PATHS, ids=[f"{c.command}: {c.path}" for c in EXIT_PATHS])
def test_each_command_exits_by_the_one_contract(env, case):
    result = CliRunner().invoke(main, case.argv(env))
    assert result.exit_code == case.code, (result.output, result.exception)
    assert case.code in EXIT_MEANINGS
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception


TAKES_NO_INPUT = {"cluster down", "cluster status", "cleanup"}


def leaf_commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    out = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            out |= leaf_commands(command, f"{prefix}{name} ")
        else:
            out[prefix + name] = command
    return out


def test_every_command_has_its_exit_paths_in_the_table():
    commands = leaf_commands(main)
    assert {c.command for c in EXIT_PATHS} == set(commands)
    for name in commands:  # each command: at least its success, and its bad input if it takes any
        codes = {c.code for c in EXIT_PATHS if c.command == name}
        assert {0, 2} <= codes or (0 in codes and name in TAKES_NO_INPUT), name
    assert len({(c.command, c.path) for c in EXIT_PATHS}) == len(EXIT_PATHS)


@pytest.mark.parametrize("name", sorted(leaf_commands(main)) + ["(group)"])
def test_every_help_ends_with_the_contract(name):
    argv = [] if name == "(group)" else name.split()
    text = " ".join(CliRunner().invoke(main, [*argv, "--help"]).output.split())
    assert text.endswith(" ".join(EXIT_CODES_TEXT.split())), text[-400:]


def test_the_worst_of_many_runs():
    assert EXIT_SEVERITY == (130, 2, 3, 1, 4, 0)
    assert worst_exit([]) == 0
    assert worst_exit([0, 4, 1]) == 1  # a failed check outranks an incomplete verdict
    assert worst_exit([4, 0]) == 4
    assert worst_exit([1, 3, 4]) == 3
    assert worst_exit([3, 2]) == 2
    assert worst_exit([2, 130, 0]) == 130
    for codes in ([0], [1, 0], [4, 1, 3], [130]):
        assert worst_exit(codes) == min(codes, key=EXIT_SEVERITY.index)


def test_a_suite_json_says_the_same_code(env):
    ending(env, {"smoke-classic-cooperative": "incomplete"})
    CliRunner().invoke(main, ["suite", suite_file(env), "--out", str(env.tmp / "out")])
    data = json.loads((env.tmp / "out" / "suite.json").read_text())
    assert data["exit_code"] == 4 and [v["exit_code"] for v in data["variants"]] == [0, 4]


def test_the_docs_page_is_the_contract():
    from runtime.errors import exit_codes_markdown

    page = REPO / "docs" / "reference" / "exit-codes.md"
    assert page.read_text() == exit_codes_markdown(), "stale: write exit_codes_markdown() to it"
