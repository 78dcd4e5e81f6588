"""A producer at a fixed rate that records exactly what the brokers acknowledged.

Records go round-robin over the topic's partitions (explicit partition, so every
partition gets load whatever the keys). Acknowledged offsets are written to the
history as contiguous ranges every ``FLUSH_EVERY_S``; with ``acks=all`` and
idempotence, an acknowledged record is one the oracle may demand to see consumed.

Usage: ``python -m workloads.producer SPEC.json``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from confluent_kafka import Producer

from oracle import vocabulary as ev
from runtime.child import read_spec, stop_on_signals
from runtime.history import HistoryWriter, latency_histogram, offset_ranges

FLUSH_EVERY_S = 0.2
TICK_S = 0.01


@dataclass
class ProducerSpec:
    history: str
    bootstrap_servers: str
    topic: str
    partitions: int
    rate: float
    linger_ms: int  # the scenario's workload.producer.linger_ms
    value_bytes: int = 100
    # cluster.client_config of an external cluster (security settings): under the harness's own keys
    client_settings: dict = field(default_factory=dict)
    incarnation: int = 1  # each start a writer of its own

    def client_config(self) -> dict:
        return {
            **self.client_settings,
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": "producer",
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": self.linger_ms,
            # Ride out a broker crash and its restart rather than fail records.
            "delivery.timeout.ms": 120_000,
        }


class RecordingProducer:
    def __init__(self, spec: ProducerSpec):
        self.spec = spec
        self.history = HistoryWriter(spec.history, "producer", incarnation=spec.incarnation)
        self.producer = Producer(spec.client_config())
        self.acked: dict[tuple[str, int], list[int]] = defaultdict(list)
        self.latencies_ms: list[float] = []  # produce() to acknowledgement, per record since the last flush
        # Records the brokers took but librdkafka could not say where (a success with no offset,
        # seen while a broker's coordinators were still loading): counted, not placed in ranges.
        self.unplaced = 0
        self.failed: dict[tuple[str, int, str], int] = defaultdict(int)

    def _on_delivery(self, err, msg) -> None:
        if err is None:
            if msg.offset() is None:
                self.unplaced += 1
            else:
                self.acked[(msg.topic(), msg.partition())].append(msg.offset())
            self.latencies_ms.append(msg.latency() * 1000.0)
        else:
            self.failed[(msg.topic(), msg.partition(), err.name())] += 1

    def _flush_history(self) -> None:
        if self.acked or self.unplaced:
            self.history.emit(
                ev.RECORDS_ACKED,
                ranges=offset_ranges(self.acked),
                latency_ms=latency_histogram(self.latencies_ms),
                **({"unplaced": self.unplaced} if self.unplaced else {}),
            )
            self.acked, self.latencies_ms, self.unplaced = defaultdict(list), [], 0
        for (topic, partition, error), count in self.failed.items():
            self.history.emit(ev.PRODUCE_FAILED, topic=topic, partition=partition, error=error, count=count)
        self.failed.clear()

    def run(self, stop: threading.Event) -> int:
        spec = self.spec
        self.history.emit(
            ev.PRODUCER_STARTED, pid=os.getpid(), topic=spec.topic, rate=spec.rate, linger_ms=spec.linger_ms
        )
        payload = b"x" * spec.value_bytes
        sent = 0
        start = last_flush = time.monotonic()
        while not stop.is_set():
            due = int((time.monotonic() - start) * spec.rate)
            while sent < due:
                try:
                    self.producer.produce(
                        spec.topic,
                        value=payload,
                        key=str(sent).encode(),
                        partition=sent % spec.partitions,
                        on_delivery=self._on_delivery,
                    )
                    sent += 1
                except BufferError:  # local queue full (brokers unreachable): let it drain
                    break
            self.producer.poll(TICK_S)
            if time.monotonic() - last_flush >= FLUSH_EVERY_S:
                self._flush_history()
                last_flush = time.monotonic()
        remaining = self.producer.flush(30)
        self._flush_history()
        self.history.emit(ev.PRODUCER_STOPPED, sent=sent, unacknowledged=remaining)
        return 0


def main(argv: list[str]) -> int:
    return RecordingProducer(read_spec(ProducerSpec, argv)).run(stop_on_signals())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
