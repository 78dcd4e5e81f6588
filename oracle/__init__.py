"""The reference oracle: pure functions from a run history to a verdict.

    from oracle import load_history, check_history
    verdict = check_history(load_history("runs/2024-…/history.jsonl"), {"no-loss": {}})
    verdict.ok, verdict.to_dict()

It reads the history format of docs/history.md and nothing else: it never
talks to Kafka, so any history can be checked again later.
"""

from importlib import import_module

# Loaded on first use: every process of a run imports the history's vocabulary
# (oracle.vocabulary), and only the harness and `check` need the checks.
_HOME = {
    "CHECK_NAMES": ".checks",
    "History": ".history",
    "load_history": ".history",
    "Verdict": ".verdict",
    "check_history": ".verdict",
}

__all__ = ["CHECK_NAMES", "History", "Verdict", "check_history", "load_history"]


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(import_module(_HOME[name], __name__), name)
    return value
