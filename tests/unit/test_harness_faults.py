"""faults/: every fault kind from its scenario entry, the link table, and the scheduler that
injects and heals faults (against tests/fake_targets.py, which implements all of ``Targets``)."""

from __future__ import annotations

import inspect
import signal
import threading
import time

import pytest

from faults import catalogue, schedule
from faults.crash import Crash
from faults.pause import Pause
from faults.schedule import FaultScheduler
from tests.fake_targets import FakeTargets
from tests.lines import unlined


def from_spec(fault_id: str, spec: dict):
    return catalogue.from_spec({"fault_id": fault_id, **spec})


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
        "f1",
        "consumer-2",
        8.0,
        {"duration_s": 12},
        12.0,
    )
    crash = from_spec(
        "f2", {"kind": "crash", "target": "broker-2", "at_s": 26, "signal": "SIGTERM", "restart_after_s": 8}
    )
    assert isinstance(crash, Crash) and crash.heal_after_s == 8.0
    targets = FakeTargets()
    pause.inject(targets), pause.heal(targets), crash.inject(targets), crash.heal(targets)
    assert targets.actions() == [
        ("pause", "consumer-2"),
        ("resume", "consumer-2"),
        ("kill", "broker-2", signal.SIGTERM),
        ("restart", "broker-2"),
    ]


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
    assert started == {
        "name": "fault_started",
        "fault_id": "f1",
        "kind": "pause",
        "target": "consumer-2",
        "params": {"duration_s": 0.1},
        "effects": {"silences": "heartbeats", "silenced_as": "paused", "down": "paused", "restart_after_s": None},
    }
    assert events[1]["how"] == "scheduled" and s.active == {}
    # fault_healed says when healing began: a resumed member may write before the event is
    assert t_pause < events[1]["started_mono_ms"] / 1000 - targets.t0 <= t_resume


def test_overlapping_faults_interleave_by_time():
    targets = FakeTargets()
    s, events = scheduler(
        [
            {"kind": "pause", "target": "consumer-1", "at_s": 0.05, "duration_s": 0.2},  # 0.05 .. 0.25
            {"kind": "crash", "target": "broker-2", "at_s": 0.1, "restart_after_s": 0.05},  # 0.10 .. 0.15
            {"kind": "crash", "target": "consumer-3", "at_s": 0.12},  # 0.12, no restart
        ],
        targets,
    )
    s.start()
    wait_until(lambda: len(events) == 6)
    assert targets.actions() == [
        ("pause", "consumer-1"),
        ("kill", "broker-2", signal.SIGKILL),
        ("kill", "consumer-3", signal.SIGKILL),
        ("restart", "broker-2"),
        ("resume", "consumer-1"),
    ]
    assert events.names() == [
        ("fault_started", "f1"),
        ("fault_started", "f2"),
        ("fault_started", "f3"),
        ("fault_healed", "f3"),
        ("fault_healed", "f2"),
        ("fault_healed", "f1"),
    ]


def test_heal_all_heals_active_faults_once_and_stops_the_schedule():
    targets = FakeTargets()
    s, events = scheduler(
        [
            {"kind": "pause", "target": "consumer-1", "at_s": 0.0, "duration_s": 30},
            {"kind": "pause", "target": "consumer-2", "at_s": 20, "duration_s": 1},  # never reached
        ],
        targets,
    )
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
    faults = [
        from_spec("f1", {"kind": "pause", "target": "consumer-9", "at_s": 0.0, "duration_s": 0.05}),
        from_spec("f2", {"kind": "pause", "target": "consumer-1", "at_s": 0.05, "duration_s": 0.05}),
    ]
    events = Events()
    s = FaultScheduler(faults, targets, events, reports.append)
    s.start()
    wait_until(lambda: len(events) == 3)
    assert events[0] == {
        "name": "fault_failed",
        "fault_id": "f1",
        "kind": "pause",
        "target": "consumer-9",
        "error": "no process named 'consumer-9'",
    }
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

    def kill(self, name, sig):
        time.sleep(self.stop_s)
        super().kill(name, sig)


def test_a_scheduled_heal_lets_a_slow_rolling_round_finish_while_other_faults_keep_their_times():
    targets = SlowStopTargets(stop_s=0.15)
    # Nominal round: 3 x (0.05 down + 0.05 interval) = 0.3 s; the stops add 0.45 s.
    s, events = scheduler(
        [
            {
                "kind": "rolling-restart",
                "targets": "brokers",
                "signal": "SIGTERM",
                "at_s": 0.0,
                "down_s": 0.05,
                "interval_s": 0.05,
            },
            {"kind": "pause", "target": "consumer-1", "at_s": 0.35, "duration_s": 0.05},
        ],
        targets,
    )
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
    s, events = scheduler(
        [
            {
                "kind": "rolling-restart",
                "targets": "brokers",
                "signal": "SIGTERM",
                "at_s": 0.0,
                "down_s": 0.05,
                "interval_s": 5,
            }
        ],
        targets,
    )
    s.start()
    wait_until(lambda: any(c[1] == "restart" for c in targets.calls))
    s.heal_all("end-of-workload")
    assert [c[1:3] for c in targets.calls] == [("kill", "broker-1"), ("restart", "broker-1")]
    assert events.names() == [("fault_started", "f1"), ("fault_healed", "f1")]


# --- every kind, one package each --------------------------------------------------------------


def test_the_fake_and_the_runs_targets_implement_every_method_of_targets():
    from faults.base import Targets
    from harness.run.targets import RunTargets

    protocol = {
        name: inspect.signature(method)
        for name, method in vars(Targets).items()
        if callable(method) and not name.startswith("_")
    }
    assert len(protocol) == 22
    for implementation in (FakeTargets, RunTargets):
        for name, signature in protocol.items():
            method = getattr(implementation, name, None)
            assert callable(method), f"{implementation.__name__} has no {name}"
            assert list(inspect.signature(method).parameters) == list(signature.parameters), (implementation, name)


def test_the_catalogue_names_each_kind_once_and_the_scenario_takes_its_kinds_from_it():
    from harness.scenario import FAULT_KINDS, RANDOM_KINDS

    assert FAULT_KINDS == tuple(catalogue.KINDS) == tuple(catalogue.SPECS)
    assert FAULT_KINDS == (
        "pause",
        "crash",
        "network",
        "zk-session-expiry",
        "poll-stall",
        "rolling-restart",
        "protocol-migration",
        "join-storm",
        "scale",
        "add-partitions",
        "create-topic",
        "rolling-broker-upgrade",
        "rolling-client-upgrade",
        "message",
    )
    assert RANDOM_KINDS == (
        "pause",
        "crash",
        "network",
        "poll-stall",
        "message",
    )  # the order every seeded draw relies on
    assert all(fault.Spec.kind_name() == kind for kind, fault in catalogue.KINDS.items())


@pytest.mark.parametrize(
    "entry, heal_after_s, injected, healed",
    [
        (
            {"kind": "pause", "target": "consumer-1", "duration_s": 3},
            3.0,
            [("pause", "consumer-1")],
            [("resume", "consumer-1")],
        ),
        (
            {"kind": "crash", "target": "coordinator", "signal": "SIGTERM", "restart_after_s": 4},
            4.0,
            [("kill", "broker-1", signal.SIGTERM)],
            [("restart", "broker-1")],
        ),
        (
            {
                "kind": "network",
                "target": "consumer-2",
                "duration_s": 5,
                "link": "coordinator",
                "effect": "latency",
                "latency_ms": 80,
            },
            5.0,
            [
                ("add_toxic", "consumer-2.to.broker-1", f"f1-latency-{s}", {"latency": 80, "jitter": 0})
                for s in ("upstream", "downstream")
            ],
            [("remove_toxic", "consumer-2.to.broker-1", f"f1-latency-{s}") for s in ("upstream", "downstream")],
        ),
        (
            {"kind": "network", "target": "broker-2", "duration_s": 1, "link": "zookeeper", "effect": "refuse"},
            1.0,
            [("set_enabled", "broker-2.to.zookeeper", False)],
            [("set_enabled", "broker-2.to.zookeeper", True)],
        ),
        ({"kind": "zk-session-expiry", "target": "broker-3"}, 0.0, [("expire_zookeeper_session", "broker-3")], []),
        (
            {"kind": "zk-session-expiry", "target": "broker-3", "method": "network"},
            9.0,
            [
                ("add_toxic", "broker-3.to.zookeeper", f"f1-timeout-{s}", {"timeout": 0})
                for s in ("upstream", "downstream")
            ],
            [("remove_toxic", "broker-3.to.zookeeper", f"f1-timeout-{s}") for s in ("upstream", "downstream")],
        ),
        (
            {"kind": "poll-stall", "target": "consumer-3", "duration_s": 2.5},
            2.5,
            [("command", "consumer-3", {"command": "poll-stall", "fault_id": "f1", "duration_s": 2.5})],
            [("command", "consumer-3", {"command": "poll-stall-end", "fault_id": "f1"})],
        ),
        ({"kind": "join-storm", "consumers": 2}, 0.0, [("start_consumers", 2, ["consumer-4", "consumer-5"])], []),
        ({"kind": "scale", "consumers": 1}, 0.0, [("scale_consumers", 1, ["consumer-2", "consumer-3"])], []),
        ({"kind": "add-partitions", "topic": "events", "partitions": 12}, 0.0, [("add_partitions", "events", 12)], []),
        ({"kind": "create-topic", "topic": "events-2", "partitions": 4}, 0.0, [("create_topic", "events-2", 4)], []),
    ],
)
def test_each_kind_injects_and_heals_from_its_typed_options(entry, heal_after_s, injected, healed):
    fault = from_spec("f1", {"at_s": 1, **entry})
    assert fault.params == {
        k: v for k, v in entry.items() if k not in ("kind", "target")
    }  # as written, for the history
    targets = FakeTargets()
    fault.resolved = targets.resolve(fault.target) if fault.target else None
    fault.inject(targets)
    assert (targets.actions(), fault.heal_after_s) == (injected, heal_after_s)  # the network way: 6 s session + 3 s
    fault.heal(targets)
    assert targets.actions()[len(injected) :] == healed


def test_a_schedule_entry_is_validated_by_its_kind():
    with pytest.raises(ValueError, match="duration_s"):
        from_spec("f1", {"kind": "pause", "target": "consumer-1", "at_s": 1})


def test_validation_and_injection_read_one_link_table():
    """Every link validation accepts is one the network plan has proxies for, and no other."""
    import itertools

    from faults.base import ScenarioFacts
    from faults.network import links, proxies
    from harness.cluster.network import NetworkPlan

    ports = itertools.count(20_000)
    plan = NetworkPlan(
        brokers=[1, 2, 3],
        lanes=2,
        zookeeper_ports={"zookeeper-1": 2181},
        port=lambda: next(ports),
        coordinators=["coordinator-1", "coordinator-2"],
    )
    members, brokers, instances = (
        ("consumer-1", "consumer-2"),
        ("broker-1", "broker-2", "broker-3"),
        ("coordinator-1", "coordinator-2"),
    )
    facts = ScenarioFacts(
        targets=(*members, *brokers, *instances, "producer", "coordinator"),
        members=members,
        brokers=brokers,
        coordinator_instances=instances,
        kafka="3.9",
        zookeeper=True,
        driver="librdkafka",
        topics={},
    )
    every_link = ["brokers", "clients", "zookeeper", *brokers, *instances]
    for target in (*members, *brokers, *instances):
        accepted = [link for link in links(target, facts) if link != target]
        assert accepted and set(accepted) - {"coordinator"} <= set(every_link)
        for link in every_link:
            if link in accepted:
                cut = proxies(plan, target, link)
                assert cut and set(cut) <= set(plan.routes), (target, link)
            else:
                with pytest.raises(ValueError, match="is not a link of"):
                    proxies(plan, target, link)
    assert links("producer", facts) == [] and links("coordinator", facts) == ["zookeeper", "clients"]


def test_a_topic_created_by_a_fault_can_be_grown_by_a_later_one(tmp_path):
    from harness.scenario import load_scenario
    from runtime.errors import ScenarioError

    path = tmp_path / "s.yaml"
    path.write_text("""
name: grow-a-new-topic
duration_s: 60
topics: [{name: events, partitions: 3}]
workload: {topic_pattern: "^events.*"}
faults:
  - {kind: create-topic, at_s: 5, topic: events-new, partitions: 2}
  - {kind: add-partitions, at_s: 10, topic: events-new, partitions: 4}
  - {kind: add-partitions, at_s: 20, topic: events-new, partitions: 2}  # the 4 the fault before made it
""")
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    assert unlined(e.value.problems) == [("faults[3].partitions", "2 is not more than the 4 partitions events-new has")]


class SlowPauseTargets(FakeTargets):
    """A pause that takes until it is let go: an injection that outlasts heal_all's join."""

    def __init__(self):
        super().__init__()
        self.pausing, self.go_on = threading.Event(), threading.Event()

    def pause(self, name):
        self.pausing.set()
        assert self.go_on.wait(10)
        super().pause(name)


def test_heal_all_waits_for_an_injection_that_outlasts_its_join_and_heals_it(monkeypatch):
    monkeypatch.setattr(schedule, "JOIN_S", 0.05)
    targets = SlowPauseTargets()
    s, events = scheduler([{"kind": "pause", "target": "consumer-1", "at_s": 0.0, "duration_s": 30}], targets)
    s.start()
    assert targets.pausing.wait(3)
    join = s._thread.join

    def join_then_let_the_pause_finish(timeout=None):
        join(timeout)  # times out: the pause is still under way
        targets.go_on.set()

    s._thread.join = join_then_let_the_pause_finish
    s.heal_all("end-of-run")
    assert events.names() == [("fault_started", "f1"), ("fault_healed", "f1")]
    assert targets.actions() == [("pause", "consumer-1"), ("resume", "consumer-1")] and s.active == {}
