"""Histories generated from a model of the group (issue 39, point 4), with Hypothesis's
stateful testing: members join, leave, crash, pause and come back; generations or member
epochs advance by each protocol generation's rules; the producer acknowledges, owners
consume and commit (tests/model/group.py writes it all as a run history).

Three properties, each a state machine whose teardown runs the harness's recovery and
judges the history it wrote, through `load_history` + `check_history` like `rebalance-lab
check` does:

a. `ValidHistories`: every generated history passes every check (findings allowed).
b. `AnomalyInjection`: each anomaly class of ANOMALIES, injected into a generated history,
   fires its check(s), and any other check that fails is one the row says it implies
   (the rows are the mutation suite's, tests/unit/test_oracle_mutations.py, and
   `test_anomaly_table_agrees_with_the_mutation_suite` holds them to it).
c. `BrokenPromises`: each promise of the history format (oracle/integrity.py) broken alone is a fault
   of the history: `load_history` refuses it naming the promise (BrokenHistory) or the verdict's violations
   are all `history-integrity` ones — never a member blamed by another check, never a pass.

Profiles (tests/model/conftest.py): `ci`, the default — derandomized, a fixed number of
examples, the whole module well under 60 s on a busy 2-core machine:

    python3 -m pytest tests/model -n 0 --durations=10

`long` — many more examples, random, with the counts of histories, mutations and
outcomes printed at the end (run it without xdist, so the counts are this process's):

    HYPOTHESIS_PROFILE=long python3 -m pytest tests/model -n 0 -p no:cacheprovider
    HYPOTHESIS_PROFILE=long MODEL_EXAMPLES=800 python3 -m pytest tests/model -n 0 -k "Valid or Anomaly"

(MODEL_EXAMPLES: examples per property, 1000 by default; the second form is the ~8-minute
run whose figures the issue's note gives.) CI does not shrink a failure, to stay in its
time; the failure's blob reproduces it (@reproduce_failure), and the long profile shrinks.

A history the oracle judges wrongly is written to counterexamples/ (not committed) at the
repository's root, as the minimal example Hypothesis shrank it to.
"""

from __future__ import annotations

import copy
import json
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from oracle import CHECK_NAMES, check_history, load_history
from oracle.history import BrokenHistory
from oracle.integrity import PROMISES, SET_ASIDE
from tests.unit import test_oracle_mutations as suite

from .group import PROTOCOLS, Group

Event = dict[str, Any]
STATS: Counter[str] = Counter()  # printed by conftest.py at the end of the session
COUNTEREXAMPLES = Path(__file__).resolve().parents[2] / "counterexamples"
NotApplicable = suite.NotApplicable


# -- the anomaly table ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AnomalyClass:
    mutate: Callable[[list[Event]], suite.Target]
    fires: tuple[str, ...]  # the checks that must report a violation
    implied: dict[str, str] = field(default_factory=dict)  # other check -> why it may fail too
    suite_name: str | None = None  # the mutation suite's row it is (same fires, same implied)
    options: dict[str, dict] = field(default_factory=dict)  # judged under these (over the target's)
    protocols: tuple[str, ...] = tuple(PROTOCOLS)  # where it can be injected
    # protocol -> (checks of `fires` that need not fire there, why): what the protocol's rules
    # leave a check unable to see (the recorded fixtures of the mutation suite have no such run)
    blind: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)

    def must_fire(self, protocol: str) -> tuple[str, ...]:
        blind = self.blind.get(protocol, ((), ""))[0]
        return tuple(check for check in self.fires if check not in blind)


def unbounded_duplicates(events: list[Event]) -> suite.Target:
    """The mutation suite's redelivered batch, judged with `duplicates: {max: 0}`."""
    target = suite.redeliver_batch(events)
    return suite.Target(target.partition, target.member, target.offsets, {"duplicates": {"max": 0}})


def drop_first_range_after_handover(events: list[Event]) -> suite.Target:
    """The mutation suite's, where the partition had been consumed before the hand-over:
    contiguity judges a new owner's start against the highest offset consumed before it
    (oracle/checks/contiguity.py); the recorded fixtures always had one. Where the former
    owner never processed a record of it, the skipped records are no-loss's alone."""
    target = suite.drop_first_range_after_handover(events)
    first = next(
        e
        for e in events
        if e["name"] == "records_consumed" and any(suite.tp_name(r) == target.partition for r in e["ranges"])
    )
    if suite.slot_name(suite.slot_of(first)) == target.member:
        raise NotApplicable(f"nobody consumed {target.partition} before {target.member} took it over")
    return target


_M = {m.name: m for m in suite.MUTATIONS}
KIP848_PARTIAL = (
    "KIP-848 members reach an epoch one by one, so assignment-validity checks its epochs for "
    "double assignment only, not for a partition nobody was given"
)
ANOMALIES: dict[str, AnomalyClass] = {
    # a consumed range dropped: its records processed by nobody; the owner went on past the hole
    "drop-consumed-range": AnomalyClass(
        suite.drop_consumed_range, ("no-loss",), {"contiguity": suite.CONSUMED_PAST_HOLE}, "drop-consumed-range"
    ),
    # a new owner's first batch dropped: it seems to start past records nobody processed
    "drop-first-range-after-handover": AnomalyClass(
        drop_first_range_after_handover,
        ("contiguity",),
        {"no-loss": suite.NOBODY_ELSE_CONSUMED},
        "drop-first-range-after-handover",
    ),
    # an offset gap inside one session: a poll-skip; the skipped records nobody processed
    "offset-gap": AnomalyClass(
        suite.offset_gap, ("contiguity",), {"no-loss": suite.NOBODY_ELSE_CONSUMED}, "offset-gap"
    ),
    # consumption going back within a session: a nonmonotonic poll. Duplicates are only counted
    # (findings) without a `max`, so duplicates does not fail
    "go-back-within-session": AnomalyClass(suite.go_back, ("contiguity",), {}, "go-back-within-session"),
    # a batch processed twice, with no duplicate allowed at all
    "unbounded-duplicates": AnomalyClass(
        unbounded_duplicates,
        ("duplicates",),
        {"contiguity": _M["redeliver-batch"].implied["contiguity"]},
        "redeliver-batch",
    ),
    # a partition assigned to two members in one generation
    "double-assign": AnomalyClass(
        suite.double_assign,
        ("exclusive-ownership", "assignment-validity"),
        dict(_M["double-assign"].implied),
        "double-assign",
    ),
    # a committed offset moving backward
    "regress-commit": AnomalyClass(suite.regress_commit, ("commit-monotonicity",), {}, "regress-commit"),
    # a commit from a member that never owned the partition, accepted
    "commit-from-non-owner": AnomalyClass(
        suite.commit_from_non_owner, ("fenced-commits",), {}, "commit-from-non-owner"
    ),
    # the zombie's late commit, accepted instead of refused
    "zombie-commit-accepted": AnomalyClass(
        suite.zombie_commit_accepted,
        ("fenced-commits",),
        dict(_M["zombie-commit-accepted"].implied),
        "zombie-commit-accepted",
    ),
    # a member that never owned the partition processes a batch of it
    "non-owner-consumes": AnomalyClass(suite.non_owner_consumes, ("exclusive-ownership",), {}, "non-owner-consumes"),
    # a partition unowned at the end (its final assignment does not list it)
    "unowned-at-end": AnomalyClass(
        suite.unowned_at_end,
        ("convergence", "assignment-validity"),
        dict(_M["unowned-at-end"].implied),
        "unowned-at-end",
        blind={"consumer": (("assignment-validity",), KIP848_PARTIAL)},
    ),
    # the last lag sample short of the high watermark
    "lag-not-drained": AnomalyClass(suite.lag_not_drained, ("convergence",), {}, "lag-not-drained"),
    # a consistent run whose eager layout the assignor would never produce
    "wrong-layout": AnomalyClass(
        suite.wrong_layout, ("assignment-validity",), {}, "wrong-layout", protocols=("classic-eager",)
    ),
}


# -- the format's promises, each broken alone --------------------------------------------------------


def _writer(e: Event) -> tuple[str, int]:
    return e["source"], int(e.get("incarnation") or 1)


def _by_writer(events: list[Event], writer: tuple[str, int]) -> list[Event]:
    return [e for e in events if _writer(e) == writer]


def _mid(items: list) -> Any:
    if not items:
        raise NotApplicable("nothing to break")
    return items[len(items) // 2]


def seq_not_from_1(events: list[Event]) -> str:
    """A producer writes seq 2, 3, … : its first event is not 1."""
    for e in _by_writer(events, ("producer", 1)):
        e["seq"] += 1
    return "producer"


def seq_gap(events: list[Event]) -> str:
    """A member's seq skips a number in the middle of its events."""
    mine = _by_writer(events, _writer(_mid([e for e in events if e["name"] == "records_consumed"])))
    for e in mine[len(mine) // 2 :]:
        e["seq"] += 1
    return mine[0]["source"]


def seq_repeated(events: list[Event]) -> str:
    """A member writes the same seq twice (its events after that one shifted down by one)."""
    mine = _by_writer(events, _writer(_mid([e for e in events if e["name"] == "records_consumed"])))
    for e in mine[len(mine) // 2 :]:
        e["seq"] -= 1
    return mine[0]["source"]


def mono_back(events: list[Event]) -> str:
    """A producer's acknowledgement is stamped before the one it follows (still after the
    run started, and before every record of it was consumed)."""
    acks = [e for e in events if e["name"] == "records_acked"]
    if len(acks) < 3:
        raise NotApplicable("fewer than three acknowledgements")
    i = len(acks) // 2
    back = acks[i - 1]["mono_ms"] - 0.1
    acks[i]["ts"] -= acks[i]["mono_ms"] - back
    acks[i]["mono_ms"] = back
    return f"producer seq {acks[i]['seq']}"


def consumed_never_produced(events: list[Event]) -> str:
    """A member's batch also holds offsets past everything produced to its partition: past the
    producer's last acknowledgement and the highest high watermark the observer saw."""
    e = _mid([e for e in events if e["name"] == "records_consumed" and e["ranges"]])
    r = e["ranges"][0]
    tp = (r["topic"], r["partition"])
    known = [
        x["max_offset"] + 1
        for a in events
        if a["name"] == "records_acked"
        for x in a["ranges"]
        if (x["topic"], x["partition"]) == tp
    ]
    known += [
        p["high_watermark"] or 0
        for a in events
        if a["name"] == "lag_sampled"
        for p in a["partitions"]
        if (p["topic"], p["partition"]) == tp
    ]
    end = max(known, default=0) + 100
    e["ranges"].append({**r, "min_offset": end, "max_offset": end + 4, "count": 5})
    return f"{r['topic']}-{r['partition']}"


def partition_missing(events: list[Event]) -> str:
    """The producer's acknowledgement names a partition the topic does not have."""
    run = events[0]
    n = run["topics"][0]["partitions"]
    ack = _mid([e for e in events if e["name"] == "records_acked"])
    ack["ranges"].append({"topic": "events", "partition": n, "min_offset": 0, "max_offset": 2, "count": 3})
    return f"events-{n}"


def generation_back(events: list[Event]) -> str:
    """A member's batch mid-session carries the generation before the one it had joined."""
    for e in events[len(events) // 2 :]:
        if e["name"] == "records_consumed" and (e.get("generation") or 0) >= 2:
            e["generation"] -= 1
            return f"{e['source']} seq {e['seq']}"
    raise NotApplicable("no batch in a generation past the first")


def count_wrong(events: list[Event]) -> str:
    """A consumed range's count is one more than max - min + 1."""
    e = _mid([e for e in events if e["name"] == "records_consumed"])
    e["ranges"][0]["count"] += 1
    return f"{e['source']} seq {e['seq']}"


def commit_started_late(events: list[Event]) -> str:
    """A commit's request is stamped after its answer."""
    e = _mid([e for e in events if e["name"] == "offsets_committed" and e.get("started_mono_ms") is not None])
    e["started_mono_ms"] = e["mono_ms"] + 5
    return f"{e['source']} seq {e['seq']}"


def run_started_twice(events: list[Event]) -> str:
    """The harness writes a second run_started in mid-run (its later events renumbered)."""
    harness = [e for e in events if e["source"] == "harness"]
    at = harness[len(harness) // 2]
    again = {**copy.deepcopy(events[0]), "mono_ms": at["mono_ms"] - 0.01, "ts": at["ts"] - 0.01, "seq": at["seq"]}
    for e in harness[len(harness) // 2 :]:
        e["seq"] += 1
    events.insert(events.index(at), again)
    return "harness"


def run_started_not_first(events: list[Event]) -> str:
    """The producer's first event is stamped before run_started."""
    first = next(e for e in events if e["source"] == "producer")
    first["ts"] -= first["mono_ms"] - (events[0]["mono_ms"] - 1)
    first["mono_ms"] = events[0]["mono_ms"] - 1
    return "producer"


def run_finished_twice(events: list[Event]) -> str:
    """The harness writes run_finished twice."""
    last = events[-1]
    events.append({**last, "seq": last["seq"] + 1, "mono_ms": last["mono_ms"] + 1, "ts": last["ts"] + 1})
    return "harness"


def run_finished_not_last(events: list[Event]) -> str:
    """The coordinator's last event (the group going empty) is stamped after run_finished."""
    e = next(e for e in reversed(events) if e["source"] == "broker-1")
    e["ts"] += events[-1]["mono_ms"] + 1 - e["mono_ms"]
    e["mono_ms"] = events[-1]["mono_ms"] + 1
    events.remove(e)
    events.append(e)
    return "broker-1"


def fault_says_nothing(events: list[Event]) -> str:
    """A fault_started says nothing of what its fault does to its target (no `effects`)."""
    e = _mid([e for e in events if e["name"] == "fault_started"])
    del e["effects"]
    return f"fault seq {e['seq']}"


def mixed_member_says_no_protocol(events: list[Event]) -> str:
    """One member incarnation ran another generation than the run's (the group is mixed, as a
    protocol migration makes it), and another incarnation says nothing of what it ran."""
    started = [e for e in events if e["name"] == "consumer_started"]
    if len(started) < 2:
        raise NotApplicable("one member incarnation only")
    first, last = started[0], started[-1]
    first["protocol"] = "consumer" if first.get("protocol") != "consumer" else "classic-eager"
    del last["protocol"]
    return f"{last['source']} seq {last['seq']}"


def hosted_member_of_another_pid(events: list[Event]) -> str:
    """A member says it lives in a member host, with a pid that host never started with."""
    e = _mid([e for e in events if e["name"] == "consumer_started"])
    e["host"] = "member-host-9"
    return f"{e['source']} seq {e['seq']}"


def message_of_no_fault(events: list[Event]) -> str:
    """The message proxy says it acted on a message for a fault that never started."""
    acted = [e for e in events if e["name"] == "message_faulted"]
    if not acted:
        raise NotApplicable("no message fault")
    e = _mid(acted)
    e["fault_id"] = "f999"
    return f"message-proxy seq {e['seq']}"


# mutation -> (the promise of oracle/integrity.py it breaks, and nothing else; the mutation)
BROKEN_PROMISES: dict[str, tuple[str, Callable[[list[Event]], str]]] = {
    "seq-from-1": ("writer-sequence", seq_not_from_1),
    "seq-step-1": ("writer-sequence", seq_gap),
    "seq-unique": ("writer-sequence", seq_repeated),
    "mono-per-writer": ("writer-clock", mono_back),
    "consumed-produced": ("produced", consumed_never_produced),
    "partition-exists": ("partitions-exist", partition_missing),
    "generation-monotonic": ("generation-order", generation_back),
    "range-count": ("record-fields", count_wrong),
    "commit-started": ("record-fields", commit_started_late),
    "one-run-started": ("run-bounds", run_started_twice),
    "run-started-first": ("run-bounds", run_started_not_first),
    "one-run-finished": ("run-bounds", run_finished_twice),
    "run-finished-last": ("run-bounds", run_finished_not_last),
    "fault-effects": ("fault-effects", fault_says_nothing),
    "member-protocol": ("member-protocol", mixed_member_says_no_protocol),
    "message-faults": ("message-faults", message_of_no_fault),
    "hosted-members": ("hosted-members", hosted_member_of_another_pid),
}


# -- judging -----------------------------------------------------------------------------------------


def as_written(events: list[Event]) -> list[Event]:
    """An anomaly is the cluster's, not the writers': its events in time order, each writer's
    numbered 1, 2, 3, … as it would have written them (docs/history.md, Promises)."""
    events = sorted(events, key=lambda e: e["mono_ms"])  # stable: one instant keeps its order
    seq: Counter = Counter()
    for e in events:
        seq[_writer(e)] += 1
        e["seq"] = seq[_writer(e)]
    return events


def write(events: list[Event], directory: Path) -> Path:
    path = directory / "history.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def judge_file(path: Path, options: dict[str, dict] | None = None):
    return check_history(load_history(path), {name: {} for name in CHECK_NAMES} | (options or {}))


def keep_counterexample(kind: str, events: list[Event]) -> Path:
    """The history Hypothesis is failing on, for a human (shrinking rewrites it: the last is the minimal)."""
    COUNTEREXAMPLES.mkdir(exist_ok=True)
    path = COUNTEREXAMPLES / f"{kind}.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


# -- the state machine ---------------------------------------------------------------------------------

MEMBER = st.integers(min_value=0, max_value=7)  # an index into the eligible members, modulo their number


class GroupMachine(RuleBasedStateMachine):
    """One group's run, step by step; subclasses judge the history at teardown."""

    protocols: tuple[str, ...] = tuple(PROTOCOLS)

    def __init__(self) -> None:
        super().__init__()
        self.group: Group | None = None

    def setup(self, data) -> None:
        protocol = data.draw(st.sampled_from(self.protocols), label="protocol")
        assignor = data.draw(st.sampled_from(PROTOCOLS[protocol]), label="assignor")
        slots = data.draw(st.integers(2, 4), label="slots")
        self.group = Group(
            protocol,
            assignor,
            partitions=data.draw(st.integers(2, 8), label="partitions"),
            slots=slots,
            initial=data.draw(st.integers(1, slots), label="initial members"),
            session_timeout_ms=data.draw(st.sampled_from([6000, 10000]), label="session"),
            seed=data.draw(st.integers(0, 2**16), label="seed"),
            hosts=data.draw(st.sampled_from([0, 2]), label="member hosts"),
        )

    # the group's members that can act, and how many stay in the group if one goes
    def _pick(self, members: list, i: int):
        return sorted(members, key=lambda m: m.name)[i % len(members)]

    def _active(self) -> list:
        return [m for m in self.group.up() if m.in_group]

    @rule(counts=st.lists(st.integers(0, 12), min_size=8, max_size=8))
    def produce(self, counts):
        self.group.produce({p: counts[p] for p in range(self.group.partitions)})

    @precondition(lambda self: self._active())
    @rule(i=MEMBER, commit=st.booleans(), subset=st.sets(st.integers(0, 7)))
    def consume(self, i, commit, subset):
        self.group.consume(self._pick(self._active(), i), subset or None, commit=commit)

    @precondition(lambda self: self._active())
    @rule(i=MEMBER)
    def commit(self, i):
        self.group.commit(self._pick(self._active(), i))

    @precondition(lambda self: self.group.startable())
    @rule(i=MEMBER)
    def join(self, i):
        self.group.join(self._pick(self.group.startable(), i))

    @precondition(lambda self: len(self._active()) >= 2)
    @rule(i=MEMBER)
    def leave(self, i):
        self.group.leave(self._pick(self._active(), i))

    @precondition(lambda self: len(self._active()) >= 2)
    @rule(i=MEMBER, uncommitted=st.booleans())
    def crash(self, i, uncommitted):
        self.group.crash(self._pick(self._active(), i), uncommitted)

    @precondition(lambda self: self.group.of("crashed"))
    @rule(i=MEMBER)
    def restart(self, i):
        self.group.restart(self._pick(self.group.of("crashed"), i))

    @precondition(lambda self: len(self._active()) >= 2)
    @rule(i=MEMBER, uncommitted=st.booleans(), past_session=st.booleans())
    def pause(self, i, uncommitted, past_session):
        self.group.pause(self._pick(self._active(), i), uncommitted, past_session)

    @precondition(lambda self: self._active())
    @rule(i=MEMBER, delay_ms=st.integers(1, 500))
    def delay_heartbeat_response(self, i, delay_ms):
        self.group.delay_heartbeat_response(self._pick(self._active(), i), delay_ms)

    @precondition(lambda self: self.group.of("paused"))
    @rule(i=MEMBER)
    def resume(self, i):
        self.group.resume(self._pick(self.group.of("paused"), i))

    @rule()
    def sample_lag(self):
        self.group.sample_lag()

    @rule(ms=st.integers(1, 2500))
    def tick(self, ms):
        self.group.advance(ms)
        self.group.keep_up()

    @initialize(data=st.data())
    def start(self, data):
        self.setup(data)

    def mutated(self, mutations: dict[str, Callable[[list[Event]], Any]], counter: str):
        """(name, a copy of the finished history with that mutation applied, what it returned) for each
        mutation that applies to this run; those that do not are counted under `counter`."""
        history = self.history()
        for name, mutate in sorted(mutations.items()):
            events = copy.deepcopy(history)
            try:
                result = mutate(events)
            except NotApplicable:
                STATS[f"{counter}:not-applicable"] += 1
                continue
            STATS[counter] += 1
            yield name, events, result

    def history(self) -> list[Event]:
        """The run, recovered and finished (once)."""
        if not self.group.finished:
            self.group.finish()
            STATS["histories"] += 1
            STATS["events"] += len(self.group.events)
            for k, v in self.group.stats.items():
                if k.startswith("fault:") or k in ("rebalances", "rejected_commits"):
                    STATS[k] += v
            event(f"protocol {self.group.protocol}/{self.group.assignor}")
        return self.group.events


class ValidHistories(GroupMachine):
    """a. Every generated history passes every check."""

    def teardown(self):
        if self.group is None:
            return
        events = self.history()
        with tempfile.TemporaryDirectory() as d:
            verdict = judge_file(write(events, Path(d)))
        STATS["findings"] += len(verdict.findings)
        if verdict.status != "pass":
            STATS["counterexamples:valid"] += 1
            path = keep_counterexample("valid-history-failed", events)
            note(f"history kept in {path}")
        assert verdict.status == "pass", verdict.render()


class AnomalyInjection(GroupMachine):
    """b. Each anomaly class injected into a generated history (each on its own copy) fires its
    check and only what it implies."""

    def teardown(self):
        if self.group is None:
            return
        wrong = []
        rows = {name: row.mutate for name, row in ANOMALIES.items() if self.group.protocol in row.protocols}
        for name, events, target in self.mutated(rows, "mutations"):
            row = ANOMALIES[name]
            STATS[f"mutation:{name}"] += 1
            events = as_written(events)
            with tempfile.TemporaryDirectory() as d:
                verdict = judge_file(write(events, Path(d)), target.options | row.options)
            failed = {check for check, result in verdict.checks.items() if result.violations}
            missing = [check for check in row.must_fire(self.group.protocol) if check not in failed]
            unexplained = sorted(failed - set(row.fires) - set(row.implied))
            if missing or unexplained:
                STATS["counterexamples:anomaly"] += 1
                note(f"history kept in {keep_counterexample(f'anomaly-{name}', events)}")
                wrong.append(
                    f"{name}: "
                    + "; ".join(
                        ([f"{missing} reported nothing"] if missing else [])
                        + ([f"also failed {unexplained}"] if unexplained else [])
                    )
                    + "\n"
                    + verdict.render()
                )
        assert not wrong, "\n\n".join(wrong)


class BrokenPromises(GroupMachine):
    """c. Each promise of the format broken alone (each on its own copy of a generated history)
    is the history's fault, never a member's."""

    def teardown(self):
        if self.group is None:
            return
        wrong = []
        mutations = {name: mutate for name, (_, mutate) in BROKEN_PROMISES.items()}
        for name, events, where in self.mutated(mutations, "promises"):
            promise = BROKEN_PROMISES[name][0]
            with tempfile.TemporaryDirectory() as d:
                try:
                    verdict = judge_file(write(events, Path(d)))
                except BrokenHistory as e:
                    named = {b.promise for b in e.broken}
                    STATS[f"promise:{name}:{'refused' if promise in named else 'wrong'}"] += 1
                    if promise not in named:
                        wrong.append(f"{name} (broken at {where}): refused for {sorted(named)}, not {promise}")
                    continue
            others = sorted({v.check for v in verdict.violations if v.check != "history-integrity"})
            if PROMISES[promise].treatment != SET_ASIDE or others or not verdict.violations:
                STATS[f"promise:{name}:wrong"] += 1
                wrong.append(
                    f"{name} (broken at {where}): "
                    + (f"blamed on the run by {others}" if others else f"{verdict.status}, not refused")
                )
            else:
                STATS[f"promise:{name}:set-aside"] += 1
        assert not wrong, "\n".join(wrong)


TestValidHistories = ValidHistories.TestCase
TestAnomalyInjection = AnomalyInjection.TestCase
TestBrokenPromises = BrokenPromises.TestCase


# -- the tables themselves -----------------------------------------------------------------------------


def test_anomaly_table_agrees_with_the_mutation_suite():
    """Each row is the mutation suite's: the same checks fire, the same others are implied."""
    for name, row in ANOMALIES.items():
        mutation = _M[row.suite_name]
        assert set(row.fires) == {check for check, _ in mutation.fires}, name
        assert set(row.implied) == set(mutation.implied), name
    assert {row.suite_name for row in ANOMALIES.values()} == set(_M), "a mutation of the suite has no row"


def scripted(protocol: str, assignor: str, hosts: int = 0) -> list[Event]:
    """A fixed run of the model: a crash and its restart, a zombie and its return, a join, and a
    heartbeat answer the message proxy held back (``hosts``: its members in member hosts)."""
    g = Group(protocol, assignor, partitions=6, slots=4, initial=3, seed=7, hosts=hosts)
    a, b, c, d = (g.members[f"consumer-{i}"] for i in range(1, 5))
    for step in range(30):
        g.produce({p: 3 + (p + step) % 4 for p in range(6)})
        for m in g.up():
            if m.in_group:
                g.consume(m, commit=step % 3 != 0)
        if step == 6:
            g.pause(b, processed_uncommitted=True, past_session=True)
        if step == 10:
            g.resume(b)
        if step == 14:
            g.crash(a, processed_uncommitted=True)
        if step == 18:
            g.restart(a)
        if step == 22:
            g.join(d)
        if step == 26:
            g.delay_heartbeat_response(c, 300)
        g.advance(150)
    return g.finish(rounds=5)


SCRIPTS = [(p, a) for p, assignors in PROTOCOLS.items() for a in assignors]


@pytest.mark.parametrize("protocol, assignor", SCRIPTS, ids=lambda x: str(x))
def test_scripted_run_passes(protocol, assignor, tmp_path):
    verdict = judge_file(write(scripted(protocol, assignor), tmp_path))
    assert verdict.status == "pass", verdict.render()


@pytest.mark.parametrize("protocol, assignor", SCRIPTS, ids=lambda x: str(x))
def test_scripted_run_of_hosted_members_passes(protocol, assignor, tmp_path):
    """The same run, its members in two member hosts: the crash destroys one handle (client_destroyed)."""
    events = scripted(protocol, assignor, hosts=2)
    assert [e["member"] for e in events if e["name"] == "client_destroyed"] == ["consumer-1"]
    verdict = judge_file(write(events, tmp_path))
    assert verdict.status == "pass", verdict.render()


@pytest.mark.parametrize("name", sorted(ANOMALIES))
def test_every_anomaly_applies_to_a_scripted_run(name):
    """The property above passes over a history a row cannot act on: each row must act on
    some scripted run of the model."""
    row = ANOMALIES[name]
    applied = []
    for protocol, assignor in SCRIPTS:
        if protocol not in row.protocols:
            continue
        try:
            row.mutate(scripted(protocol, assignor))
            applied.append(protocol)
        except NotApplicable:
            pass
    assert applied, f"{name} acts on no scripted run"


@pytest.mark.parametrize("mutation", sorted(BROKEN_PROMISES))
def test_every_promise_mutation_applies_to_a_scripted_run(mutation):
    BROKEN_PROMISES[mutation][1](scripted("classic-eager", "range"))


def test_every_promise_of_a_history_is_broken_by_some_mutation():
    # event-lines (a line that is not an event) is the loader's, tested on recorded histories
    assert {promise for promise, _ in BROKEN_PROMISES.values()} == set(PROMISES) - {"event-lines"}
