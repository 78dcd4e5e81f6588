"""benchmarks/measuring.py: the fill both consume benchmarks time their consumers after."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.measuring import produce_all

REPO = Path(__file__).resolve().parents[2]


class FullQueueProducer:
    """A producer whose queue is full every third produce() until a poll() drains it."""

    def __init__(self):
        self.produced: list[tuple[str, bytes, dict]] = []
        self.polls: list[float] = []
        self.flushed = None
        self.full = False

    def produce(self, topic, value, **kw):
        if self.full:
            raise BufferError("Local: Queue full")
        self.produced.append((topic, value, kw))
        self.full = len(self.produced) % 3 == 0

    def poll(self, timeout):
        self.polls.append(timeout)
        self.full = False

    def flush(self, timeout):
        self.flushed = timeout


def test_every_record_is_produced_once_in_order_through_a_full_queue_then_flushed():
    p = FullQueueProducer()
    delivered = object()
    produce_all(p, "events", 10, lambda i: b"%d" % i, partition=lambda i: i % 4, on_delivery=delivered, flush_s=7)
    assert [v for _, v, _ in p.produced] == [b"%d" % i for i in range(10)]
    assert [kw for *_, kw in p.produced] == [{"on_delivery": delivered, "partition": i % 4} for i in range(10)]
    assert p.polls.count(0.05) == 3 and p.flushed == 7  # waited on a full queue thrice; all delivered


def test_without_a_partition_the_partitioner_chooses():
    p = FullQueueProducer()
    produce_all(p, "events", 2, lambda _: b"x")
    assert [kw for *_, kw in p.produced] == [{}, {}]


@pytest.mark.parametrize("script", ["consume_rate.py", "message_proxy_cost.py"])
def test_the_benchmarks_that_share_it_start(script):
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), "--help"], capture_output=True, text=True)
    assert run.returncode == 0 and "usage:" in run.stdout, run.stderr
