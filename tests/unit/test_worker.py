"""The processing thread of a `processing: worker` member (workloads/worker.py): the poll loop
hands batches over and goes on; a rebalance callback drains it — every batch handed over is
processed before the callback goes on."""

from __future__ import annotations

import threading

from workloads.worker import Worker


def test_drain_waits_for_every_batch_handed_over_and_in_flight_counts_them():
    processed, errors, gate = [], [], threading.Event()
    w = Worker(lambda records: (gate.wait(), processed.append(records)), errors.append).start()
    w.submit([1, 2, 3])
    w.submit([4, 5])  # the hand-off holds one: this returned once the worker took the first
    assert w.in_flight == 5 and processed == []
    drained = threading.Event()
    threading.Thread(target=lambda: (w.drain(), drained.set())).start()
    assert not drained.wait(0.1)  # the callback waits for the worker
    gate.set()
    assert drained.wait(2)
    assert processed == [[1, 2, 3], [4, 5]] and w.in_flight == 0
    w.stop()
    assert errors == []


def test_stop_processes_what_was_handed_over_first():
    processed = []
    w = Worker(processed.append, lambda e: None).start()
    w.submit(["a"])
    w.stop()
    assert processed == [["a"]]
