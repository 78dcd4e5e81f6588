"""What a fault does to its target is declared by its kind (faults/base.py: Effects), written
into its fault_started by the scheduler, and read there by the oracle — never the kind's name.

So a kind the oracle has never heard of is explained and judged by what it declares (a toy
`freeze`, defined here only), and a history written before the declarations (format 1, 2)
gets them from its kinds' names in one table (oracle/legacy.py), as the kinds declare them.
"""

from __future__ import annotations

import copy
import gzip
import json
import time
from pathlib import Path
from typing import Literal

import pytest

from faults import catalogue
from faults.base import Effects, Fault, Targets, TimedFault, TimedSpec
from faults.schedule import FaultScheduler
from oracle import History, check_history, load_history
from oracle import vocabulary as ev
from oracle.checks.convergence import _busy_intervals
from oracle.explain import explain_rebalances
from oracle.legacy import FAULT_EFFECTS_SINCE, LEGACY_FAULT_EFFECTS, with_effects
from tests.fake_targets import FakeTargets

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "histories"

# One entry of each kind of the catalogue (at_s aside), and what it declares it does to its target.
DECLARED: dict[str, tuple[dict, Effects]] = {
    "pause": (
        {"target": "consumer-1", "duration_s": 0.05},
        Effects(silences="heartbeats", silenced_as="paused", down="paused"),
    ),
    "crash": (
        {"target": "consumer-1", "signal": "SIGTERM", "restart_after_s": 0.05},
        Effects(silences="heartbeats", silenced_as="crashed", down="killed", restart_after_s=0.05),
    ),
    "network": (
        {"target": "consumer-2", "duration_s": 0.05, "link": "brokers", "effect": "refuse"},
        Effects(silences="heartbeats", silenced_as="cut off"),
    ),
    "zk-session-expiry": ({"target": "broker-2"}, Effects()),
    "poll-stall": (
        {"target": "consumer-3", "duration_s": 0.05},
        Effects(silences="polls", silenced_as="stuck in processing (poll stall)"),
    ),
    "rolling-restart": ({"targets": ["consumer-1"], "down_s": 0, "interval_s": 0}, Effects()),
    "protocol-migration": ({"to": "consumer", "members": ["consumer-1"], "interval_s": 0}, Effects()),
    "join-storm": ({"consumers": 2}, Effects()),
    "scale": ({"consumers": 2}, Effects()),
    "add-partitions": ({"topic": "events", "partitions": 12}, Effects()),
    "create-topic": ({"topic": "events-2", "partitions": 4}, Effects()),
    "rolling-broker-upgrade": ({"to": "3.9.2", "interval_s": 0}, Effects()),
    "rolling-client-upgrade": ({"to": "confluent-kafka==2.99.0", "interval_s": 0}, Effects()),
    # A heartbeat answer held back: the member heartbeats on by its own timers meanwhile.
    "message": ({"target": "consumer-1", "duration_s": 0.05, "api": "Heartbeat", "action": "delay"}, Effects()),
}


SINCE_FORMAT_3 = {
    "protocol-migration",
    "rolling-broker-upgrade",
    "rolling-client-upgrade",
    "message",
}  # kinds added once every fault_started carried its effects


def fault_of(kind: str, fault_id: str = "f1", **options) -> Fault:
    entry, _ = DECLARED[kind]
    return catalogue.from_spec({"fault_id": fault_id, "kind": kind, "at_s": 0, **entry, **options})


def scheduled(fault: Fault) -> dict:
    """The fault_started the scheduler writes for ``fault``, injected at once and healed."""
    events: list[dict] = []
    s = FaultScheduler([fault], FakeTargets(), lambda name, **fields: events.append({"name": name, **fields}))
    s.start()
    deadline = time.monotonic() + 5
    while not events and time.monotonic() < deadline:  # injected at once (at_s 0)
        time.sleep(0.005)
    s.heal_all("end-of-run")
    [started] = [e for e in events if e["name"] == ev.FAULT_STARTED]
    return started


# -- every kind declares its effects, and the scheduler writes them --------------------------------


def test_every_kind_of_the_catalogue_declares_its_effects():
    assert set(DECLARED) == set(catalogue.BUILT_IN), "a kind without an entry here: say what it declares"
    for kind, (_, effects) in DECLARED.items():
        assert fault_of(kind).effects == effects, kind


def test_the_effects_follow_the_entrys_options():
    assert fault_of("crash", restart_after_s=None).effects == Effects(
        silences="heartbeats", silenced_as="crashed", down="killed"
    )  # down for good
    assert fault_of("crash", restart_after_s=7).effects.restart_after_s == 7


def test_a_kind_that_does_not_declare_its_effects_cannot_be_defined():
    with pytest.raises(TypeError, match="fault kind 'mute' does not declare its effects"):

        class MuteSpec(TimedSpec):
            kind: Literal["mute"]


@pytest.mark.parametrize("kind", sorted(DECLARED))
def test_a_scheduled_faults_fault_started_carries_its_effects_as_plain_json(kind):
    fault = fault_of(kind)
    started = scheduled(fault)
    assert started[ev.EFFECTS] == fault.effects.to_event()
    assert json.loads(json.dumps(started[ev.EFFECTS])) == started[ev.EFFECTS]
    assert set(started[ev.EFFECTS]) == {ev.SILENCES, ev.SILENCED_AS, ev.DOWN, ev.RESTART_AFTER_S}


# -- a kind the oracle has never heard of ---------------------------------------------------------


class FreezeSpec(TimedSpec):
    """A toy kind, here only: the target's cgroup frozen, every thread stopped as by SIGSTOP."""

    acts_on_process = True

    kind: Literal["freeze"]

    @property
    def effects(self) -> Effects:
        return Effects(silences="heartbeats", silenced_as="frozen", down="paused")


class Freeze(TimedFault[FreezeSpec]):
    Spec = FreezeSpec

    def inject(self, targets: Targets) -> None:
        targets.pause(self.resolved)

    def heal(self, targets: Targets) -> None:
        targets.resume(self.resolved)


def freeze(target: str = "consumer-2") -> Freeze:
    spec = FreezeSpec(kind="freeze", target=target, at_s=0, duration_s=0.05)
    return Freeze(fault_id="f1", spec=spec, params={"duration_s": 0.05})


def with_fault(events: list[dict], fault: Fault) -> list[dict]:
    """A hand-told story as format 3 writes it, its fault being ``fault``: its fault_started as the
    scheduler writes it (at the story's instant), its fault_healed of the same kind."""
    written = scheduled(fault)
    events = copy.deepcopy(events)
    for e in events:
        if e["name"] == ev.RUN_STARTED:
            e["format_version"] = ev.FORMAT_VERSION
        if e["name"] == ev.FAULT_STARTED:
            e.update({k: written[k] for k in ("kind", "target", "params", ev.EFFECTS)})
        if e["name"] == ev.FAULT_HEALED:
            e["kind"] = fault.kind
    return events


def test_a_kind_unknown_to_the_oracle_is_explained_by_what_it_declares(pause_story):
    story = pause_story.build()
    paused = explain_rebalances(History(with_fault(story, fault_of("pause", target="consumer-2"))))
    frozen = explain_rebalances(History(with_fault(story, freeze())))
    assert frozen[2].sentence == (
        "generation 2: consumer-2 was frozen (fault f1, freeze) and the coordinator "
        "evicted it only when its session timed out (session.timeout.ms 10000), 10.0 s later"
    )
    assert paused[2].sentence == frozen[2].sentence.replace("frozen (fault f1, freeze)", "paused (fault f1, pause)")
    for generation in paused:  # every other word, wait and cause alike
        p, f = paused[generation].to_dict(), frozen[generation].to_dict()
        assert json.dumps(p).replace("paused (fault f1, pause)", "") == json.dumps(f).replace(
            "frozen (fault f1, freeze)", ""
        )


def test_a_kind_unknown_to_the_oracle_keeps_convergence_busy_like_pause(history_builder):
    """A partition stalls while its owner is frozen: excused while the fault is active, as under a pause."""
    b = history_builder(topics={"events": 1})
    c1 = b.consumer("consumer-1").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0]}, at=100)
    for second in range(1, 61):
        b.at(second * 1000).acked(0, (second - 1) * 10, second * 10 - 1)
        if second < 20:
            c1.at(second * 1000 + 50).consumed(0, (second - 1) * 10, second * 10 - 1)
    b.at(19_500).fault("pause", "consumer-1")
    b.at(60_900).healed("pause", "consumer-1")
    c1.at(61_000).consumed(0, 190, 599)
    b.at(62_000).done()
    busy, verdicts = {}, {}
    for fault in (fault_of("pause", target="consumer-1"), freeze("consumer-1")):
        history = History(with_fault(b.build(), fault))
        busy[fault.kind] = _busy_intervals(history, history.end.mono_ms)
        verdicts[fault.kind] = check_history(history, {"convergence": {"stall_s": 15}}).checks["convergence"]
    assert busy["freeze"] == busy["pause"] and (19_500.0, 60_900.0) in busy["freeze"]
    assert verdicts["freeze"].status == verdicts["pause"].status == "passed"
    # and without the fault the stall is a violation: the fault is what excused it
    bare = [e for e in b.build() if e["name"] not in (ev.FAULT_STARTED, ev.FAULT_HEALED)]
    assert [v.kind for v in check_history(bare, {"convergence": {"stall_s": 15}}).checks["convergence"].violations] == [
        "stalled"
    ]


def test_a_kill_for_good_keeps_convergence_busy_until_the_group_rebalanced(history_builder):
    """Killed without a restart: its partitions are rightly idle until the rebalance after it ends,
    whatever its kind is called; with a restart, until the fault heals (the restart)."""
    b = history_builder(topics={"events": 2})
    _c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=100)
    b.at(5000).fault("crash", "consumer-2")
    b.at(5001).healed("crash", "consumer-2")  # nothing to undo: no restart
    c2.exited(-9)
    b.rebalance(2, {"consumer-1": [0, 1]}, at=15_000)
    b.at(20_000).done()
    for_good = History(with_fault(b.build(), fault_of("crash", target="consumer-2", restart_after_s=None)))
    restarted = History(with_fault(b.build(), fault_of("crash", target="consumer-2")))
    assert _busy_intervals(for_good, 20_000.0)[-1] == (5000.0, pytest.approx(15_015, abs=1))
    assert _busy_intervals(restarted, 20_000.0)[-1] == (5000.0, pytest.approx(5001, abs=1))


# -- histories written before the declarations -----------------------------------------------------


@pytest.mark.parametrize("kind", sorted(set(DECLARED) - SINCE_FORMAT_3))  # a newer kind's histories all say theirs
def test_the_legacy_table_gives_an_old_fault_what_its_kind_declares(kind):
    fault = fault_of(kind)
    old = {"name": ev.FAULT_STARTED, "fault_id": "f1", "kind": kind, "target": fault.target, "params": fault.params}
    assert with_effects(old)[ev.EFFECTS] == fault.effects.to_event()


def test_the_legacy_table_reads_a_crash_restart_as_the_oracle_always_did():
    old = {"name": ev.FAULT_STARTED, "kind": "crash", "target": "consumer-1"}
    assert with_effects({**old, "params": {}})[ev.EFFECTS][ev.RESTART_AFTER_S] is None  # down for good
    assert with_effects({**old, "params": {"duration_s": 5}})[ev.EFFECTS][ev.RESTART_AFTER_S] is None  # format 1's
    assert with_effects({**old, "params": None})[ev.EFFECTS][ev.DOWN] == ev.KILLED
    assert with_effects({**old, "kind": "someone-elses"})[ev.EFFECTS] == Effects().to_event()
    # the kinds there were when format 3 began; a newer one writes its effects from the start
    assert set(LEGACY_FAULT_EFFECTS) == set(catalogue.BUILT_IN) - SINCE_FORMAT_3


def test_effects_a_history_of_an_older_format_carries_are_its_own():
    said = {**Effects(silences="polls", silenced_as="slow").to_event()}
    assert with_effects({"kind": "pause", "params": {}, ev.EFFECTS: said})[ev.EFFECTS] == said


def fixture_lines(name: str) -> list[dict]:
    return [json.loads(line) for line in gzip.decompress((FIXTURES / f"{name}.jsonl.gz").read_bytes()).splitlines()]


def written(path: Path, events: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


@pytest.mark.parametrize("name", ["classic-eager-range", "coordinator-v2"])  # a member paused past its session
@pytest.mark.parametrize("version", [1, 2])
def test_an_old_history_is_explained_and_judged_as_the_same_run_written_in_format_3(tmp_path, name, version):
    old = fixture_lines(name)
    assert "format_version" not in old[0] and all(ev.EFFECTS not in e for e in old)
    if version > 1:
        old[0]["format_version"] = version
    now = copy.deepcopy(old)
    now[0]["format_version"] = FAULT_EFFECTS_SINCE
    for e in now:
        if e["name"] == ev.FAULT_STARTED:  # as the scheduler writes it now
            spec = {
                "fault_id": e["fault_id"],
                "kind": e["kind"],
                "at_s": 0,
                **e["params"],
                **({"target": e["target"]} if e["target"] else {}),
            }
            e[ev.EFFECTS] = catalogue.from_spec(spec).effects.to_event()
    judged_old = check_history(load_history(written(tmp_path / "old.jsonl", old))).to_dict()
    judged_now = check_history(load_history(written(tmp_path / "now.jsonl", now))).to_dict()
    explained = [r["explanation"] for r in judged_old["rebalances"]]
    assert any("was paused (fault f1, pause) and the coordinator evicted it" in x for x in explained), explained
    assert judged_old == judged_now
