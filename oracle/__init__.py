"""The reference oracle: pure functions from a run history to a verdict.

    from oracle import load_history, check_history
    verdict = check_history(load_history("runs/2024-…/history.jsonl"), {"no-loss": {}})
    verdict.ok, verdict.to_dict()

It reads the history format of docs/history.md and nothing else: it never
talks to Kafka, so any history can be checked again later.
"""
from .checks import CHECK_NAMES
from .history import History, load_history
from .verdict import Verdict, check_history

__all__ = ["CHECK_NAMES", "History", "Verdict", "check_history", "load_history"]
