"""`compare`, `suite`, `capacity` and `shrink`: many runs of scenarios."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from harness.cli.common import (
    FiniteFloatRange,
    client_config_option,
    console,
    emit_json,
    err_console,
    fail,
    fresh_clusters_option,
    human,
    no_progress_bar,
    quiet,
    say,
)
from harness.cluster.backend import BACKENDS
from harness.components.install import installed_for
from harness.paths import default_runs_dir, make_dirs, refuse_output_dir
from oracle.protocols import PROTOCOLS
from runtime.errors import (
    EXIT_CHECK_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUN_ERROR,
    LabError,
    worst_exit,
)
from runtime.output_dirs import SafePath


@click.command("compare")
@click.argument("scenario_file", type=SafePath(path_type=Path))
@click.option(
    "--protocols", default=None, help="Comma-separated: " + ", ".join(PROTOCOLS) + " (default: the scenario's)."
)
@click.option(
    "--kafka",
    "kafka",
    multiple=True,
    metavar="RELEASE",
    help="A Kafka release or line to run on, as cluster.kafka takes it (repeatable: side by side).",
)
@click.option(
    "--client",
    "clients",
    multiple=True,
    metavar="REQUIREMENT",
    help="The members' client, as workload.client takes it: confluent-kafka==2.3.0 (repeatable).",
)
@click.option(
    "--seeds", type=click.IntRange(1, 100), default=1, show_default=True, help="Runs per variant (seed, seed+1, …)."
)
@click.option("--runs-dir", type=SafePath(path_type=Path), default=None, help="Default: ./runs")
@click.option(
    "--backend",
    type=click.Choice(list(BACKENDS)),
    default=None,
    help="Run the cluster with this backend (default: the scenario's cluster.backend, else local).",
)
@fresh_clusters_option
@client_config_option
def compare_command(
    scenario_file: Path,
    protocols: str | None,
    kafka: tuple[str, ...],
    clients: tuple[str, ...],
    seeds: int,
    runs_dir: Path | None,
    backend: str | None,
    fresh_clusters: bool,
    client_config: Path | None,
) -> None:
    """Run one scenario under several protocol generations, Kafka releases and client versions
    (every combination of those given) and print them side by side; exits with the worst of
    the runs' codes."""
    from harness.campaigns.compare import compare
    from harness.reports.run import print_comparison
    from harness.scenario.variants import kafka_problem

    wanted = [p.strip() for p in (protocols or "").split(",") if p.strip()]
    unknown = [p for p in wanted if p not in PROTOCOLS]
    if unknown or (protocols is not None and not wanted):
        raise click.BadParameter(
            f"unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(PROTOCOLS)}", param_hint="--protocols"
        )
    if not (wanted or kafka or clients):
        raise click.UsageError("nothing to compare: give --protocols, --kafka or --client (each may list several)")
    for axis, values in (("--protocols", wanted), ("--kafka", kafka), ("--client", clients)):
        if twice := sorted({v for v in values if values.count(v) > 1}):
            raise click.BadParameter(f"{', '.join(twice)} given twice (two runs would share a row)", param_hint=axis)
    if any(not c.strip() for c in clients):
        raise click.BadParameter("an empty requirement (e.g. confluent-kafka==2.3.0)", param_hint="--client")
    for release in kafka:  # as cluster.kafka refuses it, in its words
        if why := kafka_problem(release):
            raise click.BadParameter(f"{release}: {why}", param_hint="--kafka")
    runs_dir = runs_dir or default_runs_dir()
    try:
        refuse_output_dir(runs_dir, "--runs-dir")
        out, entries, interrupted = compare(
            scenario_file,
            wanted,
            seeds,
            runs_dir,
            say,
            backend,
            share_clusters=not fresh_clusters,
            client_config=client_config,
            kafka=list(kafka),
            clients=list(clients),
        )
    except LabError as e:
        fail(e)
    rows = [e.row() for e in entries]
    if human():
        print_comparison(console, rows, out)
    # the worst of the runs': a broken one is 3, an incomplete one 4, as `run` says each
    code = worst_exit([e.result.exit_code for e in entries] + [EXIT_INTERRUPTED] * interrupted)
    _emit_comparison(code, rows, out)
    sys.exit(code)


def _emit_comparison(code: int, rows: list[dict], out: Path) -> None:
    """`compare --json`'s document (harness/reports/json_output.py)."""
    from harness.reports.json_output import CompareOutput, CompareRow

    status = {EXIT_OK: "passed", EXIT_INTERRUPTED: "interrupted"}.get(code, "failed")
    emit_json(CompareOutput(exit_code=code, status=status, dir=str(out), rows=[CompareRow(**r) for r in rows]))


@click.command("suite")
@click.argument("suite_file", type=SafePath(path_type=Path))
@click.option("--runs-dir", type=SafePath(path_type=Path), default=None, help="Default: ./runs")
@click.option(
    "--only",
    multiple=True,
    metavar="PATTERN",
    help="Run only variants whose id matches (shell-style, repeatable): 'smoke*', '*consumer*'.",
)
@click.option("--fail-fast", is_flag=True, help="Stop at the first variant that does not pass (the rest: skipped).")
@click.option(
    "--rerun-failed",
    is_flag=True,
    help="Run only the variants that did not pass in this suite's last run (failed, broke, or never ran).",
)
@click.option("--list", "list_only", is_flag=True, help="Validate and list the variants; run nothing.")
@click.option(
    "--out",
    type=SafePath(path_type=Path),
    default=None,
    metavar="DIR",
    help="The suite's directory (suite.json, junit.xml, index.html, the runs): new or empty. "
    "Default: RUNS_DIR/suite-<UTC time>-<name>.",
)
@click.option(
    "--junit",
    type=SafePath(path_type=Path),
    default=None,
    metavar="PATH",
    help="Also write the JUnit file here (the suite's directory keeps its junit.xml); its directory is made.",
)
@fresh_clusters_option
def suite_command(
    suite_file: Path,
    runs_dir: Path | None,
    only: tuple[str, ...],
    fail_fast: bool,
    rerun_failed: bool,
    list_only: bool,
    out: Path | None,
    junit: Path | None,
    fresh_clusters: bool,
) -> None:
    """Run a chaos suite: scenarios × protocols × Kafka releases × clients × seeds × backends.

    Writes suite.json, junit.xml (one testcase per variant) and index.html next to the
    runs; exits with the worst of the variants' codes (a variant that failed as it was
    expected to passes).
    """
    from harness.campaigns.suite import SuiteRun, check_outputs, last_suite_json, load_suite, select
    from harness.reports.run import print_suite
    from harness.scenario import Scenario

    runs_dir = runs_dir or default_runs_dir()
    try:
        suite = load_suite(suite_file)
        chosen = select(suite, only, last_suite_json(runs_dir, suite.spec.name) if rerun_failed else None)
        if list_only or not chosen:
            for v in chosen:
                console.print(escape(v.id + (f"  (expected: {v.expect.describe()})" if v.expect else "")))
                console.print(escape(f"  {v.replay}"), soft_wrap=True)
            if not chosen:
                console.print("nothing to run: every variant of the suite's last run passed")
            _emit_suite(
                {"suite": suite.spec.name, "state": "listed", "variants": [_listed(v) for v in chosen]}, None, 0
            )
            sys.exit(EXIT_OK)
        for v in chosen:
            installed_for(Scenario.model_validate(v.scenario_data))
        make_dirs(runs_dir, "--runs-dir")  # validated: it is ours to make
        check_outputs(out, junit)
    except LabError as e:
        fail(e)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f}"),
        TimeElapsedColumn(),
        console=console,
        disable=no_progress_bar(),
    ) as progress:
        task = progress.add_task(f"suite {suite.spec.name}", total=len(chosen))

        def on_variant(i: int, variant) -> None:
            progress.update(task, completed=i, description=escape(f"suite {suite.spec.name}: {variant.id}"))

        run = SuiteRun(
            suite,
            chosen,
            runs_dir,
            fail_fast,
            say,
            on_variant,
            share_clusters=not fresh_clusters,
            out=out,
            junit=junit,
        )
        try:
            code = run.execute()
        except LabError as e:  # the suite's directory could not be made
            fail(e)
        progress.update(task, completed=len(chosen), description=escape(f"suite {suite.spec.name}"))
    if human():
        print_suite(console, run.to_dict(), run.dir, brief=quiet())
    _emit_suite(run.to_dict(), run.dir, code)
    if junit is not None and human():
        console.print(escape(f"JUnit also in {junit}"), soft_wrap=True)
    sys.exit(code)


def _listed(v) -> dict:
    """A variant as `suite --list --json` gives it: nothing run."""
    return {"id": v.id, "state": "listed", "seconds": 0.0, "replay": None}


def _emit_suite(suite: dict, out: Path | None, code: int) -> None:
    """`suite --json`'s document (harness/reports/json_output.py)."""
    from harness.reports.json_output import suite_model

    emit_json(suite_model({**suite, "exit_code": code}, out))


@click.command("capacity")
@click.argument("sweep_file", type=SafePath(path_type=Path))
@click.option("--runs-dir", type=SafePath(path_type=Path), default=None, help="Default: ./runs")
@click.option("--fresh", is_flag=True, help="Run every point again (default: resume, skipping points already judged).")
@click.option("--master", default=None, metavar="URL", help="Spark master for the table (default: local[2]).")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Validate the sweep and print its points, what each would run and which a resume would skip; "
    "run nothing, install nothing.",
)
def capacity_command(sweep_file: Path, runs_dir: Path | None, fresh: bool, master: str | None, dry_run: bool) -> None:
    """A capacity sweep: group size × partitions × produce rate × protocol, each point a load run
    (harness/campaigns/capacity.py); then the capacity table and its plots (capacity.html, capacity.csv).

    Exits with the worst of the points' codes; interrupted (130), run it again to resume.
    """
    from harness.campaigns.capacity import CapacityRun, load_sweep, point_exit_code

    runs_dir = runs_dir or default_runs_dir()
    try:
        sweep = load_sweep(sweep_file)
        if dry_run:
            refuse_output_dir(runs_dir, "--runs-dir")
            _print_sweep(sweep, CapacityRun(sweep, runs_dir, fresh))
            sys.exit(EXIT_OK)
        for point in sweep.points:
            installed_for(point.scenario)
        make_dirs(runs_dir, "--runs-dir")  # validated: it is ours to make
        run = CapacityRun(sweep, runs_dir, fresh, say)
    except LabError as e:
        fail(e)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f}"),
        TimeElapsedColumn(),
        console=console,
        disable=no_progress_bar(),
    ) as progress:
        task = progress.add_task(f"capacity {sweep.spec.name}", total=len(sweep.points))

        def on_point(i: int, point, skipped: bool) -> None:
            progress.update(
                task,
                completed=i,
                description=escape(f"capacity {sweep.spec.name}: {point.id}" + (" (ran before)" if skipped else "")),
            )

        try:
            ran = run.run_points(on_point)
        except LabError as e:  # a file in the way of the sweep's directory, a cluster that did not start, …
            fail(e)
        except KeyboardInterrupt:
            console.print(f"interrupted: `rebalance-lab capacity {sweep_file}` resumes from {run.dir}")
            sys.exit(EXIT_INTERRUPTED)
        progress.update(task, completed=len(sweep.points), description=escape(f"capacity {sweep.spec.name}"))
    try:
        result = run.table(master, progress=say)
    except LabError as e:  # no point ran to a verdict, say
        fail(e)
    console.print(capacity_table(sweep.spec.name, result.rows, console.width))
    console.print(f"{result.report}")
    sys.exit(worst_exit(point_exit_code(p) for p in ran))  # as `run` says each point


def _print_sweep(sweep, run) -> None:
    """`capacity --dry-run`: a row per point, what its run would be, and whether a resume skips it."""
    from runtime.console import Column, fitted_table

    columns = (
        Column("point"),  # an id: one line
        Column("protocol"),
        Column("members", justify="right"),
        Column("partitions", justify="right"),
        Column("rate", justify="right"),
        Column("kafka", drop=1),
        Column("duration", justify="right", drop=2),
        Column("would"),
    )
    rows = [
        (
            escape(point.id),
            point.protocol,
            str(point.members),
            str(point.partitions),
            f"{point.rate:g}/s",
            point.scenario.cluster.kafka,
            f"{point.scenario.duration_s:g} s",
            "skip (ran before)" if run.done(point) else "run",
        )
        for point in sweep.points
    ]
    title = f"Capacity sweep {sweep.spec.name}: {len(sweep.points)} points"
    console.print(fitted_table(title, columns, rows, console.width))
    todo = [p for p in sweep.points if not run.done(p)]
    console.print(
        escape(f"dry run: {len(todo)} of {len(sweep.points)} points would run, into {run.dir}; nothing was run"),
        soft_wrap=True,
    )


@click.command("shrink")
@click.argument("run_dir", type=SafePath(exists=True, file_okay=False, path_type=Path))
@click.option("--check", default=None, help="The check that must keep failing (default: the run's first failed check).")
@click.option(
    "--repeats",
    type=click.IntRange(1, 20),
    default=3,
    show_default=True,
    help="Runs per candidate at most: it reproduces when one of them fails the check.",
)
@click.option("--max-runs", type=click.IntRange(1, 10_000), default=40, show_default=True, help="Budget: runs.")
@click.option("--max-minutes", type=FiniteFloatRange(min=1), default=60, show_default=True, help="Budget: minutes.")
@click.option(
    "--confirm",
    type=click.IntRange(0, 100),
    default=5,
    show_default=True,
    help="Runs of the minimal scenario at the end, for how often it reproduces.",
)
@click.option("--runs-dir", type=SafePath(path_type=Path), default=None, help="Default: ./runs")
@click.option(
    "--backend",
    type=click.Choice(list(BACKENDS)),
    default=None,
    help="Run the probes with this cluster backend (default: the one the failing run had).",
)
@fresh_clusters_option
def shrink_command(
    run_dir: Path,
    check: str | None,
    repeats: int,
    max_runs: int,
    max_minutes: float,
    confirm: int,
    runs_dir: Path | None,
    backend: str | None,
    fresh_clusters: bool,
) -> None:
    """Search, with real runs, for the smallest scenario that still fails RUN_DIR's check:
    drop faults, shorten them, move them earlier, end the run sooner.

    Writes minimal.yaml, report.md and shrink.json in a new shrink directory: exit code 0
    when a minimal scenario was written, 1 when the failure did not reproduce, 3 when the
    failing schedule's runs broke.
    """
    from harness.campaigns.shrink import shrink

    runs_dir = runs_dir or default_runs_dir()
    try:
        refuse_output_dir(runs_dir, "--runs-dir")
        result = shrink(
            run_dir,
            check,
            runs_dir,
            say,
            repeats=repeats,
            max_runs=max_runs,
            max_minutes=max_minutes,
            confirm=confirm,
            share_clusters=not fresh_clusters,
            backend=backend,
        )
    except LabError as e:
        fail(e)
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


@click.command("bugs")
@click.option(
    "--write-docs", is_flag=True, help="Rewrite each bug's README.md and docs/known-bugs.md's table from the corpus."
)
@click.option("--check-docs", is_flag=True, help="Exit 1 if a generated file differs from what the corpus gives.")
def bugs_command(write_docs: bool, check_docs: bool) -> None:
    """The corpus of known bugs (bugs/): each bug, the releases it runs on, the check that names it,
    and how often it reproduced. Its suite: `rebalance-lab suite suites/known-bugs.yaml`."""
    from harness.campaigns import bug_corpus

    try:
        bugs = bug_corpus.load_corpus()
    except LabError as e:
        fail(e)
    stale = bug_corpus.stale_docs(bugs)
    if write_docs:
        for path, text in stale.items():
            path.write_text(text)
            console.print(f"wrote {path}")
        return
    if check_docs:
        for path in stale:
            err_console.print(f"out of date: {path} (rebalance-lab bugs --write-docs)")
        sys.exit(EXIT_CHECK_FAILED if stale else EXIT_OK)
    from runtime.console import Column, fitted_table

    columns = (
        Column("bug", wrap=True, width=28),
        Column("component", drop=2),
        Column("affected → fixed"),
        Column("named by", wrap=True, width=14, drop=1),
        Column("reproduced → fixed", drop=3),
        Column("wall per run", drop=4),
    )
    rows = []
    for b in bugs:
        fixed = b.release(b.fixed) if b.fixed else "not fixed yet"
        rows.append(
            (
                escape(f"{b.id}: {b.facts.title}"),
                b.facts.component,
                f"{b.release(b.affected)} → {fixed}",
                escape(b.names_it().replace("`", "")),
                b.rate(),
                b.wall(),
            )
        )
    console.print(fitted_table(f"{len(bugs)} known bugs (bugs/)", columns, rows, console.width))


def capacity_table(name: str, rows: list[dict], width: int):
    """The capacity table on the terminal, its columns fitted to it (capacity.csv has them all)."""
    from analysis.capacity import COLUMNS
    from runtime.console import Column, fitted_table

    names = [
        c
        for c in COLUMNS
        if c
        not in (
            "run",
            "rebalance_max_ms",
            "broker_p50_ms",
            "broker_max_ms",
            "stw_p50_ms",
            "stw_max_ms",
            "first_partition_p50_ms",
            "first_partition_max_ms",
        )
    ]
    # a narrow terminal keeps the point's coordinates and the headline figures
    keep = {"protocol", "members", "partitions", "rate", "rebalance_p95_ms", "stw_p95_ms"}
    columns = [
        Column(c, justify="left" if c == "protocol" else "right", drop=0 if c in keep else len(names) - i)
        for i, c in enumerate(names)
    ]
    cells = [["–" if row[c] is None else escape(str(row[c])) for c in names] for row in rows]
    return fitted_table(f"Capacity — {name}", columns, cells, width)
