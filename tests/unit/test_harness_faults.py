"""faults/: process faults from scenario specs, and the scheduler that injects and heals them."""
from __future__ import annotations

import signal
import time

import pytest

from faults import catalogue
from faults.process import Crash, Pause
from faults.schedule import FaultScheduler


def from_spec(fault_id: str, spec: dict):
    return catalogue.from_spec({"fault_id": fault_id, **spec})


class FakeTargets:
    """Records (seconds since creation, action, target[, signal]) instead of touching processes."""

    def __init__(self, broken: tuple[str, ...] = ()):
        self.t0 = time.monotonic()
        self.calls: list[tuple] = []
        self.broken = broken

    def _record(self, *call):
        if call[1] in self.broken:
            raise RuntimeError(f"no process named {call[1]!r}")
        self.calls.append((time.monotonic() - self.t0, *call))

    def resolve(self, name): return name
    def pause(self, name): self._record("pause", name)
    def resume(self, name): self._record("resume", name)
    def kill(self, name, sig): self._record("kill", name, sig)
    def restart(self, name): self._record("restart", name)

    def actions(self):
        return [c[1:] for c in self.calls]


class Events(list):
    def __call__(self, name, **fields):
        self.append({"name": name, **fields})

    def names(self):
        return [(e["name"], e["fault_id"]) for e in self]


def wait_until(predicate, timeout=3.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def scheduler(specs, targets):
    events = Events()
    s = FaultScheduler([from_spec(f"f{i}", spec) for i, spec in enumerate(specs, 1)], targets, events)
    return s, events


def test_from_spec_builds_pause_and_crash():
    pause = from_spec("f1", {"kind": "pause", "target": "consumer-2", "at_s": 8, "duration_s": 12})
    assert isinstance(pause, Pause)
    assert (pause.fault_id, pause.target, pause.at_s, pause.params, pause.heal_after_s) == (
        "f1", "consumer-2", 8.0, {"duration_s": 12}, 12.0)
    crash = from_spec("f2", {"kind": "crash", "target": "broker-2", "at_s": 26, "signal": "SIGTERM", "restart_after_s": 8})
    assert isinstance(crash, Crash) and crash.heal_after_s == 8.0
    targets = FakeTargets()
    pause.inject(targets), pause.heal(targets), crash.inject(targets), crash.heal(targets)
    assert targets.actions() == [("pause", "consumer-2"), ("resume", "consumer-2"),
                                 ("kill", "broker-2", signal.SIGTERM), ("restart", "broker-2")]


def test_crash_without_restart_kills_with_sigkill_and_heals_as_a_no_op():
    crash = from_spec("f1", {"kind": "crash", "target": "consumer-1", "at_s": 1})
    assert crash.heal_after_s == 0.0
    targets = FakeTargets()
    crash.inject(targets)
    crash.heal(targets)
    assert targets.actions() == [("kill", "consumer-1", signal.SIGKILL)]


def test_pause_is_injected_then_healed_on_time():
    targets = FakeTargets()
    s, events = scheduler([{"kind": "pause", "target": "consumer-2", "at_s": 0.05, "duration_s": 0.1}], targets)
    s.start()
    wait_until(lambda: len(targets.calls) == 2)
    (t_pause, *pause), (t_resume, *resume) = targets.calls
    assert (pause, resume) == (["pause", "consumer-2"], ["resume", "consumer-2"])
    assert 0.05 <= t_pause < 1.0  # not before at_s (upper bounds are loose: CI machines are busy)
    assert 0.15 <= t_resume < t_pause + 1.0  # heals at at_s + duration_s on the schedule's clock
    assert events.names() == [("fault_started", "f1"), ("fault_healed", "f1")]
    started = dict(events[0])
    # stamped with when injection began (the writer would stamp it later otherwise)
    injected_at = started.pop("mono_ms") / 1000 - targets.t0
    assert 0.05 <= injected_at <= t_pause and started.pop("ts") > 0
    assert started == {"name": "fault_started", "fault_id": "f1", "kind": "pause", "target": "consumer-2",
                       "params": {"duration_s": 0.1}}
    assert events[1]["how"] == "scheduled" and s.active == {}


def test_overlapping_faults_interleave_by_time():
    targets = FakeTargets()
    s, events = scheduler([
        {"kind": "pause", "target": "consumer-1", "at_s": 0.05, "duration_s": 0.2},      # 0.05 .. 0.25
        {"kind": "crash", "target": "broker-2", "at_s": 0.1, "restart_after_s": 0.05},  # 0.10 .. 0.15
        {"kind": "crash", "target": "consumer-3", "at_s": 0.12},                         # 0.12, no restart
    ], targets)
    s.start()
    wait_until(lambda: len(events) == 6)
    assert targets.actions() == [("pause", "consumer-1"), ("kill", "broker-2", signal.SIGKILL),
                                 ("kill", "consumer-3", signal.SIGKILL), ("restart", "broker-2"), ("resume", "consumer-1")]
    assert events.names() == [("fault_started", "f1"), ("fault_started", "f2"), ("fault_started", "f3"),
                              ("fault_healed", "f3"), ("fault_healed", "f2"), ("fault_healed", "f1")]


def test_heal_all_heals_active_faults_once_and_stops_the_schedule():
    targets = FakeTargets()
    s, events = scheduler([
        {"kind": "pause", "target": "consumer-1", "at_s": 0.0, "duration_s": 30},
        {"kind": "pause", "target": "consumer-2", "at_s": 20, "duration_s": 1},  # never reached
    ], targets)
    s.start()
    wait_until(lambda: "f1" in s.active)
    s.heal_all("end-of-run")
    s.heal_all("end-of-run")
    time.sleep(0.05)
    assert targets.actions() == [("pause", "consumer-1"), ("resume", "consumer-1")]
    assert events.names() == [("fault_started", "f1"), ("fault_healed", "f1")]
    assert events[-1]["how"] == "end-of-run" and s.active == {}


def test_a_failing_inject_is_recorded_and_the_schedule_goes_on():
    targets = FakeTargets(broken=("consumer-9",))
    reports = []
    faults = [from_spec("f1", {"kind": "pause", "target": "consumer-9", "at_s": 0.0, "duration_s": 0.05}),
              from_spec("f2", {"kind": "pause", "target": "consumer-1", "at_s": 0.05, "duration_s": 0.05})]
    events = Events()
    s = FaultScheduler(faults, targets, events, reports.append)
    s.start()
    wait_until(lambda: len(events) == 3)
    assert events[0] == {"name": "fault_failed", "fault_id": "f1", "kind": "pause", "target": "consumer-9",
                         "error": "no process named 'consumer-9'"}
    assert events.names()[1:] == [("fault_started", "f2"), ("fault_healed", "f2")]
    assert targets.actions() == [("pause", "consumer-1"), ("resume", "consumer-1")]  # f1 is never healed
    assert "could not be injected" in reports[0]


def test_a_failing_heal_is_recorded():
    targets = FakeTargets()
    s, events = scheduler([{"kind": "pause", "target": "consumer-1", "at_s": 0.0, "duration_s": 30}], targets)
    s.start()
    wait_until(lambda: "f1" in s.active)
    targets.broken = ("consumer-1",)
    s.heal_all("end-of-run")
    assert events.names() == [("fault_started", "f1"), ("fault_heal_failed", "f1")]
    assert s.active == {}


@pytest.mark.parametrize("how", ["end-of-workload", "end-of-run"])
def test_heal_all_before_start_does_nothing(how):
    targets = FakeTargets()
    s, events = scheduler([{"kind": "pause", "target": "consumer-1", "at_s": 0.0, "duration_s": 1}], targets)
    s.heal_all(how)
    assert targets.calls == [] and events == []


class SlowStopTargets(FakeTargets):
    """Each stop takes a while, as a broker's controlled shutdown does."""

    def __init__(self, stop_s: float):
        super().__init__()
        self.stop_s = stop_s

    def group_names(self, which): return ["broker-1", "broker-2", "broker-3"]
    def is_running(self, name): return True

    def kill(self, name, sig):
        time.sleep(self.stop_s)
        super().kill(name, sig)


def test_a_scheduled_heal_lets_a_slow_rolling_round_finish_while_other_faults_keep_their_times():
    targets = SlowStopTargets(stop_s=0.15)
    # Nominal round: 3 x (0.05 down + 0.05 interval) = 0.3 s; the stops add 0.45 s.
    s, events = scheduler([{"kind": "rolling-restart", "targets": "brokers", "signal": "SIGTERM", "at_s": 0.0, "down_s": 0.05, "interval_s": 0.05},
                           {"kind": "pause", "target": "consumer-1", "at_s": 0.35, "duration_s": 0.05}], targets)
    s.start()
    wait_until(lambda: ("fault_healed", "f1") in events.names())
    s.heal_all("end-of-run")
    restarted = [c[2] for c in targets.calls if c[1] == "restart"]
    assert restarted == ["broker-1", "broker-2", "broker-3"]  # every broker bounced, none skipped
    pause = next(c[0] for c in targets.calls if c[1] == "pause")
    assert pause < 0.5  # the pause was not held up behind the round (nominally at 0.35 s)
    assert events.names().index(("fault_healed", "f1")) > events.names().index(("fault_healed", "f2"))


def test_a_forced_heal_cuts_a_rolling_round_short_and_leaves_everyone_running():
    targets = SlowStopTargets(stop_s=0.0)
    s, events = scheduler([{"kind": "rolling-restart", "targets": "brokers", "signal": "SIGTERM", "at_s": 0.0, "down_s": 0.05, "interval_s": 5}], targets)
    s.start()
    wait_until(lambda: any(c[1] == "restart" for c in targets.calls))
    s.heal_all("end-of-workload")
    assert [c[1:3] for c in targets.calls] == [("kill", "broker-1"), ("restart", "broker-1")]
    assert events.names() == [("fault_started", "f1"), ("fault_healed", "f1")]
