"""`rebalance-lab setup --compose`: the engine, Compose v2 and the images, idempotently."""

from __future__ import annotations

from collections.abc import Callable

from harness.components.containers import engine, images


def setup_compose(report: Callable[[str], None], kafka_lines: list[str]) -> bool:
    """Returns True if anything was installed or built."""
    changed = engine.install_debs(report)
    report(f"Compose v2: {engine.compose_binary()}")
    running = engine.ensure_engine(report)
    missing = images.missing(running.docker_host, kafka_lines)
    images.ensure_images(kafka_lines, report, running.docker_host)
    if not missing:
        report("images: already built")
    return changed or bool(missing)
