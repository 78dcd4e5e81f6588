"""Capacity sweeps (harness/campaigns/capacity.py): points built from the base scenario and validated before
anything runs; bad sweep files are one message per problem (exit 2). Real runs: tests/integration/test_capacity.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.campaigns.capacity import PointProfile, load_sweep
from harness.cli import main
from harness.scenario.cluster import group_size_needed
from runtime.errors import ScenarioError
from tests.lines import unlined

PROFILES = Path(__file__).resolve().parents[2] / "profiles"


def test_each_point_is_a_load_run_of_the_base_scenario_at_its_size_partitions_rate_and_protocol():
    sweep = load_sweep(PROFILES / "capacity.yaml")
    assert [p.id for p in sweep.points][:4] == [  # smallest groups first
        "classic-eager-m4-p64-r400",
        "classic-cooperative-m4-p64-r400",
        "consumer-m4-p64-r400",
        "classic-eager-m16-p64-r400",
    ]
    kip848 = next(p for p in sweep.points if p.protocol == "consumer" and p.members == 64)
    s = kip848.scenario
    assert (s.cluster.kafka, s.workload.protocol, s.workload.consumers) == ("4.4.0", "consumer", 1)
    assert (s.topics[0].partitions, s.workload.producer.rate) == (64, 400)
    assert s.load.peak(1) == 64 and s.load.length_s(1) == s.duration_s == 70  # the workload lasts until it is over
    assert [st.kind for st in s.load.stages] == ["ramp", "hold", "sawtooth"]
    assert (s.load.stages[2].low, s.load.stages[2].high) == (62, 64)
    assert s.faults == [] and s.name == "capacity-consumer-m64-p64-r400"


@pytest.mark.parametrize(
    "text, reason",
    [
        (
            "name: x\nbase: capacity-base.yaml\nsweep: {members: [2], protocol: [classic-eager]}\nextra: 1",
            "extra: unknown key",
        ),
        (
            "name: x\nbase: nowhere.yaml\nsweep: {members: [2], protocol: [classic-eager]}",
            "base: nowhere.yaml: no such scenario",
        ),
        (
            "name: x\nbase: capacity-base.yaml\nsweep: {members: [0], protocol: [classic-eager]}",
            "sweep.members[1]: must be at least 1, got 0",
        ),
        (
            "name: x\nbase: pattern-base.yaml\nsweep: {members: [2], protocol: [coordinator-v1]}",
            "point x-coordinator-v1-m2-p16-r200: workload.topic_pattern: coordinator-v1 members subscribe to topics by name",
        ),
        (
            "name: x\nbase: capacity-base.yaml\nsweep: {members: [2], protocol: [classic-eager], partitions: [5000]}",
            "sweep.partitions[1]: must be at most 4000",
        ),
        (
            "name: x\nbase: capacity-base.yaml\n"
            "sweep: {members: [2], protocol: [classic-eager], partitions: [4], partitions_per_member: [2]}",
            "sweep.partitions_per_member: give partitions or partitions_per_member, not both",
        ),
        (
            "name: x\nbase: capacity-base.yaml\n"
            "sweep: {members: [10, 1000], protocol: [classic-eager], partitions_per_member: [5]}",
            "sweep.partitions_per_member: 1000 members x 5 is 5000 partitions; a topic has at most 4000",
        ),
        (
            "name: x\nbase: capacity-base.yaml\nsweep: {members: [2], protocol: [classic-eager]}\n"
            "profile: {restart_down_s: 1}",
            "profile.restart_down_s: 1s; at least 2",
        ),
        (
            "name: x\nbase: capacity-base.yaml\nsweep: {members: [2], protocol: [classic-eager]}\n"
            "profile: {restart_down_s: 3, hold_s: 0}",
            "profile.restart_down_s: the restart is in the hold: hold_s must be above 0",
        ),
        (
            "name: x\nbase: capacity-base.yaml\nsweep: {members: [200], protocol: [classic-eager]}\n"
            "members_per_host: 300",
            "members_per_host: must be at most 250",
        ),
    ],
)
def test_a_bad_sweep_is_named_before_anything_runs(tmp_path, text, reason):
    base = (PROFILES / "capacity-base.yaml").read_text()
    (tmp_path / "capacity-base.yaml").write_text(base)
    (tmp_path / "pattern-base.yaml").write_text(
        base.replace("  group: capacity", "  group: capacity\n  topic_pattern: '^ev.*'")
    )
    (tmp_path / "sweep.yaml").write_text(text)
    with pytest.raises(ScenarioError) as e:
        load_sweep(tmp_path / "sweep.yaml")
    assert reason in unlined(str(e.value)), unlined(str(e.value))
    result = CliRunner().invoke(main, ["capacity", str(tmp_path / "sweep.yaml"), "--runs-dir", str(tmp_path / "runs")])
    assert result.exit_code == 2 and reason in unlined(result.output) and not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "in_the_way, reason",
    [
        ("runs", "/runs: a file, not a directory"),  # refused before anything is made in it
        ("runs/capacity-small/capacity.json", "capacity.json: not a sweep's state (JSONDecodeError"),
    ],
)
def test_a_file_in_the_sweeps_way_is_bad_input(tmp_path, in_the_way, reason):
    (tmp_path / in_the_way).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / in_the_way).write_text("{not json")
    result = CliRunner().invoke(
        main, ["capacity", str(PROFILES / "capacity-small.yaml"), "--runs-dir", str(tmp_path / "runs")]
    )
    assert result.exit_code == 2 and reason in result.output.replace("\n", ""), unlined(result.output)
    assert "Traceback" not in unlined(result.output)
    if in_the_way == "runs":
        assert f"--runs-dir {tmp_path / 'runs'}: a file" in result.output.replace("\n", "")


def test_a_value_listed_twice_is_refused(tmp_path):
    (tmp_path / "capacity-base.yaml").write_text((PROFILES / "capacity-base.yaml").read_text())
    (tmp_path / "sweep.yaml").write_text(
        "name: x\nbase: capacity-base.yaml\n"
        "sweep: {members: [2, 2, 4, 2], protocol: [classic-eager], rate: [100, 100.0]}"
    )
    with pytest.raises(ScenarioError) as e:
        load_sweep(tmp_path / "sweep.yaml")
    assert unlined(e.value.problems) == [
        ("sweep.members", "2 is listed twice"),
        ("sweep.rate", "100 is listed twice"),
    ]  # once each


def test_a_resumed_sweep_reuses_a_run_only_of_the_same_scenario(tmp_path):
    from harness.campaigns.capacity import CapacityRun

    (tmp_path / "capacity-base.yaml").write_text((PROFILES / "capacity-base.yaml").read_text())
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text("name: x\nbase: capacity-base.yaml\nsweep: {members: [2], protocol: [classic-eager]}\n")
    [point] = load_sweep(sweep_file).points
    run_dir = tmp_path / "runs" / "capacity-x" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "verdict.json").write_text('{"status": "fail"}')
    (run_dir.parent / "capacity.json").write_text(
        f'{{"points": [{{"id": "{point.id}", "run_dir": "{run_dir}", "scenario": "{point.fingerprint}"}}]}}'
    )
    assert CapacityRun(load_sweep(sweep_file), tmp_path / "runs").done(point)
    (run_dir / "verdict.json").write_text('{"status": "incomplete"}')  # interrupted, then `check --write`
    assert not CapacityRun(load_sweep(sweep_file), tmp_path / "runs").done(point)
    (run_dir / "verdict.json").write_text('{"status": "pass"}')
    sweep_file.write_text(sweep_file.read_text() + "seed: 2\n")  # same point id, another scenario
    [changed] = load_sweep(sweep_file).points
    assert changed.id == point.id and not CapacityRun(load_sweep(sweep_file), tmp_path / "runs").done(changed)


def test_the_thousand_sweep_scales_partitions_hosts_big_points_and_raises_the_group_bounds():
    sweep = load_sweep(PROFILES / "capacity-1000.yaml")
    assert [(p.members, p.protocol) for p in sweep.points][:5] == [
        (10, "classic-eager"),
        (10, "classic-cooperative"),
        (10, "classic-static"),
        (10, "consumer"),
        (100, "classic-eager"),
    ]
    assert {(p.members, p.partitions) for p in sweep.points} == {(10, 20), (100, 200), (300, 600), (1000, 2000)}
    by = {(p.members, p.protocol): p.scenario for p in sweep.points}
    # up to MAX_MEMBER_PROCESSES a process each, a lane each; above, member hosts and crowd lanes
    small, big = by[100, "classic-eager"], by[1000, "consumer"]
    assert (small.workload.members_per_host, small.workload.lanes, small.lane_plan.lanes) == (1, "per-member", 100)
    assert (big.workload.members_per_host, big.workload.lanes, big.lane_plan.lanes) == (50, "on-demand", 10)
    assert (by[300, "classic-static"].workload.members_per_host, by[300, "classic-static"].workload.lanes) == (
        50,
        "on-demand",
    )
    # the base bounds the group at 10; each point raises the bounds to its own size plus every
    # member incarnation its profile replaces: the restart's 1, the churn's 2 in each of its 2
    # periods (one stopped while the group prepares a rebalance is counted until its join phase ends)
    for (members, _protocol), s in by.items():
        assert s.group_size_limits() == {"group.max.size": members + 5, "group.consumer.max.size": members + 5}
    # the restart in the middle of the hold: the newest member down 5 s, then back
    stages = [(st.kind, getattr(st, "to", None)) for st in big.load.stages]
    assert stages == [("ramp", 1000), ("hold", None), ("spike", 999), ("hold", None), ("sawtooth", None)]
    assert big.load.peak(1) == 1000 and len(big.member_slots()) == 1000


def test_without_members_per_host_a_big_point_takes_the_fewest_per_host_within_the_process_cap(tmp_path):
    from faults.base import MAX_MEMBER_PROCESSES

    (tmp_path / "capacity-base.yaml").write_text((PROFILES / "capacity-base.yaml").read_text())
    (tmp_path / "sweep.yaml").write_text(
        "name: x\nbase: capacity-base.yaml\nsweep: {members: [300], protocol: [classic-eager], partitions: [600]}\n"
    )
    [point] = load_sweep(tmp_path / "sweep.yaml").points
    per_host = point.scenario.workload.members_per_host
    assert per_host == 3 and -(-300 // per_host) <= MAX_MEMBER_PROCESSES < -(-300 // (per_host - 1))


@pytest.mark.parametrize(
    ("profile", "members", "replaced"),
    [
        ({"restart_down_s": 5, "churn": 0}, 10, 1),
        ({"restart_down_s": 5, "churn": 3, "churn_period_s": 10, "churn_s": 20}, 10, 7),
        ({"restart_down_s": 5, "churn": 3, "churn_period_s": 10, "churn_s": 25}, 10, 10),  # a period begun
        ({"restart_down_s": 0, "churn": 0}, 10, 0),
        ({"restart_down_s": 0, "churn": 4, "churn_period_s": 10, "churn_s": 10}, 2, 2),  # at most the group
        ({"restart_down_s": 5, "churn": 0, "hold_s": 0}, 10, None),  # refused: the restart is in the hold
    ],
)
def test_a_point_leaves_room_for_the_members_its_profile_replaces(profile, members, replaced):
    if replaced is None:
        with pytest.raises(ValueError, match="restart_down_s"):
            PointProfile(**profile)
        return
    assert PointProfile(**profile).replaced(members) == replaced
    assert group_size_needed(members, False, replaced) == members + replaced
    assert group_size_needed(members, True, replaced) == members + max(replaced, 1)
