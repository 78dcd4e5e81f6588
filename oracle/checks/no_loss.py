"""no-loss: every record the brokers acknowledged (acks=all) is consumed by the end.

Only meaningful once the run drained (`phase: done`): an interrupted run has
records legitimately in flight. Each loss is explained by the commit that
moved the group past the lost offsets, when there is one — e.g. a
commit-before-processing consumer killed mid-batch. Where a new owner went on
past them and no recorded commit put it there, the commit was made but never
recorded (its member was killed between sending it and writing its event) or
the position was reset: both owners are named.
"""
from __future__ import annotations

from ..anomalies import NOT_FINISHED, Anomaly, CheckResult, members, plural
from ..history import Consumption, History, TopicPartition
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
    commits = [c for c in history.commits if c.success and c.tp == tp and c.offset > lost.min]
    handover = _handover_past(history, tp, lost)
    if handover:  # the group went on from a committed offset: only a commit up to it, sent before, explains it
        before, after = handover
        commits = [c for c in commits if c.offset <= after.lo and c.sent_ms <= after.at.mono_ms]
    culprit = commits[0] if commits else None
    times = {}
    if culprit:
        message += (f"; {culprit.slot} committed offset {culprit.offset} past them (trigger {culprit.trigger}, "
                    f"generation {culprit.generation}, sent {history.clock(culprit.sent_ms)})")
        session = ownership_of(history).commit_session(culprit)
        if session and session.ended_by != OWNED_AT_END:
            when = "had ended" if session.end_ms <= culprit.sent_ms else "then ended"
            message += f" and its ownership {when} ({session.ended_by}) at {history.clock(session.end_ms)}"
        times["commit"] = culprit.at
        suspects = (culprit.slot,)
    elif handover:
        before, after = handover
        message += (f"; {after.slot} went on from offset {after.lo} when it took the partition over "
                    f"({history.clock(after.at.mono_ms)}) and no commit in the history put the group there: "
                    f"a commit sent but never recorded, or a reset position")
        if before:
            session = ownership_of(history).owning(before.slot, tp, before.at.mono_ms)
            message += f". {before.slot} consumed up to offset {before.hi} before"
            if session and session.ended_by != OWNED_AT_END:
                message += f"; its ownership ended ({session.ended_by}) at {history.clock(session.end_ms)}"
            times["previous"] = before.at
        times["first_after_handover"] = after.at
        suspects = (before.slot if before else None, after.slot)
    else:
        suspects = ()
    return Anomaly(
        NAME, "lost-write", message, partition=str(tp), offsets=lost.render(), count=len(lost),
        members=members(*suspects), generation=culprit.generation if culprit else None, times=times,
    )


def _handover_past(history: History, tp: TopicPartition,
                   lost: OffsetSet) -> tuple[Consumption | None, Consumption] | None:
    """(the consumption before, the first past the lost offsets) where that first one began a new
    owner's session: the group went on from a committed offset. None where nobody went on past
    them, or the member consuming before went on itself."""
    consumed = history.consumptions_of(tp)  # in time order
    i = next((i for i, c in enumerate(consumed) if c.lo > lost.min), None)
    if i is None:
        return None
    after, before = consumed[i], consumed[i - 1] if i else None
    ownership = ownership_of(history)
    went_on = ownership.owning(after.slot, tp, after.at.mono_ms)
    if went_on is None or (before and ownership.owning(before.slot, tp, before.at.mono_ms) is went_on):
        return None
    return before, after
