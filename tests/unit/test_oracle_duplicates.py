"""duplicates: re-deliveries counted, explained, and optionally bounded."""

import gzip
from pathlib import Path

import pytest

from harness.reports.run import summary_markdown
from oracle import check_history, load_history
from oracle.checks.duplicates import CAUSES, summary

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "histories"

CHECK = "duplicates"


@pytest.fixture
def handover(history_builder):
    """consumer-1 processed 0-19 of events-0 but had committed only 10 when the
    partition moved to consumer-2; the test says where consumer-2 resumes."""
    b = history_builder(topics={"events": 1})
    c1, _c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
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
        "count": 10,
        "explained": 10,
        "unexplained": 0,
        "by_cause": {"hand-over": 10, "zombie": 0, "below-commit": 0, "same-session": 0, "non-owner": 0},
        "ranges": [
            {
                "partition": "events-0",
                "offsets": "10-19",
                "count": 10,
                "first": "consumer-1",
                "second": "consumer-2",
                "explained": True,
                "cause": "hand-over",
                "reason": "explained by uncommitted progress at a hand-over "
                "(committed offset 10 when consumer-2 took over)",
            }
        ],
    }
    assert verdict.checks[CHECK].status == "passed" and verdict.checks[CHECK].findings == []


def test_redelivery_below_the_committed_offset_is_unexplained(handover):
    c1, c2 = handover["consumer-1"], handover["consumer-2"]
    c1.at(900).committed(0, 20, trigger="revoke")
    c2.at(1100).consumed(0, 12, 29)
    result = check_history(handover.build(), {CHECK: {}}).checks[CHECK]
    [f] = result.findings
    assert (f.kind, f.partition, f.offsets, f.count, f.members) == (
        "duplicate",
        "events-0",
        "12-19",
        8,
        ("consumer-1", "consumer-2"),
    )
    assert f.message == (
        "events-0 offsets 12-19: first consumer-1, again consumer-2, "
        "below the offset 20 committed when consumer-2 took over"
    )


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
    assert f.message == (
        "events-0 offsets 5-9: first consumer-1, again consumer-1, re-delivered within one ownership session"
    )


def test_a_bound_on_duplicates_fails_the_run_when_exceeded(handover):
    handover["consumer-2"].at(1100).consumed(0, 10, 29)
    assert check_history(handover.build(), {CHECK: {"max": 10}}).ok
    verdict = check_history(handover.build(), {CHECK: {"max": 0}})
    [v] = verdict.violations
    assert (v.kind, v.count, v.members) == ("too-many-duplicates", 10, ("consumer-1", "consumer-2"))
    assert v.message.startswith(
        "10 records consumed more than once, more than the allowed 0 "
        "(10 explained (10 uncommitted progress at a hand-over), 0 unexplained); "
        "largest: events-0 offsets 10-19"
    )


def test_each_duplicate_is_counted_once_per_extra_delivery(handover):
    c2, c3 = handover["consumer-2"], handover.consumer("consumer-3").start()
    c2.at(1100).consumed(0, 10, 29)
    handover.rebalance(3, {"consumer-2": [], "consumer-3": [0]}, at=2000)
    c3.at(2100).consumed(0, 15, 29)  # nothing committed since: offsets 15-19 arrive a third time
    report = check_history(handover.build(), {CHECK: {}}).duplicates.to_dict()
    assert report["count"] == 10 + 15
    assert [(r["offsets"], r["first"], r["second"]) for r in report["ranges"]] == [
        ("10-19", "consumer-1", "consumer-2"),
        ("15-19", "consumer-1", "consumer-3"),
        ("20-29", "consumer-2", "consumer-3"),
    ]


def test_a_zombie_processing_what_its_successor_already_did_is_explained_by_the_overlap(pause_story):
    """The paused member had not yet learnt it lost the partition: at-least-once allows it, and
    exclusive-ownership reports the overlap itself (split-brain). The duplicates check adds no finding."""
    pause_story["consumer-1"].at(15500).consumed(3, 100, 149)
    pause_story["consumer-2"].at(20005).consumed(3, 100, 119)
    verdict = check_history(pause_story.build(), {CHECK: {}, "exclusive-ownership": {}})
    [r] = verdict.duplicates.redeliveries
    assert (r.lo, r.hi, str(r.first.slot), str(r.second.slot), r.cause, r.explained) == (
        100,
        119,
        "consumer-1",
        "consumer-2",
        "zombie",
        True,
    )
    assert r.reason == (
        "explained by a zombie: processed again by consumer-2 while both owned the partition, "
        "consumer-2 not yet aware it had lost it (exclusive-ownership)"
    )
    assert verdict.checks[CHECK].findings == []
    assert [f.partition for f in verdict.checks["exclusive-ownership"].findings if f.kind == "split-brain"] == [
        "events-3"
    ]
    assert summary(verdict.duplicates.to_dict()) == (
        "20 re-delivered records: 20 explained (20 processed by a zombie alongside the new owner), 0 unexplained"
    )


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


def test_the_summary_and_the_findings_use_one_definition_of_explained(handover):
    """A hand-over (explained) beside re-deliveries below the committed offset and within one
    session (unexplained): the summary's unexplained count is exactly the findings' records, in
    the console's line, summary.md and Verdict.render alike."""
    c1, c2 = handover["consumer-1"], handover["consumer-2"]
    c1.at(900).committed(0, 15)
    c2.at(1100).consumed(0, 12, 29)  # 12-14 below the committed 15, 15-19 uncommitted progress
    c2.at(1200).consumed(0, 25, 29)  # again, within consumer-2's own session
    verdict = check_history(handover.build(), {CHECK: {}})
    d = verdict.to_dict()["duplicates"]
    assert (d["count"], d["explained"], d["unexplained"]) == (13, 5, 8)
    assert {c: n for c, n in d["by_cause"].items() if n} == {"hand-over": 5, "below-commit": 3, "same-session": 5}
    findings = verdict.checks[CHECK].findings
    assert sum(f.count for f in findings) == d["unexplained"]
    assert (
        [f.offsets for f in findings] == [r["offsets"] for r in d["ranges"] if not r["explained"]] == ["12-14", "25-29"]
    )
    line = (
        "13 re-delivered records: 5 explained (5 uncommitted progress at a hand-over), 8 unexplained "
        "(3 below the offset committed at the hand-over, 5 re-delivered within one ownership session)"
    )
    assert summary(d) == line
    assert f"duplicates: {line}" in verdict.render().splitlines()
    assert f"{line}." in summary_markdown(verdict.to_dict(), Path("runs/x")).splitlines()


def test_every_cause_is_explained_or_a_finding_and_nothing_else():
    assert {c for c, (ok, _) in CAUSES.items() if ok} == {"hand-over", "zombie"}


def test_a_verdict_written_before_causes_were_named_still_reads():
    assert summary({"count": 3, "explained": 1, "unexplained": 2, "ranges": []}) == (
        "3 re-delivered records: 1 explained, 2 unexplained"
    )
    assert summary({"count": 0, "explained": 0, "unexplained": 0, "ranges": []}) == "0 re-delivered records"


@pytest.mark.parametrize("name", sorted(p.name.removesuffix(".jsonl.gz") for p in FIXTURES.glob("*.jsonl.gz")))
def test_recorded_histories_count_duplicates_consistently(name, tmp_path):
    (tmp_path / "history.jsonl").write_bytes(gzip.decompress((FIXTURES / f"{name}.jsonl.gz").read_bytes()))
    verdict = check_history(load_history(tmp_path))
    d = verdict.duplicates.to_dict()
    assert sum(d["by_cause"].values()) == d["count"] == d["explained"] + d["unexplained"]
    assert sum(r["count"] for r in d["ranges"] if r["explained"]) == d["explained"]
    assert sum(f.count for f in verdict.checks[CHECK].findings) == d["unexplained"] == 0, verdict.render()
    if name == "classic-eager-range":  # the paused consumer-2's zombie re-deliveries, each in a split-brain
        assert d["by_cause"]["zombie"] == d["count"] > 0
        split = {f.partition for f in verdict.checks["exclusive-ownership"].findings if f.kind == "split-brain"}
        assert {r["partition"] for r in d["ranges"]} <= split
