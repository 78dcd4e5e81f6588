"""SIGTERM and SIGHUP to the harness, taken like Ctrl-C; and a teardown none of them cuts short.

A Run handles them itself while it runs (harness.run). Around it — between a suite's
variants or a compare's protocols, and while `setup` builds — they raise
KeyboardInterrupt instead, so the `finally` clauses a Ctrl-C runs stop what was
started (process groups, shared clusters) rather than the interpreter dying where it
stands and leaving them behind.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # Ctrl-C, `kill`, a closed terminal


def _interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt


@contextmanager
def _handled(handler, signals) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():  # only the main thread sets handlers
        yield
        return
    previous = {}
    try:
        for sig in signals:  # one by one: a signal between two installs still finds its way back
            previous[sig] = signal.signal(sig, handler)
        yield
    finally:
        _restore(previous)


def _restore(previous: dict) -> None:
    """Every handler back, even when one put back first raises at once (a Ctrl-C that came
    meanwhile): the rest are restored, then it goes on. A handler set from C reads as None."""
    items, i, raised = list(previous.items()), 0, None
    while i < len(items):
        try:
            while i < len(items):
                sig, old = items[i]
                signal.signal(sig, signal.SIG_DFL if old is None else old)
                i += 1  # raised before this: installing the same handler again is harmless
        except BaseException as e:
            raised = raised or e
    if raised:
        raise raised


def handled_by(handler):
    """Within: Ctrl-C, SIGTERM and SIGHUP go to `handler` (a Run's own stop, harness.run)."""
    return _handled(handler, INTERRUPTS)


def like_ctrl_c():
    """Within: SIGTERM and SIGHUP raise KeyboardInterrupt, as Ctrl-C does."""
    return _handled(_interrupt, INTERRUPTS[1:])


def ignored():
    """Within: Ctrl-C, SIGTERM and SIGHUP are ignored — a teardown that must finish."""
    return _handled(signal.SIG_IGN, INTERRUPTS)


@contextmanager
def deferred() -> Iterator[None]:
    """Within: Ctrl-C, SIGTERM and SIGHUP wait for the block to end, then act as they would have
    — for steps that must not be cut in two (a process started, not yet on record)."""
    caught: list[int] = []
    try:
        with _handled(lambda signum, _frame: caught.append(signum), INTERRUPTS):
            yield
    finally:
        if caught:  # the handler from before the block takes it now (KeyboardInterrupt, a Run's stop)
            signal.raise_signal(caught[0])
