"""What `--json` prints: one JSON document on stdout per command, each a model here with its
``schema`` ("rebalance-lab.run/1"). A field is added in a compatible way (the number stays); a field
renamed or removed, or a meaning changed, bumps it. docs/reference/json.md is generated from these
models (`reference_markdown`; tests/unit/test_json_output.py fails when it is stale)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.reports.run import verdict_figures

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "json.md"


class _Document(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    def dump(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


class CheckResult(BaseModel):
    """One check's result in a verdict."""

    model_config = ConfigDict(extra="forbid")
    status: str = Field(description="passed, failed, error, skipped or incomplete")
    violations: int = Field(description="How many violations it found")
    findings: int = Field(description="How many findings (noted, not failing) it found")
    kinds: list[str] = Field(description="The kinds of its violations, each once, sorted")
    reason: str | None = Field(None, description="Why it was skipped, errored or could not judge")


class Rebalances(BaseModel):
    """The run's completed rebalances."""

    model_config = ConfigDict(extra="forbid")
    count: int = Field(description="Completed rebalances")
    durations_ms: list[float] = Field(description="Each completed rebalance's duration, in generation order")
    total_ms: float
    mean_ms: float | None
    p95_ms: float | None = Field(description="Nearest rank: a duration some rebalance really took")
    max_ms: float
    stop_the_world_max_ms: float = Field(
        description="The longest time one partition had no consuming owner during a rebalance"
    )


class Verdict(BaseModel):
    """The oracle's verdict on a run's history (verdict.json has every detail)."""

    model_config = ConfigDict(extra="forbid")
    status: Literal["pass", "fail", "error", "incomplete"]
    violations: int
    findings: int
    violated_checks: list[str]
    checks: dict[str, CheckResult] = Field(description="Each check (and each always-on measurement that raised)")
    rebalances: Rebalances
    duplicates: int | None = Field(description="Re-delivered records")


class RunOutput(_Document):
    """`rebalance-lab run FILE --json`."""

    schema_: Literal["rebalance-lab.run/1"] = Field("rebalance-lab.run/1", alias="schema")
    exit_code: int = Field(description="The command's exit code")
    status: str = Field(
        description="The verdict's status (pass, fail, error, incomplete), else how the run ended "
        "without one (interrupted, error)"
    )
    outcome: str = Field(description="How the run ended: completed, interrupted or error")
    error: str | None = Field(description="What went wrong, when something did")
    run_dir: str
    scenario: str
    seed: int | None
    harness_version: str | None = Field(description="run.json's harness_version")
    components: dict[str, str | None] = Field(description="run.json's components: each one's version")
    expectation: str | None = Field(description="What the scenario's expect: says of this run")
    verdict: Verdict | None = Field(description="null when the run has no verdict")


class CheckOutput(_Document):
    """`rebalance-lab check RUN_DIR --json`."""

    schema_: Literal["rebalance-lab.check/1"] = Field("rebalance-lab.check/1", alias="schema")
    exit_code: int
    status: str = Field(description="The verdict's status: pass, fail, error or incomplete")
    run_dir: str
    scenario: str | None
    seed: int | None
    run_state: str | None = Field(description="run.json's state (completed, interrupted, killed, …), if any")
    expectation: str | None
    wrote: bool = Field(description="--write: verdict.json and summary.md were rewritten")
    verdict: Verdict


class SuiteVariant(BaseModel):
    """One variant of a suite, as suite.json has it (in brief)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    state: str = Field(description="passed, failed, broken or skipped; listed (`--list`: not run)")
    status: str | None = Field(description="Its verdict's status; null without one")
    exit_code: int | None
    reason: str | None
    seconds: float
    run_dir: str | None
    replay: str | None = Field(description="The command that runs this variant again (null when not known)")
    violated_checks: list[str]
    rebalances: int | None
    rebalance_p95_ms: float | None
    stop_the_world_max_ms: float | None


class SuiteOutput(_Document):
    """`rebalance-lab suite FILE --json`."""

    schema_: Literal["rebalance-lab.suite/1"] = Field("rebalance-lab.suite/1", alias="schema")
    exit_code: int
    status: str = Field(description="The suite's state: passed, failed, broken, interrupted, …; listed (`--list`)")
    suite: str
    dir: str | None = Field(description="The suite's directory (suite.json, junit.xml, index.html); null with --list")
    variants: list[SuiteVariant]


class CompareRow(BaseModel):
    """One run of a comparison: a row of the side-by-side table (compare.json has the same keys)."""

    model_config = ConfigDict(extra="allow")
    protocol: str | None
    kafka: str | None
    client: str | None
    client_version: str | None = Field(description="The client library the members really loaded")
    seed: int | None
    outcome: str
    status: str | None
    ok: bool
    rebalances: int
    rebalance_total_ms: float
    rebalance_mean_ms: float | None
    rebalance_p95_ms: float | None
    rebalance_max_ms: float
    stop_the_world_max_ms: float
    duplicates: int | None
    violations: int
    violated_checks: list[str]
    unjudged_checks: list[str]
    not_applicable: Any = Field(description="The checks that do not apply to its protocol")
    run_dir: str


class CompareOutput(_Document):
    """`rebalance-lab compare FILE … --json`."""

    schema_: Literal["rebalance-lab.compare/1"] = Field("rebalance-lab.compare/1", alias="schema")
    exit_code: int
    status: str = Field(description="passed when every run passed; else failed, or interrupted")
    dir: str = Field(description="The comparison's directory (its runs, compare.json)")
    rows: list[CompareRow]


class ScheduleOutput(_Document):
    """`rebalance-lab schedule FILE --json` (without --json, schedule prints the bare list of faults,
    as before)."""

    schema_: Literal["rebalance-lab.schedule/1"] = Field("rebalance-lab.schedule/1", alias="schema")
    exit_code: int
    scenario: str
    seed: int | None
    faults: list[dict[str, Any]] = Field(description="The written faults and the seeded random ones, by time")
    random_drawn: int | None = Field(description="random_faults drawn (null: the scenario has none)")
    random_asked: int | None = Field(description="random_faults.count")


class ErrorOutput(_Document):
    """What any --json command prints when it stops on an error of its own (bad input, a setup that
    failed); click's own usage errors print no document (exit code 2)."""

    schema_: Literal["rebalance-lab.error/1"] = Field("rebalance-lab.error/1", alias="schema")
    exit_code: int
    error: str


DOCUMENTS: tuple[type[_Document], ...] = (
    RunOutput,
    CheckOutput,
    SuiteOutput,
    CompareOutput,
    ScheduleOutput,
    ErrorOutput,
)


# ----------------------------------------------------------------------------- from the harness's data


def _finite(x):
    return x if not isinstance(x, float) or math.isfinite(x) else None


def verdict_model(verdict: dict) -> Verdict:
    """A verdict.json dict in brief."""
    kinds: dict[str, set[str]] = {}
    for a in verdict.get("violations", []):
        kinds.setdefault(a["check"], set()).add(a["kind"])
    checks = {
        name: CheckResult(
            status=c["status"],
            violations=c.get("violations", 0),
            findings=c.get("findings", 0),
            kinds=sorted(kinds.get(name, ())),
            reason=c.get("reason") or None,
        )
        for name, c in [
            *verdict.get("checks", {}).items(),
            *((f"{n} measurement", m) for n, m in (verdict.get("measurements") or {}).items()),
        ]
    }
    f = verdict_figures(verdict)
    durations = [
        r["duration_ms"]
        for r in verdict.get("rebalances", [])
        if r["status"] == "completed" and r["duration_ms"] is not None
    ]
    return Verdict(
        status=verdict["status"],
        violations=len(verdict.get("violations", [])),
        findings=len(verdict.get("findings", [])),
        violated_checks=f["violated_checks"],
        checks=checks,
        rebalances=Rebalances(
            count=f["rebalances"],
            durations_ms=[round(d, 1) for d in durations],
            total_ms=f["rebalance_total_ms"],
            mean_ms=f["rebalance_mean_ms"],
            p95_ms=f["rebalance_p95_ms"],
            max_ms=f["rebalance_max_ms"],
            stop_the_world_max_ms=f["stop_the_world_max_ms"],
        ),
        duplicates=f["duplicates"],
    )


def suite_model(suite: dict, out: Path | None) -> SuiteOutput:
    """suite.json's dict in brief."""
    variants = []
    for v in suite["variants"]:
        f = v.get("figures") or {}
        variants.append(
            SuiteVariant(
                id=v["id"],
                state=v["state"],
                status=v.get("status"),
                exit_code=v.get("exit_code"),
                reason=v.get("reason") or None,
                seconds=v.get("seconds") or 0.0,
                run_dir=v.get("run_dir"),
                replay=v.get("replay"),
                violated_checks=f.get("violated_checks", []),
                rebalances=f.get("rebalances"),
                rebalance_p95_ms=f.get("rebalance_p95_ms"),
                stop_the_world_max_ms=f.get("stop_the_world_max_ms"),
            )
        )
    return SuiteOutput(
        exit_code=suite.get("exit_code") if suite.get("exit_code") is not None else 0,
        status=suite["state"],
        suite=suite["suite"],
        dir=str(out) if out else None,
        variants=variants,
    )


# ----------------------------------------------------------------------------- docs/reference/json.md


def _type(spec: dict, defs: dict) -> str:
    if "$ref" in spec:
        return f"[{spec['$ref'].rsplit('/', 1)[-1]}](#{spec['$ref'].rsplit('/', 1)[-1].lower()})"
    if "const" in spec:
        return f'`"{spec["const"]}"`'
    if "enum" in spec:
        return " \\| ".join(f'`"{e}"`' for e in spec["enum"])
    if "anyOf" in spec:
        return " or ".join(_type(s, defs) for s in spec["anyOf"])
    t = spec.get("type", "any")
    if t == "array":
        return f"list of {_type(spec.get('items', {}), defs)}"
    if t == "object" and "additionalProperties" in spec and isinstance(spec["additionalProperties"], dict):
        return f"map of {_type(spec['additionalProperties'], defs)}"
    return t


def _fields(schema: dict, defs: dict) -> list[str]:
    """Every key is always there (null where the type allows it)."""
    lines = ["| key | type | meaning |", "|---|---|---|"]
    for name, spec in schema.get("properties", {}).items():
        meaning = (spec.get("description") or _COMMON.get(name, "")).replace("|", "\\|")
        lines.append(f"| `{name}` | {_type(spec, defs)} | {meaning} |")
    return lines


_COMMON = {
    "schema": "The document's format and its version",
    "exit_code": "The command's exit code",
    "run_dir": "The run's directory",
    "scenario": "The scenario's name",
    "seed": "The run's seed",
}


def reference_markdown() -> str:
    """docs/reference/json.md, from the models' JSON Schema."""
    lines = [
        "# JSON output (`--json`)",
        "",
        "<!-- Generated from harness/reports/json_output.py: do not edit; "
        "`python3 -m harness.reports.json_output` rewrites it. -->",
        "",
        "`run`, `check`, `suite`, `compare` and `schedule` take `--json`: stdout then carries exactly one",
        "JSON document, and every other line (progress, warnings, errors) goes to stderr. Each document",
        'names its format in `"schema"` (`"rebalance-lab.run/1"`): a key may be added to a format without',
        "a new number; a key renamed or removed, or a meaning changed, gives it a new number. The exit code",
        "is the command's (`exit_code` repeats it). Every key below is always there, null where its type",
        "allows it.",
        "",
        "```sh",
        "rebalance-lab run scenarios/smoke.yaml --json",
        "rebalance-lab schedule scenarios/random-chaos.yaml --json",
        "```",
        "",
        "`-q` (`--quiet`, before or after the command's name) prints only the result lines and errors, `-v`",
        "(`--verbose`) also each process started and each that exited; `--json` prints no progress bar.",
        "",
        "A command stopped by an error of its own (bad input, a setup that failed) prints an",
        '`"rebalance-lab.error/1"` document; click\'s usage errors (an unknown option) print none.',
        "",
    ]
    defs: dict[str, dict] = {}
    for model in DOCUMENTS:
        schema = model.model_json_schema(by_alias=True)
        defs.update(schema.get("$defs", {}))
        name = schema["properties"]["schema"]["const"]
        lines += [f"## `{name}`", "", (model.__doc__ or "").strip().replace("\n    ", "\n"), ""]
        lines += _fields(schema, defs) + [""]
    for name in sorted(defs):
        lines += [f"### {name}", "", (defs[name].get("description") or "").strip(), ""]
        lines += _fields(defs[name], defs) + [""]
    lines += [
        "## JSON Schema",
        "",
        "Each document's JSON Schema, for a validator, is printed by:",
        "",
        "```sh",
        "python3 -m harness.reports.json_output --schema",
        "```",
        "",
    ]
    return "\n".join(lines)


def json_schemas() -> dict[str, dict]:
    """Each document's JSON Schema, by its ``schema`` name."""
    return {
        m.model_json_schema(by_alias=True)["properties"]["schema"]["const"]: m.model_json_schema(by_alias=True)
        for m in DOCUMENTS
    }


if __name__ == "__main__":  # rewrite docs/reference/json.md; --schema: print the JSON Schemas
    import sys

    if sys.argv[1:] == ["--schema"]:
        print(json.dumps(json_schemas(), indent=2, sort_keys=True))
    else:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(reference_markdown())
        print(f"wrote {DOC}")
