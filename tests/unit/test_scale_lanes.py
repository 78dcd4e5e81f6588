"""harness/scenario/lanes.py and hosting: which lane each member rides, which host it lives in,
and the proxies a fault on a member cuts under each lane plan."""

from __future__ import annotations

import pytest
import yaml

from faults import network
from harness.cluster.network import NetworkPlan
from harness.scenario import load_scenario
from harness.scenario.lanes import CROWD_LANE_MEMBERS, LanePlan
from runtime.errors import ScenarioError


def scenario(tmp_path, faults=(), **workload):
    data = {
        "name": "big",
        "duration_s": 60,
        "cluster": {"kafka": "4.1"},
        "topics": [{"name": "events", "partitions": 2000}],
        "workload": {"consumers": 1000, "members_per_host": 50, "lanes": "on-demand", **workload},
        "faults": [
            {"kind": "crash", "target": "consumer-7", "at_s": 10},
            {"kind": "pause", "target": "consumer-900", "at_s": 10, "duration_s": 5},
            {"kind": "network", "target": "broker-1", "link": "clients", "at_s": 20, "duration_s": 5},
            *faults,
        ],
    }
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


def test_on_demand_gives_named_members_their_own_lane_and_the_crowd_shared_ones(tmp_path):
    s = scenario(tmp_path)
    plan = s.lane_plan
    assert plan.own == ("consumer-7", "consumer-900")
    assert [plan.lane_of(m) for m in ("consumer-7", "consumer-900")] == [1, 2]
    # The crowd by member number: 1..100 on lane 3, 101..200 on lane 4, … 901..1000 on lane 12.
    assert plan.lane_of("consumer-1") == plan.lane_of("consumer-100") == 3
    assert plan.lane_of("consumer-101") == 4 and plan.lane_of("consumer-1000") == 12
    assert plan.lanes == 2 + 1000 // CROWD_LANE_MEMBERS
    assert s.workload.host_of("consumer-50") == "member-host-1" and s.workload.host_of("consumer-51") == "member-host-2"


def test_per_member_lanes_are_the_member_numbers():
    plan = LanePlan.per_member([f"consumer-{k}" for k in range(1, 5)])
    assert [plan.lane_of(f"consumer-{k}") for k in range(1, 5)] == [1, 2, 3, 4] and plan.lanes == 4


def test_a_fault_on_a_member_cuts_its_own_lane_only(tmp_path):
    s = scenario(tmp_path)
    ports = iter(range(20000, 30000))
    net = NetworkPlan(brokers=[1, 2], lanes=s.lane_plan.lanes, zookeeper_ports={}, port=lambda: next(ports))
    assert network.proxies(net, "consumer-900", "brokers", s.lane_plan.lane_of) == [
        "lane-2.broker-1",
        "lane-2.broker-2",
    ]
    # A broker's `clients` link is every lane's: the crowd's too.
    assert len(network.proxies(net, "broker-1", "clients")) == s.lane_plan.lanes


def test_a_fault_on_a_whole_process_is_refused_for_hosted_members(tmp_path):
    upgrade = {"kind": "rolling-client-upgrade", "to": "confluent-kafka==2.16.1", "at_s": 30}
    with pytest.raises(ScenarioError) as info:
        scenario(tmp_path, faults=[upgrade])
    assert (
        "rolling-client-upgrade acts on a member's whole process (a process loads one client release); "
        "hosted members share one (workload.members_per_host: 1)"
    ) in [reason for _, reason in info.value.problems]


def test_message_faults_need_a_lane_per_member(tmp_path):
    message = {
        "kind": "message",
        "target": "consumer-3",
        "api": "Heartbeat",
        "action": "delay",
        "at_s": 30,
        "duration_s": 5,
    }
    with pytest.raises(ScenarioError) as info:
        scenario(tmp_path, faults=[message])
    assert any(key.startswith("workload.lanes") and "message faults need" in why for key, why in info.value.problems)


def test_the_caps_the_docs_give_are_the_ones_validation_applies():
    from pathlib import Path

    from faults.base import MAX_MEMBER_PROCESSES, MAX_MEMBERS, MAX_MEMBERS_PER_HOST
    from harness.scenario.cluster import MAX_TOPIC_PARTITIONS
    from harness.scenario.lanes import MAX_OWN_LANES

    page = (Path(__file__).resolve().parents[2] / "docs" / "scale.md").read_text()
    rows = dict(line.split("|")[1:3] for line in page.splitlines() if line.count("|") == 4 and "---" not in line)
    caps = {name.strip(): int(value) for name, value in rows.items() if value.strip().isdigit()}
    assert caps == {
        "members in a group": MAX_MEMBERS,
        "members each in a process of its own": MAX_MEMBER_PROCESSES,
        "members in one host": MAX_MEMBERS_PER_HOST,
        "lanes of their own": MAX_OWN_LANES,
        "members on a crowd lane": CROWD_LANE_MEMBERS,
        "partitions of a topic": MAX_TOPIC_PARTITIONS,
    }
