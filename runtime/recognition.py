"""Saying that a log the run reads was not recognised: its lines' wording is not the one the
harness (or a driver) knows for that release or client version.

A run whose events come partly from such a log would be judged from half of them. Whoever
reads a log calls `log_not_recognised` once it knows lines it needs are missing; the event
it writes makes the oracle skip every check with that reason (oracle/verdict.py), so the run
ends INCOMPLETE (exit 4) naming what is missing — never a verdict.
"""

from __future__ import annotations

from collections.abc import Iterable

from oracle import vocabulary as ev
from runtime.history import HistoryWriter

MAX_LINES = 5  # a few of the log's own lines, for whoever teaches the reader the new wording


def log_not_recognised(
    writer: HistoryWriter, log: str, version: str | None, missing: str, lines: Iterable[str] = ()
) -> None:
    """Record in the history that `log` (e.g. "broker-1's server log"), written by `version`
    (e.g. "Kafka 4.4.0", "librdkafka 2.3.0"), gave none of `missing` (what the reader needed,
    in words: "the coordinator's Stabilized group lines of group smoke"); `lines`: some of the
    log's lines it did not recognise."""
    writer.emit(
        ev.LOG_NOT_RECOGNISED,
        log=log,
        version=version,
        missing=missing,
        lines=[line[:500] for line in list(lines)[:MAX_LINES]],
    )
