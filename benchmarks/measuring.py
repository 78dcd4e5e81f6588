"""What the benchmarks that measure consuming share: a topic filled as fast as a producer takes it.

benchmarks/consume_rate.py and benchmarks/message_proxy_cost.py fill a topic before they time
its consumers; imported as ``benchmarks.measuring`` (each puts the repository on sys.path).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def produce_all(
    producer: Any,
    topic: str,
    records: int,
    value: Callable[[int], bytes],
    *,
    partition: Callable[[int], int] | None = None,
    on_delivery: Callable | None = None,
    flush_s: float = 120,
) -> None:
    """``records`` records, the i-th ``value(i)`` (on ``partition(i)``, else the partitioner's),
    each retried until the producer's queue takes it (BufferError: a full queue waits on
    delivery reports), then every one delivered (flushed)."""
    where = {} if on_delivery is None else {"on_delivery": on_delivery}
    for i in range(records):
        if partition is not None:
            where["partition"] = partition(i)
        while True:
            try:
                producer.produce(topic, value(i), **where)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)  # delivery reports, so the queue drains
    producer.flush(flush_s)
