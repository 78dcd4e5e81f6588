"""Members of one group on different topics, and racks (workload.subscriptions, client_racks,
cluster.broker_racks): the scenario's keys, what each member is told, and the oracle holding
every member to its own subscription (oracle/subscriptions.py)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from harness.scenario import Scenario
from oracle.verdict import check_history
from tests.lines import unlined

REPO = Path(__file__).resolve().parents[2]

BASE = {
    "name": "t",
    "duration_s": 30,
    "cluster": {"kafka": "3.9", "brokers": 1},
    "topics": [{"name": "orders", "partitions": 4}, {"name": "payments", "partitions": 2}],
    "workload": {
        "subscriptions": [
            {"name": "orders-only", "members": 2, "topics": ["orders"]},
            {"name": "both", "members": 2, "topics": ["orders", "payments"]},
        ]
    },
}


def scenario(**changes) -> Scenario:
    data = copy.deepcopy(BASE)
    for key, value in changes.items():
        section, _, field = key.partition("__")
        if field:
            data.setdefault(section, {})[field] = value
        else:
            data[section] = value
    return Scenario.model_validate(data)


def problems(**changes) -> str:
    with pytest.raises(ValidationError) as info:
        scenario(**changes)
    return unlined(str(info.value))


# ---------------------------------------------------------------------------- the scenario


def test_members_are_dealt_to_the_entries_in_order_and_later_ones_in_turn():
    s = scenario(faults=[{"kind": "scale", "at_s": 5, "consumers": 7}])
    w = s.workload
    assert w.consumers == 4  # their sum, unsaid
    assert [w.subscription_of(i).name for i in range(1, 8)] == [
        "orders-only",
        "orders-only",
        "both",
        "both",
        "orders-only",  # started later: the entries in turn, by member number
        "both",
        "orders-only",
    ]
    assert w.subscription_of(5, "both").name == "both"  # the one a fault names
    assert s.consumed_topics == ["orders", "payments"] and s.subscribes("payments")


def test_a_fault_names_an_entry_of_the_workload():
    s = scenario(faults=[{"kind": "scale", "at_s": 5, "consumers": 5, "subscription": "both"}])
    assert s.schedule()[0]["subscription"] == "both"
    assert "faults.0.subscription: 'all' is not one of workload.subscriptions (orders-only, both)" in problems(
        faults=[{"kind": "join-storm", "at_s": 5, "consumers": 1, "subscription": "all"}]
    )
    data = copy.deepcopy(BASE)
    data["workload"] = {"consumers": 2}
    data["faults"] = [{"kind": "scale", "at_s": 5, "consumers": 3, "subscription": "both"}]
    with pytest.raises(ValidationError, match="the workload has no subscriptions"):
        Scenario.model_validate(data)


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ({"topics": ["orders"]}, "give either subscriptions or topics / topic_pattern, not both"),
        ({"consumers": 5}, "their members add up to 4, but consumers is 5"),
        (
            {"subscriptions": [{"name": "a", "members": 1, "topics": ["orders"]}] * 2},
            "each entry's name once (a, a)",
        ),
        (
            {"subscriptions": [{"name": "a", "members": 1, "topics": ["refunds"]}]},
            "workload.subscriptions.0.topics.0: topic 'refunds' is not declared under topics",
        ),
        (
            {"subscriptions": [{"name": "a", "members": 1, "topics": ["orders", "orders"]}]},
            "a topic listed twice",
        ),
    ],
)
def test_bad_subscriptions_are_refused_with_the_reason(workload, message):
    data = copy.deepcopy(BASE)
    data["workload"].update(workload)
    with pytest.raises(ValidationError) as info:
        Scenario.model_validate(data)
    assert message in unlined(str(info.value))


def test_racks_one_per_broker_and_dealt_to_members_in_turn():
    s = scenario(cluster={"kafka": "3.9", "brokers": 1, "broker_racks": ["r1"]}, workload__client_racks=["r1", "r2"])
    assert s.cluster.broker_rack_map() == {"broker-1": "r1"}
    assert [s.workload.client_rack_of(i) for i in (1, 2, 3)] == ["r1", "r2", "r1"]
    assert "one rack per broker: 2 for 1 brokers" in problems(
        cluster={"kafka": "3.9", "brokers": 1, "broker_racks": ["r1", "r2"]}
    )
    assert "the racks are broker_racks'" in problems(
        cluster={"kafka": "3.9", "brokers": 1, "broker_racks": ["r1"], "broker_config": {"broker.rack": "r1"}}
    )


def test_each_broker_gets_its_own_rack_in_its_settings():
    from harness.cluster.spec import ClusterSpec

    spec = ClusterSpec(brokers=2, broker_config={"a": 1}, broker_racks=("r1", "r2"))
    assert spec.broker_settings(2) == {"a": 1, "broker.rack": "r2"}
    assert ClusterSpec(broker_config={"a": 1}).broker_settings(1) == {"a": 1}


def test_the_docs_example_validates_and_the_shipped_scenario_too():
    text = (REPO / "docs" / "inputs.md").read_text()
    [example] = re.findall(r"```yaml\n(# subscriptions and racks.*?)```", text, re.S)
    data = yaml.safe_load(example)
    s = Scenario.model_validate({"name": "doc", "duration_s": 30, **data})
    assert [s.workload.subscription_of(i).name for i in (1, 2, 3, 4)] == ["orders-only", "orders-only", "both", "both"]
    assert s.schedule()[0]["subscription"] == "both" and s.cluster.broker_rack_map() == {"broker-1": "rack-a"}
    shipped = Scenario.model_validate(yaml.safe_load((REPO / "scenarios" / "mixed-subscriptions.yaml").read_text()))
    assert shipped.workload.subscriptions and shipped.cluster.broker_racks


# ---------------------------------------------------------------------------- the oracle

ORDERS_ONLY = {"topics": ["orders"], "name": "orders-only"}
BOTH = {"topics": ["orders", "payments"], "name": "both"}


def mixed_group(history_builder):
    """consumer-1 subscribes to orders, consumer-2 to orders and payments; range per topic over
    its subscribers: orders split, payments all consumer-2's."""
    b = history_builder(topics={"orders": 4, "payments": 2})
    b.consumer("consumer-1").start(subscription=ORDERS_ONLY, client_rack=None)
    b.consumer("consumer-2").start(subscription=BOTH, client_rack=None)
    b.phase("workload")
    return b


def verdict(b):
    return check_history(b.build(), {"assignment-validity": {}, "convergence": {}})


def test_a_range_layout_per_topic_over_its_subscribers_passes(history_builder):
    b = mixed_group(history_builder)
    b.rebalance(
        1,
        {"consumer-1": [("orders", 0), ("orders", 1)], "consumer-2": [("orders", 2), ("orders", 3), *_payments()]},
        at=10,
    )
    v = verdict(b.at(5000).done())
    assert v.checks["assignment-validity"].status == "passed", v.checks["assignment-validity"].violations
    assert v.checks["assignment-validity"].detail["layouts_checked"] == [1]
    assert v.checks["convergence"].status == "passed", v.checks["convergence"].violations


def _payments():
    return [("payments", 0), ("payments", 1)]


def test_a_member_owning_a_partition_of_a_topic_it_did_not_subscribe_to_fails(history_builder):
    b = mixed_group(history_builder)
    b.rebalance(
        1,
        {"consumer-1": [("orders", 0), ("orders", 1), ("payments", 0)], "consumer-2": [("orders", 2), ("orders", 3)]},
        at=10,
    )
    b["consumer-2"].at(20).assigned(("orders", 2), ("orders", 3), ("payments", 1))
    result = verdict(b.at(5000).done()).checks["assignment-validity"]
    assert result.status == "failed"
    [unsubscribed] = [v for v in result.violations if v.kind == "unsubscribed-partition"]
    assert unsubscribed.members == ("consumer-1",) and unsubscribed.partition == "payments-0"
    assert "consumer-1 owned payments-0" in unsubscribed.message
    assert "not subscribed to topic payments" in unsubscribed.message
    assert "its subscription is orders-only (orders)" in unsubscribed.message


def test_a_topic_no_live_member_subscribes_to_need_not_be_owned(history_builder):
    """consumer-2, the only member on payments, leaves for good: payments has nobody to go to."""
    b = mixed_group(history_builder)
    b.rebalance(
        1,
        {"consumer-1": [("orders", 0), ("orders", 1)], "consumer-2": [("orders", 2), ("orders", 3), *_payments()]},
        at=10,
    )
    b["consumer-2"].at(1000).revoked().stopped("signal").exited()
    b.rebalance(2, {"consumer-1": [("orders", p) for p in range(4)]}, at=1100)
    b.at(1200).healed("scale", None)
    v = verdict(b.at(5000).done())
    assert v.checks["convergence"].status == "passed", v.checks["convergence"].violations
    assert v.checks["assignment-validity"].status == "passed", v.checks["assignment-validity"].violations

    # Had consumer-2 stayed, payments unowned is a group that never settled.
    b = mixed_group(history_builder)
    b.rebalance(1, {"consumer-1": [("orders", 0), ("orders", 1)], "consumer-2": [("orders", 2), ("orders", 3)]}, at=10)
    v = verdict(b.at(5000).done())
    assert v.checks["convergence"].status == "failed"
    assert "payments-0" in v.checks["convergence"].violations[0].message
    assert [x.kind for x in v.checks["assignment-validity"].violations] == ["unassigned-partition", "layout-mismatch"]


def test_range_layouts_are_not_judged_where_kip_881_may_place_by_rack(history_builder):
    b = history_builder(topics={"orders": 4})
    b.events[0]["broker_racks"] = {"broker-1": "r1"}
    b.consumer("consumer-1").start(subscription={"topics": ["orders"]}, client_rack="r1")
    b.consumer("consumer-2").start(subscription={"topics": ["orders"]}, client_rack="r2")
    b.rebalance(1, {"consumer-1": [("orders", 0), ("orders", 2)], "consumer-2": [("orders", 1), ("orders", 3)]}, at=10)
    result = verdict(b.at(5000).done()).checks["assignment-validity"]
    assert result.status == "passed", result.violations
    assert result.detail["layouts_not_judged_rack_aware"] == [1] and result.detail["layouts_checked"] == []


@pytest.mark.parametrize(
    ("change", "line"),
    [
        ({"workload": {"topics": ["orders"]}}, "workload.subscriptions: give either subscriptions or topics"),
        (
            {"faults": [{"kind": "scale", "at_s": 5, "consumers": 5, "subscription": "all"}]},
            "faults[1].subscription: 'all' is not one of workload.subscriptions (orders-only, both)",
        ),
        ({"cluster": {"broker_racks": ["a", "b"]}}, "cluster.broker_racks: one rack per broker: 2 for 1 brokers"),
    ],
)
def test_the_refusals_read_as_the_docs_say(tmp_path, change, line):
    from harness.scenario import load_scenario
    from runtime.errors import ScenarioError

    data = copy.deepcopy(BASE)
    for section, value in change.items():
        data[section] = {**data[section], **value} if isinstance(value, dict) else value
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert line in unlined(str(info.value))
    assert f"error: s.yaml: {line}" in (REPO / "docs" / "inputs.md").read_text()


@pytest.mark.parametrize(
    ("subscription", "reason"),
    [
        ({"topics": ["orders"], "name": "a"}, None),
        ({"pattern": "^ord.*"}, None),
        (None, None),
        (["orders"], "subscription: expected an object"),
        ({"topics": ["orders"], "pattern": "^o"}, "expected either topics or pattern"),
        ({"topics": "orders"}, "subscription.topics: expected a list of topic names"),
        ({"pattern": "^(("}, "subscription.pattern: not a regular expression"),
    ],
)
def test_a_history_with_a_malformed_subscription_is_refused_at_its_line(subscription, reason):
    from oracle.events import problem

    started = {"name": "consumer_started", "mono_ms": 1.0, "source": "consumer-1", "seq": 1}
    said = problem({**started, "subscription": subscription})
    assert (said is None) if reason is None else (reason in said), said


def test_the_observer_waits_only_for_topics_its_members_subscribe_to(tmp_path):
    """The warm-up and the recovery wait for a group covering its partitions: with members on
    different topics, those of the topics some member subscribes to (the harness's file)."""
    import json

    from workloads.observer import GroupObserver, ObserverSpec

    said = tmp_path / "subscriptions.json"
    observer = object.__new__(GroupObserver)
    observer.spec = ObserverSpec("h", "s", "b", "g", ["orders", "payments"], subscriptions_file=str(said))
    observer.partitions = [("orders", 0), ("orders", 1), ("payments", 0)]
    assert observer.wanted(["consumer-1"]) == set(observer.partitions)  # no file yet: every partition
    said.write_text(json.dumps({"consumer-1": ["orders"], "consumer-2": ["orders", "payments"]}))
    assert observer.wanted(["consumer-1"]) == {("orders", 0), ("orders", 1)}
    assert observer.wanted(["consumer-1", "consumer-2"]) == set(observer.partitions)
    assert observer.wanted(["consumer-1", "consumer-9"]) == set(observer.partitions)  # one it was not told of


def test_the_zookeeper_era_consumer_is_held_to_its_layout_whatever_the_racks(history_builder):
    """KIP-881 is the Kafka clients' (the group leader's assignor): the 0.8 consumer's range is the definition."""
    b = history_builder(topics={"orders": 4}, protocol="zk-eager")
    b.events[0]["broker_racks"] = {"broker-1": "r1"}
    b.consumer("consumer-1").start(subscription={"topics": ["orders"]}, client_rack="r1")
    b.consumer("consumer-2").start(subscription={"topics": ["orders"]}, client_rack="r2")
    b.rebalance(1, {"consumer-1": [("orders", 0), ("orders", 2)], "consumer-2": [("orders", 1), ("orders", 3)]}, at=10)
    result = verdict(b.at(5000).done()).checks["assignment-validity"]
    assert "layouts_not_judged_rack_aware" not in result.detail
    assert [v.kind for v in result.violations] == ["layout-mismatch", "layout-mismatch"]


def test_every_client_a_member_makes_carries_its_rack_and_consumer_started_its_subscription(tmp_path):
    from dataclasses import replace

    from oracle.protocols import GENERATIONS
    from workloads.consumer import client_config
    from workloads.driver import MemberSpec, protocol_fields
    from workloads.verifiable import JavaSettings, consumer_properties

    spec = MemberSpec(
        member="consumer-3",
        incarnation=1,
        history=str(tmp_path / "history.jsonl"),
        bootstrap_servers="127.0.0.1:9092",
        group="g",
        topics=["orders", "payments"],
        **protocol_fields(GENERATIONS["classic-eager"]),
        assignor="roundrobin",
        commit="sync",
        processing_ms=0,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        max_poll_interval_ms=300000,
        settings=JavaSettings(kafka_line="3.9"),
        subscription="both",
        client_rack="rack-b",
    )
    assert client_config(spec)["client.rack"] == "rack-b"  # librdkafka's group client
    assert "client.rack=rack-b\n" in consumer_properties(spec)  # the Java client's
    assert spec.fetcher_config("x")["client.rack"] == "rack-b"  # zk-eager's and the coordinator's fetchers
    assert spec.subscription_record == {"topics": ["orders", "payments"], "name": "both"}
    bare = replace(spec, topics=["^ord.*"], subscription=None, client_rack=None)
    assert bare.subscription_record == {"pattern": "^ord.*"}
    assert "client.rack" not in client_config(bare) and "client.rack" not in consumer_properties(bare)


def test_a_pattern_subscription_is_held_to_its_pattern(history_builder):
    b = history_builder(topics={"orders": 2, "payments": 1})
    b.consumer("consumer-1").start(subscription={"pattern": "^ord.*"})
    b.consumer("consumer-2").start(subscription={"pattern": "^(ord|pay).*"})
    b.rebalance(1, {"consumer-1": [("orders", 0), ("payments", 0)], "consumer-2": [("orders", 1)]}, at=10)
    result = verdict(b.at(5000).done()).checks["assignment-validity"]
    [v] = [v for v in result.violations if v.kind == "unsubscribed-partition"]
    assert v.partition == "payments-0" and "its subscription is pattern ^ord.*" in v.message
