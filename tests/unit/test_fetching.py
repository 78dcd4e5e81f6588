"""The manual-assignment fetcher both drivers without a Kafka group use (workloads/fetching.py):
assignments applied only by the poll loop, batches of an older assignment dropped, and — the
stale-fetch guard — records below a partition's position dropped and noted, never processed
twice within one assignment. Fake messages; the drivers' own tests run it inside them."""

from __future__ import annotations

import threading

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from tests.recording import Recording
from workloads.fetching import ManualFetcher

TOPIC = "events"


class Message:
    def __init__(self, partition: int, offset: int, error=None, topic: str = TOPIC):
        self._topic, self._partition, self._offset, self._error = topic, partition, offset, error

    def topic(self):
        return self._topic

    def partition(self):
        return self._partition

    def offset(self):
        return self._offset

    def error(self):
        return self._error

    def timestamp(self):
        return 1, 1_795_000_000_000  # TIMESTAMP_CREATE_TIME, ms


class Handle:
    """librdkafka's manual-assignment surface, recording the calls."""

    def __init__(self):
        self.calls: list = []
        self.batches: list[list[Message]] = []

    def assign(self, partitions):
        self.calls.append(("assign", [(p.topic, p.partition, p.offset) for p in partitions]))

    def unassign(self):
        self.calls.append(("unassign",))

    def consume(self, num_messages, timeout):
        return self.batches.pop(0) if self.batches else []


def fetcher() -> tuple[ManualFetcher, Handle, Recording]:
    handle, recording = Handle(), Recording()
    return ManualFetcher(handle, threading.Lock(), recording.events), handle, recording


def offsets(records) -> list[tuple[int, int]]:
    return [(m.partition(), m.offset()) for m in records]


def test_the_poll_loop_applies_each_new_assignment_once():
    f, handle, _ = fetcher()
    f.fetch([TopicPartition(TOPIC, 0, 369)])
    f.follow()
    f.follow()
    f.fetch([])
    f.follow()
    assert handle.calls == [("assign", [(TOPIC, 0, 369)]), ("unassign",)]


def test_a_batch_polled_under_an_older_assignment_is_dropped():
    f, handle, _ = fetcher()
    f.fetch([TopicPartition(TOPIC, 0, 0)])
    handle.batches.append([Message(0, 0)])
    epoch, batch = f.poll(500, 0.1)
    f.fetch([])  # a rebalance took the partition away meanwhile
    assert f.take(batch, epoch) is None


def test_records_below_the_fetch_position_are_dropped_and_noted():
    """Seen on zk-eager: records from 0 for a partition assigned at 369, then 369 again."""
    f, _, recording = fetcher()
    f.fetch([TopicPartition(TOPIC, 0, 369), TopicPartition(TOPIC, 1, 10)])
    epoch = f.follow()
    records = f.take([Message(0, 0), Message(0, 1), Message(0, 2), Message(1, 10), Message(0, 369)], epoch)
    assert offsets(records) == [(1, 10), (0, 369)]
    assert recording.said == [
        (
            "client_log",
            {
                "level": "WARNING",
                "message": "dropped 3 records of events-0 (offsets "
                "0..2) below its fetch position 369 (a stale fetch after assign)",
            },
        )
    ]


def test_what_was_processed_is_never_taken_again_within_one_assignment():
    f, _, recording = fetcher()
    f.fetch([TopicPartition(TOPIC, 0, 5)])
    epoch = f.follow()
    assert offsets(f.take([Message(0, 5), Message(0, 6)], epoch)) == [(0, 5), (0, 6)]
    f.processed({(TOPIC, 0): 7})
    assert offsets(f.take([Message(0, 5), Message(0, 6), Message(0, 7)], epoch)) == [(0, 7)]
    assert "offsets 5..6) below its fetch position 7" in recording.said[0][1]["message"]


def test_a_new_assignment_sets_new_positions():
    """A partition handed back at an older committed offset is read again from there: a new owner."""
    f, _, _ = fetcher()
    f.fetch([TopicPartition(TOPIC, 0, 5)])
    f.processed({(TOPIC, 0): 9})
    f.fetch([TopicPartition(TOPIC, 0, 7)])
    epoch = f.follow()
    assert offsets(f.take([Message(0, 7)], epoch)) == [(0, 7)]


def test_from_the_beginning_sets_no_floor():
    f, _, recording = fetcher()
    f.fetch([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    epoch = f.follow()
    assert offsets(f.take([Message(0, 0), Message(0, 1)], epoch)) == [(0, 0), (0, 1)]
    assert recording.said == []


def test_records_of_a_partition_not_assigned_are_dropped_and_noted():
    f, _, recording = fetcher()
    f.fetch([TopicPartition(TOPIC, 0, 0)])
    epoch = f.follow()
    assert offsets(f.take([Message(3, 40), Message(0, 0)], epoch)) == [(0, 0)]
    assert recording.said[0][1]["message"] == "dropped 1 records of events-3 (offsets 40..40) not in the assignment"


def test_errors_in_a_batch_are_written_as_consumer_errors():
    class Error:
        def name(self):
            return "_TRANSPORT"

        def code(self):
            return -195

        def fatal(self):
            return False

        def str(self):
            return "Local: Broker transport failure"

    f, _, recording = fetcher()
    f.fetch([TopicPartition(TOPIC, 0, 0)])
    epoch = f.follow()
    assert offsets(f.take([Message(0, 0, error=Error()), Message(0, 0)], epoch)) == [(0, 0)]
    said = {"error": "_TRANSPORT", "error_code": -195, "fatal": False, "message": "Local: Broker transport failure"}
    assert recording.said == [("consumer_error", said)]
