"""harness/stop_signals.py: signals to the harness itself, on the main thread."""
from __future__ import annotations

import os
import signal

import pytest

from harness.stop_signals import deferred, ignored, like_ctrl_c


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


def test_deferred_inside_ignored_keeps_ignoring():
    with ignored(), deferred():
        os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_signal_deferred_past_an_error_still_acts():
    with pytest.raises(KeyboardInterrupt) as raised:
        with deferred():
            os.kill(os.getpid(), signal.SIGINT)
            raise OSError("disk full")
    assert isinstance(raised.value.__context__, OSError)


def test_the_handlers_are_back_after_each_block():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    for block in (ignored, like_ctrl_c, deferred):
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
