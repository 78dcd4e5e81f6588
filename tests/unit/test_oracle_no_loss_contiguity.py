"""no-loss and contiguity, including the faulty "commit before processing, killed mid-batch" run."""

import pytest

from oracle import check_history


def run(builder, check, **options):
    return check_history(builder.build(), {check: options}).checks[check]


@pytest.fixture
def commit_before_processing(history_builder):
    """consumer-1 commits each batch before processing it and is SIGKILLed mid-batch:
    the group resumes after offsets nobody processed."""
    b = history_builder(topics={"events": 1})
    c1 = b.consumer("consumer-1").start(commit_mode="before-processing")
    c2 = b.consumer("consumer-2").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0], "consumer-2": []}, at=0)
    b.at(500).acked(0, 0, 99)
    c1.at(1000).committed(0, 100, trigger="before-processing")
    c1.at(1100).consumed(0, 0, 99)
    b.at(1500).acked(0, 100, 199)
    c1.at(2000).committed(0, 150, trigger="before-processing")
    c1.at(2050).consumed(0, 100, 119)  # 120-149 still in hand ...
    b.at(2060).fault("crash", "consumer-1")
    c1.exited(returncode=-9)  # ... when the kill comes
    b.rebalance(2, {"consumer-2": [0]}, at=12000)
    c2.at(12100).consumed(0, 150, 199)
    c2.committed(0, 200)
    b.at(13000).healed("crash", "consumer-1")
    b.phase("recovery").phase("drain")
    b.at(14000).done()
    return b


class TestNoLoss:
    CHECK = "no-loss"

    def test_names_the_lost_offsets_and_the_commit_that_skipped_them(self, commit_before_processing):
        result = run(commit_before_processing, self.CHECK)
        [v] = result.violations
        assert (v.kind, v.partition, v.offsets, v.count, v.members) == (
            "lost-write",
            "events-0",
            "120-149",
            30,
            ("consumer-1",),
        )
        assert v.message == (
            "events-0: 30 acknowledged records never consumed: offsets 120-149; consumer-1 committed offset 150 past "
            "them (trigger before-processing, generation 1, sent t+2.000s) and its ownership then ended (crashed) "
            "at t+2.060s"
        )
        assert result.detail == {"acked": 200, "lost": 30}

    def test_a_commit_killed_before_it_was_recorded_names_both_owners_not_a_later_commit(self, history_builder):
        # consumer-1 finished its batch, committed the next one before processing it and was
        # killed before writing that commit's event: the group went on from an offset no
        # recorded commit explains. consumer-2's own later commit is not the culprit.
        b = history_builder(topics={"events": 1})
        c1 = b.consumer("consumer-1").start(commit_mode="before-processing")
        c2 = b.consumer("consumer-2").start(commit_mode="before-processing")
        b.phase("workload")
        b.rebalance(1, {"consumer-1": [0], "consumer-2": []}, at=0)
        b.at(500).acked(0, 0, 299)
        c1.at(1000).committed(0, 150, trigger="before-processing")
        c1.at(2000).consumed(0, 0, 149)
        b.at(2030).fault("crash", "consumer-1")  # its commit of 200 reached the broker, its event did not
        c1.exited(returncode=-9)
        b.rebalance(2, {"consumer-2": [0]}, at=12000)
        c2.at(12050).committed(0, 300, trigger="before-processing")
        c2.at(12100).consumed(0, 200, 299)
        b.at(13000).healed("crash", "consumer-1")
        b.phase("recovery").phase("drain")
        b.at(14000).done()
        [v] = run(b, self.CHECK).violations
        assert (v.offsets, v.members, v.generation) == ("150-199", ("consumer-1", "consumer-2"), 2)
        assert v.message == (
            "events-0: 50 acknowledged records never consumed: offsets 150-199; consumer-2 went on from offset 200 "
            "when it took the partition over (generation 2, t+12.015s) and no commit in the history put the group "
            "there: a commit sent but never recorded, or a reset position. The owner before: consumer-1 "
            "(generation 1, t+0.015s..t+2.030s, crashed)"
        )

    def test_a_hand_over_is_explained_by_the_commit_the_new_owner_fetched(self, history_builder):
        # Two commits past the lost offsets: the group went on from the later one. The new owner's
        # own commit of its position, made before it recorded a record, explains nothing.
        b = history_builder(topics={"events": 1})
        c1 = b.consumer("consumer-1").start(commit_mode="before-processing")
        c2 = b.consumer("consumer-2").start()
        b.rebalance(1, {"consumer-1": [0], "consumer-2": []}, at=0)
        b.at(500).acked(0, 0, 199)
        c1.at(1000).committed(0, 130, trigger="before-processing")
        c1.at(1100).consumed(0, 0, 119)
        c1.at(1200).committed(0, 150, trigger="before-processing")
        b.at(2060).fault("crash", "consumer-1")
        c1.exited(returncode=-9)
        b.rebalance(2, {"consumer-2": [0]}, at=12000)
        c2.at(12050).committed(0, 150, trigger="auto")
        c2.at(12100).consumed(0, 150, 199)
        b.at(14000).done()
        [v] = run(b, self.CHECK).violations
        assert (v.offsets, v.members, v.generation) == ("120-149", ("consumer-1",), 1)
        assert (
            "consumer-1 committed offset 150 past them (trigger before-processing, generation 1, sent t+1.200s)"
            in v.message
        )

    def test_everything_consumed_passes(self, history_builder):
        b = history_builder(topics={"events": 2})
        c1 = b.consumer("consumer-1").start()
        b.rebalance(1, {"consumer-1": [0, 1]}, at=0)
        b.at(10).acked(0, 0, 9).acked(1, 0, 4)
        c1.at(20).consumed(0, 0, 9).consumed(1, 0, 2).consumed(1, 3, 4)
        b.done()
        assert run(b, self.CHECK).status == "passed"

    def test_several_lost_ranges_on_several_partitions(self, history_builder):
        b = history_builder(topics={"events": 2})
        c1 = b.consumer("consumer-1").start()
        b.rebalance(1, {"consumer-1": [0, 1]}, at=0)
        b.at(10).acked(0, 0, 1299).acked(1, 0, 9)
        c1.at(20).consumed(0, 0, 1203).consumed(0, 1221, 1299).consumed(1, 0, 4)
        b.done()
        messages = [v.message for v in run(b, self.CHECK).violations]
        assert messages == [
            "events-0: 17 acknowledged records never consumed: offsets 1204-1220",
            "events-1: 5 acknowledged records never consumed: offsets 5-9",
        ]

    def test_an_interrupted_run_is_skipped_not_failed(self, commit_before_processing):
        commit_before_processing.events = [e for e in commit_before_processing.events if e.get("phase") != "done"]
        result = run(commit_before_processing, self.CHECK)
        assert result.status == "skipped" and "ended before recovery and drain finished" in result.skipped


class TestContiguity:
    CHECK = "contiguity"

    @pytest.fixture
    def one_owner(self, history_builder):
        b = history_builder(topics={"events": 1})
        b.consumer("consumer-1").start()
        b.rebalance(1, {"consumer-1": [0]}, at=0)
        b.at(10).acked(0, 0, 99)
        return b

    def test_contiguous_consumption_and_redelivery_at_handover_pass(self, one_owner):
        c1, c2 = one_owner["consumer-1"], one_owner.consumer("consumer-2").start()
        c1.at(100).consumed(0, 0, 9).consumed(0, 10, 29)
        one_owner.rebalance(2, {"consumer-1": [], "consumer-2": [0]}, at=200)
        c2.at(300).consumed(0, 20, 49)  # resumes below the highest consumed: duplicates, not a skip
        assert run(one_owner, self.CHECK).status == "passed"

    def test_a_gap_within_a_session_is_a_poll_skip(self, one_owner):
        one_owner["consumer-1"].at(100).consumed(0, 0, 9).consumed(0, 15, 20)
        [v] = run(one_owner, self.CHECK).violations
        assert (v.kind, v.partition, v.offsets, v.count, v.members, v.generation) == (
            "poll-skip",
            "events-0",
            "10-14",
            5,
            ("consumer-1",),
            1,
        )
        assert "consumer-1 skipped 5 records (offsets 10-14) within one ownership session" in v.message

    def test_a_gap_where_no_record_is_known_to_exist_is_not_a_skip(self, one_owner):
        one_owner["consumer-1"].at(100).consumed(0, 0, 99).consumed(0, 101, 110)  # 100: a transaction marker
        assert run(one_owner, self.CHECK).violations == []

    def test_going_back_within_a_session_is_a_nonmonotonic_poll(self, one_owner):
        one_owner["consumer-1"].at(100).consumed(0, 0, 9).consumed(0, 5, 12)
        [v] = run(one_owner, self.CHECK).violations
        assert (v.kind, v.offsets) == ("nonmonotonic-poll", "5-9")
        assert "went back from offset 9 to 5 within one ownership session" in v.message

    def test_starting_past_everything_consumed_at_handover_is_a_skip(self, commit_before_processing):
        [v] = run(commit_before_processing, self.CHECK).violations
        assert (v.kind, v.partition, v.offsets, v.count, v.members, v.generation) == (
            "skip-at-handover",
            "events-0",
            "120-149",
            30,
            ("consumer-1", "consumer-2"),
            2,
        )
        assert v.message.startswith(
            "events-0: consumer-2 started at offset 150 when it took the partition over (generation 2, t+12.100s), "
            "but the highest offset consumed before was 119 (by consumer-1): 30 records skipped, offsets 120-149"
        )


def test_records_long_after_a_session_ended_belong_to_no_session(history_builder):
    """The review's case: records consumed 6 s after the member's session ended were
    attributed to it ("went back within one ownership session"). They belong to no session."""
    b = history_builder(topics={"events": 1})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-2": []}, at=0)
    c1.at(100).consumed(0, 0, 49)
    b.rebalance(2, {"consumer-1": [], "consumer-2": [0]}, at=1000)
    c2.at(1100).consumed(0, 50, 99)
    c1.at(7000).consumed(0, 10, 19)
    verdict = check_history(b.build(), {"contiguity": {}, "exclusive-ownership": {}})
    contiguity = verdict.checks["contiguity"]
    assert contiguity.violations == [] and contiguity.detail["consumptions_outside_sessions"] == 1
    [v] = verdict.checks["exclusive-ownership"].violations
    assert v.kind == "consumed-after-ownership" and v.offsets == "10-19"
