"""harness/stop_signals.py: signals to the harness itself, on the main thread."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from harness.stop_signals import deferred, handled_by, like_ctrl_c


@pytest.fixture(autouse=True)
def ctrl_c_raises():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # even if pytest started ignoring it
    yield
    signal.signal(signal.SIGINT, previous)


def test_a_signal_inside_deferred_acts_once_the_block_is_done():
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with like_ctrl_c(), deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            steps.append("after the signal")  # not cut short
            steps.append("block done")
    assert steps == ["after the signal", "block done"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_deferred_inside_a_runs_handler_hands_the_signal_to_it_after_the_block():
    seen = []
    with handled_by(lambda signum, _frame: seen.append(signum)):
        with deferred():
            os.kill(os.getpid(), signal.SIGHUP)
            assert seen == []
        assert seen == [signal.SIGHUP]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_signal_deferred_past_an_error_still_acts():
    with pytest.raises(KeyboardInterrupt) as raised:
        with deferred():
            os.kill(os.getpid(), signal.SIGINT)
            raise OSError("disk full")
    assert isinstance(raised.value.__context__, OSError)


def test_the_handlers_are_back_after_each_block():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    for block in (lambda: handled_by(lambda *_: None), like_ctrl_c, deferred):
        with block():
            pass
        assert {sig: signal.getsignal(sig) for sig in before} == before


def test_nested_deferred_blocks_act_once_the_outer_one_is_done():
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with deferred():
            with deferred():
                os.kill(os.getpid(), signal.SIGINT)
            steps.append("inner done")  # the inner block handed it to the outer one, not to Ctrl-C
    assert steps == ["inner done"]


def test_a_ctrl_c_let_in_by_the_restore_still_restores_the_rest():
    import harness.stop_signals as stop_signals

    previous = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL, signal.SIGHUP: signal.SIG_DFL}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    real, calls = signal.signal, []

    def restore_then_interrupt(sig, handler):
        out = real(sig, handler)
        calls.append(sig)
        if len(calls) == 1:
            raise KeyboardInterrupt  # as the Ctrl-C handler just put back would, at once
        return out

    signal.signal = restore_then_interrupt
    try:
        with pytest.raises(KeyboardInterrupt):
            stop_signals._restore(previous)
    finally:
        signal.signal = real
    assert {sig: signal.getsignal(sig) for sig in previous} == previous


def test_a_mode_inside_another_swaps_no_handler(monkeypatch):
    """A nested mode is one list operation: no moment where one signal has the new mode and
    another the old one (a SIGHUP between two swaps used to reach the outer handler)."""
    with like_ctrl_c():
        swaps = []
        monkeypatch.setattr(signal, "signal", lambda *args: swaps.append(args))
        with deferred(), handled_by(lambda *_: None):
            pass
        monkeypatch.undo()
        assert swaps == []


def test_a_signal_amid_the_outermost_installs_goes_to_the_mode_being_entered(monkeypatch):
    install, seen = signal.signal, []

    def ctrl_c_amid_the_installs(signum, handler):
        if signum == signal.SIGTERM:  # SIGINT's is in, SIGTERM's and SIGHUP's are not
            signal.raise_signal(signal.SIGINT)
        return install(signum, handler)

    monkeypatch.setattr(signal, "signal", ctrl_c_amid_the_installs)
    with handled_by(lambda signum, _frame: seen.append(signum)):
        monkeypatch.undo()
    assert seen == [signal.SIGINT]


def test_like_ctrl_c_leaves_an_ignored_ctrl_c_ignored():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a background job's
    with like_ctrl_c():
        os.kill(os.getpid(), signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_a_signal_no_mode_takes_does_what_its_default_does():
    """Below every mode: the handler found, and for SIGTERM at its default the process ends."""
    code = ("import os, signal; from harness.stop_signals import _mode\n"
            "with _mode(lambda *_: None, (signal.SIGINT,)):\n"
            "    os.kill(os.getpid(), signal.SIGINT); print('ctrl-c taken', flush=True)\n"
            "    os.kill(os.getpid(), signal.SIGTERM); print('survived')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout) == (-signal.SIGTERM, "ctrl-c taken\n")
