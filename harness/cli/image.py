"""`image build`: the harness and its components as a container image (docs/ci.md)."""

from __future__ import annotations

import sys

import click

from harness.cli.common import KafkaReleaseType, console, fail
from runtime.errors import EXIT_INTERRUPTED, LabError


@click.group()
def image() -> None:
    """The harness as a container image, to run a suite in (docs/ci.md)."""


@image.command("build")
@click.option(
    "--kafka",
    "lines",
    multiple=True,
    type=KafkaReleaseType(),
    help="Kafka release(s) whose jars and tools the image carries, as installed by `setup` "
    "(repeatable; default: the default 3.x and 4.x releases, as setup's).",
)
def image_build(lines: tuple[str, ...]) -> None:
    """Build rebalance-lab/harness:<version>: Debian with Java and Python (rebalance-lab/jre, from
    `setup --compose`), the harness installed with its pinned dependencies (wheels built here),
    and a lab home holding these Kafka releases, Jolokia's agent and Toxiproxy. Idempotent: built
    again only when an input changed. Run it with the host's network, e.g.
    `docker run --rm --network host -v "$PWD:/work" rebalance-lab/harness:<version> suite FILE`."""
    from harness.components.containers.harness_image import build_harness_image
    from harness.components.install import default_kafka_releases
    from harness.supervision.stop_signals import like_ctrl_c

    try:
        with like_ctrl_c(), console.status("building the image …") as status:

            def report(msg: str) -> None:
                status.update(msg)
                console.print(msg, markup=False)

            result = build_harness_image(list(lines) or default_kafka_releases(), report)
    except LabError as e:
        fail(e)
    except KeyboardInterrupt:
        console.print("image build: interrupted; no image was tagged.", markup=False)
        sys.exit(EXIT_INTERRUPTED)
    size = result["size_bytes"] / 1e6
    console.print(
        f"image {result['tag']} ({result['digest_tag']}, {size:.0f} MB, Kafka {', '.join(result['kafka'])}): "
        + ("built" if result["built"] else "already built")
        + f" in {result['seconds']:.0f}s",
        markup=False,
    )
