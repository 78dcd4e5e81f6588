"""Fetching for members whose group lives outside Kafka (zk-eager, the project's coordinator):
a librdkafka consumer with a manual assignment, positioned where the group's offsets say.

Two threads are involved. Whoever rebalances decides what to fetch from where
(``fetch``, under the member's lock); the poll loop alone touches the librdkafka handle
(``follow`` before each poll: librdkafka's assign() hangs while another thread polls).
Every change of assignment is a new epoch, so a batch polled under an older one is
dropped: the partitions' owner as of now reads those records again.

librdkafka may still deliver from an older fetch position after assign() on the same
handle (seen on zk-eager: records from 0 for a partition assigned at 369, then 369
again). Within one assignment the member never goes back: records below a partition's
position — processed already, or not this owner's to process — are dropped and noted,
as are records of a partition it was not given.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from confluent_kafka import TopicPartition

from workloads.consumer import records_of
from workloads.member_events import MemberEvents


class ManualFetcher:
    """A manual-assignment fetcher that assigns at known positions and drops what lies below them."""

    def __init__(self, consumer, lock: threading.Lock | threading.RLock, events: MemberEvents):
        self.consumer = consumer  # a confluent_kafka.Consumer (or its manual-assignment surface)
        self.lock = lock  # the member's: assignments change and batches are processed under it
        self.events = events
        self.assignment: list[TopicPartition] = []  # what to fetch, from which offsets
        self.epoch = 0  # +1 whenever fetching stops or restarts: batches fetched before are stale
        self.applied_epoch = 0  # the handle follows `assignment` as of this epoch
        self.positions: dict[tuple[str, int], int] = {}  # per assigned partition, the next offset to process

    def fetch(self, partitions: list[TopicPartition]) -> None:
        """Under the lock: fetch these from their offsets from now on (nothing: stop fetching).
        An offset below 0 (OFFSET_BEGINNING) sets no floor: everything the log has is new."""
        self.assignment = partitions
        self.positions = {(p.topic, p.partition): p.offset for p in partitions}
        self.epoch += 1

    def follow(self) -> int:
        """Poll loop, before polling: apply the latest assignment. The epoch the next batch belongs to."""
        with self.lock:
            if self.applied_epoch != self.epoch:
                if self.assignment:
                    self.consumer.assign(self.assignment)
                else:
                    self.consumer.unassign()
                self.applied_epoch = self.epoch
            return self.epoch

    def poll(self, num_messages: int, timeout: float) -> tuple[int, list]:
        """Poll loop: (the epoch, a batch) under the latest assignment."""
        epoch = self.follow()
        return epoch, self.consumer.consume(num_messages=num_messages, timeout=timeout)

    def take(self, batch, epoch: int) -> list | None:
        """Under the lock: the batch's records to process — None if it was polled under an older
        assignment; errors written as consumer_error; records not at or past their partition's
        position dropped and noted."""
        if epoch != self.epoch:
            return None
        fresh, stale = [], {}
        for msg in records_of(batch, self.events):
            key = (msg.topic(), msg.partition())
            position = self.positions.get(key)
            if position is not None and msg.offset() >= position:
                fresh.append(msg)
            else:
                stale.setdefault(key, []).append(msg.offset())
        for (topic, partition), offsets in sorted(stale.items()):
            position = self.positions.get((topic, partition))
            where = (
                f"below its fetch position {position} (a stale fetch after assign)"
                if position is not None
                else "not in the assignment"
            )
            self.events.client_log(
                "WARNING",
                f"dropped {len(offsets)} records of {topic}-{partition} (offsets "
                f"{min(offsets)}..{max(offsets)}) {where}",
            )
        return fresh

    def processed(self, next_offsets: Mapping[tuple[str, int], int]) -> None:
        """Under the lock: processing reached these offsets; nothing below them is taken again."""
        for key, offset in next_offsets.items():
            if key in self.positions:
                self.positions[key] = max(offset, self.positions[key])
