"""`run`, `schedule` and `check`: one scenario, its faults' times, its verdict again."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from harness.cli.common import (
    client_config_option,
    console,
    detail,
    emit_json,
    err_console,
    error,
    fail,
    human,
    no_progress_bar,
    quiet,
    say,
)
from harness.cluster.backend import BACKENDS
from harness.components.install import installed_for
from harness.paths import default_runs_dir, make_dirs
from oracle import vocabulary as ev
from oracle.protocols import PROTOCOLS
from runtime.errors import (
    EXIT_FOR_VERDICT,
    LabError,
    ScenarioError,
)
from runtime.output_dirs import SafePath
from runtime.secrets import redact_text


def _not_empty(_ctx, _param, value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise click.BadParameter("empty")
    return value


def _sets(_ctx, _param, values: tuple[str, ...]) -> list[tuple[str, object]]:
    from harness.scenario.overrides import OverrideError, parse_set

    try:
        return [parse_set(v) for v in values]
    except OverrideError as e:
        raise click.BadParameter(str(e)) from None


@click.command()
@click.argument("scenario_file", type=SafePath(path_type=Path))
@click.option("--runs-dir", type=SafePath(path_type=Path), default=None, help="Default: ./runs")
@click.option("--seed", type=int, default=None, help="Instead of the scenario's seed (its random faults' draws).")
@click.option(
    "--protocol",
    type=click.Choice(list(PROTOCOLS)),
    default=None,
    help="Instead of workload.protocol, with what it forces (its default assignor, the Kafka line it needs), as a suite's axis.",
)
@click.option(
    "--kafka",
    default=None,
    metavar="RELEASE",
    callback=_not_empty,
    help="Instead of cluster.kafka: a release or a line (4.1).",
)
@click.option(
    "--client",
    default=None,
    metavar="REQUIREMENT",
    callback=_not_empty,
    help="Instead of workload.client, e.g. confluent-kafka==2.3.0.",
)
@click.option(
    "--backend",
    type=click.Choice(list(BACKENDS)),
    default=None,
    help="Run the cluster with this backend (default: the scenario's cluster.backend, else local).",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY.PATH=VALUE",
    callback=_sets,
    help="Set a key of the scenario, the value read as YAML (null removes the key), list entries as [1], [2]: "
    "--set workload.consumers=4 --set 'faults[1].at_s=12' (repeatable; after the options above). "
    "Validated as the file is; the run directory keeps the scenario it made.",
)
@client_config_option
def run(
    scenario_file: Path,
    runs_dir: Path | None,
    seed: int | None,
    protocol: str | None,
    kafka: str | None,
    client: str | None,
    backend: str | None,
    sets: list[tuple[str, object]],
    client_config: Path | None,
) -> None:
    """Run a scenario: cluster, workload, faults, recovery, then the oracle's verdict.

    --seed, --protocol, --kafka, --client and --backend change the scenario as a suite's matrix
    axes do, and name it as a suite names that variant; --set changes any key. Each suite variant
    prints the `run` command that replays it. RUNS_DIR/latest points to the newest run directory."""
    from harness.reports.run import print_verdict
    from harness.run.loop import Run
    from harness.scenario import load_scenario_data, read_scenario_data
    from harness.scenario.overrides import Overrides, scenario_text
    from harness.scenario.variants import Axes

    overrides = Overrides(Axes(protocol=protocol, kafka=kafka, client=client, seed=seed, backend=backend), tuple(sets))
    text = None
    try:
        data = read_scenario_data(scenario_file)
        try:
            if overrides:
                data = overrides.apply(data, scenario_file)
                text = scenario_text(data)
            # client settings merged before validation: the backend decides whether they may be given
            scenario = load_scenario_data(data, scenario_file, client_config)
        except ScenarioError as e:
            raise overrides.name_options(e) from None
        installed_for(scenario)  # fail before creating a run directory
        runs_dir = make_dirs(runs_dir or default_runs_dir(), "--runs-dir")  # validated: it is ours to make
    except LabError as e:
        fail(e)
    with Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        TextColumn("{task.fields[note]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
        disable=no_progress_bar(),
    ) as progress:
        tasks: dict[str, int] = {}

        def on_progress(phase: str, done: float, total: float) -> None:
            if phase not in tasks:
                tasks[phase] = progress.add_task(phase, total=total, note=f"≤ {total:.0f}s")
            progress.update(tasks[phase], completed=done)

        try:
            this_run = Run(scenario, scenario_file, runs_dir, say, on_progress, detail=detail, scenario_text=text)
        except LabError as e:  # its directory could not be made: nothing has started
            fail(e)
        result = this_run.execute()
    if result.verdict:
        if human():
            print_verdict(console, result.verdict, result.run_dir, brief=quiet())
        if result.error:  # judged, but something around it went wrong (an external cluster not cleaned up)
            err_console.print(escape(f"warning: {result.error}"))
    else:
        err_console.print(
            escape(
                redact_text(
                    f"run {result.outcome}{': ' + result.error if result.error else ''} — "
                    f"no verdict; see {result.run_dir}"
                )
            )
        )
    expectation = None
    if scenario.expect:  # said, not acted on: a suite or pytest holds a variant to it, over its attempts
        line = expectation = scenario.expect.run_line(result.outcome, result.verdict)
        console.print(escape(line[0].upper() + line[1:]), highlight=False, soft_wrap=True)
    emit_json_of_run(result, scenario, expectation)
    sys.exit(result.exit_code)


def emit_json_of_run(result, scenario, expectation: str | None) -> None:
    """`run --json`'s document (harness/reports/json_output.py)."""
    from harness.reports.json_output import RunOutput, verdict_model
    from harness.supervision.run_state import read_state

    state = read_state(result.run_dir) or {}
    emit_json(
        RunOutput(
            exit_code=result.exit_code,
            status=result.verdict["status"] if result.verdict else result.outcome,
            outcome=result.outcome,
            error=redact_text(result.error) if result.error else None,
            run_dir=str(result.run_dir),
            scenario=scenario.name,
            seed=scenario.seed,
            harness_version=state.get("harness_version"),
            components=state.get("components") or {},
            expectation=expectation,
            verdict=verdict_model(result.verdict) if result.verdict else None,
        )
    )


@click.command()
@click.argument("scenario_file", type=SafePath(path_type=Path))
@click.option("--seed", type=int, default=None, help="Override the scenario's seed.")
def schedule(scenario_file: Path, seed: int | None) -> None:
    """Print the run's fault schedule as JSON: written faults plus the seeded random ones.
    The same scenario and seed always print the same bytes."""
    from harness.scenario import load_scenario, seed_problem

    try:
        scenario = load_scenario(scenario_file)
    except LabError as e:
        fail(e)
    if seed is not None:
        if why := seed_problem(seed):
            error(f"--seed {seed}: {why}")
        scenario = scenario.model_copy(update={"seed": seed})
    faults = scenario.schedule()
    if human():  # as before --json: the bare list
        click.echo(json.dumps(faults, indent=2, sort_keys=True))
    else:
        from harness.reports.json_output import ScheduleOutput

        rf = scenario.random_faults
        emit_json(
            ScheduleOutput(
                exit_code=0,
                scenario=scenario.name,
                seed=scenario.seed,
                faults=faults,
                random_drawn=len(faults) - len(scenario.faults) if rf else None,
                random_asked=rf.count if rf else None,
            )
        )
    if scenario.random_faults and (drawn := len(faults) - len(scenario.faults)) < scenario.random_faults.count:
        err_console.print(
            escape(
                f"random_faults: {drawn} of {scenario.random_faults.count} drawn; the other draws found "
                "every target they may hit busy then (one fault per process at a time)"
            )
        )


@click.command()
@click.argument("run_dir", type=SafePath(exists=True, file_okay=False, path_type=Path))
@click.option("--write/--no-write", default=False, help="Rewrite verdict.json and summary.md.")
def check(run_dir: Path, write: bool) -> None:
    """Judge a run's history again (the oracle never needs the cluster). Incomplete (4): a run
    that never reached `phase: done` (interrupted or killed)."""
    from harness.reports.run import print_verdict, run_state_note, summary_markdown
    from harness.supervision.run_state import (
        RUN_STATE,
        read_state,
        write_json_atomically,
    )
    from oracle import check_history, load_history
    from oracle.checks import missing_checks
    from oracle.history import HistoryError
    from oracle.verdict import CheckOptionError, resolve_checks

    history = run_dir / "history.jsonl"
    if not history.exists():
        error(f"{history}: no history in this directory")
    if history.is_dir():  # load_history would look inside it
        error(f"{history}: a directory, not a history file")
    try:
        events = load_history(history, compact_events=True)  # judged, never edited: the lean form
        started = next((e for e in events if e["name"] == ev.RUN_STARTED), {})
        checks = started.get("checks") or {}
        # the scenario's options, as recorded: bad ones are bad input, not a check's error; a check
        # it named from a plugin not installed here, too (run_started's plugins say which)
        resolve_checks(checks, started.get("plugins"))
    except HistoryError as e:
        error(str(e))
    except CheckOptionError as e:
        error(f"{history}: run_started.checks.{e.check}: {e.reason}")
    if not checks:  # every check installed judges it: say which of the run's are not, if any
        for plugin in missing_checks(started.get("plugins")):
            err_console.print(
                escape(
                    f"note: the run also had check {plugin['name']!r} from {plugin['distribution']} "
                    f"{plugin['version']}, not installed here: not judged"
                )
            )
    verdict = check_history(events, checks).to_dict()
    verdict = {
        "run_id": started.get("run_id"),
        "scenario": started.get("scenario"),
        "seed": started.get("seed"),
        **verdict,
    }
    if human():
        print_verdict(console, verdict, run_dir, brief=quiet())
    expected = _expectation_line(run_dir, verdict)
    if expected:
        console.print(escape(expected[0].upper() + expected[1:]), highlight=False, soft_wrap=True)
    note = run_state_note(read_state(run_dir))
    if note and not quiet():
        console.print(note, markup=False, soft_wrap=True)
    if write:
        try:
            (run_dir / "summary.md").write_text(summary_markdown(verdict, run_dir, expected))
            write_json_atomically(run_dir / "verdict.json", verdict)
            if state := read_state(run_dir):  # run.json says the verdict too
                write_json_atomically(run_dir / RUN_STATE, {**state, "verdict": verdict["status"]})
        except OSError as e:  # a directory where summary.md goes, a read-only run directory
            error(f"--write: {e.filename or run_dir}: cannot write it: {e.strerror or e}")
    from harness.reports.json_output import CheckOutput, verdict_model

    emit_json(
        CheckOutput(
            exit_code=EXIT_FOR_VERDICT[verdict["status"]],
            status=verdict["status"],
            run_dir=str(run_dir),
            scenario=verdict.get("scenario"),
            seed=verdict.get("seed"),
            run_state=(read_state(run_dir) or {}).get("state"),
            expectation=expected,
            wrote=write,
            verdict=verdict_model(verdict),
        )
    )
    gc.freeze()  # the process ends here: the exit's last collection would only walk the whole history again
    sys.exit(EXIT_FOR_VERDICT[verdict["status"]])


def _expectation_line(run_dir: Path, verdict: dict) -> str | None:
    """What the run's scenario (its copy in the run directory) expected, against this verdict; None
    without an `expect:` — or a copy that cannot say (an older run's, an edited one): not the history's to say."""
    from pydantic import ValidationError

    from harness.scenario import read_scenario_data
    from harness.scenario.expect import Expect

    try:
        data = read_scenario_data(run_dir / "scenario.yaml")
        return Expect.model_validate(data["expect"]).run_line("completed", verdict) if data.get("expect") else None
    except (LabError, ValidationError, TypeError):
        return None
