"""`setup`, `cleanup` and `compose render`: the lab's components and what it left behind."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape

from harness.cli.common import CLUSTER_STATE, KafkaReleaseType, console, err_console, error, fail
from harness.paths import lab_home, make_dirs
from runtime.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_RUN_ERROR,
    LabError,
    SetupError,
)
from runtime.output_dirs import SafePath


@click.command()
@click.option(
    "--kafka",
    "lines",
    multiple=True,
    type=KafkaReleaseType(),
    help="Kafka release(s) to install, exact (3.7.2) or a line (3.7 = its newest tested release); "
    "repeatable (default: the default 3.x and 4.x releases).",
)
@click.option(
    "--client",
    "clients",
    multiple=True,
    metavar="REQUIREMENT",
    help="A members' client release to install ahead of its first run, e.g. confluent-kafka==2.3.0 "
    "(an environment of its own under the lab home; repeatable). Installs only these, and the --kafka "
    "releases given with them.",
)
@click.option(
    "--compose",
    is_flag=True,
    help="Also what the compose backend needs: a Docker Engine (Debian's docker.io, when none answers), "
    "debootstrap, and its images, built here.",
)
def setup(lines: tuple[str, ...], clients: tuple[str, ...], compose: bool) -> None:
    """Install the real components (Kafka from Maven Central, Toxiproxy with go install). Idempotent."""
    from harness.components.install import default_kafka_releases, setup_all
    from harness.supervision.stop_signals import like_ctrl_c

    if clients:
        _setup_clients(clients)
        if not lines and not compose:  # --client alone: only those; with --kafka, those releases too
            return
    try:
        with like_ctrl_c(), console.status("setting up …") as status:

            def report(msg: str) -> None:
                status.update(msg)
                console.print(msg, markup=False)

            changed = setup_all(report, list(lines) or None)
            if compose:
                from harness.components.containers.setup import setup_compose

                changed |= setup_compose(report, list(lines) or default_kafka_releases())
    except LabError as e:
        fail(e)
    except KeyboardInterrupt:  # the tool it was running is stopped by now, and nothing it began is marked installed
        console.print(
            "setup: interrupted; what it was installing is not marked installed, and the next setup starts it again.",
            markup=False,
        )
        sys.exit(EXIT_INTERRUPTED)
    console.print("setup: everything was already installed; nothing to do." if not changed else "setup: done.")


def _setup_clients(texts: tuple[str, ...]) -> None:
    """`setup --client R …`: each release's environment (a Python client) or Kafka's tools of it (Java)."""
    from harness.components import client_envs
    from harness.components.install import install_kafka_tools
    from harness.supervision.stop_signals import like_ctrl_c
    from workloads.client_versions import parse_client

    requirements = []
    for text in texts:
        try:
            requirement = parse_client(text)
        except ValueError as e:
            error(f"--client: {e}")
        problem = requirement.floor_problem or (
            client_envs.java_release_problem(requirement) if requirement.distribution.registry == "maven" else None
        )
        if problem:
            error(f"--client: {problem}")
        requirements.append(requirement)
    changed = False
    try:
        with like_ctrl_c(), console.status("setting up …") as status:

            def report(msg: str) -> None:
                status.update(msg)
                console.print(msg, markup=False)

            for requirement in requirements:
                if requirement.distribution.registry == "maven":
                    changed |= install_kafka_tools(requirement.version, report)
                    continue
                problem = client_envs.pypi_problem(requirement)
                if problem:
                    raise SetupError(f"--client: {problem}")
                changed |= client_envs.install_client(requirement, report)
    except LabError as e:
        fail(e)
    except KeyboardInterrupt:
        console.print("setup: interrupted; the release it was installing is not installed.", markup=False)
        sys.exit(EXIT_INTERRUPTED)
    console.print("setup: done." if changed else "setup: every client asked for was already installed.")


# ----------------------------------------------------------------------------- cluster


@click.command()
def cleanup() -> None:
    """Stop every process and remove every container the lab started and left behind (also
    resumes paused ones), and stop the project's Docker Engine unless a running harness uses
    it; the runs whose harness died are marked `killed` in their run.json. Exit code 3 when
    something could not be stopped or removed (each said)."""
    from harness.cluster.backend import CleanupScope
    from harness.cluster.cleanup import clean_up, tally
    from harness.supervision.run_state import read_state

    done = clean_up(CleanupScope("rebalance-lab cleanup", detached=True), lambda m: console.print(m, markup=False))
    for problem in done.problems:
        err_console.print(escape(f"cleanup: {problem}"))
    state_file = lab_home() / CLUSTER_STATE
    if done.cleaned and state_file.exists():  # the standalone cluster went with the rest
        state_file.unlink()
    for run_dir in dict.fromkeys(c.run_dir for c in done.cleaned if c.run_dir):
        console.print(f"run {run_dir}: {(read_state(run_dir) or {}).get('state', 'no run.json')}", markup=False)
    console.print(f"cleanup: {tally(done.cleaned, names=False)} left behind, stopped or removed.", markup=False)
    if done.problems:  # something could not be stopped or removed: said above, and not a pass
        sys.exit(EXIT_RUN_ERROR)


# ----------------------------------------------------------------------------- compose


@click.group()
def compose() -> None:
    """The cluster as a Docker Compose project (the compose backend)."""


@compose.command("render")
@click.argument("scenario_file", type=SafePath(path_type=Path))
@click.option(
    "-o",
    "--output",
    "output",
    type=SafePath(path_type=Path),
    required=True,
    help="Directory to write the project into: created, or an empty one. A directory that holds "
    "anything, an earlier render included, is refused (remove it first): a project may still "
    "run from it.",
)
def compose_render(scenario_file: Path, output: Path) -> None:
    """Write the scenario's cluster as a complete Compose project: compose.yaml, every service's
    configuration and PORTS.md. Start it with `docker compose up -d --wait` in that directory
    (the images come from `rebalance-lab setup --compose`)."""
    from harness.cluster.compose_topology import render
    from harness.components.containers.images import image_set
    from harness.run.loop import cluster_spec
    from harness.scenario import load_scenario

    try:
        scenario = load_scenario(scenario_file)
        images = image_set(scenario.cluster.kafka)
        make_dirs(output, "--output")
        if any(output.iterdir()):  # never mix two projects' files, nor pull a running one's from under it
            raise SetupError(f"--output {output}: not empty; give a new or empty directory")
        topology = render(
            cluster_spec(scenario), output, images, f"rl-{scenario.name}".lower(), owner=f"render:{output.resolve()}"
        )
    except LabError as e:  # it starts nothing, so nothing can break: what stops it is the input or the setup
        error(str(e), EXIT_BAD_INPUT if e.exit_code == EXIT_RUN_ERROR else e.exit_code)
    except OSError as e:  # made, but not writable after all (a read-only mount)
        error(f"--output {output}: {e.strerror or e}")
    console.print(f"wrote {topology.compose_file} (start it there with `docker compose up -d --wait`)", markup=False)
    console.print((output / "PORTS.md").read_text(), markup=False)


# Defined in analysis/ with the Spark job; importing it loads neither Spark nor matplotlib.
