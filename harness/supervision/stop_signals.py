"""SIGTERM and SIGHUP to the harness, taken like Ctrl-C; and steps none of them cuts in two.

A Run handles them itself while it runs (harness.run.loop). Around it — between a suite's
variants or a compare's protocols, and while `setup` builds — they raise
KeyboardInterrupt instead, so the `finally` clauses a Ctrl-C runs stop what was
started (process groups, shared clusters) rather than the interpreter dying where it
stands and leaving them behind.

One handler, the switchboard, takes all three signals and hands each to the innermost
mode that takes it (a Run's stop, "raise KeyboardInterrupt", "wait for the block to
end"); below every mode, to the handler it found. Entering or leaving a mode is one
list operation, so a nested mode changes what every signal does at once: with a
handler per mode, swapped in one signal at a time, a signal between two swaps went to
the wrong one (and skipped a teardown). Only the outermost mode puts the switchboard
in and takes it out again. A signal found ignored stays ignored (a background job's
Ctrl-C, nohup's SIGHUP), for the harness and for what it starts.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # Ctrl-C, `kill`, a closed terminal

Handler = Callable[[int, object], None]


class _Mode:
    __slots__ = ("handler", "signals", "done")  # compared by identity: two like_ctrl_c() are two modes

    def __init__(self, handler: Handler, signals: tuple[int, ...]):
        self.handler, self.signals, self.done = handler, signals, False


# The main thread's only. A signal can land between any two steps below, so each is kept
# harmless to cut short: a mode left behind is done (skipped, then dropped by the next
# outermost one), a handler not put back is still the switchboard, which does what it replaced.
_modes: list[_Mode] = []  # innermost last
_found: dict[int, object] = {}  # the handler the switchboard replaced, per signal, until put back
_owner: _Mode | None = None  # the outermost mode: it put the switchboard in


def _switchboard(signum: int, frame) -> None:
    for mode in reversed(_modes):
        if signum in mode.signals and not mode.done:
            mode.handler(signum, frame)
            return
    found = _found.get(signum, signal.SIG_DFL)
    if callable(found):
        found(signum, frame)
    elif signum == signal.SIGINT:  # Python's own default for Ctrl-C
        raise KeyboardInterrupt
    else:  # the default action: the process ends by this signal
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)


def _install() -> None:
    for sig in INTERRUPTS:
        found = signal.getsignal(sig)
        if found is _switchboard:  # still in: a restore was cut short, and _found has what it replaced
            continue
        if found == signal.SIG_IGN:  # ignored stays ignored
            _found.pop(sig, None)
            continue
        _found[sig] = found  # before it goes in: a signal right after the install finds its way back
        signal.signal(sig, _switchboard)


def _restore() -> None:
    """Every handler the switchboard replaced back, even when one put back raises at once (a
    Ctrl-C that came meanwhile): the rest are put back, then it goes on. One set from C
    (None) goes back as SIG_DFL."""
    raised = None
    while _found:
        try:
            while _found:
                sig = next(iter(_found))
                old = _found[sig]
                signal.signal(sig, signal.SIG_DFL if old is None else old)
                del _found[sig]  # cut short before this: putting the same handler back again is harmless
        except BaseException as e:
            raised = raised or e
    if raised:
        raise raised


@contextmanager
def _mode(handler: Handler, signals: tuple[int, ...] = INTERRUPTS) -> Iterator[None]:
    global _owner
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield
        return
    mode = _Mode(handler, signals)
    try:
        _modes.append(mode)  # before the switchboard goes in: it sends a signal here from the first install
        if _owner is None or _owner.done:
            _owner = mode
            _modes[:] = [mode]  # any left behind by a leave cut short
            _install()
        yield
    finally:
        # Left late (a generator closed only once the exception that cut its leave short is
        # collected) or from another thread: the switchboard stays in for the modes still
        # there, or for the next outermost one to take out.
        live: list[_Mode] = []  # no call before the try: a call's return is where a signal lands
        try:
            live = [m for m in _modes if m is not mode and not m.done]
            if _owner is mode and not live and threading.current_thread() is threading.main_thread():
                _restore()
        finally:
            mode.done = True
            if _owner is mode:
                _owner = live[0] if live else None
            if mode in _modes:
                _modes.remove(mode)


def _interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt


def handled_by(handler: Handler):
    """Within: Ctrl-C, SIGTERM and SIGHUP go to `handler` (a Run's own stop, harness.run.loop)."""
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
