"""Error types and the exit codes the CLI maps them to.

Exit codes are part of the interface that CI scripts rely on, one contract for every
command (EXIT_CODES_TEXT, which each command's --help and docs/ci.md show): 0 passed,
1 a check failed, 2 bad input or setup, 3 the run itself broke (cluster never became
ready, a process died unexpectedly) or a check raised, 4 incomplete (no violation, but a
check could not judge the history: the run ended before `phase: done`), 130 interrupted.
A command that runs many (suite, compare, capacity) returns the worst of them, in
worst_exit's order.
"""

from collections.abc import Iterable

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_RUN_ERROR = 3
EXIT_INCOMPLETE = 4
EXIT_INTERRUPTED = 130

# Worst first: an interruption says the most (nothing after it ran), then bad input (nothing of it
# could run as meant), a broken run, a failed check, an incomplete verdict; all passed last.
EXIT_SEVERITY = (EXIT_INTERRUPTED, EXIT_BAD_INPUT, EXIT_RUN_ERROR, EXIT_CHECK_FAILED, EXIT_INCOMPLETE, EXIT_OK)

EXIT_MEANINGS = {
    EXIT_OK: "passed: every check held",
    EXIT_CHECK_FAILED: "a check failed",
    EXIT_BAD_INPUT: "bad input or setup (nothing ran, or it could not run as asked)",
    EXIT_RUN_ERROR: "the run broke, or a check raised",
    EXIT_INCOMPLETE: "incomplete: no violation, but a check could not judge the history",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C, SIGTERM)",
}

# The one text of the contract: every command's --help epilog and the docs show it.
EXIT_CODES_TEXT = (
    "Exit codes (every command): "
    + "; ".join(f"{code} {EXIT_MEANINGS[code]}" for code in sorted(EXIT_MEANINGS))
    + ". Many runs (suite, compare, capacity) exit with the worst of theirs, in the order "
    + " > ".join(map(str, EXIT_SEVERITY))
    + "."
)


def exit_codes_markdown() -> str:
    """docs/reference/exit-codes.md, from EXIT_MEANINGS and EXIT_SEVERITY (a test holds the page to it)."""
    rows = "".join(f"| {code} | {EXIT_MEANINGS[code]} |\n" for code in sorted(EXIT_MEANINGS))
    return (
        "# Exit codes\n\n"
        "<!-- generated from runtime/errors.py (EXIT_MEANINGS, EXIT_SEVERITY); "
        "tests/unit/test_exit_codes.py holds it equal -->\n\n"
        "One contract for every `rebalance-lab` command; each command's `--help` ends with it.\n\n"
        "| code | meaning |\n|---|---|\n" + rows + "\n"
        "A command that runs many — `suite`, `compare`, `capacity` — exits with the worst of "
        "its runs' codes, in the order " + " > ".join(f"**{c}**" for c in EXIT_SEVERITY) + ": an interruption "
        "first, then bad input, a broken run, a failed check, an incomplete verdict. A suite variant that "
        "failed as its `expect:` said counts as passed.\n\n"
        "Some commands give a code a narrower meaning (their `--help` says it): `shrink` exits 0 when it "
        "wrote a minimal scenario, 1 when the failure did not reproduce, 3 when the failing schedule's runs broke; `cluster status` 1 when no cluster is up; `bugs --check-docs` 1 when a "
        "generated page is stale; `cleanup` and `cluster down` 3 when something could not be stopped.\n"
    )


def worst_exit(codes: Iterable[int]) -> int:
    """The exit code of many runs: the worst of theirs by EXIT_SEVERITY (0 for none)."""
    rank = {code: i for i, code in enumerate(EXIT_SEVERITY)}
    return min(codes, key=lambda code: rank[code], default=EXIT_OK)


# A verdict's status (oracle.verdict.Verdict.status) -> the exit code that reports it.
EXIT_FOR_VERDICT = {"pass": EXIT_OK, "fail": EXIT_CHECK_FAILED, "error": EXIT_RUN_ERROR, "incomplete": EXIT_INCOMPLETE}


class LabError(Exception):
    """An error we explain to the user in one message, without a traceback."""

    exit_code = EXIT_RUN_ERROR


class ScenarioError(LabError):
    """A scenario file that does not validate. Names the file, the key and the reason."""

    exit_code = EXIT_BAD_INPUT
    # Shows each problem's key as a person reads it, with its line in the file (one-based list
    # indices: faults[1].at_s (line 14)); set by harness.scenario.errors, which reads the files.
    locate = None

    def __init__(self, path, problems: list[tuple[str, str]]):
        self.path = str(path)
        self.problems = type(self).locate(self.path, problems) if type(self).locate else list(problems)
        lines = [f"{self.path}: {key}: {reason}" if key else f"{self.path}: {reason}" for key, reason in self.problems]
        super().__init__("\n".join(lines))


class SetupError(LabError):
    """A missing tool or an unreachable registry, with what to do about it."""

    exit_code = EXIT_BAD_INPUT


class ClusterError(LabError):
    """The cluster did not start or did not become ready."""

    exit_code = EXIT_RUN_ERROR


class AuthenticationFailed(LabError):
    """The cluster refused the client settings' credentials (librdkafka's _AUTHENTICATION): bad input,
    said at the first refusal rather than after a readiness timeout."""

    exit_code = EXIT_BAD_INPUT
