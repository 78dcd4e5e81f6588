"""Error types and the exit codes the CLI maps them to.

Exit codes are part of the interface that CI scripts rely on:
0 every check held, 1 a check failed, 2 bad input or setup failure,
3 the run itself broke (cluster never became ready, a process died unexpectedly)
or a check raised, 4 incomplete: no violation, but a check could not judge the
history (the run ended before `phase: done`), 130 interrupted by Ctrl-C.
"""

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_RUN_ERROR = 3
EXIT_INCOMPLETE = 4
EXIT_INTERRUPTED = 130

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
