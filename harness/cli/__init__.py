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
from harness.cli.common import error
from oracle.extensions import ExtensionError
from runtime.errors import EXIT_BAD_INPUT


class _Lab(click.Group):
    def invoke(self, ctx: click.Context):
        # Plugins load the first time a command reads a registry (fault kinds, checks, drivers),
        # wherever that is: one that cannot be used is the installation's bad input, said once here.
        try:
            return super().invoke(ctx)
        except ExtensionError as e:
            error(str(e), EXIT_BAD_INPUT)


@click.group(cls=_Lab, context_settings={"help_option_names": ["-h", "--help"]})
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
