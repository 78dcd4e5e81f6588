"""The member's record path (workloads/consumer.py): what a consumed batch writes to the
history and leaves to commit. Real confluent-kafka Message objects, no cluster."""

from __future__ import annotations

from confluent_kafka import KafkaError, Message

from tests.recording import Recording
from workloads.consumer import process_records, records_of


def batch(*records: tuple[int, int], topic: str = "events") -> list[Message]:
    return [Message(topic=topic, partition=p, offset=o, value=b"x") for p, o in records]


def test_a_batch_is_one_records_consumed_line_and_its_next_offsets_are_left_to_commit():
    recording = Recording()
    uncommitted = {("events", 1): 3}
    records = batch((0, 5), (1, 3), (0, 6), (1, 4), (0, 8)) + batch((0, 0), topic="audit")
    process_records(records, 0, uncommitted, recording.events)
    assert recording.said == [
        (
            "records_consumed",
            {
                "ranges": [
                    {"topic": "audit", "partition": 0, "min_offset": 0, "max_offset": 0, "count": 1},
                    {"topic": "events", "partition": 0, "min_offset": 5, "max_offset": 6, "count": 2},
                    {"topic": "events", "partition": 0, "min_offset": 8, "max_offset": 8, "count": 1},
                    {"topic": "events", "partition": 1, "min_offset": 3, "max_offset": 4, "count": 2},
                ],
                "e2e_ms": [],
            },
        )
    ]
    assert uncommitted == {("events", 0): 9, ("events", 1): 5, ("audit", 0): 1}


def test_each_records_end_to_end_latency_is_in_the_line_as_a_histogram(monkeypatch):
    """From the record's CreateTime (the producer's clock: this host's) to processed, two significant
    digits as Locust keeps them; a record without a timestamp has none."""
    now = 1_700_000_000_000
    monkeypatch.setattr("workloads.consumer.time.time", lambda: now / 1000)  # processed at `now`, however loaded
    recording = Recording()
    records = [
        Message(topic="events", partition=0, offset=o, timestamp=(1, now - age))
        for o, age in enumerate([12, 12, 483, 1234])
    ] + batch((1, 0))
    process_records(records, 0, {}, recording.events)
    [(_, fields)] = recording.said
    assert fields["e2e_ms"] == [[12, 2], [480, 1], [1200, 1]]


def test_slow_processing_is_written_as_it_goes(monkeypatch):
    monkeypatch.setattr("workloads.consumer.EMIT_EVERY_MS", 0)  # every record is late
    recording = Recording()
    uncommitted: dict = {}
    process_records(batch((0, 0), (0, 1)), 0.001, uncommitted, recording.events)
    assert [[(r["min_offset"], r["max_offset"]) for r in e["ranges"]] for _, e in recording.said] == [
        [(0, 0)],
        [(1, 1)],
    ]
    assert uncommitted == {("events", 0): 2}


def test_an_interrupted_batch_leaves_the_rest_unprocessed():
    recording = Recording()
    uncommitted: dict = {}
    seen = iter([False, False, True])
    process_records(batch((0, 0), (0, 1), (0, 2)), 0, uncommitted, recording.events, interrupted=lambda: next(seen))
    assert recording.said == [
        (
            "records_consumed",
            {
                "ranges": [{"topic": "events", "partition": 0, "min_offset": 0, "max_offset": 1, "count": 2}],
                "e2e_ms": [],
            },
        )
    ]
    assert uncommitted == {("events", 0): 2}


def test_a_batch_s_errors_are_written_and_its_records_kept_in_order():
    recording = Recording()
    eof = Message(topic="events", partition=2, offset=7, error=KafkaError(KafkaError._PARTITION_EOF))
    records = records_of([*batch((0, 0)), eof, *batch((1, 0))], recording.events)
    assert [(m.partition(), m.offset()) for m in records] == [(0, 0), (1, 0)]
    assert recording.said == [
        (
            "consumer_error",
            {
                "error": "_PARTITION_EOF",
                "error_code": KafkaError._PARTITION_EOF,
                "fatal": False,
                "message": "Broker: No more messages",
            },
        )
    ]
    assert records_of(batch((0, 1)), recording.events) and len(recording.said) == 1
