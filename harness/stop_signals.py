"""SIGTERM and SIGHUP to the harness, taken like Ctrl-C.

A Run handles them itself while it runs (harness.run). Around it — between a suite's
variants or a compare's protocols, and while `setup` builds — they raise
KeyboardInterrupt instead, so the `finally` clauses a Ctrl-C runs stop what was
started (process groups, shared clusters) rather than the interpreter dying where it
stands and leaving them behind.
"""
from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Iterator

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt


@contextmanager
def like_ctrl_c() -> Iterator[None]:
    """Within: SIGTERM and SIGHUP raise KeyboardInterrupt; the previous handlers come back after."""
    previous = {sig: signal.signal(sig, _interrupt) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
