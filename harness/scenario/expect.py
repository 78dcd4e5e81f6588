"""The ``expect:`` key: a scenario (or a suite's variant) that must fail, and how.

A run is judged as ever (the verdict, `run`'s exit code); an expectation says what that
verdict must be for the *variant* to pass: `suite` and the pytest plugin run it up to
``attempts`` times and hold it to ``at_least`` reproductions (harness/campaigns/expectation.py).

    expect:
      fails: [no-loss]          # each `check` or `check/kind`: every one must fail, no other check may
      # outcome: incomplete     # or: the verdict status the run must end with (fail, incomplete, error)
      attempts: 5               # at most this many runs (default 1)
      at_least: 3               # reproduced this many times (default 1)

What one run's verdict says against it is `judge` (pure: a verdict as verdict.json holds it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from faults.strict import Strict
from oracle.checks import history_integrity

MAX_ATTEMPTS = 20  # a timing-dependent bug that needs more runs than this is not a suite's to chase
_ENTRY = re.compile(r"^(?P<check>[^/\s]+)(/(?P<kind>[^/\s]*))?$")
_KIND = re.compile(r"^[a-z0-9-]+$")  # a violation's kind as the checks name them (lost-records, double-owner)
OUTCOMES = ("fail", "incomplete", "error")  # verdict statuses a run may be expected to end with (pass: no expect)

# a judged attempt: the expectation met by this run, the run passed, or it ended some other way
REPRODUCED, NOT_REPRODUCED, OTHERWISE = "reproduced", "not reproduced", "otherwise"


def _check_names() -> tuple[str, ...]:
    from oracle.checks import CHECK_NAMES  # the plugins' too, loaded on first use

    return (*CHECK_NAMES, history_integrity.NAME)


class Expect(Strict):
    fails: Annotated[list[str], Field(min_length=1, max_length=50)] | None = None
    outcome: Literal[OUTCOMES] | None = None  # type: ignore[valid-type]
    # Checks that may fail with it: the same bug's consequences where timing decides (two owners of a
    # partition may also move its committed offset backward). Never required; any other check still fails it.
    may_also_fail: Annotated[list[str], Field(min_length=1, max_length=50)] | None = None
    attempts: Annotated[int, Field(ge=1, le=MAX_ATTEMPTS, strict=True)] = 1
    at_least: Annotated[int, Field(ge=1, strict=True)] = 1

    @model_validator(mode="after")
    def _one_way_to_fail(self) -> Expect:
        problems = []
        if (self.fails is None) == (self.outcome is None):
            problems.append("expected either fails (the checks that must fail) or outcome (the verdict status)")
        if self.at_least > self.attempts:
            problems.append(f"at_least: {self.at_least} reproductions cannot happen in {self.attempts} attempt(s)")
        known = _check_names()
        seen: set[str] = set()
        for i, entry, _check in _entries("fails", self.fails, known, problems):
            if entry in seen:
                problems.append(f"fails.{i}: {entry} is listed twice")
            seen.add(entry)
        if self.may_also_fail is not None and self.fails is None:
            problems.append("may_also_fail goes with fails: the checks that may fail beside those that must")
        for i, _entry, check in _entries("may_also_fail", self.may_also_fail, known, problems):
            if check in self.checks:
                problems.append(f"may_also_fail.{i}: {check} is in fails: it must fail there")
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def checks(self) -> set[str]:
        """The checks that must fail."""
        return {e.split("/")[0] for e in self.fails or ()}

    @property
    def kinds(self) -> set[tuple[str, str]]:
        """(check, kind) pairs a violation of each must be."""
        return {tuple(e.split("/", 1)) for e in self.fails or () if "/" in e}  # type: ignore[misc]

    def _may_fail(self, check: str, violations: list[dict]) -> bool:
        """Whether ``may_also_fail`` lets ``check`` fail as it did: named whole (`check`), or each of its
        violations of a kind named (`check/kind`)."""
        allowed = set(self.may_also_fail or ())
        return check in allowed or all(f"{check}/{v['kind']}" in allowed for v in violations if v["check"] == check)

    def what(self) -> str:
        """'fail no-loss' / 'end incomplete': what one run must do."""
        return f"fail {' and '.join(self.fails)}" if self.fails else f"end {self.outcome}"

    def describe(self) -> str:
        """'fails no-loss in at least 1 of 1 attempts': the whole expectation, as JUnit and pages say it."""
        what = f"fails {' and '.join(self.fails)}" if self.fails else f"ends {self.outcome}"
        if self.may_also_fail:
            what += f" ({', '.join(self.may_also_fail)} may fail with it)"
        return f"{what} in at least {self.at_least} of {self.attempts} attempts"

    def run_line(self, outcome: str, verdict: dict | None) -> str:
        """What `run` says of one run against it (its exit code stays the verdict's)."""
        judged = self.judge(outcome, verdict)
        met = {REPRODUCED: "met it", NOT_REPRODUCED: "did not reproduce it", OTHERWISE: "did not meet it"}[judged.how]
        return f"expected: {self.describe()} (suite and pytest hold it); this run {met}: {judged.said}"

    def judge(self, outcome: str, verdict: dict | None) -> Judged:
        """One run against this expectation: reproduced it, passed (not reproduced), or ended otherwise."""
        if outcome != "completed" or not verdict:
            return Judged(OTHERWISE, f"the run {outcome}, no verdict")
        status = verdict["status"]
        if status == "pass":
            return Judged(NOT_REPRODUCED, "passed")
        failed = _failed(verdict)
        if self.outcome is not None:
            if status == self.outcome:
                return Judged(REPRODUCED, f"ended {status}" + (f": {', '.join(sorted(failed))}" if failed else ""))
            return Judged(OTHERWISE, _ended(status, verdict, failed))
        if status != "fail":
            return Judged(OTHERWISE, _ended(status, verdict, failed))
        missing = sorted(self.checks - set(failed))
        other = sorted(c for c in set(failed) - self.checks if not self._may_fail(c, verdict["violations"]))
        if missing or other:
            said = [f"failed {', '.join(sorted(failed))}"]
            if missing:
                said.append(f"not {', '.join(missing)}")
            if other:
                said.append(f"{', '.join(other)} not expected")
            return Judged(OTHERWISE, "; ".join(said))
        kinds = {(v["check"], v["kind"]) for v in verdict["violations"]}
        if lacking := sorted(f"{c}/{k}" for c, k in self.kinds - kinds):
            found = sorted({f"{c}/{k}" for c, k in kinds if c in {c for c, _ in self.kinds}})
            return Judged(OTHERWISE, f"failed with {', '.join(found)}, not {', '.join(lacking)}")
        return Judged(REPRODUCED, "failed " + ", ".join(f"{c} ({n})" for c, n in sorted(failed.items())))


@dataclass(frozen=True)
class Judged:
    how: str  # REPRODUCED, NOT_REPRODUCED, OTHERWISE
    said: str  # what the run did, in a few words: "failed no-loss (3)", "passed", "ended incomplete: …"


def _failed(verdict: dict) -> dict[str, int]:
    """Check -> its violations in this verdict."""
    out: dict[str, int] = {}
    for v in verdict["violations"]:
        out[v["check"]] = out.get(v["check"], 0) + 1
    return out


def _ended(status: str, verdict: dict, failed: dict[str, int]) -> str:
    if status == "fail":
        return f"failed {', '.join(sorted(failed))}"
    why = {**(verdict.get("skipped_checks") or {}), **(verdict.get("errored_checks") or {})}
    return f"ended {status}" + (f" ({'; '.join(f'{k}: {v}' for k, v in sorted(why.items()))})" if why else "")


def expect_check_problems(expect: Expect | None, checks: dict | None) -> list[str]:
    """A check the scenario's `checks:` leaves out cannot be expected to fail: it does not judge the run."""
    if expect is None or expect.fails is None or checks is None:
        return []
    judging = {*checks, history_integrity.NAME}
    return [
        f"expect.fails.{i}: {entry}: {entry.split('/')[0]} is not among the scenario's checks "
        f"({', '.join(checks) or 'none'}): a check that does not judge the run cannot fail"
        for i, entry in enumerate(expect.fails)
        if entry.split("/")[0] not in judging
    ]


def not_applicable_problems(expect: dict | None, not_applicable: dict[str, str], protocol: str | None) -> list[str]:
    """Checks the protocol drops (oracle.checks.not_applicable) cannot be expected to fail: they are not run.
    ``expect`` as written (a mapping; anything else is the model's to refuse)."""
    fails = expect.get("fails") if isinstance(expect, dict) else None
    if not isinstance(fails, list):
        return []
    return [
        f"expect.fails.{i}: {entry}: not applicable to {protocol} ({not_applicable[entry.split('/')[0]]}), "
        f"so it never fails there"
        for i, entry in enumerate(fails)
        if isinstance(entry, str) and entry.split("/")[0] in not_applicable
    ]


def _entries(key: str, entries: list[str] | None, known: list[str], problems: list[str]):
    """The well-formed `check` / `check/kind` entries of ``key``, as (index, entry, check); what is
    wrong with the others goes to ``problems``."""
    for i, entry in enumerate(entries or []):
        m = _ENTRY.match(entry)
        if not m:
            problems.append(f"{key}.{i}: {entry!r} is not `check` or `check/kind`")
        elif m["check"] not in known:
            problems.append(f"{key}.{i}: unknown check {m['check']!r} (known: {', '.join(known)})")
        elif m["kind"] is not None and not _KIND.match(m["kind"]):
            problems.append(f"{key}.{i}: {m['kind']!r} is not a violation's kind (lower case, digits, -)")
        else:
            yield i, entry, m["check"]
