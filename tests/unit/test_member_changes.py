"""A member restarted with changes (faults.base.MemberChanges, Targets.restart): its next
incarnations' spec carries the changed generation, assignor and client; the workload's other
members, and a later plain restart's spec, stay as they were told."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from faults.base import MemberChanges
from harness.run.clients import Member, WorkloadProcesses
from harness.run.targets import RunTargets
from harness.scenario import load_scenario
from runtime.errors import ClusterError, ScenarioError

BASE = {
    "name": "t",
    "duration_s": 30,
    "cluster": {"kafka": "4.4", "brokers": 1},
    "topics": [{"name": "events", "partitions": 4}],
    "workload": {"consumers": 2, "protocol": "classic-cooperative"},
}


class Cluster:
    def lane_bootstrap_servers(self, lane: int) -> str:
        return f"127.0.0.1:{9000 + lane}"


def workload(tmp_path: Path) -> WorkloadProcesses:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(BASE, sort_keys=False))
    processes = WorkloadProcesses.__new__(WorkloadProcesses)  # the scenario and the cluster's lanes are enough
    processes.scenario, processes.cluster, processes.run_dir, processes.services = (
        load_scenario(path),
        Cluster(),
        tmp_path,
        {},
    )
    processes.supervisor = None  # nothing is started
    return processes


def spec_of(member: Member):
    return member.spec()


def test_a_member_changed_runs_the_other_generation_and_back(tmp_path):
    w = workload(tmp_path)
    one, two = w.member("consumer-1"), w.member("consumer-2")
    before = spec_of(one)
    assert (before.protocol, before.group_protocol, before.assignor) == (
        "classic-cooperative",
        "classic",
        "cooperative-sticky",
    )
    one.change(MemberChanges(protocol="consumer"))
    after = spec_of(one)
    assert (after.protocol, after.group_protocol, after.assignor, after.assignor_runs_on) == (
        "consumer",
        "consumer",
        "uniform",  # the generation's default: the workload's assignor is a classic one
        "broker",
    )
    assert after.broker_timing and spec_of(two).protocol == "classic-cooperative"  # the others stay
    one.change(MemberChanges(client="confluent-kafka==2.10.1"))  # a later change keeps the protocol
    assert (spec_of(one).protocol, one.changes.client) == ("consumer", "confluent-kafka==2.10.1")
    one.change(MemberChanges(protocol="classic-cooperative"))  # back: the workload's own assignor again
    back = spec_of(one)
    assert (back.protocol, back.assignor, one.changes.client) == (
        "classic-cooperative",
        "cooperative-sticky",
        "confluent-kafka==2.10.1",
    )


def test_an_assignor_is_changed_only_with_its_generation():
    with pytest.raises(ValueError, match="with the protocol generation"):
        MemberChanges(assignor="range")
    assert MemberChanges(protocol="consumer", assignor="range").then(MemberChanges(protocol="classic-eager")) == (
        MemberChanges(protocol="classic-eager")
    )


def test_targets_restart_a_member_changed_and_refuse_changes_to_anything_else(tmp_path):
    started = []

    class Recorded(Member):
        def __init__(self):  # a member slot that records what it is asked
            pass

        def change(self, changes):
            started.append(("change", changes))

        def start(self):
            started.append("start")

    m = Recorded()
    broker = SimpleNamespace(start=lambda: started.append("broker"))
    targets = RunTargets(
        SimpleNamespace(services={"broker-1": broker}),
        SimpleNamespace(services={"consumer-1": m}, scenario=SimpleNamespace(subscribes=None)),
        observer=None,
        history=None,
    )
    changes = MemberChanges(protocol="consumer")
    targets.restart("consumer-1", changes)
    targets.restart("consumer-1")
    assert started == [("change", changes), "start", "start"]
    with pytest.raises(ClusterError, match="broker-1 is not a member of the group"):
        targets.restart("broker-1", changes)


def test_a_member_changed_comes_back_with_its_new_timeouts_and_keeps_them(tmp_path):
    w = workload(tmp_path)
    one, two = w.member("consumer-1"), w.member("consumer-2")
    assert (spec_of(one).session_timeout_ms, spec_of(one).max_poll_interval_ms) == (6000, 300_000)
    one.change(MemberChanges(session_timeout_ms=20_000))
    assert (spec_of(one).session_timeout_ms, spec_of(one).max_poll_interval_ms) == (20_000, 300_000)
    one.change(MemberChanges(max_poll_interval_ms=10_000))  # a later change keeps the earlier one
    assert (spec_of(one).session_timeout_ms, spec_of(one).max_poll_interval_ms) == (20_000, 10_000)
    one.change(MemberChanges(client="confluent-kafka==2.10.1"))
    assert spec_of(one).session_timeout_ms == 20_000
    assert (spec_of(two).session_timeout_ms, spec_of(two).max_poll_interval_ms) == (6000, 300_000)  # the others stay


def scenario_problems(tmp_path: Path, fault: dict, **workload) -> str:
    data = {**BASE, "workload": {**BASE["workload"], **workload}, "faults": [fault]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    try:
        load_scenario(path)
    except ScenarioError as e:
        return str(e)
    return ""


def test_a_rolling_restart_brings_new_timeouts_to_members_only(tmp_path):
    deploy = {"kind": "rolling-restart", "at_s": 3, "targets": ["consumer-1"], "session_timeout_ms": 20_000}
    assert scenario_problems(tmp_path, deploy) == ""
    assert scenario_problems(tmp_path, {**deploy, "targets": "consumers", "max_poll_interval_ms": 9000}) == ""
    assert "a rolling restart of members only" in scenario_problems(tmp_path, {**deploy, "targets": "brokers"})
    assert "a rolling restart of members only" in scenario_problems(tmp_path, {**deploy, "targets": ["broker-1"]})
    assert "above workload.heartbeat_interval_ms (1000)" in scenario_problems(
        tmp_path, {**deploy, "session_timeout_ms": 1000}
    )
    assert "is the brokers'" in scenario_problems(tmp_path, deploy, protocol="consumer")
    # KIP-848 members still take a new max.poll.interval.ms: it is their own
    assert (
        scenario_problems(
            tmp_path, {**deploy, "session_timeout_ms": None, "max_poll_interval_ms": 9000}, protocol="consumer"
        )
        == ""
    )
    assert "session_timeout_ms" in scenario_problems(tmp_path, {**deploy, "session_timeout_ms": 999})


def test_a_rolling_restart_restarts_each_member_with_its_changes():
    from faults.rolling_restart import RollingRestart, RollingRestartSpec

    restarted = []
    targets = SimpleNamespace(
        kill=lambda name, sig: None,
        restart=lambda name, changes=None: restarted.append((name, changes)),
        is_running=lambda name: True,
    )
    spec = RollingRestartSpec(
        kind="rolling-restart", at_s=0, targets=["consumer-1"], down_s=0, max_poll_interval_ms=9000
    )
    fault = RollingRestart(spec=spec, fault_id="f1")
    fault._names = ["consumer-1"]
    fault._round(targets)
    assert restarted == [("consumer-1", MemberChanges(max_poll_interval_ms=9000))]
    plain = RollingRestart(
        spec=RollingRestartSpec(kind="rolling-restart", at_s=0, targets=["consumer-1"], down_s=0), fault_id="f2"
    )
    plain._names = ["consumer-1"]
    plain._round(targets)
    assert restarted[-1] == ("consumer-1", None)


def test_a_rolling_restart_that_breaks_partway_fails_its_heal_and_starts_the_rest():
    """A member host's member that would not go (its close and its crash both waited on its JoinGroup)
    broke a 1,000-member run's round in its thread, unrecorded: now its heal fails, naming it."""
    from faults.rolling_restart import RollingRestart, RollingRestartSpec
    from runtime.errors import ClusterError

    running = {"consumer-1": True, "consumer-2": True, "consumer-3": True}
    restarted = []

    def kill(name, sig):
        if name == "consumer-2":
            raise ClusterError("consumer-2 did not go within its host member-host-1's stop timeout")
        running[name] = False

    def restart(name, changes=None):
        restarted.append(name)
        running[name] = True

    targets = SimpleNamespace(
        kill=kill, restart=restart, is_running=lambda name: running[name], group_names=lambda which: list(running)
    )
    spec = RollingRestartSpec(kind="rolling-restart", at_s=0, targets="consumers", down_s=0, interval_s=0)
    fault = RollingRestart(spec=spec, fault_id="f1")
    fault.inject(targets)
    fault._thread.join(5)
    with pytest.raises(RuntimeError, match="the round stopped at consumer-2: ClusterError: consumer-2 did not go"):
        fault.heal(targets)
    assert restarted == ["consumer-1"] and all(running.values())
