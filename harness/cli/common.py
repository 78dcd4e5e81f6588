"""What every command shares: the consoles, the way a command fails, the number types."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from runtime.console import LabConsole
from runtime.errors import (
    EXIT_BAD_INPUT,
    LabError,
)
from runtime.output_dirs import SafePath
from runtime.secrets import redact_text

# ----------------------------------------------------------------------------- output
# How much a command says, decided here and nowhere else: -q (QUIET) the result lines and errors only,
# -v (VERBOSE) also each process started and stopped; --json: stdout carries one JSON document, the
# rest goes to stderr. The top-level group and every command set it (`output_options`).
QUIET, NORMAL, VERBOSE = -1, 0, 1


@dataclass
class Output:
    level: int = NORMAL
    json: bool = False
    json_written: bool = False


output = Output()


def reset_output() -> None:
    """Every invocation starts at the default level, its console at the terminal's width (the group
    calls it first)."""
    output.level, output.json, output.json_written = NORMAL, False, False
    console.to_stderr = False
    console.fit()


def quiet() -> bool:
    return output.level <= QUIET


def verbose() -> bool:
    return output.level >= VERBOSE


def human() -> bool:
    """The tables and lines a person reads as the result: not under --json (its document says it all)."""
    return not output.json


def no_progress_bar() -> bool:
    """rich's Progress(disable=…): no bar under -q, nor under --json."""
    return quiet() or output.json


console = LabConsole(highlight=False)
console.fit()
err_console = Console(stderr=True, highlight=False, soft_wrap=True)  # error lines stay greppable


def say(message: str) -> None:
    """A progress line (a phase, a fault, a variant's start), not the result: silent under -q; on stderr
    under --json."""
    if not quiet():
        console.print(message, markup=False, highlight=False, soft_wrap=True)


def detail(message: str) -> None:
    """A line only -v shows (each process started, each one that exited)."""
    if verbose():
        console.print(message, markup=False, highlight=False, soft_wrap=True)


def emit_json(document) -> None:
    """stdout's one JSON document under --json (a pydantic model of harness/reports/json_output.py)."""
    if output.json and not output.json_written:
        output.json_written = True
        click.echo(document.dump())


def _set_level(level: int):
    def callback(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        if value:
            output.level = level

    return callback


def output_options() -> list[click.Option]:
    """-q and -v: on the group (`rebalance-lab -q suite …`) and on every command (`… suite -q …`)."""
    return [
        click.Option(
            ["-q", "--quiet"],
            is_flag=True,
            expose_value=False,
            is_eager=True,
            callback=_set_level(QUIET),
            help="Only the result lines and errors.",
        ),
        click.Option(
            ["-v", "--verbose"],
            is_flag=True,
            expose_value=False,
            is_eager=True,
            callback=_set_level(VERBOSE),
            help="Also each process started and each that exited.",
        ),
    ]


def json_option() -> click.Option:
    def callback(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        if value:
            output.json = True
            console.to_stderr = True  # stdout is the document's

    return click.Option(
        ["--json"],
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=callback,
        help="Print one JSON document on stdout (docs/reference/json.md); everything else goes to stderr.",
    )


CLUSTER_STATE = "cluster.json"


class FiniteFloatRange(click.FloatRange):
    """click.FloatRange, refusing nan and ±inf: nan passes every bound ("nan < 1" is false) and
    inf is no budget."""

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv


class KafkaReleaseType(click.ParamType):
    """An Apache Kafka release, exact ("3.7.2") or a line ("3.7"), in the supported range
    (harness.components.versions.kafka_release); the value is the exact release it names."""

    name = "RELEASE"

    def convert(self, value, param, ctx):
        from harness.components import versions

        try:
            return versions.kafka_release(value).version
        except ValueError as e:
            self.fail(str(e), param, ctx)


def fail(e: LabError) -> None:
    error(str(e), e.exit_code)


def error(message: str, exit_code: int = EXIT_BAD_INPUT) -> None:
    # Messages quote the user's files (keys, values, paths): text, never rich markup ("[/bold]").
    err_console.print("[red]error:[/] " + escape(redact_text(message)))  # never a secret value (runtime.secrets)
    if output.json:  # a script reading stdout gets its one document, which says why
        from harness.reports.json_output import ErrorOutput

        emit_json(ErrorOutput(exit_code=exit_code, error=redact_text(message)))
    sys.exit(exit_code)


client_config_option = click.option(
    "--client-config",
    type=SafePath(path_type=Path),
    default=None,
    metavar="FILE",
    help="Client settings for an external cluster, Java properties format as Kafka's tools take them "
    "(key=value, # comments; ${NAME} read from the environment), over the scenario's cluster.client_config. "
    "Secret values are never written (docs/inputs.md).",
)


fresh_clusters_option = click.option(
    "--fresh-clusters",
    is_flag=True,
    help="A cluster of its own for every run (default: consecutive runs whose cluster spec matches share one).",
)
