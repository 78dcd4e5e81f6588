"""Scenario files: what cluster, which group, which faults when, which checks.

Validated with pydantic before anything starts. Every problem is reported as
``FILE: key.path: reason`` (a ScenarioError, exit code 2), all of them at once.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness import versions
from harness.errors import ScenarioError
from oracle import CHECK_NAMES
from oracle.verdict import resolve_checks

Scalar = Union[str, int, float, bool]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Topic(_Strict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,200}$")]
    partitions: Annotated[int, Field(ge=1, le=1000)]
    replication_factor: Annotated[int | None, Field(ge=1)] = None
    config: dict[str, Scalar] = {}


class Cluster(_Strict):
    backend: Literal["local"] = "local"
    kafka: Literal[tuple(versions.KAFKA_RELEASES)] = "3.9"  # type: ignore[valid-type]
    brokers: Annotated[int, Field(ge=1, le=9)] = 3
    zookeeper_nodes: Literal[1, 3] = 1
    broker_config: dict[str, Scalar] = {}

    @property
    def zookeeper_mode(self) -> bool:
        return self.kafka in versions.KAFKA_LINES_WITH_ZOOKEEPER


class Producer(_Strict):
    topic: str | None = None  # default: the first topic
    rate: Annotated[float, Field(gt=0, le=50_000, description="records per second")] = 200
    value_bytes: Annotated[int, Field(ge=1, le=1_000_000)] = 100


PROTOCOL_ASSIGNORS = {
    "classic-eager": ("range", "roundrobin"),
    "classic-static": ("range", "roundrobin", "cooperative-sticky"),
    "classic-cooperative": ("cooperative-sticky",),
}


class Workload(_Strict):
    group: Annotated[str, Field(min_length=1)] = "rebalance-lab"
    protocol: Literal[tuple(PROTOCOL_ASSIGNORS)] = "classic-eager"  # type: ignore[valid-type]
    assignor: Literal["range", "roundrobin", "cooperative-sticky"] | None = None
    consumers: Annotated[int, Field(ge=1, le=64)] = 3
    topics: list[str] | None = None  # default: every topic of the scenario
    commit: Literal["sync", "auto", "before-processing"] = "sync"
    auto_commit_interval_ms: Annotated[int, Field(ge=100)] = 1000
    processing_ms: Annotated[float, Field(ge=0, le=60_000, description="per record")] = 0
    session_timeout_ms: Annotated[int, Field(ge=1000, le=300_000)] = 6000
    heartbeat_interval_ms: Annotated[int, Field(ge=100)] = 1000
    max_poll_interval_ms: Annotated[int, Field(ge=1000)] = 300_000
    producer: Producer = Producer()

    @model_validator(mode="after")
    def _coherent(self):
        allowed = PROTOCOL_ASSIGNORS[self.protocol]
        if self.assignor is not None and self.assignor not in allowed:
            raise ValueError(f"assignor: {self.assignor!r} does not go with protocol {self.protocol!r} "
                             f"(allowed: {', '.join(allowed)})")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms: must be below session_timeout_ms")
        return self

    @property
    def effective_assignor(self) -> str:
        return self.assignor or PROTOCOL_ASSIGNORS[self.protocol][0]

    def member_names(self) -> list[str]:
        return [f"consumer-{i}" for i in range(1, self.consumers + 1)]


class _FaultBase(_Strict):
    target: str
    at_s: Annotated[float, Field(ge=0)]


class PauseFault(_FaultBase):
    """SIGSTOP, then SIGCONT after ``duration_s``: a stop-the-world GC pause."""

    kind: Literal["pause"]
    duration_s: Annotated[float, Field(gt=0)]


class CrashFault(_FaultBase):
    """SIGKILL (no LeaveGroup, no controlled shutdown) or SIGTERM (clean close)."""

    kind: Literal["crash"]
    signal: Literal["SIGKILL", "SIGTERM"] = "SIGKILL"
    restart_after_s: Annotated[float | None, Field(gt=0)] = None


Fault = Annotated[Union[PauseFault, CrashFault], Field(discriminator="kind")]


class Recovery(_Strict):
    timeout_s: Annotated[float, Field(gt=0)] = 120
    stable_for_s: Annotated[float, Field(ge=0)] = 3


class Scenario(_Strict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,80}$")]
    description: str = ""
    seed: int = 0
    duration_s: Annotated[float, Field(gt=0, le=86_400)]
    cluster: Cluster = Cluster()
    topics: Annotated[list[Topic], Field(min_length=1)]
    workload: Workload = Workload()
    faults: list[Fault] = []
    checks: dict[str, dict | None] | None = None  # None: every check with its defaults
    recovery: Recovery = Recovery()

    @model_validator(mode="after")
    def _references(self):
        problems = []
        topic_names = [t.name for t in self.topics]
        for i, name in enumerate(self.workload.topics or []):
            if name not in topic_names:
                problems.append(f"workload.topics.{i}: topic {name!r} is not declared under topics")
        if self.workload.producer.topic and self.workload.producer.topic not in topic_names:
            problems.append(f"workload.producer.topic: topic {self.workload.producer.topic!r} is not declared under topics")
        targets = self.fault_targets()
        for i, f in enumerate(self.faults):
            if f.target not in targets:
                problems.append(f"faults.{i}.target: no process {f.target!r} in this scenario "
                                f"(targets: {', '.join(targets)})")
            if f.at_s >= self.duration_s:
                problems.append(f"faults.{i}.at_s: {f.at_s}s is not within duration_s ({self.duration_s}s)")
        for name, options in (self.checks or {}).items():
            if name not in CHECK_NAMES:
                problems.append(f"checks.{name}: unknown check (known: {', '.join(CHECK_NAMES)})")
                continue
            try:
                resolve_checks({name: options})
            except ValueError as e:
                problems.append(f"checks.{name}: {e}")
        for t in self.topics:
            if (t.replication_factor or 0) > self.cluster.brokers:
                problems.append(f"topics.{t.name}.replication_factor: {t.replication_factor} exceeds the "
                                f"{self.cluster.brokers} brokers")
        if problems:
            raise ValueError("\n".join(problems))  # one per line: a reason may itself contain "; "
        return self

    def fault_targets(self) -> list[str]:
        targets = self.workload.member_names() + [f"broker-{i}" for i in range(1, self.cluster.brokers + 1)]
        if self.cluster.zookeeper_mode:
            targets += [f"zookeeper-{i}" for i in range(1, self.cluster.zookeeper_nodes + 1)]
        else:
            targets.append("controller-1")
        return targets + ["producer"]

    @property
    def consumed_topics(self) -> list[str]:
        return self.workload.topics or [t.name for t in self.topics]

    @property
    def produced_topic(self) -> str:
        return self.workload.producer.topic or self.topics[0].name

    def broker_config(self) -> dict:
        """Broker settings the scenario needs, under what it set explicitly."""
        implied = {}
        # The broker refuses session timeouts below group.min.session.timeout.ms (6 s by default).
        if self.workload.session_timeout_ms < 6000:
            implied["group.min.session.timeout.ms"] = self.workload.session_timeout_ms
        return {**implied, **self.cluster.broker_config}


# Model validators raise "key.path: reason" lines (one per problem); the key path is
# relative to the model that raised, which pydantic gives as the error's location.
_PATHED = re.compile(r"^(?P<key>[\w.\-]+): (?P<reason>.*)$")
_FAULT_KINDS = ("pause", "crash")


def _loc(loc: tuple) -> str:
    parts = [str(p) for p in loc if not str(p).startswith("function-after")]
    # A tagged union puts the tag in the location (faults.0.pause.duration_s): drop it.
    parts = [p for i, p in enumerate(parts) if not (i == 2 and parts[0] == "faults" and p in _FAULT_KINDS)]
    return ".".join(parts)


def _problems(err: ValidationError) -> list[tuple[str, str]]:
    out = []
    for e in err.errors():
        loc = _loc(e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "union_tag_invalid":
            loc, msg = f"{loc}.kind", f"unknown fault kind {e.get('input', {}).get('kind')!r} (known: {', '.join(_FAULT_KINDS)})"
        elif e["type"] == "union_tag_not_found":
            loc, msg = f"{loc}.kind", f"missing (known kinds: {', '.join(_FAULT_KINDS)})"
        if e["type"] == "value_error":
            for part in msg.split("\n"):
                m = _PATHED.match(part)
                key = m["key"] if m else ""
                out.append((".".join(filter(None, (loc, key))) or "(scenario)", m["reason"] if m else part))
        else:
            out.append((loc or "(scenario)", msg))
    return out


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ScenarioError(path, [("(file)", e.strerror or str(e))]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(yaml)"
        raise ScenarioError(path, [(where, f"not valid YAML: {getattr(e, 'problem', None) or e}")]) from None
    if not isinstance(data, dict):
        raise ScenarioError(path, [("(top level)", "a scenario is a mapping of keys such as name, duration_s, topics")])
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(path, _problems(e)) from None
