"""The `rebalance-lab` command line: one module per family of commands.

- ``setup``: the lab's components, what it left behind (``setup``, ``cleanup``, ``compose render``);
- ``image``: the harness as a container image (``image build``);
- ``cluster``: a standalone cluster that outlives one command;
- ``runs``: one scenario (``run``, ``schedule``, ``check``);
- ``campaigns``: many runs (``compare``, ``suite``, ``capacity``, ``shrink``);
- ``analysis.cli``: ``analyze``, which reads histories only.
"""

from __future__ import annotations

import click

from analysis.cli import analyze
from harness.cli import campaigns, cluster, image, runs, setup
from harness.cli.common import error, json_option, output_options, reset_output
from oracle.extensions import ExtensionError
from runtime.errors import EXIT_BAD_INPUT, EXIT_CODES_TEXT


class _Lab(click.Group):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        reset_output()  # -q/-v/--json of this invocation only (CliRunner invokes many in one process)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        # Plugins load the first time a command reads a registry (fault kinds, checks, drivers),
        # wherever that is: one that cannot be used is the installation's bad input, said once here.
        try:
            return super().invoke(ctx)
        except ExtensionError as e:
            error(str(e), EXIT_BAD_INPUT)


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from harness.components.inventory import version_lines

        for line in version_lines():
            click.echo(line)
        ctx.exit(0)


@click.group(cls=_Lab, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES_TEXT)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="The harness's version and its pinned components', one per line.",
)
def main() -> None:
    """Chaos testing of Kafka consumer-group rebalancing against real ZooKeeper and Kafka."""


for command in (
    setup.setup,
    cluster.cluster,
    runs.run,
    campaigns.compare_command,
    campaigns.suite_command,
    campaigns.capacity_command,
    campaigns.shrink_command,
    campaigns.bugs_command,
    runs.schedule,
    runs.check,
    setup.cleanup,
    setup.compose,
    image.image,
    analyze,
):
    main.add_command(command)
    command.params.extend(output_options())  # also after the command's name: `rebalance-lab suite -q …`
for command in (runs.run, runs.check, runs.schedule, campaigns.suite_command, campaigns.compare_command):
    command.params.append(json_option())
main.params.extend(output_options())


def _every_command(group: click.Group):
    for command in group.commands.values():
        yield command
        if isinstance(command, click.Group):
            yield from _every_command(command)


for command in _every_command(main):  # the one contract, at the foot of every command's --help
    command.epilog = EXIT_CODES_TEXT
