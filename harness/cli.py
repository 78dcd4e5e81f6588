"""The `rebalance-lab` command line."""

from __future__ import annotations

import gc
import json
import math
import shutil
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from analysis.cli import analyze
from harness import versions
from harness.cluster.backend import BACKENDS, STARTED_BACKENDS
from harness.install import installed_for
from harness.paths import default_runs_dir, lab_home, make_dirs, refuse_output_dir
from oracle import vocabulary as ev
from oracle.protocols import PROTOCOLS
from runtime.errors import (EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_FOR_VERDICT, EXIT_INTERRUPTED, EXIT_OK, EXIT_RUN_ERROR,
                            LabError, SetupError)
from runtime.output_dirs import SafePath
from runtime.secrets import redact_text

# Wide when not a terminal (CI logs): the rebalance table does not fit 80 columns.
# log_path=False: a progress line names no source line (cli.py:284) — noise to whoever reads a run
console = Console(highlight=False, log_path=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)  # error lines stay greppable

CLUSTER_STATE = "cluster.json"
# In a standalone cluster's workdir: the directory is the lab's, so `cluster up` may empty it.
CLUSTER_WORKDIR_MARK = ".rebalance-lab-cluster"


def _cluster_tiers() -> list[list[str]]:
    """The standalone cluster's stop order, by role: its services say it (harness.service.StopTier)."""
    from harness.cluster.local import LocalCluster
    from harness.service import role_tiers

    return role_tiers(LocalCluster.service_kinds)


class FiniteFloatRange(click.FloatRange):
    """click.FloatRange, refusing nan and ±inf: nan passes every bound ("nan < 1" is false) and
    inf is no budget."""

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv


def _fail(e: LabError) -> None:
    _error(str(e), e.exit_code)


def _error(message: str, exit_code: int = EXIT_BAD_INPUT) -> None:
    # Messages quote the user's files (keys, values, paths): text, never rich markup ("[/bold]").
    err_console.print("[red]error:[/] " + escape(redact_text(message)))  # never a secret value (runtime.secrets)
    sys.exit(exit_code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Chaos testing of Kafka consumer-group rebalancing against real ZooKeeper and Kafka."""


# ----------------------------------------------------------------------------- setup


@main.command()
@click.option("--kafka", "lines", multiple=True, type=click.Choice(list(versions.KAFKA_RELEASES)),
              help="Kafka line(s) to install (default: all).")
@click.option("--compose", is_flag=True,
              help="Also what the compose backend needs: a Docker Engine (Debian's docker.io, when none answers), "
                   "debootstrap, and its images, built here.")
def setup(lines: tuple[str, ...], compose: bool) -> None:
    """Install the real components (Kafka from Maven Central, Toxiproxy with go install). Idempotent."""
    from harness.install import setup_all
    from harness.stop_signals import like_ctrl_c

    try:
        with like_ctrl_c(), console.status("setting up …") as status:
            def report(msg: str) -> None:
                status.update(msg)
                console.print(msg, markup=False)
            changed = setup_all(report, list(lines) or None)
            if compose:
                from harness.containers.setup import setup_compose

                changed |= setup_compose(report, list(lines) or list(versions.KAFKA_RELEASES))
    except LabError as e:
        _fail(e)
    except KeyboardInterrupt:  # the tool it was running is stopped by now, and nothing it began is marked installed
        console.print("setup: interrupted; what it was installing is not marked installed, and the next setup "
                      "starts it again.", markup=False)
        sys.exit(EXIT_INTERRUPTED)
    console.print("setup: everything was already installed; nothing to do." if not changed else "setup: done.")


# ----------------------------------------------------------------------------- cluster


@main.group()
def cluster() -> None:
    """Start, inspect and stop a standalone local cluster."""


def _topics(_ctx, _param, values: tuple[str, ...]) -> list[tuple[str, int]]:
    """``--topic NAME[:PARTITIONS]``, held to what a scenario's topic may be."""
    from pydantic import ValidationError

    from faults.topic_names import topic_set_problems
    from harness.scenario import Topic

    topics = []
    for value in values:
        name, _, partitions = value.partition(":")
        try:
            topic = Topic(name=name, partitions=partitions or 1)
        except ValidationError as e:
            raise click.BadParameter(f"{value!r}: " + "; ".join(
                f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())) from None
        topics.append((topic.name, topic.partitions))
    for i, reason in topic_set_problems([name for name, _ in topics]):
        raise click.BadParameter(f"{values[i]!r}: {reason}")
    return topics


def _sasl_plain(_ctx, _param, value: str | None):
    """``--sasl-plain USER:VARIABLE``: the user, and the password from the environment variable."""
    import os
    import re

    from harness.cluster.local import SaslPlainUser

    if value is None:
        return None
    user, _, variable = value.partition(":")
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", user) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", variable):
        raise click.BadParameter("USER:VARIABLE: a user name ([A-Za-z0-9._-]) and the name of the environment "
                                 "variable that holds its password (the password itself is never an argument)")
    password = os.environ.get(variable)
    if not password:
        raise click.BadParameter(f"the environment variable {variable} (the password of {user}) is not set or empty")
    if re.search(r'["\\\r\n]', password):
        raise click.BadParameter(f"the password in {variable} has a quote, a backslash or a line break, which a JAAS "
                                 "configuration cannot hold as written")
    return SaslPlainUser(user, password)


@cluster.command("up")
@click.option("--backend", type=click.Choice(list(STARTED_BACKENDS)), default="local", show_default=True)
@click.option("--kafka", type=click.Choice(list(versions.KAFKA_RELEASES)), default="3.9", show_default=True)
@click.option("--brokers", type=click.IntRange(1, 9), default=3, show_default=True)
@click.option("--zookeeper-nodes", type=click.Choice(["1", "3"]), default="1", show_default=True)
@click.option("--topic", "topics", multiple=True, metavar="NAME[:PARTITIONS]", callback=_topics,
              help="Topic to create (repeatable).")
@click.option("--workdir", type=SafePath(path_type=Path), default=None, help="Default: <lab home>/cluster")
@click.option("--sasl-plain", "sasl_plain", default=None, metavar="USER:VARIABLE", callback=_sasl_plain,
              help="Every broker also listens with SASL_PLAINTEXT (mechanism PLAIN) on 127.0.0.1 for USER, whose "
                   "password is read from the environment variable VARIABLE (never from the command line, never "
                   "printed). Local backend.")
def cluster_up(backend: str, kafka: str, brokers: int, zookeeper_nodes: str, topics: list[tuple[str, int]],
               workdir: Path | None, sasl_plain) -> None:
    """Start ZooKeeper (or a KRaft controller), brokers and Toxiproxy; leave them running."""
    from pydantic import ValidationError

    from harness.cluster import ClusterSpec, TopicSpec
    from harness.cluster.backend import open_cluster
    from harness.processes import Supervisor
    from harness.scenario import Cluster, validation_problems

    if sasl_plain and backend != "local":
        _error("--sasl-plain: the local backend only (the compose backend's brokers have no SASL listener)")
    try:  # what a scenario's cluster may be: no ZooKeeper ensemble for a KRaft line
        Cluster(kafka=kafka, brokers=brokers, zookeeper_nodes=int(zookeeper_nodes))
    except ValidationError as e:
        _error("; ".join(f"--{key.replace('_', '-')}: {reason}" for key, reason in validation_problems(e)))
    default_workdir = (lab_home() / "cluster").resolve()
    try:
        refuse_output_dir(workdir or default_workdir, "--workdir")  # a NUL or an overlong name: before resolve()
    except LabError as e:
        _fail(e)
    state_file = lab_home() / CLUSTER_STATE
    if state_file.exists():  # nothing started: a setup problem (exit 2), as a missing tool is
        _fail(SetupError(f"a cluster is already up ({state_file}); `rebalance-lab cluster down` first"))
    try:
        workdir = (workdir or default_workdir).resolve()
        _empty_cluster_workdir(workdir, ours=workdir == default_workdir)
    except LabError as e:
        _fail(e)
    owner = f"cluster:{workdir}"
    spec = ClusterSpec(kafka=kafka, brokers=brokers, zookeeper_nodes=int(zookeeper_nodes),
                       topics=[TopicSpec(name, partitions) for name, partitions in topics], sasl_plain=sasl_plain)
    c = None
    try:
        with console.status("starting cluster …"):
            c = open_cluster(backend, spec, workdir, Supervisor(owner=owner), console.print)
            c.start()
    except LabError as e:
        _stop_detached(backend, owner)
        _fail(e)
    except KeyboardInterrupt:
        _stop_detached(backend, owner)
        _error("interrupted", EXIT_INTERRUPTED)
    except BaseException:
        _stop_detached(backend, owner)  # nothing of a cluster that never came up is left running
        raise
    state = {**c.describe(), "owner": owner}
    state_file.parent.mkdir(parents=True, exist_ok=True)
    state_file.write_text(json.dumps(state, indent=2))
    console.print(f"bootstrap.servers={c.bootstrap_servers}")
    if c.zookeeper_connect:
        console.print(f"zookeeper.connect={c.zookeeper_connect}")
    if sasl_plain:  # the user, never its password
        console.print(f"sasl.bootstrap.servers={c.sasl_bootstrap_servers} (SASL_PLAINTEXT, PLAIN, user {sasl_plain.user})",
                      markup=False)


def _empty_cluster_workdir(workdir: Path, ours: bool) -> None:
    """A standalone cluster starts from nothing, as a run's does: the last one's data (a ZooKeeper-mode
    broker refuses a KRaft one's meta.properties; old topics would shadow `--topic`) and logs go.
    Only a directory the lab made is emptied — the default one, or one holding the lab's mark."""
    try:
        if workdir.exists() and any(workdir.iterdir()):
            if not (ours or (workdir / CLUSTER_WORKDIR_MARK).exists()):
                raise SetupError(f"--workdir {workdir}: holds files rebalance-lab did not write; "
                                 "give a new or empty directory (or the one an earlier `cluster up` used)")
            shutil.rmtree(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / CLUSTER_WORKDIR_MARK).write_text("a standalone cluster's workdir: `cluster up` empties it\n")
    except OSError as e:  # a file where the directory should be, no permission
        raise SetupError(f"--workdir {workdir}: {e.strerror or e}") from None


def _stop_detached(backend: str, owner: str) -> list[str]:
    """Stop a standalone cluster from its registrations (its harness has exited): what was stopped."""
    from harness.processes import stop_owned

    if backend == "compose":
        from harness.cluster.compose import cleanup_projects

        return cleanup_projects(include_live_owners=True, owner=owner)
    return [p.name for p in stop_owned(owner, _cluster_tiers())]


@cluster.command("down")
def cluster_down() -> None:
    """Stop the standalone cluster."""
    state_file = lab_home() / CLUSTER_STATE
    if not state_file.exists():
        console.print("no cluster is up.")
        return
    state = json.loads(state_file.read_text())
    try:
        stopped = _stop_detached(state.get("backend", "local"), state["owner"])
    except LabError as e:
        _fail(e)
    state_file.unlink()
    what = "compose projects" if state.get("backend") == "compose" else "processes"
    console.print(f"stopped {len(stopped)} {what}: {', '.join(stopped) or '—'}")


@cluster.command("status")
def cluster_status() -> None:
    """Show the standalone cluster and whether each process and broker is up."""
    from confluent_kafka.admin import AdminClient

    from harness.processes import registered
    from runtime.logs import QUIET_CLIENT_LOG

    state_file = lab_home() / CLUSTER_STATE
    if not state_file.exists():
        console.print("no cluster is up.")
        sys.exit(1)
    state = json.loads(state_file.read_text())
    alive = {p.name: p for p in registered() if p.owner == state["owner"]}
    for name in state.get("processes", {}):
        p = alive.get(name)
        shown = ("[red]gone[/]" if p is None or p.state is None else "[yellow]stopped[/]" if p.stopped
                 else "[red]exited[/] (not yet reaped)" if p.state == "Z" else "[green]running[/]")
        console.print(f"{name:<14} {shown}" + (f" pid {p.pid}" if p else ""))
    try:
        md = AdminClient({"bootstrap.servers": state["bootstrap_servers"], "logger": QUIET_CLIENT_LOG}).list_topics(timeout=5)
        console.print(f"metadata: brokers {sorted(md.brokers)}, topics {sorted(t for t in md.topics if not t.startswith('__'))}")
    except Exception as e:
        console.print(f"metadata: unavailable ({e})")
    console.print(f"bootstrap.servers={state['bootstrap_servers']}")


# ----------------------------------------------------------------------------- run / check

client_config_option = click.option(
    "--client-config", type=SafePath(path_type=Path), default=None, metavar="FILE",
    help="Client settings for an external cluster, Java properties format as Kafka's tools take them "
         "(key=value, # comments; ${NAME} read from the environment), over the scenario's cluster.client_config. "
         "Secret values are never written (docs/inputs.md).")


@main.command()
@click.argument("scenario_file", type=SafePath(path_type=Path))
@click.option("--runs-dir", type=SafePath(path_type=Path), default=None, help="Default: ./runs")
@click.option("--backend", type=click.Choice(list(BACKENDS)), default=None,
              help="Run the cluster with this backend (default: the scenario's cluster.backend, else local).")
@client_config_option
def run(scenario_file: Path, runs_dir: Path | None, backend: str | None, client_config: Path | None) -> None:
    """Run a scenario: cluster, workload, faults, recovery, then the oracle's verdict.

    Exit code 0 when every check held, 1 when one failed, 2 on bad input or setup
    failure, 3 when the run itself broke or a check raised, 4 when a check could
    not judge the run (incomplete), 130 when interrupted.
    """
    from harness.report import print_verdict
    from harness.run import Run
    from harness.scenario import load_scenario

    try:
        if client_config is not None:  # merged before validation: the backend decides whether it may be given
            scenario = load_scenario(scenario_file, client_config=client_config, backend=backend)
        else:
            scenario = load_scenario(scenario_file)
            if backend:
                scenario = scenario.with_backend(backend)
        installed_for(scenario)  # fail before creating a run directory
        runs_dir = make_dirs(runs_dir or default_runs_dir(), "--runs-dir")  # validated: it is ours to make
    except LabError as e:
        _fail(e)
    with Progress(TextColumn("{task.description:<10}"), BarColumn(), TextColumn("{task.fields[note]}"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        tasks: dict[str, int] = {}

        def on_progress(phase: str, done: float, total: float) -> None:
            if phase not in tasks:
                tasks[phase] = progress.add_task(phase, total=total, note=f"≤ {total:.0f}s")
            progress.update(tasks[phase], completed=done)

        def report(msg: str) -> None:
            progress.console.log(msg)

        try:
            this_run = Run(scenario, scenario_file, runs_dir, report, on_progress)
        except LabError as e:  # its directory could not be made: nothing has started
            _fail(e)
        result = this_run.execute()
    if result.verdict:
        print_verdict(console, result.verdict, result.run_dir)
        if result.error:  # judged, but something around it went wrong (an external cluster not cleaned up)
            err_console.print(escape(f"warning: {result.error}"))
    else:
        err_console.print(escape(redact_text(f"run {result.outcome}{': ' + result.error if result.error else ''} — "
                                             f"no verdict; see {result.run_dir}")))
    sys.exit(result.exit_code)


fresh_clusters_option = click.option(
    "--fresh-clusters", is_flag=True,
    help="A cluster of its own for every run (default: consecutive runs whose cluster spec matches share one).")


@main.command("compare")
@click.argument("scenario_file", type=SafePath(path_type=Path))
@click.option("--protocols", required=True, help="Comma-separated: " + ", ".join(PROTOCOLS))
@click.option("--seeds", type=click.IntRange(1, 100), default=1, show_default=True, help="Runs per protocol (seed, seed+1, …).")
@click.option("--runs-dir", type=SafePath(path_type=Path), default=None, help="Default: ./runs")
@click.option("--backend", type=click.Choice(list(BACKENDS)), default=None,
              help="Run the cluster with this backend (default: the scenario's cluster.backend, else local).")
@fresh_clusters_option
@client_config_option
def compare_command(scenario_file: Path, protocols: str, seeds: int, runs_dir: Path | None, backend: str | None,
                    fresh_clusters: bool, client_config: Path | None) -> None:
    """Run one scenario under several protocol generations and print them side by side.
    Exit code 0 when every run passed the checks that apply to its protocol."""
    from harness.compare import compare
    from harness.report import print_comparison
    wanted = [p.strip() for p in protocols.split(",") if p.strip()]
    unknown = [p for p in wanted if p not in PROTOCOLS]
    if unknown or not wanted:
        raise click.BadParameter(f"unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(PROTOCOLS)}",
                                 param_hint="--protocols")
    runs_dir = runs_dir or default_runs_dir()
    try:
        refuse_output_dir(runs_dir, "--runs-dir")
        out, entries, interrupted = compare(scenario_file, wanted, seeds, runs_dir, console.log, backend,
                                            share_clusters=not fresh_clusters, client_config=client_config)
    except LabError as e:
        _fail(e)
    rows = [e.row() for e in entries]
    print_comparison(console, rows, out)
    if interrupted:
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(EXIT_OK if rows and all(r["ok"] for r in rows) and len(rows) == len(wanted) * seeds else EXIT_CHECK_FAILED)


@main.command("suite")
@click.argument("suite_file", type=SafePath(path_type=Path))
@click.option("--runs-dir", type=SafePath(path_type=Path), default=None, help="Default: ./runs")
@click.option("--only", multiple=True, metavar="PATTERN",
              help="Run only variants whose id matches (shell-style, repeatable): 'smoke*', '*consumer*'.")
@click.option("--fail-fast", is_flag=True, help="Stop at the first variant that does not pass (the rest: skipped).")
@click.option("--rerun-failed", is_flag=True, help="Run only the variants that did not pass in this suite's last run (failed, broke, or never ran).")
@click.option("--list", "list_only", is_flag=True, help="Validate and list the variants; run nothing.")
@fresh_clusters_option
def suite_command(suite_file: Path, runs_dir: Path | None, only: tuple[str, ...], fail_fast: bool,
                  rerun_failed: bool, list_only: bool, fresh_clusters: bool) -> None:
    """Run a chaos suite: scenarios × protocols × Kafka lines × seeds × backends.

    Writes suite.json, junit.xml (one testcase per variant) and index.html next to the
    runs. Exit code 0 when every variant passed, 1 when a check failed, 2 on bad input,
    3 when a run broke or could not be judged, 130 when interrupted.
    """
    from harness.report import print_suite
    from harness.scenario import Scenario
    from harness.suite import SuiteRun, last_suite_json, load_suite, select

    runs_dir = runs_dir or default_runs_dir()
    try:
        suite = load_suite(suite_file)
        chosen = select(suite, only, last_suite_json(runs_dir, suite.spec.name) if rerun_failed else None)
        if list_only or not chosen:
            for v in chosen:
                console.print(escape(v.id))
            if not chosen:
                console.print("nothing to run: every variant of the suite's last run passed")
            sys.exit(EXIT_OK)
        for v in chosen:
            installed_for(Scenario.model_validate(v.scenario_data))
        make_dirs(runs_dir, "--runs-dir")  # validated: it is ours to make
    except LabError as e:
        _fail(e)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:.0f}/{task.total:.0f}"),
                  TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task(f"suite {suite.spec.name}", total=len(chosen))

        def on_variant(i: int, variant) -> None:
            progress.update(task, completed=i, description=escape(f"suite {suite.spec.name}: {variant.id}"))

        run = SuiteRun(suite, chosen, runs_dir, fail_fast, lambda m: progress.console.log(escape(m)), on_variant,
                       share_clusters=not fresh_clusters)
        try:
            code = run.execute()
        except LabError as e:  # the suite's directory could not be made
            _fail(e)
        progress.update(task, completed=len(chosen), description=escape(f"suite {suite.spec.name}"))
    print_suite(console, run.to_dict(), run.dir)
    sys.exit(code)


@main.command("capacity")
@click.argument("sweep_file", type=SafePath(path_type=Path))
@click.option("--runs-dir", type=SafePath(path_type=Path), default=None, help="Default: ./runs")
@click.option("--fresh", is_flag=True, help="Run every point again (default: resume, skipping points already judged).")
@click.option("--master", default=None, metavar="URL", help="Spark master for the table (default: local[2]).")
def capacity_command(sweep_file: Path, runs_dir: Path | None, fresh: bool, master: str | None) -> None:
    """A capacity sweep: group size × partitions × produce rate × protocol, each point a load run
    (harness/capacity.py); then the capacity table and its plots (capacity.html, capacity.csv).

    Exit code 0 when every point ran and passed its checks, 1 when a check failed, 2 on bad
    input, 3 when a run broke, 130 when interrupted (run it again to resume).
    """
    from harness.capacity import CapacityRun, load_sweep

    runs_dir = runs_dir or default_runs_dir()
    try:
        sweep = load_sweep(sweep_file)
        for point in sweep.points:
            installed_for(point.scenario)
        make_dirs(runs_dir, "--runs-dir")  # validated: it is ours to make
        run = CapacityRun(sweep, runs_dir, fresh, lambda m: console.log(escape(m)))
    except LabError as e:
        _fail(e)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:.0f}/{task.total:.0f}"),
                  TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task(f"capacity {sweep.spec.name}", total=len(sweep.points))

        def on_point(i: int, point, skipped: bool) -> None:
            progress.update(task, completed=i, description=escape(
                f"capacity {sweep.spec.name}: {point.id}" + (" (ran before)" if skipped else "")))

        try:
            ran = run.run_points(on_point)
        except LabError as e:  # a file in the way of the sweep's directory, a cluster that did not start, …
            _fail(e)
        except KeyboardInterrupt:
            console.print(f"interrupted: `rebalance-lab capacity {sweep_file}` resumes from {run.dir}")
            sys.exit(EXIT_INTERRUPTED)
        progress.update(task, completed=len(sweep.points), description=escape(f"capacity {sweep.spec.name}"))
    from analysis.capacity import COLUMNS

    try:
        result = run.table(master, progress=lambda m: console.log(escape(m)))
    except LabError as e:  # no point ran to a verdict, say
        _fail(e)
    table = Table(title=f"Capacity — {sweep.spec.name}", title_justify="left")
    columns = [c for c in COLUMNS if c not in ("run", "rebalance_max_ms", "broker_p50_ms", "broker_max_ms")]
    for c in columns:
        table.add_column(c, justify="left" if c == "protocol" else "right")
    for row in result.rows:
        table.add_row(*("–" if row[c] is None else str(row[c]) for c in columns))
    console.print(table)
    console.print(f"{result.report}")
    if any(p.get("outcome") != "completed" or not p.get("verdict") for p in ran):  # a run broke, or was not judged
        sys.exit(EXIT_RUN_ERROR)
    sys.exit(EXIT_CHECK_FAILED if any(p.get("verdict") != "pass" for p in ran) else EXIT_OK)


@main.command("shrink")
@click.argument("run_dir", type=SafePath(exists=True, file_okay=False, path_type=Path))
@click.option("--check", default=None, help="The check that must keep failing (default: the run's first failed check).")
@click.option("--repeats", type=click.IntRange(1, 20), default=3, show_default=True,
              help="Runs per candidate at most: it reproduces when one of them fails the check.")
@click.option("--max-runs", type=click.IntRange(1, 10_000), default=40, show_default=True, help="Budget: runs.")
@click.option("--max-minutes", type=FiniteFloatRange(min=1), default=60, show_default=True, help="Budget: minutes.")
@click.option("--confirm", type=click.IntRange(0, 100), default=5, show_default=True,
              help="Runs of the minimal scenario at the end, for how often it reproduces.")
@click.option("--runs-dir", type=SafePath(path_type=Path), default=None, help="Default: ./runs")
@click.option("--backend", type=click.Choice(list(BACKENDS)), default=None,
              help="Run the probes with this cluster backend (default: the one the failing run had).")
@fresh_clusters_option
def shrink_command(run_dir: Path, check: str | None, repeats: int, max_runs: int, max_minutes: float, confirm: int,
                   runs_dir: Path | None, backend: str | None, fresh_clusters: bool) -> None:
    """Search, with real runs, for the smallest scenario that still fails RUN_DIR's check:
    drop faults, shorten them, move them earlier, end the run sooner.

    Writes minimal.yaml, report.md and shrink.json in a new shrink directory. Exit code 0
    when a minimal scenario was written, 1 when the failure did not reproduce, 2 on bad
    input, 3 when the failing schedule's runs broke, 130 when interrupted.
    """
    from harness.shrink import shrink

    runs_dir = runs_dir or default_runs_dir()
    try:
        refuse_output_dir(runs_dir, "--runs-dir")
        result = shrink(run_dir, check, runs_dir, console.log, repeats=repeats, max_runs=max_runs,
                        max_minutes=max_minutes, confirm=confirm, share_clusters=not fresh_clusters, backend=backend)
    except LabError as e:
        _fail(e)
    if result.state == "interrupted":
        err_console.print(escape(f"shrink interrupted; what it found so far: {result.out / 'shrink.json'}"))
        sys.exit(EXIT_INTERRUPTED)
    if result.state == "broken":
        err_console.print(escape(f"the failing schedule's runs broke: {result.error} — {result.out / 'report.md'}"))
        sys.exit(EXIT_RUN_ERROR)
    if result.minimal is None:
        console.print(escape(f"the failure did not reproduce: nothing to shrink — {result.out / 'report.md'}"))
        sys.exit(EXIT_CHECK_FAILED)
    rate = f", failed in {result.confirmed[0]} of {result.confirmed[1]} runs" if result.confirmed else ""
    console.print(escape(f"minimal: {result.minimal.describe()}{rate} — {result.out / 'minimal.yaml'}"))
    sys.exit(EXIT_OK)


@main.command()
@click.argument("scenario_file", type=SafePath(path_type=Path))
@click.option("--seed", type=int, default=None, help="Override the scenario's seed.")
def schedule(scenario_file: Path, seed: int | None) -> None:
    """Print the run's fault schedule as JSON: written faults plus the seeded random ones.
    The same scenario and seed always print the same bytes."""
    from harness.scenario import load_scenario, seed_problem

    try:
        scenario = load_scenario(scenario_file)
    except LabError as e:
        _fail(e)
    if seed is not None:
        if why := seed_problem(seed):
            _error(f"--seed {seed}: {why}")
        scenario = scenario.model_copy(update={"seed": seed})
    faults = scenario.schedule()
    click.echo(json.dumps(faults, indent=2, sort_keys=True))
    if scenario.random_faults and (drawn := len(faults) - len(scenario.faults)) < scenario.random_faults.count:
        err_console.print(escape(f"random_faults: {drawn} of {scenario.random_faults.count} drawn; the other draws found "
                                 "every target they may hit busy then (one fault per process at a time)"))


@main.command()
@click.argument("run_dir", type=SafePath(exists=True, file_okay=False, path_type=Path))
@click.option("--write/--no-write", default=False, help="Rewrite verdict.json and summary.md.")
def check(run_dir: Path, write: bool) -> None:
    """Judge a run's history again (the oracle never needs the cluster).

    Exit code 0 when every check held, 1 when one failed, 2 on bad input, 3 when a
    check raised, 4 when a check could not judge the history (incomplete: a run that
    never reached `phase: done`, interrupted or killed).
    """
    from harness.report import print_verdict, run_state_note, summary_markdown
    from harness.runstate import RUN_STATE, read_state, write_json_atomically
    from oracle import check_history, load_history
    from oracle.history import HistoryError
    from oracle.verdict import CheckOptionError, resolve_checks

    history = run_dir / "history.jsonl"
    if not history.exists():
        _error(f"{history}: no history in this directory")
    if history.is_dir():  # load_history would look inside it
        _error(f"{history}: a directory, not a history file")
    try:
        events = load_history(history, compact_events=True)  # judged, never edited: the lean form
        started = next((e for e in events if e["name"] == ev.RUN_STARTED), {})
        checks = started.get("checks") or {}
        resolve_checks(checks)  # the scenario's options, as recorded: bad ones are bad input, not a check's error
    except HistoryError as e:
        _error(str(e))
    except CheckOptionError as e:
        _error(f"{history}: run_started.checks.{e.check}: {e.reason}")
    verdict = check_history(events, checks).to_dict()
    verdict = {"run_id": started.get("run_id"), "scenario": started.get("scenario"), "seed": started.get("seed"), **verdict}
    print_verdict(console, verdict, run_dir)
    note = run_state_note(read_state(run_dir))
    if note:
        console.print(note, markup=False, soft_wrap=True)
    if write:
        try:
            (run_dir / "summary.md").write_text(summary_markdown(verdict, run_dir))
            write_json_atomically(run_dir / "verdict.json", verdict)
            if state := read_state(run_dir):  # run.json says the verdict too
                write_json_atomically(run_dir / RUN_STATE, {**state, "verdict": verdict["status"]})
        except OSError as e:  # a directory where summary.md goes, a read-only run directory
            _error(f"--write: {e.filename or run_dir}: cannot write it: {e.strerror or e}")
    gc.freeze()  # the process ends here: the exit's last collection would only walk the whole history again
    sys.exit(EXIT_FOR_VERDICT[verdict["status"]])


@main.command()
def cleanup() -> None:
    """Stop every process and remove every container the lab started and left behind (also
    resumes paused ones), and stop the project's Docker Engine unless a running harness uses
    it; the runs whose harness died are marked `killed` in their run.json."""
    from harness.cluster.compose import ProjectsLeft, cleanup_projects, live_projects
    from harness.containers.engine import own_socket, stop_engine
    from harness.processes import cleanup_leftovers
    from harness.runstate import read_state

    # containers first (the engine must still run to remove them), then the engine, then processes
    def removed(projects: list[str]) -> None:
        for project in projects:
            console.print(f"removed compose project {project} (its containers and network)", markup=False)

    try:
        removed(cleanup_projects(include_detached=True))
    except ProjectsLeft as e:
        removed(e.removed)
        err_console.print(escape(f"cleanup: {e}"))
    if users := live_projects(own_socket()):  # stopping the engine would take their containers with it
        console.print(f"left the project's Docker Engine running: running harnesses use it ({', '.join(users)})",
                      markup=False)
    else:
        stop_engine(lambda m: console.print(m, markup=False))
    stopped = cleanup_leftovers(include_detached=True, include_live_owners=False)
    state_file = lab_home() / CLUSTER_STATE
    if stopped and state_file.exists():
        state_file.unlink()
    for p in stopped:
        console.print(f"stopped {p.name} (pid {p.pid}, {p.role}{', was paused' if p.stopped else ''}, from {p.owner})",
                      markup=False)
    for run_dir in dict.fromkeys(p.run_dir for p in stopped if p.run_dir):
        console.print(f"run {run_dir}: {(read_state(run_dir) or {}).get('state', 'no run.json')}", markup=False)
    console.print(f"cleanup: {len(stopped)} leftover processes stopped.")


# ----------------------------------------------------------------------------- compose


@main.group()
def compose() -> None:
    """The cluster as a Docker Compose project (the compose backend)."""


@compose.command("render")
@click.argument("scenario_file", type=SafePath(path_type=Path))
@click.option("-o", "--output", "output", type=SafePath(path_type=Path), required=True,
              help="Directory to write the project into: created, or an empty one. A directory that holds "
                   "anything, an earlier render included, is refused (remove it first): a project may still "
                   "run from it.")
def compose_render(scenario_file: Path, output: Path) -> None:
    """Write the scenario's cluster as a complete Compose project: compose.yaml, every service's
    configuration and PORTS.md. Start it with `docker compose up -d --wait` in that directory
    (the images come from `rebalance-lab setup --compose`)."""
    from harness.cluster.compose_topology import render
    from harness.containers.images import image_set
    from harness.run import cluster_spec
    from harness.scenario import load_scenario

    try:
        scenario = load_scenario(scenario_file)
        images = image_set(scenario.cluster.kafka)
        make_dirs(output, "--output")
        if any(output.iterdir()):  # never mix two projects' files, nor pull a running one's from under it
            raise SetupError(f"--output {output}: not empty; give a new or empty directory")
        topology = render(cluster_spec(scenario), output, images, f"rl-{scenario.name}".lower(),
                          owner=f"render:{output.resolve()}")
    except LabError as e:
        _fail(e)
    except OSError as e:  # made, but not writable after all (a read-only mount)
        _error(f"--output {output}: {e.strerror or e}")
    console.print(f"wrote {topology.compose_file} (start it there with `docker compose up -d --wait`)", markup=False)
    console.print((output / "PORTS.md").read_text(), markup=False)


# Defined in analysis/ with the Spark job; importing it loads neither Spark nor matplotlib.
main.add_command(analyze)


if __name__ == "__main__":
    main()
