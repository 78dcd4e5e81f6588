"""Load profiles (workloads/load/): the member count second by second, the feed of settled
rebalances Locust is told, and the group following the count (a real run: tests/integration/test_load.py)."""

from __future__ import annotations

import json

import pytest

from oracle import check_history
from workloads.load.feed import RebalanceFeed
from workloads.load.profile import LoadProfile


def profile(*stages: dict) -> LoadProfile:
    return LoadProfile.model_validate({"stages": list(stages)})


@pytest.mark.parametrize(
    "stage, start, expected",
    [
        ({"kind": "ramp", "to": 6, "over_s": 20}, 2, [2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6]),
        ({"kind": "ramp", "to": 1, "over_s": 4}, 3, [3, 3, 2, 1, 1]),  # down, the last step at the end
        ({"kind": "step", "to": 9, "by": 3, "every_s": 2}, 2, [5, 5, 8, 8, 9, 9, 9]),  # 3 at once, then what is left
        ({"kind": "spike", "to": 10, "for_s": 3}, 4, [10, 10, 10, 4, 4]),
        ({"kind": "sawtooth", "low": 2, "high": 4, "period_s": 3, "for_s": 6}, 2, [2, 3, 4, 2, 3, 4, 2, 2]),
        ({"kind": "hold", "for_s": 2}, 5, [5, 5, 5]),
    ],
)
def test_each_stage_second_by_second_then_its_end_count(stage, start, expected):
    p = profile(stage)
    assert [p.members_at(start, t) for t in range(len(expected))] == expected


def test_stages_follow_on_from_each_other_and_give_length_and_peak():
    p = profile(
        {"kind": "ramp", "to": 4, "over_s": 6},
        {"kind": "spike", "to": 12, "for_s": 2},
        {"kind": "step", "to": 0, "by": 2, "every_s": 1},
    )
    assert p.length_s(1) == 6 + 2 + 2
    assert p.peak(1) == 12
    assert [p.members_at(1, t) for t in range(12)] == [1, 1, 2, 3, 3, 4, 12, 12, 2, 0, 0, 0]


def test_the_trough_is_the_fewest_members_any_stage_reaches():
    assert profile({"kind": "hold", "for_s": 5}).trough(3) == 3
    assert (
        profile({"kind": "ramp", "to": 8, "over_s": 5}, {"kind": "step", "to": 4, "by": 2, "every_s": 1}).trough(6) == 4
    )
    assert profile({"kind": "spike", "to": 1, "for_s": 5}).trough(3) == 1  # back to 3 after, but 1 meanwhile
    assert profile({"kind": "sawtooth", "low": 2, "high": 9, "period_s": 3, "for_s": 6}).trough(5) == 2


def test_a_fault_that_leaves_a_member_running_is_allowed_on_one_the_profile_never_stops(tmp_path):
    """Members leave newest first: under a profile that never goes below 3, consumer-3 is never stopped
    by it, so a poll stall (its process goes on) cannot fight the profile; a pause still can't."""
    from harness.scenario import load_scenario

    def scenario(fault: str) -> str:
        path = tmp_path / "s.yaml"
        path.write_text(
            "name: t\nduration_s: 60\ntopics: [{name: events, partitions: 6}]\nworkload: {consumers: 4}\n"
            "load: {stages: [{kind: step, to: 3, by: 1, every_s: 5}, {kind: hold, for_s: 10}], workers: 2,"
            " member_hosts: on-workers}\n"
            f"faults: [{fault}]\n"
        )
        return str(path)

    s = load_scenario(scenario("{kind: poll-stall, target: consumer-3, at_s: 2, duration_s: 5}"))
    assert s.load.member_hosts == "on-workers"
    with pytest.raises(Exception, match="poll-stall on members"):
        load_scenario(scenario("{kind: poll-stall, target: consumer-4, at_s: 2, duration_s: 5}"))
    with pytest.raises(Exception, match="pause on members"):
        load_scenario(scenario("{kind: pause, target: consumer-1, at_s: 2, duration_s: 5}"))


# ------------------------------------------------------------------ the feed of settled rebalances


def write(path, events: list[dict]) -> None:
    with path.open("a") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")


def test_a_rebalance_is_told_once_settled_once_only_and_as_the_verdict_measures_it(tmp_path, history_builder):
    b = history_builder(topics={"events": 2})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1]}, at=0)
    c2.at(1000).join_sent()
    c1.at(1100).revoked().join_sent()
    c1.at(1110).joined(2, leader=True)
    c2.joined(2)
    c1.at(1120).synced().assigned(0)
    c2.at(1130).synced().assigned(1)
    b.at(2000).acked(0, 0, 9)
    events = b.build()
    history = tmp_path / "history.jsonl"
    feed = RebalanceFeed(history, settle_s=1)
    write(history, events)
    assert [r.generation for r in feed.settled()] == [1]  # generation 2 ended 870 ms before the last event: not yet
    b.at(4200).acked(0, 10, 19)
    write(history, b.build()[len(events) :])
    told = feed.settled()
    assert [(r.generation, r.partitions_moved) for r in told] == [(2, 1)]
    verdict = check_history(b.build()).to_dict()
    assert told[0].duration_ms == pytest.approx(
        next(r["duration_ms"] for r in verdict["rebalances"] if r["generation"] == 2)
    )
    assert feed.settled() == []


def test_once_done_every_completed_rebalance_is_told_and_a_torn_line_waits(tmp_path, history_builder):
    b = history_builder(topics={"events": 2})
    c1 = b.consumer("consumer-1").start()
    b.rebalance(1, {"consumer-1": [0, 1]}, at=0)
    b.at(100).done()
    c1.at(200).revoked().stopped()  # the teardown: never told
    history = tmp_path / "history.jsonl"
    text = "".join(json.dumps(e) + "\n" for e in b.build())
    history.write_text(text[:-5])  # the last line is still being written
    feed = RebalanceFeed(history, settle_s=60)
    assert [r.generation for r in feed.settled()] == [1] and feed.done
    with history.open("a") as f:
        f.write(text[-5:])
    assert feed.settled() == []


def test_the_shipped_profile_ramps_to_32_then_churns():
    from pathlib import Path

    from harness.scenario import load_scenario

    s = load_scenario(Path(__file__).resolve().parents[2] / "profiles" / "ramp-churn.yaml")
    start = s.workload.consumers
    assert (start, s.load.peak(start), s.load.length_s(start)) == (2, 32, 120)
    assert s.member_slots()[-1] == "consumer-32"
    assert [s.load.members_at(start, t) for t in (0, 59, 60, 79, 80)] == [2, 32, 24, 32, 24]


def test_a_generation_a_live_member_may_still_join_is_not_told(tmp_path, history_builder):
    """KIP-848 members reach an epoch one by one on their heartbeats, and are given their share in
    steps: a generation is told once every member alive has moved past it (or the run is done)."""
    b = history_builder(topics={"events": 2}, protocol="consumer")
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=0)
    c1.at(990).join_sent()
    c1.at(1000).joined(2).synced().assigned(0)
    b.at(9000).acked(0, 0, 9)
    history = tmp_path / "history.jsonl"
    feed = RebalanceFeed(history, settle_s=1)
    events = b.build()
    write(history, events)
    assert feed.settled() == []  # consumer-2 is still at generation 1: it may yet be given more of it
    c2.at(9500).joined(2).synced().assigned(1)
    b.at(12000).acked(0, 10, 19)
    write(history, b.build()[len(events) :])
    assert [r.generation for r in feed.settled()] == [1]  # generation 2 is where everyone is: still open
    events = b.build()
    b.at(12500).done()
    write(history, b.build()[len(events) :])
    [r] = feed.settled()
    assert r.generation == 2 and r.duration_ms == pytest.approx(8510, abs=5)  # until consumer-2 had its share
