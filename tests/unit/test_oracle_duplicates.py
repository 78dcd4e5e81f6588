"""duplicates: re-deliveries counted, explained, and optionally bounded."""
import pytest

from oracle import check_history

CHECK = "duplicates"


@pytest.fixture
def handover(history_builder):
    """consumer-1 processed 0-19 of events-0 but had committed only 10 when the
    partition moved to consumer-2; the test says where consumer-2 resumes."""
    b = history_builder(topics={"events": 1})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-2": []}, at=0)
    b.at(50).acked(0, 0, 99)
    c1.at(100).consumed(0, 0, 9).committed(0, 10)
    c1.at(200).consumed(0, 10, 19)
    b.rebalance(2, {"consumer-1": [], "consumer-2": [0]}, at=1000)
    return b


def test_redelivery_of_uncommitted_progress_is_explained(handover):
    handover["consumer-2"].at(1100).consumed(0, 10, 29)
    verdict = check_history(handover.build(), {CHECK: {}})
    assert verdict.duplicates.to_dict() == {
        "count": 10, "explained": 10, "unexplained": 0,
        "ranges": [{"partition": "events-0", "offsets": "10-19", "count": 10, "first": "consumer-1",
                    "second": "consumer-2", "explained": True,
                    "reason": "explained by uncommitted progress at a hand-over "
                              "(committed offset 10 when consumer-2 took over)"}]}
    assert verdict.checks[CHECK].status == "passed" and verdict.checks[CHECK].findings == []


def test_redelivery_below_the_committed_offset_is_unexplained(handover):
    c1, c2 = handover["consumer-1"], handover["consumer-2"]
    c1.at(900).committed(0, 20, trigger="revoke")
    c2.at(1100).consumed(0, 12, 29)
    result = check_history(handover.build(), {CHECK: {}}).checks[CHECK]
    [f] = result.findings
    assert (f.kind, f.partition, f.offsets, f.count, f.members) == (
        "duplicate", "events-0", "12-19", 8, ("consumer-1", "consumer-2"))
    assert f.message == ("events-0 offsets 12-19: first consumer-1, again consumer-2, "
                         "below the offset 20 committed when consumer-2 took over")


def test_a_range_straddling_the_committed_offset_is_split(handover):
    handover["consumer-1"].at(900).committed(0, 15)
    handover["consumer-2"].at(1100).consumed(0, 12, 29)
    ranges = check_history(handover.build(), {CHECK: {}}).duplicates.to_dict()["ranges"]
    assert [(r["offsets"], r["explained"]) for r in ranges] == [("12-14", False), ("15-19", True)]


def test_redelivery_within_one_session_is_unexplained(history_builder):
    b = history_builder(topics={"events": 1})
    c1 = b.consumer("consumer-1").start()
    b.rebalance(1, {"consumer-1": [0]}, at=0)
    c1.at(100).consumed(0, 0, 9).consumed(0, 5, 9)
    [f] = check_history(b.build(), {CHECK: {}}).checks[CHECK].findings
    assert f.message == ("events-0 offsets 5-9: first consumer-1, again consumer-1, "
                         "re-delivered within one ownership session")


def test_a_bound_on_duplicates_fails_the_run_when_exceeded(handover):
    handover["consumer-2"].at(1100).consumed(0, 10, 29)
    assert check_history(handover.build(), {CHECK: {"max": 10}}).ok
    verdict = check_history(handover.build(), {CHECK: {"max": 0}})
    [v] = verdict.violations
    assert (v.kind, v.count, v.members) == ("too-many-duplicates", 10, ("consumer-1", "consumer-2"))
    assert v.message.startswith("10 records consumed more than once, more than the allowed 0 "
                                "(10 explained by uncommitted progress at a hand-over); largest: events-0 offsets 10-19")


def test_each_duplicate_is_counted_once_per_extra_delivery(handover):
    c2, c3 = handover["consumer-2"], handover.consumer("consumer-3").start()
    c2.at(1100).consumed(0, 10, 29)
    handover.rebalance(3, {"consumer-2": [], "consumer-3": [0]}, at=2000)
    c3.at(2100).consumed(0, 15, 29)  # nothing committed since: offsets 15-19 arrive a third time
    report = check_history(handover.build(), {CHECK: {}}).duplicates.to_dict()
    assert report["count"] == 10 + 15
    assert [(r["offsets"], r["first"], r["second"]) for r in report["ranges"]] == [
        ("10-19", "consumer-1", "consumer-2"), ("15-19", "consumer-1", "consumer-3"),
        ("20-29", "consumer-2", "consumer-3")]


def test_a_zombie_processing_what_its_successor_already_did_is_unexplained(pause_story):
    pause_story["consumer-1"].at(15500).consumed(3, 100, 149)
    pause_story["consumer-2"].at(20005).consumed(3, 100, 119)
    [r] = check_history(pause_story.build(), {CHECK: {}}).duplicates.redeliveries
    assert (r.lo, r.hi, str(r.first.slot), str(r.second.slot), r.explained) == (
        100, 119, "consumer-1", "consumer-2", False)
    assert r.reason == "processed again by consumer-2 while both owned the partition"


def test_getting_a_partition_back_after_an_eager_revoke_is_explained(history_builder):
    b = history_builder(topics={"events": 1})
    c1 = b.consumer("consumer-1").start()
    b.rebalance(1, {"consumer-1": [0]}, at=0)
    c1.at(100).consumed(0, 0, 19).committed(0, 10)
    b.rebalance(2, {"consumer-1": [0]}, at=1000)
    c1.at(1100).consumed(0, 10, 19)
    [r] = check_history(b.build(), {CHECK: {}}).duplicates.redeliveries
    assert r.explained and r.reason.endswith("(committed offset 10 when consumer-1 got it back)")


def test_a_non_owner_never_took_anything_over(history_builder):
    """Every sentence states only what the history shows: the re-consuming member was
    never the partition's owner, so nothing was "committed when it took over"."""
    b = history_builder(topics={"events": 2})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=0)
    c1.at(100).consumed(0, 0, 9).committed(0, 10)
    c2.at(200).consumed(0, 0, 9)
    [r] = check_history(b.build(), {CHECK: {}}).duplicates.redeliveries
    assert (r.explained, r.reason) == (False, "processed again by consumer-2, which did not own the partition then")
    assert "took over" not in r.describe()
