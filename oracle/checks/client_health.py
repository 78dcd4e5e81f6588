"""client-health: a member's client library neither crashes, nor hangs in its close, nor gives up.

Chaos may take a member away — a fault kills it, pauses it, cuts it off — but the library itself
must not: every member process that ends does so because it was told to (SIGTERM, then its
close: LeaveGroup), or because a fault killed it (a `fault_started` whose effects say
`down: killed`: SIGKILL, or SIGTERM and its close). Anything else is the library failing — a
fault's SIGTERM followed by a close that hangs or a crash signal too — and each incarnation is
named once, by the first of:

- `close-hang`: the harness asked it to stop and had to kill it when its stop timeout ran out
  (`process_exited.escalated_after_ms`): its close never returned (librdkafka #4527);
- `fatal-error`: the library reported a fatal error (`consumer_error` with `fatal: true`), after
  which a client cannot consume again (librdkafka's `rd_kafka_fatal_error`, a Java client's
  FencedInstanceIdException and the like);
- `library-crash`: the process died on a signal a library raises against itself (SIGSEGV, SIGABRT,
  SIGBUS, …: librdkafka #4312); a SIGTERM or SIGKILL is someone's stop, not a crash;
- `unexpected-exit`: it exited with a non-zero code on its own, no error said (the driver failed).

And the library must not give up its assignment for nothing: `needless-loss` names a classic-protocol
member that declared its partitions lost (`partitions_lost`) when every group error it had been
answered since its last sync was REBALANCE_IN_PROGRESS — an answer that asks a member to rejoin and
says nothing against its member id or generation, so it rejoins owning what it owns (KIP-429). A
loss after UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, a fencing error, an error this reader cannot name,
or no error at all (a session the client itself timed out) is not judged (KAFKA-14016: Java clients
3.3.0 – 3.3.1 reset their generation on a SyncGroup REBALANCE_IN_PROGRESS and lost everything).

Only consumer processes are judged: the observer and the producer are the harness's instruments.
"""

from __future__ import annotations

import re
import signal

from .. import vocabulary as ev
from ..anomalies import Anomaly, CheckResult, duration
from ..fields import MEMBER_HOST_ROLE
from ..history import (
    Event,
    History,
    Instant,
    MemberProcesses,
    MemberSlot,
    TopicPartition,
    effects_of,
    render_partitions,
)

NAME = "client-health"
OPTIONS: dict = {}
CONSUMER = "consumer"  # process_started/_exited `role` of a member's process
# What a process raises against itself when its code is broken: a bad access, an abort (an assertion, a
# double free), a bad instruction. SIGTERM / SIGINT / SIGKILL are stops someone sent, not crashes.
CRASH_SIGNALS = frozenset(
    {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGSYS, signal.SIGTRAP}
)


def check(history: History, options: dict) -> CheckResult:
    result = CheckResult()
    processes = MemberProcesses()  # which incarnations each pid runs: one, or a member host's many
    fatal: dict[tuple[str, int], Event] = {}  # the first fatal error of each incarnation
    doomed: set[str] = set()  # members a fault is killing: their next exit is its doing
    for e in history.named(
        ev.CONSUMER_STARTED,
        ev.CONSUMER_STOPPED,
        ev.CLIENT_DESTROYED,
        ev.CONSUMER_ERROR,
        ev.FAULT_STARTED,
        ev.PROCESS_EXITED,
    ):
        name = e[ev.NAME]
        if name == ev.CONSUMER_STARTED:
            processes.started(e)
        elif name in (ev.CONSUMER_STOPPED, ev.CLIENT_DESTROYED):
            processes.ended(e)
        elif name == ev.CONSUMER_ERROR and e.get("fatal"):
            key = (e[ev.MEMBER], e.get("incarnation"))
            if key not in fatal:
                fatal[key] = e
                result.violations.append(_fatal_error(e))
        elif name == ev.FAULT_STARTED and effects_of(e).get(ev.DOWN) == ev.KILLED:
            doomed.add(e.get("target"))
        elif name == ev.PROCESS_EXITED and e.get("role") in (CONSUMER, MEMBER_HOST_ROLE):
            killed_by_fault = e.get("process") in doomed
            doomed.discard(e.get("process"))
            slots = processes.exited(e) or []
            if e.get("role") == MEMBER_HOST_ROLE:  # one exit of many members: named by its host
                who = f"{e.get('process')} (its members {', '.join(map(str, slots)) or 'none'}"
                members = tuple(s.member for s in slots)
                failed = bool(slots) and all((s.member, s.incarnation) in fatal for s in slots)
            else:
                member, incarnation = (slots[0].member, slots[0].incarnation) if slots else (e.get("process"), None)
                who, members, failed = f"{member} (incarnation {incarnation}", (member,), (member, incarnation) in fatal
            anomaly = _exit_anomaly(e, f"{who}, pid {e.get('pid')})", members, failed)
            # A fault stops its target with SIGKILL or SIGTERM: that explains an exit, never a close
            # that hung after its SIGTERM nor a crash signal the library raised meanwhile.
            if anomaly is not None and not (killed_by_fault and anomaly.kind == "unexpected-exit"):
                result.violations.append(anomaly)
    result.violations.extend(_needless_losses(history))
    kinds = [a.kind for a in result.violations]
    result.detail = {"by_kind": {k: kinds.count(k) for k in sorted(set(kinds))}}
    return result


def _fatal_error(e: Event) -> Anomaly:
    said = f": {e['message']}" if e.get("message") else ""
    return Anomaly(
        NAME,
        "fatal-error",
        f"{e[ev.MEMBER]} (incarnation {e.get('incarnation')}) got a fatal error from its client library, "
        f"{e.get('error')}{said}: it cannot consume again",
        members=(e[ev.MEMBER],),
        times={"error": Instant.of(e)},
    )


def _exit_anomaly(e: Event, who: str, members: tuple[str, ...], failed_fatally: bool) -> Anomaly | None:
    """What a member process's or a member host's exit says of its client library, if anything."""
    code = e.get("returncode")
    escalated = e.get(ev.ESCALATED_AFTER_MS)
    if escalated is not None:
        kind = "close-hang"
        message = (
            f"{who} was asked to stop and had not exited {duration(escalated)} later: its close hung, "
            "and the harness killed it"
        )
    elif failed_fatally or code in (0, None):
        return None  # a fatal error is named where it was said
    elif code < 0:
        if -code not in CRASH_SIGNALS:
            return None
        kind = "library-crash"
        message = f"{who} died on {signal.Signals(-code).name}: its client library crashed"
    else:
        kind = "unexpected-exit"
        message = f"{who} exited with code {code} on its own, without a fatal error from its library"
    return Anomaly(NAME, kind, message, members=members, times={"exited": Instant.of(e)})


# The answer that asks a member to rejoin and nothing more, however a client words it: its name or
# code, librdkafka's "Broker: Group rebalance in progress", a Java client's RebalanceInProgressException
# (a refused commit) or "SyncGroup failed: The group began another rebalance".
REJOIN_ONLY_CODE = 27
REJOIN_ONLY_WORDS = ("rebalanceinprogress", "groupbegananotherrebalance")
# What a member was answered or hit since its last sync; any one of them not a rejoin-only answer (a
# library error, a failed rebalance) leaves its loss unjudged.
_GROUP_ERRORS = (
    ev.GROUP_JOIN_FAILED,
    ev.GROUP_SYNC_FAILED,
    ev.HEARTBEAT_FAILED,
    ev.CONSUMER_ERROR,
    ev.REBALANCE_FAILED,
)


def _rejoin_only(e: Event) -> bool:
    words = re.sub(r"[^a-z]", "", str(e.get("error") or "").lower())
    return e.get("error_code") == REJOIN_ONLY_CODE or any(w in words for w in REJOIN_ONLY_WORDS)


def _needless_losses(history: History) -> list[Anomaly]:
    """Each classic-protocol incarnation's losses that only REBALANCE_IN_PROGRESS answers preceded."""
    found = []
    answers: dict[MemberSlot, list[Event]] = {}  # the group errors since its last sync
    for e in history.named(
        ev.CONSUMER_STARTED, ev.GROUP_SYNCED, ev.OFFSETS_COMMITTED, ev.PARTITIONS_LOST, *_GROUP_ERRORS
    ):
        slot, name = MemberSlot.of(e), e[ev.NAME]
        if name in (ev.CONSUMER_STARTED, ev.GROUP_SYNCED):
            answers[slot] = []
        elif name in _GROUP_ERRORS or (name == ev.OFFSETS_COMMITTED and e.get("error")):
            answers.setdefault(slot, []).append(e)
        elif name == ev.PARTITIONS_LOST:
            before, answers[slot] = answers.get(slot, []), []
            generation = history.generation_of(slot)
            if before and generation is not None and generation.classic and all(map(_rejoin_only, before)):
                found.append(_needless_loss(e, slot, before))
    return found


def _needless_loss(e: Event, slot: MemberSlot, answers: list[Event]) -> Anomaly:
    said = ", ".join(sorted({a[ev.NAME] for a in answers}))
    return Anomaly(
        NAME,
        "needless-loss",
        f"{slot} declared {render_partitions(TopicPartition.of(p) for p in e.get('partitions') or [])} lost after only REBALANCE_IN_PROGRESS "
        f"answers ({said}): that asks it to rejoin, keeping what it owns, not to give its partitions up",
        members=(slot.member,),
        times={"lost": Instant.of(e), "answered": Instant.of(answers[-1])},
    )
