"""harness/supervision/stop_signals.py: signals to the harness itself, on the main thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from harness.supervision.stop_signals import deferred, handled_by, like_ctrl_c

pytestmark = pytest.mark.usefixtures("as_from_a_terminal")  # tests/conftest.py


def test_a_signal_inside_deferred_acts_once_the_block_is_done():
    steps = []
    with pytest.raises(KeyboardInterrupt), like_ctrl_c(), deferred():
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
    with pytest.raises(KeyboardInterrupt) as raised, deferred():
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
    with pytest.raises(KeyboardInterrupt), deferred():
        with deferred():
            os.kill(os.getpid(), signal.SIGINT)
        steps.append("inner done")  # the inner block handed it to the outer one, not to Ctrl-C
    assert steps == ["inner done"]


def test_a_ctrl_c_let_in_by_the_restore_still_restores_the_rest(monkeypatch):
    import harness.supervision.stop_signals as stop_signals

    previous = {
        signal.SIGINT: signal.default_int_handler,
        signal.SIGTERM: signal.SIG_DFL,
        signal.SIGHUP: signal.SIG_DFL,
    }
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    real, calls = signal.signal, []

    def restore_then_interrupt(sig, handler):
        out = real(sig, handler)
        calls.append(sig)
        if len(calls) == 1:
            raise KeyboardInterrupt  # as the Ctrl-C handler just put back would, at once
        return out

    monkeypatch.setattr(stop_signals, "_found", dict(previous))
    monkeypatch.setattr(signal, "signal", restore_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        stop_signals._restore()
    monkeypatch.undo()
    assert {sig: signal.getsignal(sig) for sig in previous} == previous


def test_a_signal_right_after_an_install_still_has_its_handler_put_back(monkeypatch):
    """CPython runs a pending handler as signal.signal returns: what the switchboard replaced is on
    record before it goes in, so the handler found comes back."""
    install = signal.signal

    def sigterm_as_it_goes_in(signum, handler):
        out = install(signum, handler)
        if signum == signal.SIGTERM:
            monkeypatch.setattr(signal, "signal", install)
            signal.raise_signal(signal.SIGTERM)  # like_ctrl_c's: KeyboardInterrupt, right here
        return out

    monkeypatch.setattr(signal, "signal", sigterm_as_it_goes_in)
    with pytest.raises(KeyboardInterrupt), like_ctrl_c():
        pass
    assert {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)} == {
        signal.SIGINT: signal.default_int_handler,
        signal.SIGTERM: signal.SIG_DFL,
        signal.SIGHUP: signal.SIG_DFL,
    }
    with pytest.raises(KeyboardInterrupt), like_ctrl_c():  # and the next mode is the outermost again
        os.kill(os.getpid(), signal.SIGTERM)


CALLS = {"CALL", "CALL_FUNCTION_EX"}
# where CPython 3.11 runs pending handlers, besides a call's return and a function's start or a
# generator's resumption (a "call" event under tracing); a conditional jump back only when taken
CHECKS = {
    "JUMP_BACKWARD",
    "POP_JUMP_BACKWARD_IF_TRUE",
    "POP_JUMP_BACKWARD_IF_FALSE",
    "POP_JUMP_BACKWARD_IF_NONE",
    "POP_JUMP_BACKWARD_IF_NOT_NONE",
}


def _signal_at_check(k: int, signum: int, nest) -> int:
    """Run `nest` with `signum` landing at the k-th point in stop_signals or contextlib (its
    context managers) where CPython runs pending signal handlers (a function's start, a
    generator's resumption, a loop's jump back, a call's return — signal.signal included); its
    handler runs there and what it raises comes out there. Returns how many such points it went
    through: fewer than k, and the signal never came."""
    import contextlib
    import dis

    import harness.supervision.stop_signals as stop_signals

    files, count, previous = {stop_signals.__file__, contextlib.__file__}, 0, {}

    def check() -> None:
        nonlocal count
        count += 1
        if count == k:
            signal.raise_signal(signum)

    def local(frame, event, _arg):
        if event == "opcode":
            op = dis.opname[frame.f_code.co_code[frame.f_lasti]]
            after_call = previous.get(id(frame)) in CALLS and op != "PUSH_EXC_INFO"  # a call that raised: none
            previous[id(frame)] = op
            if op in CHECKS or after_call:
                check()
        return local

    def tracer(frame, event, _arg):
        if frame.f_code.co_filename not in files:
            return None
        frame.f_trace_opcodes = True
        previous.pop(id(frame), None)
        if event == "call":
            check()
        return local

    sys.settrace(tracer)
    try:
        nest()
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
    return count


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_at_any_bytecode_of_entering_or_leaving_modes_leaves_nothing_behind(signum, monkeypatch):
    """A signal can land between any two steps of entering or leaving a mode; whichever it is, the
    next outermost mode finds the switchboard out and the stack empty, or puts them right, and
    every handler ends as it was (a mode left on the stack for good made every later outermost
    one think itself nested: nothing installed, a SIGTERM killing the harness outright)."""
    import harness.supervision.stop_signals as stop_signals

    for sig in (signal.SIGTERM, signal.SIGHUP):  # so that a signal before the switchboard is in raises too
        signal.signal(sig, signal.default_int_handler)
    before = {s: signal.getsignal(s) for s in stop_signals.INTERRUPTS}

    def nest():
        with like_ctrl_c(), deferred(), handled_by(lambda *_: None), deferred():
            pass

    k = 0
    while True:
        k += 1
        traced = _signal_at_check(k, signum, nest)
        with like_ctrl_c():  # the next one, in calm
            assert len(stop_signals._modes) == 1, k  # it is the outermost: nothing left from before
            with pytest.raises(KeyboardInterrupt), deferred():
                os.kill(os.getpid(), signal.SIGTERM)
        assert (stop_signals._modes, stop_signals._found, getattr(stop_signals, "_owner", None)) == ([], {}, None), k
        assert {s: signal.getsignal(s) for s in before} == before, k
        if traced < k:
            break
    assert k > 60, k  # it went through the whole of it


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


def test_a_signal_found_ignored_stays_ignored_for_the_harness_and_what_it_starts():
    """A background job's Ctrl-C, nohup's SIGHUP: not even a run takes them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    seen = []
    with handled_by(lambda signum, _frame: seen.append(signum)):
        os.kill(os.getpid(), signal.SIGINT)
        child = subprocess.run(
            [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        os.kill(os.getpid(), signal.SIGTERM)
    assert seen == [signal.SIGTERM] and child.stdout.strip() == str(signal.SIG_IGN)
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_a_signal_no_mode_takes_does_what_its_default_does():
    """Below every mode: the handler found, and for SIGTERM at its default the process ends."""
    code = (
        "import os, signal; from harness.supervision.stop_signals import _mode\n"
        "with _mode(lambda *_: None, (signal.SIGINT,)):\n"
        "    os.kill(os.getpid(), signal.SIGINT); print('ctrl-c taken', flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGTERM); print('survived')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout) == (-signal.SIGTERM, "ctrl-c taken\n")
