"""runtime/history.py: offset ranges and the one-line-per-event append-only writer."""

from __future__ import annotations

import json
import threading
import time

from runtime.history import HistoryWriter, offset_ranges


def r(topic, partition, lo, hi):
    return {"topic": topic, "partition": partition, "min_offset": lo, "max_offset": hi, "count": hi - lo + 1}


def test_contiguous_offsets_make_one_range():
    assert offset_ranges({("events", 0): [5, 6, 7, 8]}) == [r("events", 0, 5, 8)]


def test_a_gap_splits_the_range_and_singletons_count_one():
    assert offset_ranges({("events", 0): [0, 1, 2, 4, 7, 8]}) == [
        r("events", 0, 0, 2),
        r("events", 0, 4, 4),
        r("events", 0, 7, 8),
    ]


def test_unsorted_input_and_several_partitions_come_out_sorted():
    got = offset_ranges({("events", 3): [12, 10, 11], ("audit", 1): [3], ("events", 0): [2, 0, 1, 9]})
    assert got == [r("audit", 1, 3, 3), r("events", 0, 0, 2), r("events", 0, 9, 9), r("events", 3, 10, 12)]
    assert sum(x["count"] for x in got) == 8


def test_empty_input_and_empty_partition():
    assert offset_ranges({}) == []
    assert offset_ranges({("events", 0): []}) == []


def test_writer_stamps_every_event(tmp_path):
    path = tmp_path / "history.jsonl"
    w = HistoryWriter(path, "consumer-1", member="consumer-1", incarnation=2)
    before = time.time() * 1000
    w.emit("group_join_sent")
    w.emit("records_consumed", ranges=[r("events", 0, 0, 9)])
    late = time.monotonic() * 1000 + 60_000  # a stamp of its own, after the writer's previous event
    w.emit("coordinator_stabilized", ts=1000.5, mono_ms=late, generation=3)
    w.close()
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    first, second, third = map(json.loads, lines)
    assert first["name"] == "group_join_sent" and first["source"] == "consumer-1" and first["seq"] == 1
    assert first["member"] == "consumer-1" and first["incarnation"] == 2
    assert before - 1 <= first["ts"] <= time.time() * 1000 + 1
    assert isinstance(first["mono_ms"], float) and second["mono_ms"] >= first["mono_ms"]
    assert second["seq"] == 2 and second["ranges"] == [r("events", 0, 0, 9)]
    assert (third["ts"], third["mono_ms"], third["seq"], third["generation"]) == (1000.5, round(late, 3), 3, 3)


def test_two_writers_append_to_one_file_without_interleaving(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_text('{"name":"earlier","ts":0,"mono_ms":0,"source":"harness","seq":1}\n')
    writers = [HistoryWriter(path, f"consumer-{i}") for i in (1, 2)]
    big = "x" * 5000  # well past PIPE_BUF: a write split in two would show as a broken line

    def hammer(w):
        for i in range(300):
            w.emit("records_consumed", n=i, pad=big)

    threads = [threading.Thread(target=hammer, args=(w,)) for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w in writers:
        w.close()
    events = [json.loads(line) for line in path.read_text().splitlines()]  # every line parses whole
    assert events[0]["name"] == "earlier"  # appended, not truncated
    for source in ("consumer-1", "consumer-2"):
        mine = [e for e in events if e["source"] == source]
        assert [e["seq"] for e in mine] == list(range(1, 301))
        assert [e["n"] for e in mine] == list(range(300))
