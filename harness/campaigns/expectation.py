"""A variant held to its expectation over attempts: what `suite` and the pytest plugin share.

Without an expectation a variant is one run, judged as `run` judges it. With one
(`expect:`, harness/scenario/expect.py) it runs up to `attempts` times and stops as soon as
the outcome is decided: `at_least` reproductions (PASSED); a run that ended some other way —
another check failed, the wrong kind, an unexpected status (FAILED), a run that broke or a
check that raised (BROKEN); or too few attempts left to reach `at_least` (FAILED).

Every attempt is the same scenario, the same seed: the seed fixes the fault schedule (which
faults, on whom, when), and what differs between attempts is what a real system never
repeats — thread scheduling in brokers and clients, where a batch stands when a fault lands,
the clients' own timers. That is how Jepsen repeats a test (`--test-count`): the same test
again, against real processes. A bug that needs another schedule needs another seed (a
matrix axis), not another attempt.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.reports.suite import BROKEN, FAILED, PASSED
from harness.run.loop import RunResult
from harness.scenario.expect import NOT_REPRODUCED, OTHERWISE, REPRODUCED, Expect, Judged


@dataclass
class Attempt:
    result: RunResult
    seconds: float
    judged: Judged | None  # None: no expectation

    @property
    def reproduced(self) -> bool:
        return self.judged is not None and self.judged.how == REPRODUCED

    def to_dict(self) -> dict:
        verdict = self.result.verdict or {}
        return {
            "run_dir": str(self.result.run_dir),
            "status": verdict.get("status"),
            "outcome": self.result.outcome,
            "failed_checks": sorted({v["check"] for v in verdict.get("violations", [])}),
            "reproduced": self.reproduced,
            "said": self.judged.said if self.judged else None,
            "seconds": round(self.seconds, 1),
        }


@dataclass
class Attempts:
    expect: Expect | None
    state: str = BROKEN  # PASSED, FAILED, BROKEN
    message: str = ""  # how it ended against the expectation (a run's error without one)
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def last(self) -> RunResult:
        return self.attempts[-1].result

    @property
    def stopped(self) -> bool:
        return self.last.stopped

    @property
    def seconds(self) -> float:
        return sum(a.seconds for a in self.attempts)

    @property
    def reproduced(self) -> int:
        return sum(a.reproduced for a in self.attempts)

    @property
    def passed_runs(self) -> int:
        return sum(a.judged is not None and a.judged.how == NOT_REPRODUCED for a in self.attempts)


def run_attempts(expect: Expect | None, run_once: Callable[[int], RunResult]) -> Attempts:
    """Run (`run_once(attempt number)`) until the expectation is decided; one run without one.
    A stop (Ctrl-C, SIGTERM) ends it after the run it cut: undecided is BROKEN, the caller stops."""
    out = Attempts(expect)
    for n in range(1, (expect.attempts if expect else 1) + 1):
        t0 = time.monotonic()
        result = run_once(n)
        judged = expect.judge(result.outcome, result.verdict) if expect else None
        out.attempts.append(Attempt(result, time.monotonic() - t0, judged))
        if expect is None:
            out.state, out.message = state_of(result), result.error or ""
            return out
        decided = _decided(expect, out, n, result, judged)
        if decided:
            out.state, out.message = decided
            return out
        if result.stopped:
            out.message = f"interrupted after attempt {n} of {expect.attempts}: the expectation ({expect.describe()}) was not decided"
            return out
    raise AssertionError("an expectation is decided by its last attempt")  # pragma: no cover


def _decided(expect: Expect, out: Attempts, n: int, result: RunResult, judged: Judged) -> tuple[str, str] | None:
    """(state, message) once the attempts so far decide it, else None."""
    k, total = expect.at_least, expect.attempts
    if judged.how == OTHERWISE:
        broke = result.outcome != "completed" or not result.verdict or result.verdict["status"] == "error"
        said = judged.said + (f": {result.error}" if result.error and broke else "")
        return (BROKEN if broke else FAILED), f"expected to {expect.what()}; attempt {n} of {total} {said}"
    tally = f"reproduced {out.reproduced} ({out.passed_runs} passed)"
    if out.reproduced >= k:
        return PASSED, f"{expect.describe()}: {tally} in {n} attempt{'s' * (n > 1)}"
    if out.reproduced + (total - n) < k:  # the attempts left cannot reach it: spending them proves nothing
        left = f"; {total - n} left cannot reach {k}" if n < total else ""
        return FAILED, f"expected to {expect.what()} in ≥ {k} of {total} attempts: {tally}{left}"
    return None


def state_of(result: RunResult) -> str:
    """A failed check is a failure; a run that broke, raised or could not be judged is broken."""
    if result.outcome == "completed" and result.verdict:
        return {"pass": PASSED, "fail": FAILED}.get(result.verdict["status"], BROKEN)
    return BROKEN
