"""SIGTERM and SIGHUP to the harness, taken like Ctrl-C; and steps none of them cuts in two.

A Run handles them itself while it runs (harness.run). Around it — between a suite's
variants or a compare's protocols, and while `setup` builds — they raise
KeyboardInterrupt instead, so the `finally` clauses a Ctrl-C runs stop what was
started (process groups, shared clusters) rather than the interpreter dying where it
stands and leaving them behind.

One handler, the switchboard, takes all three signals and hands each to the innermost
mode that takes it (a Run's stop, "raise KeyboardInterrupt", "wait for the block to
end"); below every mode, to the handler it found. Entering or leaving a mode is one
list operation, so a nested mode changes what every signal does at once: with a
handler per mode, swapped in one signal at a time, a signal between two swaps went to
the wrong one (and skipped a teardown). Only the outermost mode installs and restores
the switchboard, where what came before is a Ctrl-C's plain KeyboardInterrupt anyway.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # Ctrl-C, `kill`, a closed terminal

Handler = Callable[[int, object], None]


class _Mode:
    def __init__(self, handler: Handler, signals: tuple[int, ...]):
        self.handler, self.signals = handler, signals


_modes: list[_Mode] = []  # innermost last; the main thread's only
_found: dict[int, object] = {}  # the handlers the switchboard replaced, while it is in


def _switchboard(signum: int, frame) -> None:
    for mode in reversed(_modes):
        if signum in mode.signals:
            mode.handler(signum, frame)
            return
    found = _found.get(signum, signal.SIG_DFL)
    if callable(found):
        found(signum, frame)
    elif found != signal.SIG_IGN:  # SIG_DFL, or None (set from C): what the default does
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)


@contextmanager
def _mode(handler: Handler, signals: tuple[int, ...] = INTERRUPTS) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield
        return
    mode = _Mode(handler, signals)
    _modes.append(mode)  # before the switchboard goes in: it sends a signal here from the first install
    installed: dict[int, object] = {}
    try:
        if len(_modes) == 1:
            for sig in INTERRUPTS:  # one by one: a signal between two installs still finds its way back
                _found[sig] = signal.getsignal(sig)
                installed[sig] = signal.signal(sig, _switchboard)
        yield
    finally:
        try:
            _restore(installed)
        finally:
            if installed:
                _found.clear()
            _modes.remove(mode)


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


def _interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt


def handled_by(handler: Handler):
    """Within: Ctrl-C, SIGTERM and SIGHUP go to `handler` (a Run's own stop, harness.run)."""
    return _mode(handler)


def like_ctrl_c():
    """Within: SIGTERM and SIGHUP raise KeyboardInterrupt, as Ctrl-C does (Ctrl-C itself does
    what it did before: ignored in a background job, for one)."""
    return _mode(_interrupt, INTERRUPTS[1:])


@contextmanager
def deferred() -> Iterator[None]:
    """Within: Ctrl-C, SIGTERM and SIGHUP wait for the block to end, then act as they would have
    — for steps that must not be cut in two (a process started, not yet on record; a group
    killed). Only the first acts: a second Ctrl-C does not cut the first one's unwinding short."""
    caught: list[int] = []
    try:
        with _mode(lambda signum, _frame: caught.append(signum)):
            yield
    finally:
        if caught:  # the mode from before the block takes it now (KeyboardInterrupt, a Run's stop)
            signal.raise_signal(caught[0])
