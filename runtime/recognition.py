"""Saying that a log the run reads was not recognised: its lines' wording is not the one the
harness knows for that release or client version.

A run whose events come partly from such a log would be judged from half of them. Whoever
reads a log on the harness's side calls `log_unrecognised` once it knows lines it needs are
missing; the event it writes (`log_unrecognised`, the same a member writes of its client's
log: workloads/member_events.py) makes the oracle skip every check with that reason
(oracle.verdict.unrecognised), so the run ends INCOMPLETE (exit 4) naming what is missing —
never a verdict.
"""

from __future__ import annotations

from oracle import vocabulary as ev
from runtime.history import HistoryWriter


def log_unrecognised(writer: HistoryWriter, log: str, missing: str, client_version: str | None = None) -> None:
    """Record in the history that `log` (which log, and whose wording: "server logs of the brokers,
    Kafka 4.4.0") gave none of `missing` (what the reader needed, in words); `client_version`
    when the log is a client library's."""
    writer.emit(ev.LOG_UNRECOGNISED, log=log, missing=missing, client_version=client_version)
