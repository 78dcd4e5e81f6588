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
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import yaml

from harness.cluster.shared import ClusterPool, runs_in_a_row
from harness.run import Run
from harness.runstate import write_json_atomically
from harness.scenario import load_scenario, read_scenario_data
from faults import catalogue
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
        """When the last fault is healed (timeline seconds); a fault without a length ends when it starts."""
        return max((f["at_s"] + (length_of(f) or 0.0) for f in self.faults), default=0.0)


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
        return {"probe": self.n, "step": self.step, "faults": list(c.fault_ids), "duration_s": c.duration_s,
                "reproduced": self.reproduced, "runs": [asdict(r) for r in self.runs]}


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

    def __init__(self, original: Candidate, run_probe: RunProbe, budget: Budget, repeats: int, report: Report,
                 on_probe: Callable[[Probe], None] = lambda _p: None):
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
            self.report(f"probe {probe.n} run {attempt}: " + ("fails the check: reproduced" if run.reproduced else
                                                               run.note or f"{run.outcome}, {run.status}"))
            if run.reproduced or run.outcome in ("invalid", "interrupted"):
                break
        self.on_probe(probe)
        if any(r.outcome == "interrupted" for r in probe.runs):
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
                dropped = ", ".join(c.fault_ids[i:i + chunk])
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
                faults = list(c.faults)
                faults[j] = {**faults[j], catalogue.SPECS[faults[j]["kind"]].length_key: round(length / 2, 3)}
                if not self._try(Candidate(c.fault_ids, tuple(faults), c.duration_s),
                                 f"{fid} lasts {length / 2:g} s instead of {length:g} s"):
                    break

    def _move_earlier(self) -> None:
        first = min((f["at_s"] for f in self.best.faults), default=0.0)
        for shift in (first, first / 2):  # all the way to the start, else half way
            if shift < 1.0:
                return
            c = self.best
            moved = tuple({**f, "at_s": round(f["at_s"] - shift, 3)} for f in c.faults)
            if self._try(Candidate(c.fault_ids, moved, round(c.duration_s - shift, 3)),
                         f"every fault {shift:g} s earlier (and the run as much shorter)"):
                return

    def _cut_tail(self) -> None:
        for _ in range(MAX_HALVINGS):
            c = self.best
            end = c.faults_end_s()
            tail = c.duration_s - end
            if tail / 2 < MIN_TAIL_S:
                return
            if not self._try(Candidate(c.fault_ids, c.faults, round(end + tail / 2, 3)),
                             f"the run ends {tail / 2:g} s after the last fault instead of {tail:g} s"):
                return


def replace_faults(c: Candidate, kept: list[int]) -> Candidate:
    return Candidate(tuple(c.fault_ids[j] for j in kept), tuple(c.faults[j] for j in kept), c.duration_s)


# ------------------------------------------------------------------ the failing run


@dataclass(frozen=True)
class FailingRun:
    run_dir: Path
    check: str
    base: dict  # the run's scenario as written
    original: Candidate

    @classmethod
    def read(cls, run_dir: Path, check: str | None) -> FailingRun:
        """The run to shrink: its scenario, schedule and the failed check, or a clear refusal."""
        verdict_path = run_dir / "verdict.json"
        verdict = _read_json(verdict_path)
        failed = [name for name, r in (verdict.get("checks") or {}).items() if (r or {}).get("violations")]
        if check is None:
            if not failed:
                raise ScenarioError(verdict_path, [("checks", "no check failed in this run: nothing to shrink")])
            check = failed[0]
        elif check not in failed:
            raise ScenarioError(verdict_path, [(f"checks.{check}", "did not fail in this run" + (
                f" (failed: {', '.join(failed)})" if failed else ": no check failed"))])
        base = read_scenario_data(run_dir / "scenario.yaml")
        schedule_path = run_dir / "schedule.json"
        schedule = _read_json(schedule_path, list)
        try:
            ids = tuple(f["fault_id"] for f in schedule)
            faults = tuple({k: v for k, v in f.items() if k != "fault_id" and v is not None} for f in schedule)
            duration_s = float(base["duration_s"])
        except (KeyError, TypeError, ValueError) as e:
            raise ScenarioError(schedule_path, [("(file)", f"not a run's schedule: {e!r}")]) from None
        return cls(run_dir, check, base, Candidate(ids, faults, duration_s))


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
    state: str  # done | not-reproduced | interrupted
    minimal: Candidate | None
    confirmed: tuple[int, int] | None  # (reproduced, of runs)


def shrink(run_dir: Path, check: str | None, runs_dir: Path, report: Report, repeats: int = 3,
           max_runs: int = 40, max_minutes: float = 60, confirm: int = 5, share_clusters: bool = True) -> ShrinkResult:
    failing = FailingRun.read(run_dir, check)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = runs_dir / f"shrink-{stamp}-{failing.base.get('name', 'scenario')}"
    (out / "probes").mkdir(parents=True)
    report(f"shrink: {run_dir} failed {failing.check}; {failing.original.describe()}")
    probes: list[Probe] = []
    state = {"source_run": str(run_dir), "check": failing.check, "state": "running", "repeats": repeats,
             "budget": {"runs": max_runs, "minutes": max_minutes}}

    def save(**extra) -> None:
        state.update(extra)
        write_json_atomically(out / SHRINK_JSON, {**state, "probes": [p.row() for p in probes]})

    pool = ClusterPool(out / "clusters", f"shrink:{out.resolve()}", report,
                       lanes=len(load_scenario(run_dir / "scenario.yaml").member_slots())) if share_clusters else None

    def run_once(candidate: Candidate, n: int, attempt: int) -> ProbeRun:
        path = out / "probes" / (f"p{n:02d}.yaml" if n else "minimal.yaml")
        path.write_text(yaml.safe_dump(candidate.scenario(failing.base), sort_keys=False))
        try:
            scenario = load_scenario(path)
        except LabError as e:  # a shorter run the scenario format refuses (a fault past its end, say)
            return ProbeRun(None, "invalid", None, False, note=f"not a valid scenario: {e}")
        result = Run(scenario, path, out / "runs", report, pool=pool).execute()
        checks = (result.verdict or {}).get("checks") or {}
        failed = [name for name, r in checks.items() if r.get("violations")]
        return ProbeRun(str(result.run_dir), result.outcome, (result.verdict or {}).get("status"),
                        failing.check in failed, failed, note=result.error or "")

    save()
    budget = Budget(max_runs, max_minutes)
    shrinker = Shrinker(failing.original, run_once, budget, repeats, report,
                        on_probe=lambda p: (probes.append(p), save()))
    confirmed = None
    try:
        with runs_in_a_row(pool):
            minimal = shrinker.shrink()
            if minimal is not None and confirm:
                report(f"shrink: confirming the minimal scenario ({minimal.describe()}) with {confirm} runs")
                runs = []
                for attempt in range(1, confirm + 1):
                    runs.append(run_once(minimal, 0, attempt))
                    if runs[-1].outcome == "interrupted":
                        raise KeyboardInterrupt
                confirmed = (sum(r.reproduced for r in runs), len(runs))
                save(confirmation=[asdict(r) for r in runs])
    except KeyboardInterrupt:
        save(state="interrupted", smallest_so_far=_candidate_row(shrinker.best))
        return ShrinkResult(out, "interrupted", shrinker.best, None)
    result = ShrinkResult(out, "done" if minimal is not None else "not-reproduced", minimal, confirmed)
    if minimal is not None:
        (out / "minimal.yaml").write_text(_minimal_yaml(failing, minimal, confirmed))
    (out / "report.md").write_text(_report_md(failing, probes, result, shrinker.stopped, budget))
    save(state=result.state, stopped=shrinker.stopped, runs=budget.runs,
         minimal=_candidate_row(minimal) if minimal else None,
         reproduced=({"runs": confirmed[1], "failed": confirmed[0]} if confirmed else None))
    return result


def _candidate_row(c: Candidate) -> dict:
    return {"faults": list(c.fault_ids), "duration_s": c.duration_s}


def _minimal_yaml(failing: FailingRun, minimal: Candidate, confirmed: tuple[int, int] | None) -> str:
    rate = f"; it failed it in {confirmed[0]} of {confirmed[1]} runs" if confirmed else ""
    head = (f"# Shrunk by `rebalance-lab shrink` from {failing.run_dir}: the smallest scenario found that still\n"
            f"# fails {failing.check}{rate}. Faults kept (the original's ids): {', '.join(minimal.fault_ids) or 'none'}.\n")
    return head + yaml.safe_dump(minimal.scenario(failing.base), sort_keys=False)


def _report_md(failing: FailingRun, probes: list[Probe], result: ShrinkResult, stopped: str | None,
               budget: Budget) -> str:
    o, m = failing.original, result.minimal
    lines = [f"# Shrinking {failing.run_dir.name}", "",
             f"Check: **{failing.check}**. Original: {o.describe()}.", ""]
    if m is None:
        lines += [(f"The failing run's schedule did not fail {failing.check} again in {len(probes[0].runs)} run(s): "
                   "nothing to shrink (the failure may depend on timing the schedule does not fix)."), ""]
    else:
        lines += [f"Minimal: {m.describe()} — `minimal.yaml`."]
        if result.confirmed:
            lines += [f"It failed {failing.check} in **{result.confirmed[0]} of {result.confirmed[1]}** confirmation runs."]
        lines += [""]
    if stopped:
        lines += [f"The search stopped early: {stopped}; the minimal scenario is the smallest found by then.", ""]
    lines += [f"{budget.runs} runs in {(time.monotonic() - budget.started) / 60:.1f} min.", "",
              "| probe | change | candidate | runs | reproduced |", "|---|---|---|---|---|"]
    for p in probes:
        runs = ", ".join("fail" if r.reproduced else (r.status or r.outcome) for r in p.runs)
        lines.append(f"| {p.n} | {p.step} | {p.candidate.describe()} | {runs} | {'yes' if p.reproduced else 'no'} |")
    return "\n".join(lines) + "\n"
