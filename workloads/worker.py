"""The processing thread of a member whose poll loop hands batches off (workload.librdkafka.processing: worker).

Many applications process on a thread of their own so that the poll loop stays free: it
polls, hands the batch over and polls again. A rebalance callback then runs while the
worker still holds records, and a correct application finishes (or drops) them before
it gives the partitions up: the callback waits for the worker (``drain``). A member that
committed those records before processing them and dies in that wait has lost them for
good — the revoke window a synchronous poll loop does not have.

The hand-off holds one batch: a second waits in ``submit`` until the worker takes the
first, so the poll loop is never more than two batches ahead of the processing.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import traceback
from collections.abc import Callable


class Worker:
    def __init__(self, process: Callable[[list], None], on_error: Callable[[BaseException], None]):
        self._process, self._on_error = process, on_error
        self._handoff: queue.Queue[list | None] = queue.Queue(maxsize=1)
        self._count_lock = threading.Lock()
        self._in_flight = 0
        self._thread = threading.Thread(target=self._run, name="worker", daemon=True)

    def start(self) -> Worker:
        self._thread.start()
        return self

    @property
    def in_flight(self) -> int:
        """Records handed over whose batch is not done yet."""
        with self._count_lock:
            return self._in_flight

    def submit(self, records: list) -> None:
        with self._count_lock:
            self._in_flight += len(records)
        self._handoff.put(records)

    def drain(self) -> None:
        """Return once every batch handed over is processed. Only the poll loop submits, and it
        is the one waiting here: the worker stays idle until the poll loop hands it more."""
        self._handoff.join()

    def stop(self) -> None:
        self._handoff.put(None)
        self._thread.join()

    def stop_now(self) -> None:
        """A crash: the worker ends after the batch it holds, and nobody waits for it."""
        with contextlib.suppress(queue.Full):  # it holds one and one waits: it ends with the process
            self._handoff.put_nowait(None)

    def _run(self) -> None:
        try:
            while (records := self._handoff.get()) is not None:
                try:
                    self._process(records)
                    with self._count_lock:
                        self._in_flight -= len(records)
                finally:
                    self._handoff.task_done()
        except BaseException as e:  # a dead worker with a live poll loop would look like a stall
            try:
                traceback.print_exc()
                self._on_error(e)
            finally:
                os._exit(1)
