"""`rebalance-lab suite`: many scenarios across a matrix of protocols, Kafka releases, client
versions, seeds and backends — the chaos suite a release is gated on.

A suite file names scenario files and a matrix; every variant (scenario × protocol ×
Kafka release × client × seed × backend, minus `exclude`) is built and validated before anything
starts, so an impossible pair is named up front rather than found an hour in. Each
variant then runs like `rebalance-lab run` (its own run directory, kept), and the suite
directory gets `suite.json` (rewritten after every variant: a killed suite still says
how far it got), `junit.xml` and `index.html` (harness/reports/suite.py).

    name: release
    scenarios: [../scenarios/smoke.yaml, ../scenarios/faulty-consumer.yaml]
    matrix:
      protocol: [classic-eager, classic-cooperative, consumer]
      kafka: ["3.9", "4.4"]
      client: ["confluent-kafka==2.3.0", "confluent-kafka==2.16.1"]
      seed: [1, 2]
    exclude:
      - {scenario: faulty-consumer, protocol: consumer}
    expect:            # the variants that must fail, and how (harness/scenario/expect.py)
      - {scenario: faulty-consumer, fails: [no-loss/lost-write, contiguity/skip-at-handover], attempts: 3}

A variant with an expectation runs until it is decided (harness/campaigns/expectation.py).
"""

from __future__ import annotations

import fnmatch
import glob
import itertools
import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, ValidationError, model_validator

from faults.base import Strict
from harness.campaigns.expectation import Attempts, run_attempts
from harness.cluster.backend import BACKENDS
from harness.cluster.shared import ClusterPool, runs_in_a_row
from harness.paths import make_dirs, new_stamped_dir
from harness.reports.run import verdict_figures
from harness.reports.suite import BROKEN, FAILED, PASSED, SKIPPED
from harness.run.loop import Run, RunResult
from harness.scenario import (
    Scenario,
    Seed,
    load_scenario,
    load_scenario_data,
    read_scenario_data,
    validation_problems,
)
from harness.scenario.expect import Expect, not_applicable_problems
from harness.scenario.kinds import FILE_KINDS, FileKind
from harness.scenario.overrides import display_path, replay_command, scenario_text
from harness.scenario.variants import Axes, Impossible, KafkaRelease, listed_twice, variant
from harness.supervision.run_state import read_state, write_json_atomically
from oracle.protocols import PROTOCOLS
from runtime.errors import (
    EXIT_BAD_INPUT,
    EXIT_CHECK_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUN_ERROR,
    LabError,
    ScenarioError,
    worst_exit,
)

SUITE_JSON = "suite.json"
AXES = ("protocol", "kafka", "client", "seed", "backend")  # harness.scenario.variants.Axes, in label order

Protocol = Literal[tuple(PROTOCOLS)]  # type: ignore[valid-type]
# An axis value is validated as the scenario key it sets is (no second list of releases): the
# Kafka release by cluster.kafka's own type; a client requirement per variant, by the driver
# that is to load it (which distribution it takes is the driver's to say).
ClientRequirement = Annotated[str, Field(min_length=1, max_length=200)]
Backend = Literal[tuple(BACKENDS)]  # type: ignore[valid-type]


class Matrix(Strict):
    """Each axis left out keeps every scenario's own value."""

    protocol: Annotated[list[Protocol], Field(min_length=1)] | None = None
    kafka: Annotated[list[KafkaRelease], Field(min_length=1)] | None = None
    client: Annotated[list[ClientRequirement], Field(min_length=1)] | None = None
    seed: Annotated[list[Seed], Field(min_length=1, max_length=1000)] | None = None
    backend: Annotated[list[Backend], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _each_value_once(self) -> Matrix:
        listed_twice(self, AXES)
        return self


MATCH_KEYS = ("scenario", *AXES)


class Matcher(Strict):
    """The variants an entry is about: every key given must match (a scenario by its name)."""

    scenario: str | None = None
    protocol: Protocol | None = None
    kafka: KafkaRelease | None = None
    client: ClientRequirement | None = None
    seed: Seed | None = None
    backend: Backend | None = None

    @property
    def match_keys(self) -> set[str]:
        return self.model_fields_set & set(MATCH_KEYS)

    @model_validator(mode="after")
    def _says_something(self) -> Matcher:
        if not self.match_keys:
            raise ValueError(f"names at least one of scenario, {', '.join(AXES)} (the variants it is about)")
        return self

    def matches(self, scenario: str, axes: Axes) -> bool:
        wanted = {k: getattr(self, k) for k in self.match_keys}
        return all((scenario if k == "scenario" else getattr(axes, k)) == v for k, v in wanted.items())


class Exclude(Matcher):
    """Variants to leave out."""


class ExpectEntry(Matcher):
    """What the variants it matches must do, over the scenario's own `expect:` (harness/scenario/expect.py):
    its keys, or `passes: true` — they must simply pass."""

    passes: Literal[True] | None = None
    # validated as a scenario's `expect:` is (Expect), in its words
    fails: Any = None
    outcome: Any = None
    attempts: Any = None
    at_least: Any = None

    @model_validator(mode="after")
    def _one_expectation(self) -> ExpectEntry:
        given = self.model_fields_set - set(MATCH_KEYS) - {"passes"}
        if self.passes and given:
            raise ValueError(f"with passes: true the variants must simply pass: no {', '.join(sorted(given))}")
        if not self.passes:
            try:
                Expect.model_validate(self.expectation())
            except ValidationError as e:  # as expect.<i>.<key>: reason
                raise ValueError(
                    "\n".join(f"{k}: {r}" if k != "(scenario)" else r for k, r in validation_problems(e))
                ) from None
        return self

    def expectation(self) -> dict | None:
        """The expectation as a scenario's `expect:` says it; None: the variant must pass."""
        if self.passes:
            return None
        keys = self.model_fields_set - set(MATCH_KEYS) - {"passes"}
        return {k: getattr(self, k) for k in Expect.model_fields if k in keys}


class SuiteSpec(Strict):
    FILE_KIND: ClassVar[FileKind] = FILE_KINDS["suite"]  # the keys that tell a suite file from others

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,80}$")]
    description: str = ""
    scenarios: Annotated[list[str], Field(min_length=1, max_length=200)]
    matrix: Matrix = Matrix()
    exclude: list[Exclude] = []
    expect: list[ExpectEntry] = []  # expectations of the variants they match, over the scenarios' own


@dataclass
class Variant:
    scenario: str  # the scenario's own name
    axes: Axes
    scenario_data: dict
    not_applicable: dict[str, str]  # checks the protocol has no premise for -> why
    expect: Expect | None = None  # what it must fail with (the suite's expect entry, else the scenario's)
    file: Path | None = None  # the scenario file it is a variant of
    own_expect: Any = None  # that file's `expect:` (the suite's entry may stand for it)

    @property
    def replay(self) -> str:
        """The `rebalance-lab run` command whose scenario is this variant's (harness.scenario.overrides):
        its axes, and the suite's expectation when it is not the file's own."""
        sets = (
            []
            if self.scenario_data.get("expect") == self.own_expect
            else [("expect", self.scenario_data.get("expect"))]
        )
        return replay_command(
            display_path(self.file or self.scenario), self.scenario_data.get("seed", 0), self.axes, sets
        )

    @property
    def id(self) -> str:
        """'smoke[classic-eager, seed 1]': the testcase's name in JUnit, what --only matches."""
        label = self.axes.label()
        return f"{self.scenario}[{label}]" if label else self.scenario

    @property
    def run_name(self) -> str:
        return self.axes.run_name(self.scenario)


@dataclass
class VariantResult:
    variant: Variant
    state: str  # PASSED, FAILED, BROKEN, SKIPPED
    seconds: float = 0.0
    result: RunResult | None = None  # its last attempt's
    reason: str = ""  # why skipped or broken; how its expectation ended
    attempts: Attempts | None = None

    @property
    def exit_code(self) -> int:
        """What `rebalance-lab run` of it would exit with, held to its expectation: passed 0 (a failure
        it expected included), failed 1; broken as its last run ended (3 broke, 4 incomplete, 2 bad
        input found by running, 130 interrupted); skipped 0 (what stopped the suite counts, not this)."""
        if self.state == BROKEN:
            code = self.result.exit_code if self.result else EXIT_RUN_ERROR
            return code if code not in (EXIT_OK, EXIT_CHECK_FAILED) else EXIT_RUN_ERROR
        return EXIT_CHECK_FAILED if self.state == FAILED else EXIT_OK

    def to_dict(self) -> dict:
        v, verdict = self.variant, (self.result.verdict if self.result else None) or {}
        ran = (read_state(self.result.run_dir) or {}) if self.result else {}
        return {
            "id": v.id,
            "scenario": v.scenario,
            "replay": v.replay,  # the `rebalance-lab run` command that gives its scenario
            "protocol": verdict.get("stats", {}).get("protocol") or v.axes.protocol,
            # what ran (run.json: the exact release, the client requirement, default included),
            # else what was asked (a variant not run)
            "kafka": ran.get("kafka") or v.scenario_data.get("cluster", {}).get("kafka"),
            "client": ran.get("client") or v.scenario_data.get("workload", {}).get("client"),
            "seed": v.scenario_data.get("seed"),
            "backend": v.scenario_data.get("cluster", {}).get("backend", "local"),
            "state": self.state,
            "reason": self.reason,
            "seconds": round(self.seconds, 1),
            # the last attempt's (the only one, without an expectation)
            "outcome": self.result.outcome if self.result else None,
            "status": verdict.get("status"),
            # the how-manieth run on a shared cluster this was (1: it started it), None: a cluster of its own
            "shared_cluster": ran.get("shared_cluster"),
            "exit_code": self.result.exit_code if self.result else None,
            "run_dir": str(self.result.run_dir) if self.result else None,
            "figures": verdict_figures(verdict) if verdict else None,
            "violations": [{k: a[k] for k in ("check", "kind", "message")} for a in verdict.get("violations", [])],
            "not_applicable": v.not_applicable,
            # the expectation as given (None: the variant must pass), what it says, and each run held to it
            "expect": v.expect.model_dump(exclude_unset=True) if v.expect else None,
            "expected": v.expect.describe() if v.expect else None,
            "attempts": [a.to_dict() for a in self.attempts.attempts] if self.attempts else [],
            "reproduced": self.attempts.reproduced if self.attempts and v.expect else None,
        }


@dataclass
class Suite:
    spec: SuiteSpec
    path: Path
    variants: list[Variant] = field(default_factory=list)


def load_suite(path: str | Path) -> Suite:
    """The suite file, every scenario it names and every variant of the matrix, validated;
    ScenarioError (exit 2) naming each problem — an impossible pair as `scenario[axes]` —
    before anything starts."""
    path = Path(path)
    data = read_scenario_data(path, "suite")
    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(path, validation_problems(e)) from None
    problems: list[tuple[str, str]] = []
    bases: dict[str, dict] = {}
    files: dict[str, Path] = {}
    for i, entry, file in _scenario_files(path, spec, problems):
        try:
            name = load_scenario(file).name
        except ScenarioError as e:
            problems += [(f"scenarios.{i}", f"{entry}: {key}: {reason}") for key, reason in e.problems]
            continue
        if name in bases:
            problems.append((f"scenarios.{i}", f"{entry}: a second scenario named {name!r} (names identify variants)"))
        bases[name], files[name] = read_scenario_data(file), file
    if problems:
        raise ScenarioError(path, problems)
    problems = [
        (f"{what}.{i}.scenario", f"no scenario of this suite is named {x.scenario!r} (known: {', '.join(bases)})")
        for what, entries in (("exclude", spec.exclude), ("expect", spec.expect))
        for i, x in enumerate(entries)
        if x.scenario is not None and x.scenario not in bases
    ]

    m = spec.matrix
    variants, used, expected = [], set(), defaultdict(list)
    # per client axis value: the variants built with it, and their workload.client refusals
    tried: Counter[str | None] = Counter()
    refused: defaultdict[str | None, list[tuple[str, str]]] = defaultdict(list)
    for (name, base), *values in itertools.product(bases.items(), *(getattr(m, axis) or [None] for axis in AXES)):
        axes = Axes(**dict(zip(AXES, values, strict=True)))
        excluded = [i for i, x in enumerate(spec.exclude) if x.matches(name, axes)]
        used.update(excluded)
        if excluded:
            continue
        label = f"{name}[{axes.label()}]"
        try:
            data, skipped = variant(base, axes)
        except Impossible as e:
            problems.append((label, f"{e}: leave it out with an exclude"))
            continue
        found = Variant(name, axes, data, skipped, file=files[name], own_expect=base.get("expect"))
        data["name"] = found.run_name
        tried[axes.client] += 1
        matched = [i for i, x in enumerate(spec.expect) if x.matches(name, axes)]
        for i in matched:
            expected[i].append(label)
        where = label
        if len(matched) > 1:
            problems += [
                (f"expect.{i}", f"matches {label}, which expect.{matched[0]} matches too: one expectation per variant")
                for i in matched[1:]
            ]
        elif matched:  # the suite's word over the scenario's own
            where, entry = f"expect.{matched[0]}", spec.expect[matched[0]]
            if entry.expectation() is None:
                data.pop("expect", None)
            else:
                data["expect"] = entry.expectation()
        # a check the protocol drops is not run: it cannot fail (said once, with the protocol's reason)
        dropped = not_applicable_problems(data.get("expect"), skipped, axes.protocol)
        problems += [(where, f"{label}: {p}" if where != label else p) for p in dropped]
        try:
            found.expect = Scenario.model_validate(data).expect
        except ValidationError as e:
            found_problems = [
                (key, reason)
                for key, reason in validation_problems(e)
                if not (dropped and key.startswith("expect.fails["))  # said above, with the reason
            ]
            problems += [(label, f"{key}: {reason}") for key, reason in found_problems]
            refused[axes.client] += [(label, reason) for key, reason in found_problems if key == "workload.client"]
            continue
        if not dropped:
            variants.append(found)
    problems = _client_refused_once(m, problems, tried, refused)
    axes_given = [axis for axis in AXES if getattr(m, axis)]
    for what, entries, hit in (("exclude", spec.exclude, used), ("expect", spec.expect, set(expected))):
        for i, x in enumerate(entries):
            if i in hit or (x.scenario is not None and x.scenario not in bases):
                continue
            if off := sorted(
                x.match_keys - {"scenario", *axes_given}
            ):  # it matches a variant's axes, not its scenario's own values
                problems += [
                    (
                        f"{what}.{i}.{key}",
                        f"{key} is not an axis of this suite's matrix (axes: {', '.join(axes_given) or 'none'})",
                    )
                    for key in off
                ]
            else:
                problems.append((f"{what}.{i}", "matches no variant of the matrix"))
    if problems:
        raise ScenarioError(path, problems)
    if not variants:
        raise ScenarioError(path, [("exclude", "every variant is excluded: nothing to run")])
    return Suite(spec, path, variants)


_GLOB = re.compile(r"[*?[]")


def _scenario_files(path: Path, spec: SuiteSpec, problems: list[tuple[str, str]]):
    """(index, as written, file) for each scenario entry; a glob (`../bugs/*/affected.yaml`) gives the
    files it matches, sorted, and one that matches none is a problem."""
    for i, entry in enumerate(spec.scenarios):
        if not _GLOB.search(entry):
            yield i, entry, (path.parent / entry).resolve()
            continue
        files = sorted(glob.glob(str(path.parent / entry)))
        if not files:
            problems.append((f"scenarios.{i}", f"{entry}: no file matches"))
        for file in files:
            yield i, os.path.relpath(file, path.parent), Path(file).resolve()


def _client_refused_once(
    m: Matrix, problems: list[tuple[str, str]], tried: Counter, refused: defaultdict
) -> list[tuple[str, str]]:
    """A client every variant refuses for one reason (a release the driver does not take, below the
    floor) is named once, as the matrix's value, not once per variant."""
    for i, client in enumerate(m.client or []):
        reasons = {reason for _, reason in refused[client]}
        if len(refused[client]) == tried[client] > 1 and len(reasons) == 1:
            [reason] = reasons
            labels = {label for label, _ in refused[client]}
            problems = [p for p in problems if not (p[0] in labels and p[1] == f"workload.client: {reason}")]
            problems.append((f"matrix.client.{i}", reason))
    return problems


def select(suite: Suite, only: tuple[str, ...], rerun_failed_of: dict | None) -> list[Variant]:
    """The variants to run: those whose id matches an --only pattern (`*` and `?` wildcards;
    brackets are the id's own), and/or those that did not pass in an earlier suite.json."""
    chosen = suite.variants
    if only:
        literal = [re.sub(r"[\[\]]", lambda m: f"[{m.group()}]", p) for p in only]
        chosen = [v for v in chosen if any(fnmatch.fnmatchcase(v.id, p) for p in literal)]
        if not chosen:
            raise BadSuiteArgument(
                f"--only {' '.join(only)}: no variant matches (ids look like {suite.variants[0].id!r})"
            )
    if rerun_failed_of is not None:
        # what that run set out to run and did not pass: failed, broke, skipped, or never ran (a
        # killed suite's file lists only the variants it finished)
        passed = {r["id"] for r in rerun_failed_of["variants"] if r["state"] == PASSED}
        meant = set(rerun_failed_of.get("chosen") or (r["id"] for r in rerun_failed_of["variants"]))
        chosen = [v for v in chosen if v.id in meant and v.id not in passed]
    return chosen


def last_suite_json(runs_dir: Path, name: str) -> dict:
    """The most recent suite.json of this suite under runs_dir (for --rerun-failed)."""
    for path in sorted(runs_dir.glob(f"suite-*-{name}/{SUITE_JSON}"), reverse=True):  # newest stamp first
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise BadSuiteArgument(f"--rerun-failed: {path}: not a suite.json ({e})") from None
        if isinstance(data, dict) and data.get("suite") not in (None, name):
            continue  # suite "pre-release" for suite "release"
        if not (
            isinstance(data, dict)
            and data.get("suite") == name
            and isinstance(data.get("variants"), list)
            and all(
                isinstance(r, dict) and isinstance(r.get("id"), str) and isinstance(r.get("state"), str)
                for r in data["variants"]
            )
            and isinstance(data.get("chosen") or [], list)
        ):
            raise BadSuiteArgument(
                f"--rerun-failed: {path}: not a suite.json (expected suite: {name!r}, "
                "variants: [{id, state}, …], chosen: [id, …])"
            )
        return data
    raise BadSuiteArgument(f"--rerun-failed: no earlier run of suite {name!r} in {runs_dir}")


class BadSuiteArgument(LabError):
    exit_code = EXIT_BAD_INPUT


def check_outputs(out: Path | None, junit: Path | None) -> None:
    """`--out DIR` (made now; refused unless new or empty: two suites' files never mix) and `--junit
    PATH` (a file, its directory made now): bad input before anything runs."""
    if out is not None:
        make_dirs(out, "--out")
        if any(out.iterdir()):
            raise BadSuiteArgument(f"--out {out}: not empty; give a new or empty directory")
    if junit is not None:
        make_dirs(junit.parent, "--junit")
        try:
            if junit.is_dir():
                raise BadSuiteArgument(f"--junit {junit}: a directory; give the file to write ({junit / 'junit.xml'})")
            with junit.open("ab"):  # writable (written when the suite ends)
                pass
        except OSError as e:
            raise BadSuiteArgument(f"--junit {junit}: cannot write it: {e.strerror or e}") from None


Report = Callable[[str], None]


class SuiteRun:
    """Runs the chosen variants in order into runs_dir/suite-<stamp>-<name>/."""

    def __init__(
        self,
        suite: Suite,
        chosen: list[Variant],
        runs_dir: Path,
        fail_fast: bool = False,
        report: Report = lambda _m: None,
        on_variant: Callable[[int, Variant], None] = lambda _i, _v: None,
        share_clusters: bool = True,
        out: Path | None = None,
        junit: Path | None = None,
    ):
        """``out``: the suite's directory (`--out`, new or empty; made by check_outputs), instead of
        runs_dir/suite-<stamp>-<name>; ``junit``: where the JUnit file is written too (`--junit`)."""
        self.out, self.junit = out, junit
        self.suite, self.chosen, self.fail_fast = suite, chosen, fail_fast
        self.share_clusters = share_clusters
        self.report, self.on_variant = report, on_variant
        self.runs_dir = runs_dir
        self.results: list[VariantResult] = []
        self.started = datetime.now(UTC)
        self.state = "running"

    def execute(self) -> int:
        from harness.reports.suite import write_reports

        self.dir = (
            self.out if self.out is not None else new_stamped_dir(self.runs_dir, self.suite.spec.name, kind="suite")
        )
        scenarios = self.dir / "scenarios"
        scenarios.mkdir()
        paths = []
        for v in self.chosen:
            p = scenarios / f"{v.run_name}-s{v.scenario_data.get('seed', 0)}.yaml"
            p.write_text(scenario_text(v.scenario_data))  # no secret value; as `run` with v.replay's options writes it
            paths.append(p)
        scenarios_of = [load_scenario_data(v.scenario_data, p) for v, p in zip(self.chosen, paths, strict=False)]
        # Variants whose cluster spec matches share a cluster (harness.cluster.shared), started with
        # lanes enough for the widest of them; two specs are kept up (a matrix alternates protocols
        # whose broker settings differ).
        pool = (
            ClusterPool(
                self.dir / "clusters",
                f"suite:{self.dir.resolve()}",
                self.report,
                lanes=max(len(s.member_slots()) for s in scenarios_of),
            )
            if self.share_clusters
            else None
        )
        try:
            with runs_in_a_row(pool):  # the reports are still written after a stop
                self._run_variants(paths, scenarios_of, pool)
        except KeyboardInterrupt:
            self.state = "interrupted"
        finally:
            if self.state == "running":
                self.state = "completed" if len(self.results) == len(self.chosen) else "interrupted"
            self.results += [
                VariantResult(v, SKIPPED, reason="not run: the suite was interrupted")
                for v in self.chosen[len(self.results) :]
            ]
            self._write_json()
            write_reports(self.to_dict(), self.dir, self.junit)
        return self.exit_code

    def _run_variants(self, paths: list[Path], scenarios_of: list[Scenario], pool: ClusterPool | None) -> None:
        stop_reason = ""
        for i, (v, p, scenario) in enumerate(zip(self.chosen, paths, scenarios_of, strict=False)):
            if stop_reason:
                self.results.append(VariantResult(v, SKIPPED, reason=stop_reason))
                continue
            self.on_variant(i, v)
            # the same scenario each attempt (its seed fixes the faults' schedule): harness/campaigns/expectation.py
            ran = run_attempts(v.expect, lambda n, v=v, p=p, scenario=scenario: self._attempt(v, n, p, scenario, pool))
            done = VariantResult(v, ran.state, ran.seconds, ran.last, reason=ran.message, attempts=ran)
            self.results.append(done)
            self._write_json()
            self.report(f"{v.id}: {done.state}; replay: {v.replay}")
            if ran.stopped:
                result = ran.last
                when = "during" if result.outcome == "interrupted" else "after"  # a Ctrl-C as its run ended
                self.state, stop_reason = "interrupted", f"not run: the suite was interrupted {when} {v.id}"
            elif self.fail_fast and done.state != PASSED:
                stop_reason = f"not run: --fail-fast after {v.id} {done.state}"

    def _attempt(self, v: Variant, n: int, path: Path, scenario: Scenario, pool: ClusterPool | None) -> RunResult:
        total = v.expect.attempts if v.expect else 1
        who = f"{v.id} (attempt {n} of {total})" if total > 1 else v.id
        return Run(scenario, path, self.dir, lambda m: self.report(f"{who}: {m}"), pool=pool).execute()

    @property
    def exit_code(self) -> int:
        """The worst of the variants' (runtime.errors.worst_exit), 130 once interrupted."""
        return worst_exit([r.exit_code for r in self.results] + [EXIT_INTERRUPTED] * (self.state == "interrupted"))

    def to_dict(self) -> dict:
        return {
            "suite": self.suite.spec.name,
            "description": self.suite.spec.description,
            "suite_file": str(self.suite.path),
            "state": self.state,
            "started": self.started.isoformat(),
            "finished": datetime.now(UTC).isoformat(),
            "exit_code": self.exit_code if self.state != "running" else None,
            "chosen": [v.id for v in self.chosen],  # what this run set out to run (--only, --rerun-failed)
            "variants": [r.to_dict() for r in self.results],
        }

    def _write_json(self) -> None:
        write_json_atomically(self.dir / SUITE_JSON, self.to_dict())
