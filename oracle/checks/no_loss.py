"""no-loss: every record the brokers acknowledged (acks=all) is consumed by the end.

Only meaningful once the run drained (`phase: done`): an interrupted run has
records legitimately in flight. Each loss is explained by the commit that
moved the group past the lost offsets, when there is one — e.g. a
commit-before-processing consumer killed mid-batch.
"""
from __future__ import annotations

from ..anomalies import NOT_FINISHED, Anomaly, CheckResult, members, plural
from ..history import History, TopicPartition
from ..offsets import OffsetSet
from ..ownership import OWNED_AT_END, ownership_of

NAME = "no-loss"
OPTIONS: dict = {}


def check(history: History, options: dict) -> CheckResult:
    if not history.done:
        return CheckResult(skipped=NOT_FINISHED)
    result = CheckResult()
    for tp, acked in sorted(history.acked.items()):
        lost = acked - history.consumed.get(tp, OffsetSet())
        if lost:
            result.violations.append(_lost(history, tp, lost))
    result.detail = {
        "acked": sum(map(len, history.acked.values())),
        "lost": sum(v.count or 0 for v in result.violations),
    }
    return result


def _lost(history: History, tp: TopicPartition, lost: OffsetSet) -> Anomaly:
    message = f"{tp}: {plural(len(lost), 'acknowledged record')} never consumed: offsets {lost.render()}"
    culprit = next((c for c in history.commits if c.success and c.tp == tp and c.offset > lost.min), None)
    times = {}
    if culprit:
        message += (f"; {culprit.slot} committed offset {culprit.offset} past them (trigger {culprit.trigger}, "
                    f"generation {culprit.generation}, sent {history.clock(culprit.sent_ms)})")
        session = ownership_of(history).commit_session(culprit)
        if session and session.ended_by != OWNED_AT_END:
            when = "had ended" if session.end_ms <= culprit.sent_ms else "then ended"
            message += f" and its ownership {when} ({session.ended_by}) at {history.clock(session.end_ms)}"
        times["commit"] = culprit.at
    return Anomaly(
        NAME, "lost-write", message, partition=str(tp), offsets=lost.render(), count=len(lost),
        members=members(culprit.slot) if culprit else (), generation=culprit.generation if culprit else None,
        times=times,
    )
