"""convergence: after the last fault heals the group settles, and lag drains.

From the last `fault_healed` or load-profile change (`group_resized`), else the start
of the workload phase, the live members' current assignments must cover
every partition exactly once within `within_s` seconds and stay that way
until the run is done — every partition of a topic some live member subscribes to, where
members subscribe to different topics (oracle/subscriptions.py). The last lag sample, if any, must show zero lag.

A group that never settles because it keeps rebalancing is named for it: `rebalance-loop`
(in place of `not-converged` / `slow-convergence`) when the last `loop_rebalances` (default 5)
or more rebalances after the anchor came one after another with nothing to explain them — the
same members in each, no member started, stopped or exited, no subscription changed, no
partition added, no load-profile change and no fault active. A rebalance that follows such a
change is explained by it, and so is one whose members differ from the previous one's; the
cooperative protocol's follow-up rebalance counts, so a join costs at most one unexplained
rebalance. The default comes from real runs: over 3,026 histories of this project's runs
(2026-11-28, every scenario and suite run on this machine) the longest such run of
unexplained rebalances anywhere was 2 (10 runs; 1 in 245, none in the rest). The violation
gives how many rebalances, over how long, their generations and members.

Progress: a group that looks stable while a partition stalls has not converged
either. Wherever no fault is active and no rebalance is in progress, a partition
with acknowledged records nobody has processed yet must see some processed
within `stall_s` (default: twice the longest session timeout, at least 15 s).

Eviction: a member a fault silenced for good (its heartbeats stopped) must be evicted by
its coordinator once the session.timeout.ms its incarnation joined with has run out —
its last heartbeat came before the silence, so no later than that after it. One evicted
much later (`late-eviction`) was held to another timeout than the one it asked for
(KAFKA-14009: a static member's new timeouts ignored when it rejoined).
"""

from __future__ import annotations

from bisect import bisect_left

from .. import vocabulary as ev
from ..anomalies import NOT_FINISHED, Anomaly, CheckResult, duration, members
from ..explain import explain_rebalances
from ..fields import MEMBER_HOST_ROLE
from ..history import Event, History, Instant, TopicPartition, effects_of, render_partitions
from ..ownership import ownership_of
from ..rebalances import Rebalance, rebalances_of, run_rebalances
from ..subscriptions import subscriptions_of

NAME = "convergence"
OPTIONS = {"within_s": 60, "stall_s": None, "loop_rebalances": 5}

# What explains a rebalance: a member's process or subscription, the topics, the load profile, a fault.
_CHANGES = (
    ev.CONSUMER_STARTED,
    ev.CONSUMER_STOPPED,
    ev.CLIENT_DESTROYED,
    ev.PROCESS_EXITED,
    ev.SUBSCRIPTION_CHANGED,
    ev.PARTITIONS_ADDED,
    ev.GROUP_RESIZED,
    ev.FAULT_STARTED,
    ev.FAULT_HEALED,
)
# How much later than its session timeout after the silence a member may be evicted: the
# coordinator's timer and the log line that shows its eviction lag a little, never seconds.
LATE_EVICTION_SLACK_MS = 5000.0


def check(history: History, options: dict) -> CheckResult:
    done = history.done
    if not done:
        return CheckResult(skipped=NOT_FINISHED)
    healed, resized = history.last(ev.FAULT_HEALED), history.last(ev.GROUP_RESIZED)
    if resized and (not healed or resized["mono_ms"] > healed["mono_ms"]):  # a load profile's last change
        anchor, since_what = resized, f"the load profile's last change (to {resized.get('members')} members)"
    else:
        anchor = healed or history.first(ev.PHASE, phase="workload") or history.events[0]
        since_what = f"fault {healed.get('fault_id')} healed" if healed else "the workload started"
    since = anchor["mono_ms"]
    # Judge up to `done`, or the first end-of-run stop if the harness stopped members first.
    # Members a scale-down stopped did so before their fault healed, and those the load profile
    # stopped were told to leave by it (one may exit after the profile's last change): not the end.
    leaving = {m for e in history.named(ev.GROUP_RESIZED) for m in e.get("stopped") or ()}
    stops = [
        e["mono_ms"]
        for e in history.named(ev.CONSUMER_STOPPED)
        if e.get("reason") == "end-of-run" and e["mono_ms"] > since and e.get(ev.MEMBER) not in leaving
    ]
    horizon = min([done["mono_ms"], *stops])

    ownership, subscriptions = ownership_of(history), subscriptions_of(history)
    changes = sorted({t for s in ownership.sessions for t in (s.start_ms, s.end_ms) if since < t < horizon})
    converged_at: float | None = None
    checkpoints = [since, *changes]
    # The same partitions wanted throughout: the sweep's own count of those not owned exactly once
    # says whether the group is settled, and only the last state is put in words.
    fixed = not subscriptions.mixed and not history.partitions_added_mid_run
    every = set(history.partitions)
    sweep = ownership.owners_over(checkpoints, history.partitions)
    for t, (owners, off) in zip(checkpoints, sweep, strict=False):
        if fixed and t != checkpoints[-1]:
            settled = off.isdisjoint(every)
        else:
            # The last state must cover every partition, including any the group never noticed.
            partitions = history.partitions if t == checkpoints[-1] else history.partitions_at(t)
            # Members subscribed to different topics: a topic no live member subscribes to has no owner.
            partitions = [tp for tp in partitions if subscriptions.wanted(tp.topic, t)]
            problem = _problem(partitions, owners)
            settled = problem is None
        converged_at = None if not settled else (t if converged_at is None else converged_at)
    result = CheckResult(detail={"since": since_what, "within_s": options["within_s"]})
    times = {"since": Instant.of(anchor), "horizon": Instant(None, horizon)}
    loop = _loop(history, since, horizon)
    late = converged_at is not None and converged_at - since > options["within_s"] * 1000
    if (converged_at is None or late) and len(loop) >= options["loop_rebalances"]:
        result.violations.append(_loop_anomaly(history, loop, since_what, horizon, problem, converged_at))
    elif converged_at is None:
        result.violations.append(
            Anomaly(
                NAME,
                "not-converged",
                f"the group never settled after {since_what} ({history.clock(since)}): "
                f"at {history.clock(horizon)} {problem}",
                times=times,
            )
        )
    if converged_at is not None:
        took = converged_at - since
        result.detail["converged_after_ms"] = took
        if late and not result.violations:
            result.violations.append(
                Anomaly(
                    NAME,
                    "slow-convergence",
                    f"the group settled {duration(took)} after {since_what} ({history.clock(since)}), "
                    f"later than the allowed {options['within_s']} s",
                    times=times,
                )
            )
    lag = _lag(history, history.last(ev.LAG_SAMPLED))
    if lag:
        result.violations.append(lag)
    stall_ms = _stall_ms(history, options["stall_s"])
    result.detail["stall_s"] = stall_ms / 1000
    result.violations.extend(_stalls(history, horizon, stall_ms))
    result.violations.extend(_late_evictions(history))
    return result


def _loop(history: History, since: float, horizon: float) -> list[Rebalance]:
    """The trailing run of rebalances after `since` that nothing explains: each one with the
    same members as the one before it, and no change (`_CHANGES`) since that one began nor a
    fault active when it began."""
    changes = [
        e["mono_ms"]
        for e in history.named(*_CHANGES)
        if e["name"] != ev.PROCESS_EXITED or e.get("role") in ("consumer", MEMBER_HOST_ROLE)
    ]
    healed = {e.get("fault_id"): e["mono_ms"] for e in history.named(ev.FAULT_HEALED)}
    faults = [(f["mono_ms"], healed.get(f.get("fault_id"), horizon)) for f in history.named(ev.FAULT_STARTED)]
    streak: list[Rebalance] = []
    previous: Rebalance | None = None
    for r in run_rebalances(history):
        if not r.start or not since <= r.start.mono_ms < horizon:
            continue
        t = r.start.mono_ms
        after = previous.start.mono_ms if previous else since
        explained = (
            previous is None
            or set(r.members) != set(previous.members)
            or any(after < c <= t for c in changes)
            or any(lo <= t <= hi for lo, hi in faults)
        )
        streak = [] if explained else [*streak, r]
        previous = r
    return streak


def _loop_anomaly(
    history: History, loop: list[Rebalance], since_what: str, horizon: float, problem: str | None, settled: float | None
) -> Anomaly:
    first, last = loop[0], loop[-1]
    span = last.start.mono_ms - first.start.mono_ms
    outcome = (
        f"it settled only at {history.clock(settled)}"
        if settled is not None
        else f"at {history.clock(horizon)} {problem}"
    )
    return Anomaly(
        NAME,
        "rebalance-loop",
        f"the group kept rebalancing after {since_what}: {len(loop)} rebalances (generations {first.generation}"
        f"–{last.generation}) in {duration(span)} from {history.clock(first.start.mono_ms)}, each with the same "
        f"members ({', '.join(sorted(map(str, last.members)))}), none explained by a member joining or leaving, "
        f"a subscription or partition change or a fault; {outcome}",
        times={"first": first.start, "last": last.start, "horizon": Instant(None, horizon)},
    )


def _late_evictions(history: History) -> list[Anomaly]:
    """Rebalances the coordinator began by evicting a member whose session timed out (its log's
    reason), where a fault had silenced that member's heartbeats for good well over its
    session.timeout.ms before. Only where nothing else could have held the coordinator back:
    no fault on anything but members (a broker, ZooKeeper, the network of the cluster) was
    active meanwhile, and the silencing fault was still in effect."""
    explained = explain_rebalances(history)
    faults = history.named(ev.FAULT_STARTED)
    healed = {e.get("fault_id"): e["mono_ms"] for e in history.named(ev.FAULT_HEALED)}
    started = history.named(ev.CONSUMER_STARTED)
    names = {e.get(ev.MEMBER) for e in started}
    found = []
    for r in run_rebalances(history):
        x = explained.get(r.generation)
        trigger = next((w for w in (x.waits if x else ()) if w.phase == "trigger"), None)
        # The coordinator's own line says when it evicted the member (the members' first sign of
        # the rebalance may come long before: a static member's restart, say).
        at = r.coordinator_preparing
        if at is None or trigger is None or trigger.cause != "session-timeout" or trigger.member is None:
            continue
        member, evicted = trigger.member, at.mono_ms
        silenced = [
            f
            for f in faults
            if f.get("target") == member
            and effects_of(f).get(ev.SILENCES) == ev.HEARTBEATS
            and f["mono_ms"] <= evicted
            and _in_effect_until(f, healed) >= evicted
        ]
        if not silenced:
            continue
        fault = silenced[-1]
        joined = [e for e in started if e.get(ev.MEMBER) == member and e["mono_ms"] <= fault["mono_ms"]]
        session = joined[-1].get("session_timeout_ms") if joined else None
        if not session or evicted - fault["mono_ms"] <= session + LATE_EVICTION_SLACK_MS:
            continue
        others = [
            f
            for f in faults
            if f is not fault
            and f.get("target") not in names
            and f["mono_ms"] <= evicted
            and healed.get(f.get("fault_id"), evicted) >= fault["mono_ms"]
        ]
        if others:
            continue  # a cluster fault may have held the coordinator back: not judged
        silence = effects_of(fault).get(ev.SILENCED_AS) or "silenced"
        found.append(
            Anomaly(
                NAME,
                "late-eviction",
                f"{member} was {silence} (fault {fault.get('fault_id')}, {fault.get('kind')}) at "
                f"{history.clock(fault['mono_ms'])}, but its coordinator evicted it only "
                f"{duration(evicted - fault['mono_ms'])} later ({history.clock(evicted)}, generation {r.generation}), "
                f"though the incarnation it silenced joined with session.timeout.ms {session}: "
                f"the coordinator held it to another session timeout",
                members=members(member),
                generation=r.generation,
                times={"silenced": Instant.of(fault), "evicted": at},
            )
        )
    return found


def _in_effect_until(fault: Event, healed: dict) -> float:
    """Until when a fault silences its target: a kill for good, forever; else until it heals."""
    effects = effects_of(fault)
    if effects.get(ev.DOWN) == ev.KILLED and effects.get(ev.RESTART_AFTER_S) is None:
        return float("inf")
    return healed.get(fault.get("fault_id"), float("inf"))


def _stall_ms(history: History, stall_s: float | None) -> float:
    if stall_s is not None:
        return stall_s * 1000.0
    sessions = [e.get("session_timeout_ms") or 0 for e in history.named(ev.CONSUMER_STARTED)]
    return max(15_000.0, 2.0 * max(sessions, default=0))


def _busy_intervals(history: History, horizon: float) -> list[tuple[float, float]]:
    """When a stall is excusable: a fault is active, or a rebalance is in progress.

    A fault that kills its target for good (no restart) stays in effect until the rebalance
    that follows it ends: until then, the dead member's partitions are rightly idle.
    """
    rebalances = [r for r in rebalances_of(history) if r.start]
    busy, next_start = [], None  # the earliest start among the later rebalances
    for r in reversed(rebalances):
        busy.append((r.start.mono_ms, r.end.mono_ms if r.end else horizon if next_start is None else next_start))
        next_start = r.start.mono_ms if next_start is None else min(next_start, r.start.mono_ms)
    busy.reverse()
    healed = {e.get("fault_id"): e["mono_ms"] for e in history.named(ev.FAULT_HEALED)}
    for f in history.named(ev.FAULT_STARTED):
        end = healed.get(f.get("fault_id"), horizon)
        effects = effects_of(f)
        if effects.get(ev.DOWN) == ev.KILLED and effects.get(ev.RESTART_AFTER_S) is None:
            after = [r.end.mono_ms for r in rebalances if r.end and r.start.mono_ms >= f["mono_ms"]]
            end = min(after, default=horizon)
        busy.append((f["mono_ms"], end))
    return busy


def _stalls(history: History, horizon: float, stall_ms: float) -> list[Anomaly]:
    completed = [r for r in rebalances_of(history) if r.end]
    if not completed:
        return []  # never settled: reported above as not-converged
    quiet = _Quiet(_busy_intervals(history, horizon))
    acks: dict[TopicPartition, list[tuple[float, int]]] = {}
    for e in history.named(ev.RECORDS_ACKED):
        at = e["mono_ms"]
        for tp, _, hi in history.ranges_of(e):
            acks.setdefault(tp, []).append((at, hi))
    ownership = ownership_of(history)
    found = []
    for tp in history.partitions:
        acked = acks.get(tp, [])
        # acked[:waiting] is processed: offsets at most `high`, which only grows. Acks are in
        # time order, so acked[waiting] is the first acknowledgement still waiting.
        high, t, worst, waiting = -1, completed[0].end.mono_ms, None, 0
        # The partition's consumptions are in time order already; those of one instant are
        # judged together (only the first can find t passed), so their order does not matter.
        consumed = history.consumptions_of(tp)
        for at, hi in zip([*history.consumption_times(tp), horizon], [*(c.hi for c in consumed), None], strict=False):
            if at > t:
                while waiting < len(acked) and acked[waiting][1] <= high:
                    waiting += 1
                # Backlog from the first acknowledgement beyond what was processed by t. A window
                # no longer than the allowed stall holds no quiet piece longer than it.
                if waiting < len(acked) and acked[waiting][0] < at and at - max(t, acked[waiting][0]) > stall_ms:
                    for lo, up in quiet.pieces(max(t, acked[waiting][0]), at):
                        if up - lo > stall_ms and (worst is None or up - lo > worst[1] - worst[0]):
                            worst = (lo, up)
                t = at
            if hi is not None and hi > high:
                high = hi
        if worst:
            slots = [s.slot for s in ownership.owners_at(worst[0]).get(tp, ())]
            owners = ", ".join(map(str, slots)) or "nobody"
            busy = _busy_elsewhere(history, slots, tp, *worst)
            found.append(
                Anomaly(
                    NAME,
                    "stalled",
                    f"{tp} stalled for {duration(worst[1] - worst[0])} ({history.clock(worst[0])}..{history.clock(worst[1])}) "
                    f"with acknowledged records waiting, while no fault was active and no rebalance was in progress "
                    f"(owner: {owners}; allowed {duration(stall_ms)})"
                    + (f"; meanwhile {busy}: the owner kept processing, only not this partition" if busy else ""),
                    partition=str(tp),
                    times={"from": Instant(None, worst[0]), "to": Instant(None, worst[1])},
                )
            )
    return found


def _busy_elsewhere(history: History, slots: list, stalled: TopicPartition, lo: float, hi: float) -> str:
    """What the stalled partition's owners processed of their other partitions in [lo, hi]:
    a member saturated by another partition's backlog starves this one (librdkafka hands
    out one partition's fetched records before the next's), which is not a member that
    stopped."""
    counts: dict[tuple, int] = {}
    for tp in history.partitions:
        if tp == stalled:
            continue
        for c in history.consumptions_between(tp, lo, hi):
            if c.slot in slots:
                counts[c.slot, tp] = counts.get((c.slot, tp), 0) + c.hi - c.lo + 1
    return ", ".join(f"{slot} processed {n:,} records of {tp}" for (slot, tp), n in sorted(counts.items(), key=str))


class _Quiet:
    """[lo, hi) minus the busy intervals, for many windows: only the intervals that reach
    into a window can cut it, so each window looks at those alone."""

    def __init__(self, busy: list[tuple[float, float]]):
        self.busy = busy
        # A busy interval that ends before it starts (a fault begun after the horizon) is
        # not a plain cut: such intervals are applied to every window, as they always were.
        self.inverted = [i for i, (b_lo, b_hi) in enumerate(busy) if b_hi < b_lo]
        self.order = sorted((i for i, (b_lo, b_hi) in enumerate(busy) if b_lo <= b_hi), key=lambda i: busy[i][0])
        self.starts = [busy[i][0] for i in self.order]
        self.reach: list[float] = []  # latest end among the intervals starting up to here
        for i in self.order:
            self.reach.append(max(busy[i][1], self.reach[-1] if self.reach else busy[i][1]))

    def pieces(self, lo: float, hi: float) -> list[tuple[float, float]]:
        # An interval cuts [lo, hi) only if it starts before hi and ends after lo; one
        # outside that leaves every piece of the window as it is.
        j = bisect_left(self.starts, hi) - 1
        cutting = list(self.inverted)
        while j >= 0 and self.reach[j] > lo:
            if self.busy[self.order[j]][1] > lo:
                cutting.append(self.order[j])
            j -= 1
        return _quiet(lo, hi, [self.busy[i] for i in sorted(cutting)])


def _quiet(lo: float, hi: float, busy: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """[lo, hi) minus the busy intervals."""
    pieces = [(lo, hi)]
    for b_lo, b_hi in busy:
        pieces = [p for a, z in pieces for p in ((a, min(z, b_lo)), (max(a, b_hi), z)) if p[1] > p[0]]
    return pieces


def _problem(partitions: list[TopicPartition], owners: dict) -> str | None:
    """What keeps the current assignment from covering every partition exactly once."""
    unowned = [tp for tp in partitions if not owners.get(tp)]
    shared = [
        f"{tp} owned by {' and '.join(str(s.slot) for s in owners[tp])}"
        for tp in partitions
        if len(owners.get(tp, ())) > 1
    ]
    parts = ([f"{render_partitions(unowned)} unowned"] if unowned else []) + shared
    return "; ".join(parts) or None


def _lag(history: History, sample: Event | None) -> Anomaly | None:
    if not sample:
        return None
    behind: dict[str, str] = {}
    for p in sample.get("partitions") or ():
        # No committed offset: the whole log is behind.
        lag = p.get("lag") if p.get("lag") is not None else p.get("high_watermark") or 0
        if lag:
            tp = str(TopicPartition.of(p))
            behind[tp] = f"{tp} lag {lag} (committed {p.get('committed')}, high watermark {p.get('high_watermark')})"
    if not behind:
        return None
    return Anomaly(
        NAME,
        "lag-not-drained",
        f"lag did not drain: at the last sample ({history.clock(sample['mono_ms'])}) " + "; ".join(behind.values()),
        partition=next(iter(behind)) if len(behind) == 1 else None,
        times={"sampled": Instant.of(sample)},
    )
