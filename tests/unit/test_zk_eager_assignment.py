"""The 0.8 high-level consumer's range assignment and ZooKeeper layout (workloads.zk_eager),
without a cluster: pure functions only."""

import json

import pytest

from oracle.assignors import range_layout
from oracle.history import TopicPartition
from workloads.zk_eager.assignment import Inputs, range_assignment
from workloads.zk_eager.layout import (
    GroupPaths,
    partition_count,
    registration_data,
    subscribed_topics,
    thread_ids,
)


class TestRangeAssignment:
    def test_seed_example_five_partitions_two_threads(self):
        """Seed 000/001: 5 partitions, 2 consumer threads -> 0,1,2 and 3,4."""
        assert range_assignment(range(5), ["c1-0", "c2-0"]) == {"c1-0": [0, 1, 2], "c2-0": [3, 4]}

    def test_threads_and_partitions_are_sorted_first(self):
        """Every consumer computes the same answer from an unordered ZooKeeper child list."""
        assert range_assignment([4, 0, 3, 1, 2], ["c2-0", "c1-0"]) == {"c1-0": [0, 1, 2], "c2-0": [3, 4]}

    def test_the_first_m_threads_get_one_more(self):
        """P=8, C=3: N=2, M=2 -> threads 0 and 1 get 3, thread 2 gets 2; i*N+min(i,M) .. (i+1)*N+min(i+1,M)."""
        assert range_assignment(range(8), ["a", "b", "c"]) == {"a": [0, 1, 2], "b": [3, 4, 5], "c": [6, 7]}

    def test_even_split(self):
        assert range_assignment(range(6), ["a", "b", "c"]) == {"a": [0, 1], "b": [2, 3], "c": [4, 5]}

    def test_more_threads_than_partitions_leaves_the_last_threads_idle(self):
        """C > P: N=0, M=P -> the first P threads get one partition each, the rest none."""
        assert range_assignment(range(2), ["d", "c", "b", "a"]) == {"a": [0], "b": [1], "c": [], "d": []}

    def test_no_threads_assigns_nothing(self):
        assert range_assignment(range(3), []) == {}

    @pytest.mark.parametrize("partitions", range(13))
    @pytest.mark.parametrize("threads", range(1, 8))
    def test_every_partition_exactly_once_and_sizes_differ_by_at_most_one(self, partitions, threads):
        out = range_assignment(range(partitions), [f"t{i:02d}" for i in range(threads)])
        owned = sorted(p for share in out.values() for p in share)
        assert owned == list(range(partitions))
        sizes = [len(share) for share in out.values()]
        assert max(sizes) - min(sizes) <= 1
        assert sizes == sorted(sizes, reverse=True)  # the larger shares go to the first threads

    @pytest.mark.parametrize("partitions,threads", [(5, 2), (8, 3), (2, 4), (12, 5), (1, 1)])
    def test_agrees_with_the_oracles_independent_definition(self, partitions, threads):
        names = [f"consumer-{i}-0" for i in range(threads)]
        expected = range_layout([TopicPartition("events", p) for p in range(partitions)], sorted(names))
        assert range_assignment(range(partitions), names) == {
            n: sorted(tp.partition for tp in tps) for n, tps in expected.items()
        }


class TestConsumerThreads:
    def test_one_thread_per_consumer(self):
        assert thread_ids("consumer-1-abcd1234") == ["consumer-1-abcd1234-0"]

    def test_threads_sort_like_their_consumer_ids(self):
        """The oracle orders members by member id (the consumer id); the assignment orders threads."""
        ids = ["consumer-10-0f0f0f0f", "consumer-1-ffffffff", "consumer-2-00000000"]
        assert [t.rsplit("-", 1)[0] for t in sorted(t for i in ids for t in thread_ids(i))] == sorted(ids)


class TestZooKeeperLayout:
    def test_paths_are_the_originals(self):
        g = GroupPaths("orders")
        assert g.registration("c-1") == "/consumers/orders/ids/c-1"
        assert g.owner("events", 3) == "/consumers/orders/owners/events/3"
        assert g.offset("events", 3) == "/consumers/orders/offsets/events/3"

    def test_static_registration(self):
        reg = json.loads(registration_data(["events", "audit"]))
        assert reg["pattern"] == "static" and reg["subscription"] == {"events": 1, "audit": 1}
        assert subscribed_topics(reg, ["events", "audit", "other"]) == {"events": 1, "audit": 1}

    def test_whitelist_registration_expands_over_existing_topics(self):
        reg = json.loads(registration_data(["^events.*"]))
        assert reg["pattern"] == "white_list"
        assert subscribed_topics(reg, ["events", "events-2", "audit"]) == {"events": 1, "events-2": 1}

    def test_partition_count_from_a_broker_written_topic(self):
        data = b'{"partitions":{"0":[1],"1":[2],"2":[1]},"topic_id":"x","adding_replicas":{},"version":3}'
        assert partition_count(data) == 3


class TestWhatTriggersARebalance:
    base = Inputs(4, ("a", "b"), ("1", "2"), (("events", 6, 0),))

    def test_first_view(self):
        assert self.base.change_since(None) == "first view of the group"

    def test_nothing_changed(self):
        assert Inputs(4, ("a", "b"), ("1", "2"), (("events", 6, 0),)).change_since(self.base) is None

    @pytest.mark.parametrize(
        "changed,reason",
        [
            (Inputs(5, ("a", "b", "c"), ("1", "2"), (("events", 6, 0),)), "consumers changed"),
            (Inputs(4, ("a", "b"), ("1",), (("events", 6, 0),)), "brokers changed"),
            (Inputs(4, ("a", "b"), ("1", "2"), (("events", 8, 1),)), "topic partitions changed"),
        ],
    )
    def test_any_change_of_members_brokers_or_topics(self, changed, reason):
        assert changed.change_since(self.base) == reason
