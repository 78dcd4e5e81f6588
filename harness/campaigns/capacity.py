"""`rebalance-lab capacity SWEEP.yaml`: how rebalance cost grows with group size, partitions, produce
rate and protocol — each point a load run, then the capacity table and its plots (analysis/capacity.py).

    name: small
    base: ../scenarios/smoke.yaml          # cluster, topic, workload settings (its faults and load are dropped)
    sweep:
      members: [4, 16, 64]                 # group size: the profile below ramps to it
      protocol: [classic-eager, classic-cooperative, consumer]
      partitions: [64]                     # of the base's first topic; or partitions_per_member: [2]
      rate: [400]                          # producer records/s
    profile:                               # each point's load profile, by its group size N:
      ramp_s: 20                           # 1 -> N one member at a time,
      hold_s: 10                           # N for a while,
      restart_down_s: 2                    # (optional) mid-hold, one member restarted: down this long
      churn: 2                             # then churn: `churn` members leave at once, come back one by one,
      churn_period_s: 10                   # every churn_period_s,
      churn_s: 30                          # for churn_s.
    members_per_host: 50                   # (optional) for points above MAX_MEMBER_PROCESSES members

Partitions scale with the group when the sweep says `partitions_per_member` instead of
`partitions`: a point of N members gets N x k partitions (at most MAX_TOPIC_PARTITIONS).
A point with more members than may each run in a process of their own (MAX_MEMBER_PROCESSES)
is hosted: `workload.members_per_host` (the sweep's `members_per_host`, else the fewest per
host that keep the processes within that cap) and `workload.lanes: on-demand` (no point names
a member, so they all ride crowd lanes). The brokers' bounds on the group's size
(cluster.broker_config `group.max.size`, `group.consumer.max.size`) are raised to what the
point's group needs where the base sets them lower: its size, plus every member incarnation
its profile stops and starts again (one at least for static members;
harness.scenario.cluster.group_size_needed).

Every point is built and validated before anything runs (exit 2 naming the point and the key).
Points run in order into runs/capacity-<name>/ (consecutive points on matching clusters share
one); capacity.json says which ran. Run again, a sweep resumes: a point whose run of the same
scenario (Point.fingerprint) was judged whole — a verdict, not INCOMPLETE — is not run again
(--fresh runs them all).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from faults.base import MAX_MEMBER_PROCESSES, MAX_MEMBERS, MAX_MEMBERS_PER_HOST, Strict
from harness.cluster.shared import ClusterPool, runs_in_a_row
from harness.paths import make_dirs
from harness.reports.run import verdict_figures
from harness.run.loop import Run
from harness.scenario import Scenario, Seed, read_scenario_data, validation_problems
from harness.scenario.cluster import GROUP_SIZE_LIMITS, MAX_TOPIC_PARTITIONS, group_size_needed
from harness.scenario.kinds import FILE_KINDS, FileKind
from harness.scenario.variants import Axes, Impossible, listed_twice, variant
from harness.supervision.run_state import write_json_atomically
from oracle.protocols import GENERATIONS, PROTOCOLS
from runtime.errors import EXIT_FOR_VERDICT, EXIT_INTERRUPTED, EXIT_RUN_ERROR, ScenarioError, SetupError
from workloads.load.profile import LoadProfile

CAPACITY_JSON = "capacity.json"
Protocol = Literal[tuple(PROTOCOLS)]  # type: ignore[valid-type]
Seconds = Annotated[float, Field(gt=0, le=3600)]


class SweepAxes(Strict):
    members: Annotated[list[Annotated[int, Field(ge=1, le=MAX_MEMBERS)]], Field(min_length=1, max_length=20)]
    protocol: Annotated[list[Protocol], Field(min_length=1, max_length=len(PROTOCOLS))]
    partitions: (
        Annotated[list[Annotated[int, Field(ge=1, le=MAX_TOPIC_PARTITIONS)]], Field(min_length=1, max_length=20)] | None
    ) = None
    # partitions scaled with the group: a point of N members gets N x k (instead of `partitions`)
    partitions_per_member: (
        Annotated[list[Annotated[int, Field(ge=1, le=MAX_TOPIC_PARTITIONS)]], Field(min_length=1, max_length=20)] | None
    ) = None
    rate: Annotated[list[Annotated[float, Field(gt=0, le=50_000)]], Field(min_length=1, max_length=20)] | None = None

    @model_validator(mode="after")
    def _each_value_once(self):
        listed_twice(self, ("members", "protocol", "partitions", "partitions_per_member", "rate"))
        if self.partitions is not None and self.partitions_per_member is not None:
            raise ValueError("partitions_per_member: give partitions or partitions_per_member, not both")
        if self.partitions_per_member:
            most = max(self.members) * max(self.partitions_per_member)
            if most > MAX_TOPIC_PARTITIONS:
                raise ValueError(
                    f"partitions_per_member: {max(self.members)} members x {max(self.partitions_per_member)} "
                    f"is {most} partitions; a topic has at most {MAX_TOPIC_PARTITIONS}"
                )
        return self

    def partition_counts(self, members: int, base: int) -> list[int]:
        """The partition counts of the points of ``members`` members (``base``: the base scenario's)."""
        if self.partitions_per_member:
            return [members * k for k in self.partitions_per_member]
        return self.partitions or [base]


class PointProfile(Strict):
    ramp_s: Seconds = 20
    hold_s: Annotated[float, Field(ge=0, le=3600)] = 10
    # A single member's restart in the middle of the hold: the newest member leaves cleanly and
    # its slot's next incarnation joins this long after (0: none). At least 2 s: Locust reads the
    # profile's count once a second, so a shorter dip could pass between two readings.
    restart_down_s: Annotated[float, Field(ge=0, le=600)] = 0
    churn: Annotated[int, Field(ge=0, le=MAX_MEMBERS)] = 1
    churn_period_s: Seconds = 10
    churn_s: Annotated[float, Field(ge=0, le=3600)] = 20

    @model_validator(mode="after")
    def _restart_fits(self):
        if self.restart_down_s and self.restart_down_s < 2:
            raise ValueError(
                f"restart_down_s: {self.restart_down_s:g}s; at least 2 (Locust reads the count once a second), or 0"
            )
        if self.restart_down_s and not self.hold_s:
            raise ValueError("restart_down_s: the restart is in the hold: hold_s must be above 0")
        return self

    def replaced(self, members: int) -> int:
        """How many member incarnations of a group of ``members`` this profile stops and starts
        again, in all: the restart's one and the churn's, each of its periods. What the brokers'
        bounds must leave room for (harness.scenario.cluster.group_size_needed): an incarnation
        stopped while the group prepares a rebalance stays counted until the join phase ends, and
        at 1,000 members one phase outlasted the churn's periods."""
        restart = 1 if self.hold_s and self.restart_down_s and members > 1 else 0
        churn = min(self.churn, members) * math.ceil(self.churn_s / self.churn_period_s) if self.churn else 0
        return restart + churn

    def stages(self, members: int) -> list[dict]:
        stages = [{"kind": "ramp", "to": members, "over_s": self.ramp_s}]
        if self.hold_s and self.restart_down_s and members > 1:  # half the hold, the restart, the other half
            stages += [
                {"kind": "hold", "for_s": self.hold_s / 2},
                {"kind": "spike", "to": members - 1, "for_s": self.restart_down_s},
                {"kind": "hold", "for_s": self.hold_s / 2},
            ]
        elif self.hold_s:
            stages.append({"kind": "hold", "for_s": self.hold_s})
        if self.churn and self.churn_s:
            stages.append(
                {
                    "kind": "sawtooth",
                    "low": max(members - self.churn, 0),
                    "high": members,
                    "period_s": self.churn_period_s,
                    "for_s": self.churn_s,
                }
            )
        return stages


class SweepSpec(Strict):
    FILE_KIND: ClassVar[FileKind] = FILE_KINDS["sweep"]  # the keys that tell a sweep file from others

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,60}$")]
    description: str = ""
    base: str
    sweep: SweepAxes
    profile: PointProfile = PointProfile()
    # Members per member host for the points above MAX_MEMBER_PROCESSES members (absent: the fewest
    # that keep them within it); smaller points run a process per member.
    members_per_host: Annotated[int, Field(ge=2, le=MAX_MEMBERS_PER_HOST)] | None = None
    seed: Seed = 1

    def hosting(self, members: int) -> dict:
        """The workload keys of a point of ``members`` members: none for a process each, else
        member hosts and shared lanes."""
        if members <= MAX_MEMBER_PROCESSES:
            return {}
        per_host = self.members_per_host or math.ceil(members / MAX_MEMBER_PROCESSES)
        return {"members_per_host": per_host, "lanes": "on-demand"}


def point_id(protocol: str, members: int, partitions: int, rate: float) -> str:
    """A point's name within its sweep (its scenario and run are named after it)."""
    return f"{protocol}-m{members}-p{partitions}-r{rate:g}"


@dataclass
class Point:
    protocol: str
    members: int
    partitions: int
    rate: float
    scenario: Scenario
    data: dict

    @property
    def id(self) -> str:
        return point_id(self.protocol, self.members, self.partitions, self.rate)

    def params(self) -> dict:
        return {"protocol": self.protocol, "members": self.members, "partitions": self.partitions, "rate": self.rate}

    @property
    def fingerprint(self) -> str:
        """The point's whole scenario, hashed: a resumed sweep reuses a run only of this scenario
        (not one from before its base, profile or seed changed)."""
        return hashlib.sha256(json.dumps(self.data, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass
class Sweep:
    path: Path
    spec: SweepSpec
    points: list[Point]


def load_sweep(path: str | Path) -> Sweep:
    """The sweep and every point's scenario, validated; ScenarioError (exit 2) naming each problem."""
    path = Path(path)
    data = read_scenario_data(path, "sweep")
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(str(path), validation_problems(e)) from None
    base_path = (path.parent / spec.base).resolve()
    if not base_path.is_file():
        raise ScenarioError(str(path), [("base", f"{spec.base}: no such scenario file (relative to the sweep file)")])
    base = read_scenario_data(base_path)
    try:
        validated = Scenario.model_validate(base)  # the points change it, but it must be a scenario first
    except ValidationError as e:
        raise ScenarioError(str(base_path), validation_problems(e)) from None
    axes = spec.sweep
    problems: list[tuple[str, str]] = []
    points = []
    combos = [
        (protocol, members, partitions, rate)
        # smallest groups first: a sweep cut short has the table's small end whole, and points of one
        # size (one cluster: its bounds on the group's size are the point's) share a cluster
        for members, protocol, rate in itertools.product(
            sorted(axes.members), axes.protocol, axes.rate or [validated.workload.producer.rate]
        )
        for partitions in axes.partition_counts(members, validated.topics[0].partitions)
    ]
    for protocol, members, partitions, rate in combos:
        load = LoadProfile(stages=spec.profile.stages(members))
        point = dict(
            base,
            name=f"{spec.name}-{point_id(protocol, members, partitions, rate)}",
            seed=spec.seed,
            duration_s=load.length_s(1),
            faults=[],
            load=load.model_dump(),
        )
        point.pop("random_faults", None)
        point["topics"] = [dict(base["topics"][0], partitions=partitions), *base["topics"][1:]]
        workload = point["workload"] = dict(base.get("workload") or {}, consumers=1, **spec.hosting(members))
        point["cluster"] = _group_size_raised(
            base.get("cluster"),
            group_size_needed(members, GENERATIONS[protocol].static_membership, spec.profile.replaced(members)),
        )
        workload["producer"] = dict(workload.get("producer") or {}, rate=rate)
        if isinstance(
            workload.get("librdkafka"), dict
        ):  # a test hook names a member and a partition: points change both
            workload["librdkafka"] = {k: v for k, v in workload["librdkafka"].items() if k != "test_hooks"}
        try:
            point, _ = variant(point, Axes(protocol=protocol))
            scenario = Scenario.model_validate(point)
        except Impossible as e:
            problems.append((f"sweep.protocol.{protocol}", str(e)))
            continue
        except ValidationError as e:
            problems += [(f"point {point['name']}: {key}", reason) for key, reason in validation_problems(e)]
            continue
        points.append(Point(protocol, members, partitions, float(rate), scenario, point))
    if problems:
        raise ScenarioError(str(path), problems)
    return Sweep(path, spec, points)


def _group_size_raised(cluster: dict | None, needed: int) -> dict:
    """The base's cluster section with each bound on the group's size it sets (GROUP_SIZE_LIMITS)
    raised to what the point's group needs (group_size_needed) where it is below: a point measures
    a group of its size, not the bound (a value that is no number is left for validation to name)."""
    cluster = dict(cluster or {})
    config = dict(cluster.get("broker_config") or {})
    for key in GROUP_SIZE_LIMITS.values():
        value = config.get(key)
        whole = isinstance(value, (int, str)) and not isinstance(value, bool) and str(value).strip().isdigit()
        if whole and int(str(value).strip()) < needed:
            config[key] = needed
    if config:
        cluster["broker_config"] = config
    return cluster


def point_exit_code(point: dict) -> int:
    """A point's exit code as `rebalance-lab run` said it (capacity.json's outcome and verdict): an
    interrupted run 130, a run that broke or was not judged 3, else its verdict's (runtime.errors)."""
    if point.get("outcome") == "interrupted":
        return EXIT_INTERRUPTED
    if point.get("outcome") != "completed" or point.get("verdict") not in EXIT_FOR_VERDICT:
        return EXIT_RUN_ERROR
    return EXIT_FOR_VERDICT[point["verdict"]]


class CapacityRun:
    """Runs the sweep's points (resuming) into runs_dir/capacity-<name>/, then the table."""

    def __init__(
        self, sweep: Sweep, runs_dir: Path, fresh: bool = False, report: Callable[[str], None] = lambda _m: None
    ):
        self.sweep, self.report, self.fresh = sweep, report, fresh
        self.dir = runs_dir / f"capacity-{sweep.spec.name}"
        self.state: dict[str, dict] = {}
        if (self.dir / CAPACITY_JSON).exists() and not fresh:
            try:
                points = json.loads((self.dir / CAPACITY_JSON).read_text())["points"]
                if not all(
                    isinstance(p, dict)
                    and isinstance(p.get("id"), str)
                    and isinstance(p.get("run_dir"), (str, type(None)))
                    for p in points
                ):
                    raise ValueError("each point is {id, run_dir, …}")
                self.state = {p["id"]: p for p in points}
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise SetupError(
                    f"{self.dir / CAPACITY_JSON}: not a sweep's state ({type(e).__name__}: {e}); "
                    "--fresh runs every point again"
                ) from None

    def done(self, point: Point) -> bool:
        """A point whose run of this scenario was judged whole: its verdict is there and is not
        INCOMPLETE (an interrupted run that `check --write` judged later), as `analyze` takes it."""
        ran = self.state.get(point.id)
        if not (ran and ran.get("run_dir") and ran.get("scenario") == point.fingerprint):
            return False
        try:
            verdict = json.loads((Path(ran["run_dir"]) / "verdict.json").read_text())
        except (OSError, ValueError):
            return False
        return isinstance(verdict, dict) and verdict.get("status") not in (None, "incomplete")

    def run_points(self, on_point: Callable[[int, Point, bool], None] = lambda _i, _p, _s: None) -> list[dict]:
        make_dirs(self.dir / "scenarios")
        todo = [p for p in self.sweep.points if not self.done(p)]
        pool = (
            ClusterPool(
                self.dir / "clusters",
                f"capacity:{self.dir.resolve()}",
                self.report,
                lanes=max(p.scenario.lane_plan.lanes for p in todo),  # hosted points share lanes
            )
            if todo
            else None
        )
        try:
            with runs_in_a_row(pool):
                self._run(pool, on_point)
        finally:
            self._write()
        return [self.state[p.id] for p in self.sweep.points if p.id in self.state]

    def _run(self, pool: ClusterPool | None, on_point: Callable[[int, Point, bool], None]) -> None:
        for i, point in enumerate(self.sweep.points):
            skip = self.done(point)
            on_point(i, point, skip)
            if skip:
                continue
            path = self.dir / "scenarios" / f"{point.id}.yaml"
            path.write_text(yaml.safe_dump(point.data, sort_keys=False))
            result = Run(
                point.scenario, path, self.dir, lambda m, p=point: self.report(f"{p.id}: {m}"), pool=pool
            ).execute()
            self.state[point.id] = {
                "id": point.id,
                **point.params(),
                "scenario": point.fingerprint,
                "run_dir": str(result.run_dir),
                "outcome": result.outcome,
                "error": result.error,
                "verdict": (result.verdict or {}).get("status"),
                "figures": verdict_figures(result.verdict or {}),
            }
            self._write()
            if result.stopped:
                raise KeyboardInterrupt

    def _write(self) -> None:
        make_dirs(self.dir)
        write_json_atomically(
            self.dir / CAPACITY_JSON,
            {
                "sweep": self.sweep.spec.name,
                "sweep_file": str(self.sweep.path),
                "points": [self.state[p.id] for p in self.sweep.points if p.id in self.state],
            },
        )

    def table(self, master: str | None = None, progress: Callable[[str], None] = lambda _m: None):
        """The capacity table over the points that ran to a verdict (analysis/capacity.py)."""
        from analysis.capacity import capacity_report

        points = [
            {**self.state[p.id], "run": Path(self.state[p.id]["run_dir"]).name}
            for p in self.sweep.points
            if self.done(p)
        ]
        return capacity_report(points, self.dir / "analysis", master, title=self.sweep.spec.name, progress=progress)
