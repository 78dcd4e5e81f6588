"""A scenario's variants: the same scenario under another protocol generation, Kafka release,
client version, seed or cluster backend — what `compare`, `suite` and the pytest plugin run.

A variant changes only what it names and what that forces (a protocol's default
assignor and driver, the Kafka line a generation exists on, the settings section of
the driver family that runs its members); the result is plain scenario data,
validated like any scenario before anything starts.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator

from harness.components import versions
from harness.scenario.workload import FAMILIES, family_of
from oracle import CHECK_NAMES
from oracle.checks import not_applicable
from oracle.protocols import DRIVER_NAMES, GENERATIONS


def listed_twice(model, axes: tuple[str, ...]) -> None:
    """A matrix's or a sweep's axes each list a value once: two variants (or points) of one value
    would share a run directory and a row. Raises, for pydantic, naming every repeat."""
    problems = []
    for axis in axes:
        seen: set = set()
        repeated = dict.fromkeys(v for v in getattr(model, axis) or [] if v in seen or seen.add(v))
        problems += [f"{axis}: {f'{v:g}' if isinstance(v, float) else v} is listed twice" for v in repeated]
    if problems:
        raise ValueError("\n".join(problems))


def kafka_problem(value: str) -> str | None:
    """Why `value` cannot be a Kafka axis, as cluster.kafka refuses it (the release catalogue,
    harness.components.versions: there is no second list of releases), or None."""
    try:
        versions.kafka_release(value)
    except ValueError as e:
        return str(e)
    return None


def _release(value: str) -> str:
    if why := kafka_problem(value):
        raise ValueError(why)
    return value  # as written (exact or a line): ids and run names keep it


# An axis value that sets cluster.kafka (a suite's matrix and excludes)
KafkaRelease = Annotated[str, AfterValidator(_release)]


class Impossible(ValueError):
    """This combination cannot run (a generation on a Kafka line it does not exist on)."""


@dataclass(frozen=True)
class Axes:
    """What a variant sets; None keeps the scenario's own."""

    protocol: str | None = None
    kafka: str | None = None
    client: str | None = None  # workload.client: a requirement such as "confluent-kafka==2.3.0"
    seed: int | None = None
    backend: str | None = None

    def label(self) -> str:
        """'classic-eager, kafka 3.9.2, confluent-kafka==2.3.0, seed 2' — only the axes that are set."""
        parts = [
            self.protocol,
            self.kafka and f"kafka {self.kafka}",
            self.client,
            None if self.seed is None else f"seed {self.seed}",
            self.backend,
        ]
        return ", ".join(p for p in parts if p)

    def run_name(self, scenario: str) -> str:
        """The variant's scenario name (names its run directory): the scenario's, plus the axes
        the directory name does not carry already (the seed is in it). A client requirement
        keeps only the characters a name may have (`confluent-kafka2.3.0`)."""
        client = self.client and re.sub(r"[^A-Za-z0-9._-]+", "", self.client)
        return "-".join(
            filter(None, (scenario, self.protocol, self.kafka and f"kafka{self.kafka}", client, self.backend))
        )


def variant(base: dict, axes: Axes) -> tuple[dict, dict[str, str]]:
    """The scenario data with the axes applied, and the checks the protocol has no premise
    for (name -> why: the oracle's policy, reported as not applicable rather than failed)."""
    data = copy.deepcopy(base)
    workload, cluster = data.setdefault("workload", {}), data.setdefault("cluster", {})
    skipped: dict[str, str] = {}
    if axes.protocol:
        generation = GENERATIONS[axes.protocol]
        workload["protocol"] = axes.protocol
        if workload.get("assignor") not in generation.assignors:
            workload.pop("assignor", None)  # the protocol's default
        driver = workload.get("driver", next(iter(generation.drivers)))
        if isinstance(driver, str) and driver in DRIVER_NAMES and driver not in generation.drivers:
            workload.pop("driver")  # a driver the generation lacks: its default (a bad one is validation's to name)
            driver = next(iter(generation.drivers))
        family = family_of(generation, driver) if isinstance(driver, str) else None
        if family:  # another driver family's section would be refused: its members are not the variant's
            for section in FAMILIES.keys() - {family.section}:
                workload.pop(section, None)
        if generation.needs and _cluster_problem(cluster, generation.needs):
            cluster["kafka"] = versions.release_meeting(generation.needs)  # the default release that gives it
            cluster.pop("metadata", None)
        skipped = not_applicable(axes.protocol)
        checks = data.get("checks") or {name: {} for name in CHECK_NAMES}
        data["checks"] = {k: v for k, v in checks.items() if k not in skipped}
    if axes.kafka:
        # The protocol that runs (the axis's, else the scenario's) may need what this release lacks.
        protocol = workload.get("protocol")
        generation = GENERATIONS.get(protocol) if isinstance(protocol, str) else None
        cluster["kafka"] = axes.kafka
        release = versions.kafka_release_or_none(axes.kafka)
        if generation and generation.needs and release:
            # 3.7/3.8's consumer protocol early access is KRaft only: such a release runs it in KRaft.
            if (
                "metadata" not in cluster
                and not release.need_problem(generation.needs, "kraft")
                and release.need_problem(generation.needs, release.default_metadata)
            ):
                cluster["metadata"] = "kraft"
            problem = _cluster_problem(cluster, generation.needs)
            if problem:
                raise Impossible(f"{protocol} on Kafka {axes.kafka}: {generation.kafka_why}; {problem}")
    release = versions.kafka_release_or_none(str(cluster.get("kafka", versions.DEFAULT_KAFKA)))
    if release and cluster.get("metadata", release.default_metadata) != "zookeeper":
        cluster.pop("zookeeper_nodes", None)  # a KRaft cluster has no ZooKeeper ensemble to size
    if axes.client is not None:  # an empty one too: validation names it
        # Which distribution a driver takes is the driver's to say: validation names a mismatch.
        workload["client"] = axes.client
    if axes.seed is not None:
        data["seed"] = axes.seed
    if axes.backend:
        cluster["backend"] = axes.backend
    return data, skipped


def _cluster_problem(cluster: dict, need: str) -> str | None:
    """Why the scenario's cluster section (kafka, metadata; defaults if absent) cannot give `need`."""
    release = versions.kafka_release_or_none(str(cluster.get("kafka", versions.DEFAULT_KAFKA)))
    if release is None:
        return None  # a bad release is validation's to name
    metadata = cluster.get("metadata", release.default_metadata)
    return release.need_problem(need, metadata if metadata in ("zookeeper", "kraft") else release.default_metadata)
