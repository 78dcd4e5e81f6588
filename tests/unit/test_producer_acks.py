"""The producer's records_acked: a record librdkafka acknowledged without an offset is counted."""

from __future__ import annotations

import json
from types import SimpleNamespace

from oracle.events import problem
from workloads.producer import ProducerSpec, RecordingProducer


def delivered(offset):
    return SimpleNamespace(topic=lambda: "events", partition=lambda: 0, offset=lambda: offset, latency=lambda: 0.004)


def test_a_record_acknowledged_without_an_offset_is_counted_not_placed(tmp_path):
    history = tmp_path / "history.jsonl"
    producer = RecordingProducer(ProducerSpec(str(history), "127.0.0.1:9", "events", 1, 1.0, 0))
    for offset in (None, 7, 8):
        producer._on_delivery(None, delivered(offset))
    producer._flush_history()
    [acked] = [e for e in map(json.loads, history.read_text().splitlines()) if e["name"] == "records_acked"]
    assert [(r["min_offset"], r["max_offset"]) for r in acked["ranges"]] == [(7, 8)] and acked["unplaced"] == 1
    assert problem(acked) is None and problem({**acked, "unplaced": "one"}) is not None
