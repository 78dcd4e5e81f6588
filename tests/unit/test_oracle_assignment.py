"""assignment-validity: coverage of every partition and the eager assignors' layouts."""

from oracle import check_history
from oracle.anomalies import listed
from oracle.assignors import range_layout, roundrobin_layout
from oracle.history import TopicPartition

CHECK = "assignment-validity"


def run(builder):
    return check_history(builder.build(), {CHECK: {}}).checks[CHECK]


def layout(owned):
    return {m: sorted(str(tp) for tp in tps) for m, tps in owned.items()}


class TestLayouts:
    def test_range_seed_example(self):
        """Seed 001: 5 partitions, 2 consumers, range -> 0,1,2 and 3,4."""
        tps = [TopicPartition("T", p) for p in range(5)]
        assert layout(range_layout(tps, ["c0", "c1"])) == {"c0": ["T-0", "T-1", "T-2"], "c1": ["T-3", "T-4"]}

    def test_range_is_per_topic_and_roundrobin_deals_across_topics(self):
        tps = [TopicPartition("events", p) for p in range(3)] + [TopicPartition("audit", p) for p in range(2)]
        assert layout(range_layout(tps, ["a", "b"])) == {
            "a": ["audit-0", "events-0", "events-1"],
            "b": ["audit-1", "events-2"],
        }
        assert layout(roundrobin_layout(tps, ["a", "b"])) == {
            "a": ["audit-0", "events-0", "events-2"],
            "b": ["audit-1", "events-1"],
        }

    def test_more_members_than_partitions(self):
        tps = [TopicPartition("T", 0)]
        assert layout(range_layout(tps, ["a", "b"])) == {"a": ["T-0"], "b": []}


def two_consumers(history_builder, assignment, assignor="range", **starts):
    b = history_builder(assignor=assignor)
    for name in assignment:
        b.consumer(name).start(**starts.get(name, {}))
    b.rebalance(1, assignment, at=0)
    return b


def test_the_seed_range_layout_passes(history_builder):
    result = run(two_consumers(history_builder, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}))
    assert result.status == "passed"
    assert result.detail["layouts_checked"] == [1]


def test_a_range_layout_that_differs_from_the_definition_fails(history_builder):
    result = run(two_consumers(history_builder, {"consumer-1": [0, 1], "consumer-2": [2, 3, 4]}))
    assert [v.kind for v in result.violations] == ["layout-mismatch", "layout-mismatch"]
    v = result.violations[0]
    assert (v.members, v.generation) == (("consumer-1",), 1)
    assert v.message == (
        "generation 1 (range over 2 members sorted by member id): consumer-1 (#0) got events-0,1 "
        "but range assigns it events-0,1,2"
    )


def test_roundrobin_layout(history_builder):
    ok = two_consumers(history_builder, {"consumer-1": [0, 2, 4], "consumer-2": [1, 3]}, assignor="roundrobin")
    assert run(ok).status == "passed"
    bad = two_consumers(history_builder, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, assignor="roundrobin")
    assert run(bad).status == "failed"


def test_members_are_ordered_by_member_id_or_group_instance_id(history_builder):
    b = history_builder()
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    c1.at(0).join_sent().joined(1, member_id="rdkafka-zz")
    c2.join_sent().joined(1, member_id="rdkafka-aa")  # sorts first
    c1.synced().assigned(3, 4)
    c2.synced().assigned(0, 1, 2)
    assert run(b).status == "passed"

    static = history_builder(protocol="classic-static")
    s1 = static.consumer("consumer-1").start(group_instance_id="b-instance")
    s2 = static.consumer("consumer-2").start(group_instance_id="a-instance")
    s1.at(0).join_sent().joined(1, member_id="rdkafka-aa")
    s2.join_sent().joined(1, member_id="rdkafka-zz")
    s1.synced().assigned(3, 4)
    s2.synced().assigned(0, 1, 2)
    result = run(static)
    assert result.status == "passed" and result.detail["layouts_checked"] == [1]


def test_an_unassigned_partition_fails(history_builder):
    b = two_consumers(history_builder, {"consumer-1": [0, 1], "consumer-2": [2, 3]}, assignor="cooperative-sticky")
    [v] = run(b).violations
    assert (v.kind, v.partition, v.generation) == ("unassigned-partition", "events-4", 1)
    assert v.message == "generation 1 left events-4 unassigned (members: consumer-1, consumer-2)"


def test_a_partition_assigned_twice_fails(history_builder):
    b = two_consumers(history_builder, {"consumer-1": [0, 1, 2], "consumer-2": [2, 3, 4]}, assignor="sticky")
    [v] = run(b).violations
    assert (v.kind, v.partition, v.members) == ("double-assignment", "events-2", ("consumer-1", "consumer-2"))


def test_cooperative_first_phase_is_partial_by_design(history_builder):
    b = history_builder(protocol="classic-cooperative", assignor="cooperative-sticky")
    b.consumer("consumer-1").start()
    b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2, 3, 4]}, at=0)
    b.rebalance(2, {"consumer-1": [0, 1, 2], "consumer-2": []}, at=1000)  # 3 and 4 revoked, given to nobody yet
    b.rebalance(3, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=2000)
    result = run(b)
    assert result.status == "passed"
    assert result.detail == {
        "generations_checked": [1, 2, 3],
        "partial_cooperative_generations": [2],
        "layouts_checked": [],
    }


def test_superseded_generations_are_not_judged(history_builder):
    b = history_builder(topics={"events": 2})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=0)
    c1.at(1000).revoked().join_sent()
    c2.revoked().join_sent()
    c1.at(1010).joined(2, leader=True).assigned(0)  # consumer-1 got half an assignment ...
    c2.joined(2)
    c2.exited(returncode=-9)  # ... consumer-2 died before its own
    b.rebalance(3, {"consumer-1": [0, 1]}, at=11000)
    result = run(b)
    assert result.status == "passed" and result.detail["generations_checked"] == [1, 3]


def test_a_static_member_restarted_into_the_same_generation_replaces_itself(history_builder):
    """Static membership: consumer-1 is bounced within its session timeout and rejoins
    generation 1 under its group.instance.id with the same partitions. That is neither a
    second member of generation 1 nor a rebalance."""
    b = history_builder(topics={"events": 4}, protocol="classic-static")
    c1 = b.consumer("consumer-1").start(group_instance_id="g-consumer-1")
    b.consumer("consumer-2").start(group_instance_id="g-consumer-2")
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0, 1], "consumer-2": [2, 3]}, at=100)
    c1.at(5000).revoked().stopped("signal")
    c1.exited()
    again = b.consumer("consumer-1", incarnation=2).at(6000).start(group_instance_id="g-consumer-1")
    again.join_sent().at(6010).joined(1, member_id="consumer-1-new").at(6015).synced().assigned(0, 1)
    b.at(9000).done()
    verdict = check_history(b.build(), {"assignment-validity": {}, "exclusive-ownership": {}})
    assert verdict.ok, verdict.render()
    [rebalance] = verdict.rebalances
    assert rebalance.generation == 1 and round(rebalance.duration_ms) == 15  # the first join only


class TestSubscriptions:
    """A pattern subscription is matched against each member's own metadata, so for a
    moment members subscribe to different topics; the assignor honours that."""

    TPS = [TopicPartition("events", p) for p in range(4)] + [TopicPartition("events-extra", p) for p in range(2)]

    def test_range_gives_a_topic_only_to_its_subscribers(self):
        subscriptions = {"a": frozenset({"events"}), "b": frozenset({"events", "events-extra"})}
        assert layout(range_layout(self.TPS, ["a", "b"], subscriptions)) == {
            "a": ["events-0", "events-1"],
            "b": ["events-2", "events-3", "events-extra-0", "events-extra-1"],
        }

    def test_roundrobin_skips_members_not_subscribed(self):
        subscriptions = {"a": frozenset({"events"}), "b": frozenset({"events", "events-extra"})}
        assert layout(roundrobin_layout(self.TPS, ["a", "b"], subscriptions)) == {
            "a": ["events-0", "events-2"],
            "b": ["events-1", "events-3", "events-extra-0", "events-extra-1"],
        }


def test_a_member_whose_metadata_had_not_matched_the_new_topic_gets_none_of_it(history_builder):
    """What a real run showed: consumer-1 joined generation 2 before its metadata matched
    events-extra, so range gave both of its partitions to consumer-2."""
    b = history_builder(topics={"events": 4})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    c1.at(0).emit("subscription_changed", topics={"events": 4})
    c2.emit("subscription_changed", topics={"events": 4})
    b.rebalance(1, {"consumer-1": [0, 1], "consumer-2": [2, 3]}, at=10)
    b.at(950).emit("topic_created", "harness", topic="events-extra", partitions=2, subscribed=True)
    c2.at(1000).emit("subscription_changed", topics={"events": 4, "events-extra": 2})
    c1.at(1001).revoked().join_sent()
    c2.revoked().join_sent()
    c1.at(1010).joined(2, member_id="rdkafka-1").synced().assigned(("events", 0), ("events", 1))
    c2.joined(2, leader=True, member_id="rdkafka-2").synced().assigned(
        ("events", 2), ("events", 3), ("events-extra", 0), ("events-extra", 1)
    )
    assert run(b).status == "passed"

    # The same generation, had consumer-1 reported events-extra before it joined, is wrong.
    b.events = [e for e in b.events if not (e["name"] == "subscription_changed" and e["member"] == "consumer-1")]
    c1.at(900).emit("subscription_changed", topics={"events": 4, "events-extra": 2})
    result = run(b)
    assert [v.kind for v in result.violations] == ["layout-mismatch", "layout-mismatch"]


def absent_static_member(history_builder):
    """Three static members; consumer-3 sends its JoinGroup for generation 2 and is stopped
    with SIGTERM (a static member sends no LeaveGroup). The coordinator stabilizes generation
    2 with 3 members, the leader's range assignment gives consumer-3 events-4,5, and nobody
    holds them until its session expires and generation 3 hands them out."""
    b = history_builder(topics={"events": 6}, protocol="classic-static")
    cs = [b.consumer(f"consumer-{i}").start(group_instance_id=f"g-consumer-{i}") for i in (1, 2, 3)]
    b.rebalance(1, {"consumer-1": [0, 1], "consumer-2": [2, 3], "consumer-3": [4, 5]}, at=0)
    b.at(1000).coordinator("coordinator_preparing_rebalance", old_generation=1, reason="Updating metadata")
    for c in cs:
        c.at(1010).revoked().join_sent()
    cs[2].at(1020).exited(returncode=-15)
    b.at(1030).coordinator("coordinator_stabilized", generation=2, members=3)
    cs[0].at(1040).joined(2, leader=True).synced().assigned(0, 1)
    cs[1].at(1045).joined(2).synced().assigned(2, 3)
    b.at(7000).coordinator(
        "coordinator_preparing_rebalance", old_generation=2, reason="removing member consumer-3 on heartbeat expiration"
    )
    b.rebalance(3, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4, 5]}, at=7010)
    b.at(7100).coordinator("coordinator_stabilized", generation=3, members=2)
    return b.at(9000).done()


def test_partitions_held_by_an_absent_static_member_are_a_finding(history_builder):
    verdict = check_history(absent_static_member(history_builder).build())
    assert verdict.violations == []
    result = verdict.checks[CHECK]
    assert result.detail["layouts_checked"] == [1, 2, 3]
    [f] = [f for f in result.findings if f.kind == "held-by-absent-member"]
    assert (f.generation, f.members) == (2, ("consumer-3",))
    assert f.message.startswith(
        "generation 2: the coordinator stabilized it with 3 members but only 2 joined "
        "(consumer-1, consumer-2); events-4,5 went to no member that joined — the leader "
        "assigned them among the 1 member counted without an answered JoinGroup (consumer-3) "
        "— and were held by nobody in practice for up to 6.0 s"
    )


def test_a_member_that_died_in_an_earlier_rebalance_is_not_absent_from_a_later_one(history_builder):
    """Only JoinGroups sent during this rebalance count: consumer-3 died mid-join in generation 2,
    and has nothing to do with generation 3's count."""
    b = absent_static_member(history_builder)
    b.events = [e for e in b.events if not (e["name"] == "coordinator_stabilized" and e["generation"] == 3)]
    b.at(7005).coordinator("coordinator_stabilized", generation=3, members=3)  # one more than joined, nobody to blame
    b.events = [
        e
        for e in b.events
        if not (e["name"] == "partitions_assigned" and e.get("generation") == 3 and e["member"] == "consumer-2")
    ]
    b["consumer-2"].at(7030).assigned(3, 4)  # events-5 went to nobody
    result = check_history(b.build()).checks[CHECK]
    assert [(v.kind, v.generation, v.partition) for v in result.violations] == [
        ("unassigned-partition", 3, "events-5"),
        ("layout-mismatch", 3, None),
    ]


def test_a_newcomer_whose_join_began_the_rebalance_is_absent_from_it(history_builder):
    """A static newcomer's JoinGroup is what makes the coordinator prepare the next generation: it
    is sent before the "Preparing" line. consumer-3 sends it after generation 1 stabilized and is
    stopped before the answer; the coordinator counts it in generation 2 and the leader gives it
    events-4,5 (range by group.instance.id)."""
    b = history_builder(topics={"events": 6}, protocol="classic-static")
    c1, c2 = (b.consumer(f"consumer-{i}").start(group_instance_id=f"g-consumer-{i}") for i in (1, 2))
    b.rebalance(1, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4, 5]}, at=0)
    b.at(500).coordinator("coordinator_stabilized", generation=1, members=2)
    c3 = b.consumer("consumer-3").start(group_instance_id="g-consumer-3")
    c3.at(1000).join_sent()
    b.at(1400).coordinator("coordinator_preparing_rebalance", old_generation=1, reason="Adding new member")
    for c in (c1, c2):
        c.at(1410).revoked().join_sent()
    c3.at(1420).exited(returncode=-15)
    b.at(1430).coordinator("coordinator_stabilized", generation=2, members=3)
    c1.at(1440).joined(2, leader=True).synced().assigned(0, 1)
    c2.at(1445).joined(2).synced().assigned(2, 3)
    verdict = check_history(b.at(9000).done().build())
    result = verdict.checks[CHECK]
    assert result.violations == []
    assert 2 in result.detail["layouts_checked"]
    [f] = [f for f in result.findings if f.kind == "held-by-absent-member"]
    assert (f.generation, f.members, f.partition) == (2, ("consumer-3",), None)
    assert "events-4,5 went to no member that joined" in f.message


def test_a_message_names_a_dozen_members_and_counts_the_rest():
    names = [f"consumer-{i}" for i in range(1, 1001)]
    assert listed(names[:12]) == ", ".join(names[:12])
    assert listed(names) == ", ".join(names[:12]) + " and 988 more"


def test_the_absent_member_is_in_the_layout(history_builder):
    b = absent_static_member(history_builder)
    b.events = [
        e
        for e in b.events
        if not (e["name"] == "partitions_assigned" and e.get("generation") == 2 and e["member"] == "consumer-2")
    ]
    b["consumer-2"].at(1046).assigned(2, 3, 4)  # took the absent member's share too: not range over 3
    result = check_history(b.build()).checks[CHECK]
    assert [(v.kind, v.members) for v in result.violations] == [("layout-mismatch", ("consumer-2",))]


def test_a_cooperative_member_leaving_does_not_make_its_generation_partial(history_builder):
    """A leaving member's close revokes everything incrementally before its LeaveGroup: that is not
    KIP-429's first phase, so the generation it leaves from is still checked for coverage."""
    b = history_builder(protocol="classic-cooperative", assignor="cooperative-sticky")
    _c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2], "consumer-2": [3]}, at=0)  # events-4 went to nobody
    c2.at(5000).revoked().stopped()
    result = run(b)
    assert result.detail["partial_cooperative_generations"] == []
    [v] = result.violations
    assert (v.kind, v.generation, v.partition) == ("unassigned-partition", 1, "events-4")


def test_a_first_phase_revoke_keeps_its_generation_partial(history_builder):
    b = history_builder(protocol="classic-cooperative", assignor="cooperative-sticky")
    _c1, _c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2, 3, 4], "consumer-2": []}, at=0)
    b.rebalance(2, {"consumer-1": [0, 1, 2], "consumer-2": []}, at=1000)  # gives 3, 4 up, then rejoins
    b.rebalance(3, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=1100)
    result = run(b)
    assert result.detail["partial_cooperative_generations"] == [2] and result.violations == []
