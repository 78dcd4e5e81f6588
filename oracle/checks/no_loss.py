"""no-loss: every record the brokers acknowledged (acks=all) is consumed by the end.

Only meaningful once the run drained (`phase: done`): an interrupted run has
records legitimately in flight. Each loss is explained by the commit that
moved the group past the lost offsets, when there is one — e.g. a
commit-before-processing consumer killed mid-batch. Where a new owner went on
past them, that is the commit it fetched when it took the partition over (not
a later one of its own); where no recorded commit put the group there, one was
sent but never recorded (its member killed between sending it and writing its
event) or the position was reset, and the owners before and after are named.
"""

from __future__ import annotations

from ..anomalies import NOT_FINISHED, Anomaly, CheckResult, members, plural
from ..history import Consumption, History, TopicPartition
from ..offsets import OffsetSet
from ..ownership import OWNED_AT_END, Session, ownership_of

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
    handover = _handover_past(history, tp, lost)
    if handover:  # what its new owner fetched when it took the partition over
        previous, went_on, after = handover
        fetched = history.committed_at(tp, went_on.start_ms)
        culprit = fetched if fetched and fetched.offset > lost.min else None
    else:
        culprit = next((c for c in history.commits if c.success and c.tp == tp and c.offset > lost.min), None)
    times = {}
    if culprit:
        message += (
            f"; {culprit.slot} committed offset {culprit.offset} past them (trigger {culprit.trigger}, "
            f"generation {culprit.generation}, sent {history.clock(culprit.sent_ms)})"
        )
        session = ownership_of(history).commit_session(culprit)
        if session and session.ended_by != OWNED_AT_END:
            when = "had ended" if session.end_ms <= culprit.sent_ms else "then ended"
            message += f" and its ownership {when} ({session.ended_by}) at {history.clock(session.end_ms)}"
        times["commit"] = culprit.at
        suspects, generation = (culprit.slot,), culprit.generation
    elif handover:
        message += (
            f"; {went_on.slot} went on from offset {after.lo} when it took the partition over "
            f"(generation {went_on.generation}, {history.clock(went_on.start_ms)}) and no commit in the "
            f"history put the group there: a commit sent but never recorded, or a reset position"
        )
        if previous:
            message += f". The owner before: {previous.describe(history)}"
            times["previous_owner_until"] = previous.end or previous.start
        times["first_after_handover"] = after.at
        suspects, generation = (previous.slot if previous else None, went_on.slot), went_on.generation
    else:
        suspects, generation = (), None
    return Anomaly(
        NAME,
        "lost-write",
        message,
        partition=str(tp),
        offsets=lost.render(),
        count=len(lost),
        members=members(*suspects),
        generation=generation,
        times=times,
    )


def _handover_past(
    history: History, tp: TopicPartition, lost: OffsetSet
) -> tuple[Session | None, Session, Consumption] | None:
    """Where a new owner went on past the first lost offset: (the session before it, its session,
    its first consumption past it). None where nobody went on past it, where that consumption lies
    outside every session (exclusive-ownership's to judge), or where its session had consumed
    before (a gap within one session: contiguity's poll-skip)."""
    consumed = history.consumptions_of(tp)  # in time order
    i = next((i for i, c in enumerate(consumed) if c.lo > lost.min), None)
    if i is None:
        return None
    after, ownership = consumed[i], ownership_of(history)
    went_on = ownership.owning(after.slot, tp, after.at.mono_ms)
    if went_on is None or any(
        ownership.owning(c.slot, tp, c.at.mono_ms) is went_on for c in consumed[:i] if c.slot == after.slot
    ):
        return None
    before = [s for s in ownership.of_partition(tp) if s is not went_on and s.start_ms <= went_on.start_ms]
    return (before[-1] if before else None), went_on, after
