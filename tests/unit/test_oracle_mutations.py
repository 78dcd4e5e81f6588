"""The mutation suite: real histories, each broken in one named way, must fail the right check.

The fixtures (tests/fixtures/histories, README there) are whole histories recorded
from real runs on real ZooKeeper and Kafka. A mutation is a small function over a
deep copy of a fixture's events: it picks its target from the history itself
("a batch from the middle of the final owner's session"), breaks it the way a bug
would, and returns what the oracle must then name. For every fixture × mutation:

- the mutation's own check reports a violation of the expected kind, naming the
  partition (and member, offsets) the mutation broke;
- any other check that fails is one the mutation logically implies — each listed
  below with the reason;
- the unmutated history passes every check.

A mutation that cannot act on a fixture (a range layout in a cooperative group, a
rejected commit in a run that had none) is skipped with the reason; each one acts
on at least one fixture.
"""

from __future__ import annotations

import copy
import gzip
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from oracle import CHECK_NAMES, check_history, load_history
from oracle.anomalies import Anomaly
from oracle.assignors import LAYOUTS
from oracle.protocols import LAYOUT_PROTOCOLS
from oracle.verdict import Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "histories"
HISTORIES = sorted(p.name.removesuffix(".jsonl.gz") for p in FIXTURES.glob("*.jsonl.gz"))

Event = dict[str, Any]
Slot = tuple[str, int]  # member name, incarnation


class NotApplicable(Exception):
    """The fixture holds nothing this mutation can act on."""


@dataclass(frozen=True)
class Target:
    """What the oracle must name once the mutation is applied."""

    partition: str | None = None  # "events-3"
    member: str | None = None  # "consumer-2" (incarnation 2 and later: "consumer-2#2", as the oracle writes it)
    offsets: str | None = None  # as the oracle renders them: "120-134" or "57"
    options: dict[str, dict] = field(default_factory=dict)  # check options the mutated history is judged under


@dataclass(frozen=True)
class Mutation:
    name: str
    mutate: Callable[[list[Event]], Target]  # changes the (copied) events in place
    fires: tuple[tuple[str, str], ...]  # (check, anomaly kind): each must be reported
    implied: dict[str, str] = field(default_factory=dict)  # other check -> why it may fail too


# -- reading a history the way the mutations pick targets ---------------------------------
# Deliberately not the oracle's own ownership derivation: the targets must not depend on
# the interpretation under test.


def tp_name(d: dict) -> str:
    return f"{d['topic']}-{d['partition']}"


def slot_of(e: Event) -> Slot:
    return e.get("member") or e["source"], int(e.get("incarnation") or 1)


def slot_name(slot: Slot) -> str:
    return slot[0] if slot[1] == 1 else f"{slot[0]}#{slot[1]}"


def span(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}-{hi}"


@dataclass
class Holding:
    """One member slot holding one partition, as its own callbacks tell it: from the
    assignment to the revoke, loss, stop or exit that ended it (indices into the events)."""

    slot: Slot
    tp: str
    generation: int | None
    start: int
    end: int


def holdings(events: list[Event]) -> list[Holding]:
    held: dict[Slot, dict[str, Holding]] = defaultdict(dict)
    out: list[Holding] = []

    def release(slot: Slot, tps: list[str] | None, i: int) -> None:
        for tp in list(held[slot]) if tps is None else [t for t in tps if t in held[slot]]:
            held[slot].pop(tp).end = i

    for i, e in enumerate(events):
        if e["name"] == "process_exited" and e.get("role") == "consumer":
            for slot in [s for s in held if s[0] == e.get("process")]:
                release(slot, None, i)
        if "member" not in e:
            continue
        slot, listed = slot_of(e), [tp_name(p) for p in e.get("partitions") or ()]
        if e["name"] == "partitions_assigned":
            if not e.get("incremental"):  # eager: the list is the whole assignment
                release(slot, [tp for tp in held[slot] if tp not in listed], i)
            for tp in listed:
                if tp not in held[slot]:
                    held[slot][tp] = Holding(slot, tp, e.get("generation"), i, len(events))
                    out.append(held[slot][tp])
        elif e["name"] in ("partitions_revoked", "partitions_lost"):
            release(slot, listed, i)
        elif e["name"] in ("consumer_stopped", "client_destroyed"):
            release(slot, None, i)
    return out


def done_index(events: list[Event]) -> int:
    """Where `phase: done` is: what comes after is teardown, not the run's own story."""
    return next(i for i, e in enumerate(events) if e["name"] == "phase" and e.get("phase") == "done")


def final_holdings(events: list[Event]) -> list[Holding]:
    """The final owners: holdings in force when the run was done, by partition."""
    done = done_index(events)
    return sorted((h for h in holdings(events) if h.start < done < h.end), key=lambda h: h.tp)


def final_generation(events: list[Event]) -> int:
    done = done_index(events)
    return max(
        e["generation"] for e in events[:done] if e["name"] == "partitions_assigned" and e.get("generation") is not None
    )


def consumed_in(events: list[Event], h: Holding) -> list[tuple[int, dict]]:
    """(event index, range) of the holder's records of its partition within the holding."""
    return [
        (i, r)
        for i in range(h.start, h.end)
        if events[i]["name"] == "records_consumed" and slot_of(events[i]) == h.slot
        for r in events[i].get("ranges") or ()
        if tp_name(r) == h.tp
    ]


def committed_in(events: list[Event], h: Holding, success: bool = True) -> list[tuple[int, dict]]:
    """(event index, offsets entry) of the holder's commits of its partition within the holding."""
    return [
        (i, o)
        for i in range(h.start, h.end)
        if events[i]["name"] == "offsets_committed"
        and slot_of(events[i]) == h.slot
        and bool(events[i].get("success")) == success
        for o in events[i].get("offsets") or ()
        if tp_name(o) == h.tp
    ]


def sent_at(commit: Event) -> float:
    """When a commit request left: ownership is judged at that instant."""
    return commit.get("started_mono_ms", commit["mono_ms"])


def consumed_once(events: list[Event]) -> Callable[[dict], bool]:
    """Whether every record of a range was processed exactly once in the whole history."""
    times = Counter(
        (tp_name(r), o)
        for e in events
        if e["name"] == "records_consumed"
        for r in e.get("ranges") or ()
        for o in range(r["min_offset"], r["max_offset"] + 1)
    )
    return lambda r: all(times[tp_name(r), o] == 1 for o in range(r["min_offset"], r["max_offset"] + 1))


def final_sessions(events: list[Event], min_ranges: int = 3) -> Iterator[tuple[Holding, list[tuple[int, dict]]]]:
    """The final owners' sessions with at least `min_ranges` consumed ranges, and those ranges."""
    for h in final_holdings(events):
        ranges = consumed_in(events, h)
        if len(ranges) >= min_ranges:
            yield h, ranges


def middle(items: list) -> list:
    """Items ordered from the middle outwards, first and last excluded: a mid-session pick."""
    inner = items[1:-1]
    centre = len(inner) // 2
    return [inner[k] for k in sorted(range(len(inner)), key=lambda k: abs(k - centre))]


def bystander(events: list[Event], at: int, tp: str) -> Slot | None:
    """A member in the group at `at` (holding something) whose incarnation never held `tp`."""
    hs = holdings(events)
    never = {h.slot for h in hs} - {h.slot for h in hs if h.tp == tp}
    present = sorted({h.slot for h in hs if h.start <= at < h.end} & never)
    return present[0] if present else None


def envelope_of(events: list[Event], slot: Slot, at: int) -> Event:
    """The slot's latest event up to `at`: it carries the member id and generation it had then."""
    return next(e for e in reversed(events[: at + 1]) if "member" in e and slot_of(e) == slot)


def emit(events: list[Event], like: Event, name: str, mono_ms: float, **fields: Any) -> Event:
    """A new event in `like`'s envelope (source, member, incarnation, member id, generation)
    at `mono_ms`, its `seq` unique within its source."""
    seq = 1 + max(e.get("seq", 0) for e in events if e["source"] == like["source"])
    event = {
        "name": name,
        "ts": like["ts"] + (mono_ms - like["mono_ms"]),
        "mono_ms": mono_ms,
        "source": like["source"],
        "seq": seq,
    }
    event.update({k: like[k] for k in ("member", "incarnation", "member_id", "generation") if k in like})
    event.update(fields)
    events.append(event)
    return event


def relabel(obj: Any, topic: str, p: int, q: int) -> None:
    """Swap partitions p and q of `topic` wherever the history names them
    ({topic, partition} objects, and the observer's [topic, partition] pairs)."""
    swap = {p: q, q: p}
    if isinstance(obj, dict):
        if obj.get("topic") == topic and obj.get("partition") in swap:
            obj["partition"] = swap[obj["partition"]]
        for value in obj.values():
            relabel(value, topic, p, q)
    elif isinstance(obj, list):
        if len(obj) == 2 and obj[0] == topic and obj[1] in swap:
            obj[1] = swap[obj[1]]
        else:
            for item in obj:
                relabel(item, topic, p, q)


# -- the mutations ----------------------------------------------------------------------


def drop_consumed_range(events: list[Event]) -> Target:
    """A batch's range of one partition vanishes from the middle of its final owner's
    session: records nobody else processed."""
    once = consumed_once(events)
    for h, ranges in final_sessions(events):
        for i, r in middle(ranges):
            if once(r):
                events[i]["ranges"].remove(r)
                return Target(h.tp, slot_name(h.slot), span(r["min_offset"], r["max_offset"]))
    raise NotApplicable("no final session has a mid-session range processed only once")


def drop_first_range_after_handover(events: list[Event]) -> Target:
    """The first batch a member processed after taking a partition over from another
    member vanishes: it seems to have started past records nobody processed."""
    once, all_holdings = consumed_once(events), holdings(events)
    for h in final_holdings(events):
        before = [g for g in all_holdings if g.tp == h.tp and g.start < h.start]
        ranges = consumed_in(events, h)
        if not before or before[-1].slot == h.slot or len(ranges) < 2 or not once(ranges[0][1]):
            continue
        i, r = ranges[0]
        events[i]["ranges"].remove(r)
        return Target(h.tp, slot_name(h.slot))
    raise NotApplicable(
        "no final owner took its partition over from another member and then processed "
        "two batches, the first of them records nobody else processed"
    )


def offset_gap(events: list[Event]) -> Target:
    """Mid-session, the final owner's batch of one partition starts a few records late:
    records skipped within one ownership session."""
    once = consumed_once(events)
    for h, ranges in final_sessions(events):
        for _i, r in middle(ranges):
            if r["count"] >= 2 and once(r):
                skip = r["count"] // 2
                lo = r["min_offset"]
                r["min_offset"], r["count"] = lo + skip, r["count"] - skip
                return Target(h.tp, slot_name(h.slot), span(lo, lo + skip - 1))
    raise NotApplicable("no final session has a mid-session batch of two or more records")


def go_back(events: list[Event]) -> Target:
    """The final owner processes a batch of one partition again after a later batch,
    within the same session."""
    for h, ranges in final_sessions(events, min_ranges=4):
        j = len(ranges) // 2
        (_, r), (k, _) = ranges[j], ranges[j + 1]
        emit(events, events[k], "records_consumed", events[k]["mono_ms"] + 0.5, ranges=[dict(r)])
        return Target(h.tp, slot_name(h.slot), span(r["min_offset"], r["max_offset"]))
    raise NotApplicable("no final session has four consumed ranges")


def redeliver_batch(events: list[Event]) -> Target:
    """The final owner processes its largest mid-session batch twice in a row, while the
    scenario allows no more duplicates than the recorded run had (`duplicates: {max: N}`)."""
    allowed = check_history(events, {"duplicates": {}}).duplicates.count
    for h, ranges in final_sessions(events):
        i, r = max(middle(ranges), key=lambda ir: ir[1]["count"])
        emit(events, events[i], "records_consumed", events[i]["mono_ms"] + 0.5, ranges=[dict(r)])
        return Target(h.tp, slot_name(h.slot), options={"duplicates": {"max": allowed}})
    raise NotApplicable("no final session has three consumed ranges")


def double_assign(events: list[Event]) -> Target:
    """The final generation's assignment of one member also lists a partition another
    member holds in that generation."""
    generation, all_holdings, done = final_generation(events), holdings(events), done_index(events)
    for i, e in enumerate(events[:done]):
        if e["name"] != "partitions_assigned" or e.get("generation") != generation:
            continue
        mine = {tp_name(p) for p in e.get("partitions") or ()}
        theirs = sorted(
            h.tp
            for h in all_holdings
            if h.slot != slot_of(e)
            and h.tp not in mine
            and h.start < done
            and (h.generation == generation or h.start <= i < h.end)
        )
        if theirs:
            topic, partition = theirs[0].rsplit("-", 1)
            e["partitions"].append({"topic": topic, "partition": int(partition)})
            return Target(theirs[0], slot_name(slot_of(e)))
    raise NotApplicable(f"no member of generation {generation} can be given a partition another member holds")


def regress_commit(events: list[Event]) -> Target:
    """Mid-session, one of the final owner's accepted commits re-sends the offset it had
    committed two commits before."""
    for h in final_holdings(events):
        commits = committed_in(events, h)
        for j in range(2, len(commits)):
            stale, previous, (i, entry) = commits[j - 2][1]["offset"], commits[j - 1][1]["offset"], commits[j]
            if stale < previous:
                sent = sent_at(events[i])
                top = max(
                    o["offset"]
                    for e in events
                    if e["name"] == "offsets_committed" and e.get("success") and sent_at(e) < sent
                    for o in e["offsets"]
                    if tp_name(o) == h.tp
                )
                entry["offset"] = stale
                return Target(h.tp, slot_name(h.slot), span(stale, top - 1))
    raise NotApplicable("no final session made three commits with progress")


def commit_from_non_owner(events: list[Event]) -> Target:
    """A member in the group that never held the partition gets a commit of it accepted,
    just after the final owner's own commit of the same offset."""
    for h in final_holdings(events):
        for i, entry in middle(committed_in(events, h)):
            other = bystander(events, i, h.tp)
            if other:
                commit = events[i]
                emit(
                    events,
                    envelope_of(events, other, i),
                    "offsets_committed",
                    commit["mono_ms"] + 0.5,
                    offsets=[dict(entry)],
                    success=True,
                    error=None,
                    error_code=None,
                    trigger="after-processing",
                    started_mono_ms=sent_at(commit) + 0.5,
                )
                return Target(h.tp, slot_name(other), str(entry["offset"]))
    raise NotApplicable("no member in the group beside a final owner that never held its partition")


def zombie_commit_accepted(events: list[Event]) -> Target:
    """A commit the coordinator rejected in the run — sent by a member whose partition
    another member had already taken over (a zombie) — is accepted instead."""
    all_holdings = holdings(events)
    mono = [e["mono_ms"] for e in events]
    for e in events:
        if e["name"] != "offsets_committed" or e.get("success"):
            continue
        sent = sent_at(e)
        for entry in e["offsets"]:
            tp, slot = tp_name(entry), slot_of(e)
            own = next(
                (
                    h
                    for h in all_holdings
                    if h.slot == slot
                    and h.tp == tp
                    and mono[h.start] <= sent < (mono[h.end] if h.end < len(events) else float("inf"))
                ),
                None,
            )
            if own and any(
                h.tp == tp and h.slot != slot and mono[own.start] < mono[h.start] <= sent for h in all_holdings
            ):
                e.update(success=True, error=None, error_code=None)
                return Target(tp, slot_name(slot), str(entry["offset"]))
    raise NotApplicable("no commit was rejected after the partition had been taken over")


def non_owner_consumes(events: list[Event]) -> Target:
    """A member in the group that never held the partition in its incarnation processes
    a batch of it, just after the final owner processes the same batch."""
    for h, ranges in final_sessions(events):
        for i, r in middle(ranges):
            other = bystander(events, i, h.tp)
            if other:
                emit(
                    events,
                    envelope_of(events, other, i),
                    "records_consumed",
                    events[i]["mono_ms"] + 0.5,
                    ranges=[dict(r)],
                )
                return Target(h.tp, slot_name(other), span(r["min_offset"], r["max_offset"]))
    raise NotApplicable("no member in the group beside a final owner that never held its partition")


def unowned_at_end(events: list[Event]) -> Target:
    """The assignment that gave a partition to its final owner does not list it: at the
    end nobody owns it (its former owner goes on processing it regardless)."""
    for h in final_holdings(events):
        assigned = events[h.start]
        assigned["partitions"] = [p for p in assigned["partitions"] if tp_name(p) != h.tp]
        return Target(h.tp)
    raise NotApplicable("nobody owned anything when the run was done")


def wrong_layout(events: list[Event]) -> Target:
    """Two neighbouring partitions that the final eager generation gives to different
    members swap labels throughout the history: a consistent run whose layout the
    assignor would never produce."""
    run = next(e for e in events if e["name"] == "run_started")
    if run.get("protocol") not in LAYOUT_PROTOCOLS or run.get("assignor") not in LAYOUTS:
        raise NotApplicable(f"{run.get('protocol')}/{run.get('assignor')} has no closed-form layout")
    generation = final_generation(events)
    owner = {
        tp_name(p): slot_of(e)
        for e in events[: done_index(events)]
        if e["name"] == "partitions_assigned" and e.get("generation") == generation
        for p in e["partitions"]
    }
    for tp in sorted(owner):
        topic, p = tp.rsplit("-", 1)
        neighbour = f"{topic}-{int(p) + 1}"
        if neighbour in owner and owner[neighbour] != owner[tp]:
            relabel(events, topic, int(p), int(p) + 1)
            return Target(member=slot_name(owner[tp]))
    raise NotApplicable(f"generation {generation} gives every partition to one member")


def lag_not_drained(events: list[Event]) -> Target:
    """The last lag sample shows one partition's committed offset short of its high watermark."""
    sample = next((e for e in reversed(events) if e["name"] == "lag_sampled"), None)
    if sample is None:
        raise NotApplicable("no lag samples")
    p = next((p for p in sample["partitions"] if (p.get("high_watermark") or 0) >= 5), None)
    if p is None:
        raise NotApplicable("the last lag sample has no partition with five records")
    p["committed"], p["lag"] = p["high_watermark"] - 5, 5
    return Target(tp_name(p))


# (mutation, fixture) -> why the oracle misses it today: strict xfail, so a fix shows up as XPASS.
KNOWN_MISSES: dict[tuple[str, str], str] = {}  # (mutation, fixture) -> why the oracle misses it

CONSUMED_PAST_HOLE = "the same member consumed past the hole within the same session: a poll-skip there"
NOBODY_ELSE_CONSUMED = "the records skipped were processed by nobody else: lost"

MUTATIONS = (
    Mutation(
        "drop-consumed-range", drop_consumed_range, (("no-loss", "lost-write"),), {"contiguity": CONSUMED_PAST_HOLE}
    ),
    Mutation(
        "drop-first-range-after-handover",
        drop_first_range_after_handover,
        (("contiguity", "skip-at-handover"),),
        {"no-loss": NOBODY_ELSE_CONSUMED},
    ),
    Mutation("offset-gap", offset_gap, (("contiguity", "poll-skip"),), {"no-loss": NOBODY_ELSE_CONSUMED}),
    Mutation("go-back-within-session", go_back, (("contiguity", "nonmonotonic-poll"),)),
    Mutation(
        "redeliver-batch",
        redeliver_batch,
        (("duplicates", "too-many-duplicates"),),
        {"contiguity": "processing a batch again within its session is going back: a nonmonotonic poll"},
    ),
    Mutation(
        "double-assign",
        double_assign,
        (("exclusive-ownership", "two-owners-in-generation"), ("assignment-validity", "double-assignment")),
        {
            "fenced-commits": "the real owner's later commits come after the second owner 'took it over': "
            "accepted commits after a handover",
            "convergence": "the second owner keeps the partition to the end: two owners when the run is done",
        },
    ),
    Mutation("regress-commit", regress_commit, (("commit-monotonicity", "offset-regression"),)),
    Mutation("commit-from-non-owner", commit_from_non_owner, (("fenced-commits", "commit-without-ownership"),)),
    Mutation(
        "zombie-commit-accepted",
        zombie_commit_accepted,
        (("fenced-commits", "commit-after-handover"),),
        {
            "commit-monotonicity": "the zombie's offset lies behind what its successor has committed since: "
            "accepted, it moves the committed offset back"
        },
    ),
    Mutation("non-owner-consumes", non_owner_consumes, (("exclusive-ownership", "consumed-without-ownership"),)),
    Mutation(
        "unowned-at-end",
        unowned_at_end,
        (("convergence", "not-converged"), ("assignment-validity", "unassigned-partition")),
        {
            "exclusive-ownership": "its former owner goes on processing it without an assignment",
            "fenced-commits": "its former owner's commits of it are accepted without ownership",
        },
    ),
    Mutation("wrong-layout", wrong_layout, (("assignment-validity", "layout-mismatch"),)),
    Mutation("lag-not-drained", lag_not_drained, (("convergence", "lag-not-drained"),)),
)


# -- the tests --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Callable[[str], list[Event]]:
    """A fresh deep copy of a fixture's events, read through the oracle's own loader."""
    cache: dict[str, list[Event]] = {}

    def load(name: str) -> list[Event]:
        if name not in cache:
            path = tmp_path_factory.mktemp(name) / "history.jsonl"
            path.write_bytes(gzip.decompress((FIXTURES / f"{name}.jsonl.gz").read_bytes()))
            cache[name] = load_history(path)
        return copy.deepcopy(cache[name])

    return load


def judge(events: list[Event], options: dict[str, dict]) -> Verdict:
    return check_history(events, {name: {} for name in CHECK_NAMES} | options)


def names(anomaly: Anomaly, target: Target) -> bool:
    """Whether the anomaly names the target: a group-wide anomaly (no partition of its own)
    names the partition in its message."""
    partition = (
        target.partition is None
        or anomaly.partition == target.partition
        or (
            anomaly.partition is None
            and re.search(rf"(?<![\w-]){re.escape(target.partition)}(?![\w-])", anomaly.message)
        )
    )
    member = target.member is None or target.member in anomaly.members
    offsets = target.offsets is None or anomaly.offsets == target.offsets
    return bool(partition and member and offsets)


def test_fixtures_are_there():
    assert HISTORIES, f"no recorded histories in {FIXTURES}"


@pytest.mark.parametrize("history", HISTORIES)
def test_unmutated_history_passes(history, recorded):
    verdict = check_history(recorded(history), {})
    assert verdict.ok, verdict.render()
    assert all(r.status == "passed" for r in verdict.checks.values()), verdict.render()


@pytest.mark.parametrize(
    "mutation, history",
    [
        pytest.param(
            m,
            h,
            id=f"{m.name}-{h}",
            marks=[pytest.mark.xfail(reason=KNOWN_MISSES[m.name, h], strict=True)]
            if (m.name, h) in KNOWN_MISSES
            else [],
        )
        for m in MUTATIONS
        for h in HISTORIES
    ],
)
def test_mutation_fails_its_check(mutation, history, recorded):
    events = recorded(history)
    try:
        target = mutation.mutate(events)
    except NotApplicable as reason:
        pytest.skip(f"{mutation.name} does not apply to {history}: {reason}")
    assert judge(recorded(history), target.options).ok, f"unmutated {history} already fails under {target.options}"

    verdict = judge(events, target.options)
    for check, kind in mutation.fires:
        reported = [v for v in verdict.checks[check].violations if v.kind == kind]
        assert reported, f"{mutation.name}: no {check}/{kind} violation\n{verdict.render()}"
        assert any(names(v, target) for v in reported), (
            f"{mutation.name}: {check}/{kind} does not name {target}\n{verdict.render()}"
        )
    failed = {name for name, result in verdict.checks.items() if result.violations}
    unexplained = failed - {check for check, _ in mutation.fires} - set(mutation.implied)
    assert not unexplained, f"{mutation.name} also failed {sorted(unexplained)}, not implied by it\n{verdict.render()}"


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_every_mutation_acts_on_some_fixture(mutation, recorded):
    applied = []
    for history in HISTORIES:
        try:
            mutation.mutate(recorded(history))
            applied.append(history)
        except NotApplicable:
            pass
    assert applied, f"{mutation.name} applies to none of {HISTORIES}"
