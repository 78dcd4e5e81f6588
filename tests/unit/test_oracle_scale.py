"""What keeps `check` linear and lean on long histories gives the same answers as the
plain way: compact events, indexed lookups, one-sweep ownership, windowed stall search.

Each fast path is compared with the straightforward computation it replaced, on seeded
random inputs (benchmarks/oracle_speed.py measures the speed)."""

import random

from oracle import History, check_history
from oracle.checks.convergence import _Quiet, _quiet
from oracle.history import CompactEvent, Instant, MemberSlot, TopicPartition, compact
from oracle.offsets import OffsetSet
from oracle.ownership import Ownership, Session


def _merged(ranges):
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def test_offset_union_and_membership_match_the_plain_definitions():
    rng = random.Random(5)
    for _ in range(3000):
        a, b = (
            [(x, x + rng.randint(0, 5)) for x in (rng.randint(0, 60) for _ in range(rng.randint(0, 6)))]
            for _ in range(2)
        )
        sa, sb = OffsetSet(a), OffsetSet(b)
        assert (sa | sb).ranges == _merged(a + b)
        assert all((x in sa) == any(lo <= x <= hi for lo, hi in a) for x in range(-2, 70))


def test_quiet_windows_match_cutting_every_busy_interval():
    rng = random.Random(7)
    for _ in range(1000):
        busy = [
            (a, a + rng.choice([0, rng.uniform(0, 30), -rng.uniform(0, 20)]))  # empty and inverted too
            for a in (rng.uniform(0, 100) for _ in range(rng.randint(0, 8)))
        ]
        quiet = _Quiet(busy)
        for _ in range(10):
            lo = rng.uniform(-10, 110)
            hi = lo + rng.uniform(0.01, 60)
            assert quiet.pieces(lo, hi) == _quiet(lo, hi, busy)


def test_owners_over_a_rising_series_match_owners_at_each_instant():
    rng = random.Random(3)
    for _ in range(300):
        sessions = []
        for _ in range(rng.randint(0, 12)):
            start = float(rng.randint(0, 50))
            end = None if rng.random() < 0.3 else Instant(None, start + rng.choice([0, rng.randint(0, 20)]))
            sessions.append(
                Session(
                    MemberSlot(f"consumer-{rng.randint(1, 3)}"),
                    TopicPartition("events", rng.randint(0, 3)),
                    1,
                    None,
                    Instant(None, start),
                    end,
                )
            )
        ownership = Ownership(sessions, {}, {})
        instants = sorted(float(rng.randint(-1, 75)) for _ in range(25))
        partitions = [TopicPartition("events", p) for p in range(5)]  # 4 is never owned
        for t, (owners, off) in zip(instants, ownership.owners_over(instants, partitions), strict=False):
            expected = ownership.owners_at(t)
            assert dict(owners) == dict(expected)
            assert off == {tp for tp in {*partitions, *expected} if len(expected.get(tp, ())) != 1}


def test_indexed_first_and_last_match_a_scan(history_builder):
    b = history_builder()
    _c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0, 1, 2], "consumer-2": [3, 4]}, at=100)
    b.rebalance(2, {"consumer-1": [0, 1, 2, 3, 4]}, at=900)
    c2.at(950).stopped()
    history = History(b.build())
    for where in (
        {"generation": 1},
        {"generation": 2, "member": "consumer-1"},
        {"member": "consumer-2"},
        {"generation": 7},
        {"members": ["x"]},
    ):  # the last: a value that cannot be a key
        scan = [e for e in history.named("group_joined") if all(e.get(k) == v for k, v in where.items())]
        assert history.where("group_joined", **where) == scan
        assert history.first("group_joined", **where) == (scan[0] if scan else None)
        assert history.last("group_joined", **where) == (scan[-1] if scan else None)


def test_a_compact_event_reads_like_the_line_it_came_from():
    event = {
        "name": "records_consumed",
        "ts": 1.5,
        "mono_ms": 2.5,
        "source": "consumer-1",
        "seq": 3,
        "member": "consumer-1",
        "incarnation": 1,
        "member_id": None,
        "generation": 4,
        "ranges": [
            {"topic": "events", "partition": 0, "min_offset": 0, "max_offset": 9, "count": 10},
            {"topic": "events", "partition": 1, "min_offset": 5, "max_offset": 5, "count": 1},
        ],
    }
    packed = compact(event)
    assert isinstance(packed, CompactEvent) and packed == event and dict(packed) == event
    assert packed["ranges"] == event["ranges"] and packed.get("nope", 7) == 7 and "member" in packed
    assert compact({"name": "phase", "phase": "done"}) == {"name": "phase", "phase": "done"}  # not a bulk event


def test_odd_lists_are_kept_as_they_are():
    for listed in (
        [{"topic": "events", "partition": 0, "min_offset": 1, "max_offset": 2}, {"topic": "events"}],
        [{"topic": 3, "partition": 0, "offset": 5}],
        [],
        None,
        ["not an object"],
    ):
        event = {"name": "offsets_committed", "mono_ms": 1.0, "offsets": listed, "success": True}
        assert compact(event) == event and compact(event)["offsets"] == listed


def test_a_verdict_on_compact_events_is_the_verdict_on_the_lines(pause_story):
    pause_story["consumer-1"].at(20000).consumed(0, 0, 9).committed(0, 10)
    pause_story["consumer-2"].at(20005).consumed(0, 5, 9)  # a duplicate, and consumption while not owning
    events = pause_story.build()
    assert check_history([compact(e) for e in events]).to_dict() == check_history(events).to_dict()
