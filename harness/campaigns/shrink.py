"""`rebalance-lab shrink RUN_DIR`: the smallest scenario that still fails the same check.

A failing seeded run hands the release engineer a schedule of many faults and no idea
which one mattered. Shrinking answers that with real runs, as QuickCheck and Jepsen's
users do by hand: the run's schedule (its random faults expanded, as `schedule.json`
recorded them) becomes an explicit list of faults, and candidates smaller than the
current one are tried in turn —

1. **drop faults**, by delta debugging: remove chunks of the list, halving the chunk
   size down to single faults (a chunk whose removal still fails stays removed);
2. **shorten each fault** (the option its kind says it lasts by: ``duration_s``,
   a crash's ``restart_after_s``), halving while it still fails;
3. **move the faults earlier**, all together, so the first comes sooner;
4. **cut the tail**: the run ends sooner after the last fault is healed.

Timing is noisy, so a candidate is a *probe* of up to ``repeats`` runs, stopped at the
first that fails the check; one that never does is dropped. A budget of runs and of
minutes bounds the search; the smallest candidate found so far is what it returns when
the budget runs out. The minimal scenario is then run ``confirm`` times, and how often it
reproduces is part of the answer.

The search (``Shrinker``) takes the probe as a function, so it is tested with a fake
one; ``shrink`` runs it on real clusters (shared between probes, as a suite's runs).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError

from faults import catalogue
from harness.cluster.shared import ClusterPool, runs_in_a_row
from harness.components.install import installed_for
from harness.paths import new_stamped_dir
from harness.run.loop import Run
from harness.scenario import (
    Scenario,
    load_scenario,
    read_scenario_data,
    validation_problems,
)
from harness.supervision.run_state import write_json_atomically
from oracle import vocabulary as ev
from runtime.errors import LabError, ScenarioError

SHRINK_JSON = "shrink.json"
MIN_FAULT_S = 0.5  # a fault shorter than this is not shortened further
MIN_TAIL_S = 5.0  # the run goes on at least this long after its last fault is healed: the group must move
MAX_HALVINGS = 3  # per fault duration and for the tail: each halving is a probe

Report = Callable[[str], None]


@dataclass(frozen=True)
class Candidate:
    """A scenario to try: the failing run's, with fewer or shorter faults, or a shorter run."""

    fault_ids: tuple[str, ...]  # the original run's ids (schedule.json) of the faults kept
    faults: tuple[dict, ...]
    duration_s: float

    def describe(self) -> str:
        return f"{len(self.faults)} fault(s) ({', '.join(self.fault_ids) or 'none'}), {self.duration_s:g} s"

    def key(self) -> str:
        """Equal for candidates that would run the same scenario."""
        return json.dumps([self.faults, self.duration_s], sort_keys=True)

    def scenario(self, base: dict) -> dict:
        data = {k: v for k, v in base.items() if k != "random_faults"}
        return {**data, "duration_s": self.duration_s, "faults": [dict(f) for f in self.faults]}

    def faults_end_s(self) -> float:
        """When the last fault is healed (timeline seconds), as its kind reckons it before it acts."""
        return max(
            (
                f["at_s"] + catalogue.from_spec({"fault_id": i, **f}).heal_after_s
                for i, f in zip(self.fault_ids, self.faults, strict=False)
            ),
            default=0.0,
        )


def length_of(fault: dict) -> float | None:
    """How long ``fault`` lasts, by its kind's length option (None: it has none, or it is unset)."""
    key = catalogue.SPECS[fault["kind"]].length_key
    return fault.get(key) if key else None


@dataclass
class ProbeRun:
    run_dir: str | None
    outcome: str  # completed | interrupted | error | invalid
    status: str | None  # the verdict's status
    reproduced: bool
    failed_checks: list[str] = field(default_factory=list)
    note: str = ""
    stopped: bool = False  # harness.run.loop.RunResult's: no probe after this one


@dataclass
class Probe:
    n: int
    step: str  # what this candidate changed, in words
    candidate: Candidate
    runs: list[ProbeRun] = field(default_factory=list)

    @property
    def reproduced(self) -> bool:
        return any(r.reproduced for r in self.runs)

    def row(self) -> dict:
        c = self.candidate
        return {
            "probe": self.n,
            "step": self.step,
            "faults": list(c.fault_ids),
            "duration_s": c.duration_s,
            "reproduced": self.reproduced,
            "runs": [asdict(r) for r in self.runs],
        }


RunProbe = Callable[[Candidate, int, int], ProbeRun]  # (candidate, probe number, attempt) -> one run


@dataclass
class Budget:
    max_runs: int
    max_minutes: float
    runs: int = 0
    started: float = field(default_factory=time.monotonic)

    def exhausted(self) -> str | None:
        if self.runs >= self.max_runs:
            return f"the budget of {self.max_runs} runs is spent"
        if time.monotonic() - self.started >= self.max_minutes * 60:
            return f"the budget of {self.max_minutes:g} minutes is spent"
        return None


class BudgetSpent(Exception):
    pass


class Shrinker:
    """Delta debugging over a failing scenario's faults, then its durations and times."""

    def __init__(
        self,
        original: Candidate,
        run_probe: RunProbe,
        budget: Budget,
        repeats: int,
        report: Report,
        on_probe: Callable[[Probe], None] = lambda _p: None,
    ):
        self.best = original
        self.run_probe = run_probe
        self.budget = budget
        self.repeats = repeats
        self.report = report
        self.on_probe = on_probe
        self.probes: list[Probe] = []
        self._tried: set[str] = set()  # candidate keys: a candidate met again is not run again
        self.stopped: str | None = None  # why the search ended before trying everything

    def shrink(self) -> Candidate | None:
        """The smallest candidate that still fails; None when the original itself does not."""
        try:
            if not self._try(self.best, "the failing run's schedule, as explicit faults"):
                return None
            self._drop_faults()
            self._shorten_faults()
            self._move_earlier()
            self._cut_tail()
        except BudgetSpent as e:
            self.stopped = str(e)
            if not self.probes[0].reproduced:
                return None  # the budget ran out before the failing schedule failed again
        return self.best

    def _try(self, candidate: Candidate, step: str) -> bool:
        """Probe ``candidate``; if it fails the check it becomes the best so far (and True)."""
        if candidate.key() in self._tried:
            return False  # it did not fail, or it became the best back then: either way nothing new
        self._tried.add(candidate.key())
        probe = Probe(len(self.probes) + 1, step, candidate)
        self.probes.append(probe)
        self.report(f"probe {probe.n}: {step} — {candidate.describe()}")
        for attempt in range(1, self.repeats + 1):
            if (why := self.budget.exhausted()) is not None:
                self.on_probe(probe)
                raise BudgetSpent(why)
            run = self.run_probe(candidate, probe.n, attempt)
            if run.outcome != "invalid":
                self.budget.runs += 1
            probe.runs.append(run)
            self.report(
                f"probe {probe.n} run {attempt}: "
                + ("fails the check: reproduced" if run.reproduced else run.note or f"{run.outcome}, {run.status}")
            )
            if run.reproduced or run.outcome == "invalid" or run.stopped:
                break
        self.on_probe(probe)
        if any(r.stopped for r in probe.runs):
            raise KeyboardInterrupt
        if probe.reproduced:
            self.best = candidate
        return probe.reproduced

    def _drop_faults(self) -> None:
        chunk = len(self.best.faults)
        while chunk >= 1:
            i = 0
            while i < len(self.best.faults):
                c = self.best
                kept = [j for j in range(len(c.faults)) if not i <= j < i + chunk]
                dropped = ", ".join(c.fault_ids[i : i + chunk])
                if not self._try(replace_faults(c, kept), f"drop {dropped}"):
                    i += chunk  # else the list shrank under i: the next chunk is at i now
            chunk //= 2

    def _shorten_faults(self) -> None:
        for fid in self.best.fault_ids:
            for _ in range(MAX_HALVINGS):
                c = self.best
                j = c.fault_ids.index(fid)
                length = length_of(c.faults[j])
                if length is None or length / 2 < MIN_FAULT_S:
                    break
                half = round(length / 2, 3)
                faults = list(c.faults)
                faults[j] = {**faults[j], catalogue.SPECS[faults[j]["kind"]].length_key: half}
                if not self._try(
                    Candidate(c.fault_ids, tuple(faults), c.duration_s),
                    f"{fid} lasts {half:g} s instead of {length:g} s",
                ):
                    break

    def _move_earlier(self) -> None:
        first = min((f["at_s"] for f in self.best.faults), default=0.0)
        for shift in (first, first / 2):  # all the way to the start, else half way
            if shift < 1.0:
                return
            c = self.best
            moved = tuple({**f, "at_s": round(f["at_s"] - shift, 3)} for f in c.faults)
            if self._try(
                Candidate(c.fault_ids, moved, round(c.duration_s - shift, 3)),
                f"every fault {shift:g} s earlier (and the run as much shorter)",
            ):
                return

    def _cut_tail(self) -> None:
        if any(f.get("on") for f in self.best.faults):
            return  # a fault fired by the group's state may act any time before the end
        for _ in range(MAX_HALVINGS):
            c = self.best
            end = c.faults_end_s()
            tail = c.duration_s - end
            if tail / 2 < MIN_TAIL_S:
                return
            if not self._try(
                Candidate(c.fault_ids, c.faults, round(end + tail / 2, 3)),
                f"the run ends {tail / 2:g} s after the last fault instead of {tail:g} s",
            ):
                return


def replace_faults(c: Candidate, kept: list[int]) -> Candidate:
    return Candidate(tuple(c.fault_ids[j] for j in kept), tuple(c.faults[j] for j in kept), c.duration_s)


# ------------------------------------------------------------------ the failing run


def failed_checks(verdict: dict) -> list[str]:
    """The checks of a verdict.json that found a violation, in the verdict's order."""
    return [name for name, r in (verdict.get("checks") or {}).items() if isinstance(r, dict) and r.get("violations")]


@dataclass(frozen=True)
class FailingRun:
    run_dir: Path
    check: str
    base: dict  # the run's scenario as written, on the backend it ran on
    original: Candidate

    @classmethod
    def read(cls, run_dir: Path, check: str | None, backend: str | None = None) -> FailingRun:
        """The run to shrink: its scenario, schedule and the failed check, or a clear refusal.
        ``backend``: the probes' cluster backend (default: the one the run had)."""
        verdict_path = run_dir / "verdict.json"
        failed = failed_checks(_read_json(verdict_path))
        if check is None:
            if not failed:
                raise ScenarioError(verdict_path, [("checks", "no check failed in this run: nothing to shrink")])
            check = failed[0]
        elif check not in failed:
            raise ScenarioError(
                verdict_path,
                [
                    (
                        f"checks.{check}",
                        "did not fail in this run"
                        + (f" (failed: {', '.join(failed)})" if failed else ": no check failed"),
                    )
                ],
            )
        scenario_path = run_dir / "scenario.yaml"
        base = read_scenario_data(scenario_path)
        backend = backend or _run_backend(run_dir / "history.jsonl")  # `run --backend` is not in the file
        if backend:
            base = {**base, "cluster": {**(base.get("cluster") or {}), "backend": backend}}
        schedule_path = run_dir / "schedule.json"
        schedule = _read_json(schedule_path, list)
        if not all(isinstance(f, dict) and isinstance(f.get("fault_id"), str) for f in schedule):
            raise ScenarioError(schedule_path, [("(file)", "not a run's schedule: every entry needs its fault_id")])
        ids = tuple(f["fault_id"] for f in schedule)
        faults = tuple({k: v for k, v in f.items() if k != "fault_id" and v is not None} for f in schedule)
        original = Candidate(ids, faults, base.get("duration_s"))
        try:  # what the first probe will run: refused here, with the run's files named, rather than as a probe
            scenario = load_candidate(original, base)
        except ValidationError as e:
            raise ScenarioError(f"{scenario_path} with {schedule_path.name}", validation_problems(e)) from None
        return cls(run_dir, check, base, Candidate(ids, faults, scenario.duration_s))


def load_candidate(candidate: Candidate, base: dict) -> Scenario:
    return Scenario.model_validate(candidate.scenario(base))


def _run_backend(history: Path) -> str | None:
    """The cluster backend the run had, from its run_started event (one of its first lines)."""
    try:
        with history.open(encoding="utf-8") as fh:
            for line, _ in zip(fh, range(50), strict=False):
                if f'"{ev.RUN_STARTED}"' in line:
                    return json.loads(line).get("backend")
    except (OSError, ValueError):
        pass
    return None


def _read_json(path: Path, kind: type = dict):
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ScenarioError(path, [("(file)", (e.strerror or str(e)) + ": not a judged run directory")]) from None
    except ValueError as e:
        raise ScenarioError(path, [("(file)", f"not JSON: {e}")]) from None
    if not isinstance(data, kind):
        raise ScenarioError(path, [("(file)", f"expected a JSON {'object' if kind is dict else 'array'}")])
    return data


# ------------------------------------------------------------------ real runs


@dataclass
class ShrinkResult:
    out: Path
    state: str  # done | not-reproduced | broken | interrupted
    minimal: Candidate | None
    confirmed: tuple[int, int] | None  # (reproduced, of runs)
    error: str | None = None  # broken: why the runs broke


def shrink(
    run_dir: Path,
    check: str | None,
    runs_dir: Path,
    report: Report,
    repeats: int = 3,
    max_runs: int = 40,
    max_minutes: float = 60,
    confirm: int = 5,
    share_clusters: bool = True,
    backend: str | None = None,
) -> ShrinkResult:
    failing = FailingRun.read(run_dir, check, backend)
    installed_for(load_candidate(failing.original, failing.base))  # before a directory that looks like a shrink
    out = new_stamped_dir(runs_dir, str(failing.base.get("name", "scenario")), kind="shrink")
    (out / "probes").mkdir()
    report(f"shrink: {run_dir} failed {failing.check}; {failing.original.describe()}")
    probes: list[Probe] = []
    state = {
        "source_run": str(run_dir),
        "check": failing.check,
        "state": "running",
        "repeats": repeats,
        "budget": {"runs": max_runs, "minutes": max_minutes},
    }

    def save(**extra) -> None:
        state.update(extra)
        write_json_atomically(out / SHRINK_JSON, {**state, "probes": [p.row() for p in probes]})

    pool = (
        ClusterPool(
            out / "clusters",
            f"shrink:{out.resolve()}",
            report,
            lanes=len(load_candidate(failing.original, failing.base).member_slots()),
        )
        if share_clusters
        else None
    )

    def run_once(candidate: Candidate, n: int, attempt: int) -> ProbeRun:
        path = out / "probes" / (f"p{n:02d}.yaml" if n else "minimal.yaml")
        path.write_text(yaml.safe_dump(candidate.scenario(failing.base), sort_keys=False))
        try:
            scenario = load_scenario(path)
        except LabError as e:  # a shorter run the scenario format refuses (a fault past its end, say)
            return ProbeRun(None, "invalid", None, False, note=f"not a valid scenario: {e}")
        result = Run(scenario, path, out / "runs", report, pool=pool).execute()
        failed = failed_checks(result.verdict or {})
        return ProbeRun(
            str(result.run_dir),
            result.outcome,
            (result.verdict or {}).get("status"),
            failing.check in failed,
            failed,
            note=result.error or "",
            stopped=result.stopped,
        )

    save()
    budget = Budget(max_runs, max_minutes)
    shrinker = Shrinker(
        failing.original, run_once, budget, repeats, report, on_probe=lambda p: (probes.append(p), save())
    )
    minimal = confirmed = None
    try:
        with runs_in_a_row(pool):
            minimal = shrinker.shrink()
            if minimal is not None:  # written before confirming: an interrupted confirmation keeps the search's answer
                (out / "minimal.yaml").write_text(_minimal_yaml(failing, minimal, None))
            if minimal is not None and confirm:
                report(f"shrink: confirming the minimal scenario ({minimal.describe()}) with {confirm} runs")
                runs = []
                for attempt in range(1, confirm + 1):
                    runs.append(run_once(minimal, 0, attempt))
                    if runs[-1].stopped:
                        raise KeyboardInterrupt
                confirmed = (sum(r.reproduced for r in runs), len(runs))
                save(confirmation=[asdict(r) for r in runs])
                (out / "minimal.yaml").write_text(_minimal_yaml(failing, minimal, confirmed))
    except KeyboardInterrupt:
        save(state="interrupted", smallest_so_far=_candidate_row(shrinker.best))
        return ShrinkResult(out, "interrupted", minimal, None)
    first = shrinker.probes[0].runs if shrinker.probes else []
    broken = (
        next((r.note or r.outcome for r in first if r.outcome == "error"), None)
        if minimal is None and first and all(r.outcome == "error" for r in first)
        else None
    )
    result = ShrinkResult(
        out, "done" if minimal else "broken" if broken else "not-reproduced", minimal, confirmed, broken
    )
    (out / "report.md").write_text(_report_md(failing, probes, result, shrinker.stopped, budget))
    save(
        state=result.state,
        stopped=shrinker.stopped,
        runs=budget.runs,
        error=broken,
        minimal=_candidate_row(minimal) if minimal else None,
        reproduced=({"runs": confirmed[1], "failed": confirmed[0]} if confirmed else None),
    )
    return result


def _candidate_row(c: Candidate) -> dict:
    return {"faults": list(c.fault_ids), "duration_s": c.duration_s}


def _minimal_yaml(failing: FailingRun, minimal: Candidate, confirmed: tuple[int, int] | None) -> str:
    rate = f"; it failed it in {confirmed[0]} of {confirmed[1]} runs" if confirmed else ""
    head = (
        f"# Shrunk by `rebalance-lab shrink` from {failing.run_dir}: the smallest scenario found that still\n"
        f"# fails {failing.check}{rate}. Faults kept (the original's ids): {', '.join(minimal.fault_ids) or 'none'}.\n"
    )
    return head + yaml.safe_dump(minimal.scenario(failing.base), sort_keys=False)


def _report_md(
    failing: FailingRun, probes: list[Probe], result: ShrinkResult, stopped: str | None, budget: Budget
) -> str:
    o, m = failing.original, result.minimal
    lines = [f"# Shrinking {failing.run_dir.name}", "", f"Check: **{failing.check}**. Original: {o.describe()}.", ""]
    if result.state == "broken":
        lines += [f"The failing run's schedule could not be run again: {result.error}.", ""]
    elif m is None:
        ran = len(probes[0].runs) if probes else 0
        lines += [
            (
                f"The failing run's schedule did not fail {failing.check} again in {ran} run(s): "
                "nothing to shrink (the failure may depend on timing the schedule does not fix)."
            ),
            "",
        ]
    else:
        lines += [f"Minimal: {m.describe()} — `minimal.yaml`."]
        if result.confirmed:
            lines += [
                f"It failed {failing.check} in **{result.confirmed[0]} of {result.confirmed[1]}** confirmation runs."
            ]
        lines += [""]
    if stopped:
        lines += [f"The search stopped early: {stopped}; the minimal scenario is the smallest found by then.", ""]
    lines += [
        f"{budget.runs} runs in {(time.monotonic() - budget.started) / 60:.1f} min.",
        "",
        "| probe | change | candidate | runs | reproduced |",
        "|---|---|---|---|---|",
    ]
    for p in probes:
        runs = ", ".join("fail" if r.reproduced else (r.status or r.outcome) for r in p.runs)
        lines.append(f"| {p.n} | {p.step} | {p.candidate.describe()} | {runs} | {'yes' if p.reproduced else 'no'} |")
    return "\n".join(lines) + "\n"
