"""What every command shares: the consoles, the way a command fails, the number types."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from runtime.errors import (
    EXIT_BAD_INPUT,
    LabError,
)
from runtime.output_dirs import SafePath
from runtime.secrets import redact_text

# Wide when not a terminal (CI logs): the rebalance table does not fit 80 columns.
# log_path=False: a progress line names no source line (common.py:20) — noise to whoever reads a run
console = Console(highlight=False, log_path=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)  # error lines stay greppable

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
