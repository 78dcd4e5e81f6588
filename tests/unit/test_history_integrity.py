"""The history's promises (oracle/integrity.py) on real histories, each broken in one way.

Every fixture (tests/fixtures/histories: whole runs recorded on real ZooKeeper and Kafka)
is copied line by line, in the order its writers appended it, one promise broken, and
written back. A history with a promise broken never passes and never fails a system
check: the loader refuses it naming the promise and the lines (`BrokenHistory`, `check`
exits 2), or — for a promise whose treatment is to set events aside — the check
`history-integrity` fails alone, and every other check says what it says of the
unmutated history. What dying writers leave (torn, duplicate lines, no run_finished) is
counted and changes no check.
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from oracle import check_history, load_history
from oracle.history import BrokenHistory, HistoryError
from oracle.integrity import PROMISES, REFUSE, SET_ASIDE
from oracle.legacy import with_effects

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "histories"
HISTORIES = sorted(p.name.removesuffix(".jsonl.gz") for p in FIXTURES.glob("*.jsonl.gz"))
MEMBER = "consumer-1"


def lines_of(name: str) -> list[dict]:
    """The fixture's events in file order (each writer's in the order it wrote them)."""
    return [json.loads(line) for line in gzip.decompress((FIXTURES / f"{name}.jsonl.gz").read_bytes()).splitlines()]


def write(tmp_path: Path, events: list[dict | bytes]) -> Path:
    path = tmp_path / "history.jsonl"
    path.write_bytes(
        b"".join(e if isinstance(e, bytes) else json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in events)
    )
    return path


def of(events: list[dict], source: str, name: str | None = None) -> list[int]:
    """Indexes of a writer's events (of that name), in file order."""
    return [i for i, e in enumerate(events) if e["source"] == source and (name is None or e["name"] == name)]


def middle(xs: list[int]) -> int:
    assert xs, "the fixture has nothing of that kind"
    return xs[len(xs) // 2]


def renumber(events: list[dict], source: str) -> None:
    """The writer's seq as it would have numbered what is left."""
    for n, i in enumerate(of(events, source), 1):
        events[i]["seq"] = n


# -- the promises whose treatment is to refuse: one mutation each (or more) -----------------


def swap_a_members_lines(events):
    i = middle(of(events, MEMBER, "records_consumed"))
    j = next(k for k in of(events, MEMBER) if k > i)
    events[i], events[j] = events[j], events[i]


def drop_a_members_line(events):
    del events[middle(of(events, MEMBER, "records_consumed"))]


def repeat_a_seq_with_other_content(events):
    i = middle(of(events, MEMBER, "records_consumed"))
    events.insert(i + 1, {**events[i], "ranges": events[i]["ranges"][:1], "mono_ms": events[i]["mono_ms"] + 1})


def restart_the_producer_without_incarnation(events):
    events[of(events, "harness", "run_started")[0]]["format_version"] = 2  # writers say their incarnations
    acks = of(events, "producer")
    for n, i in enumerate(acks[len(acks) // 2 :], 1):
        events[i]["seq"] = n


def stamp_a_members_event_back_in_time(events):
    # the case: one member's events stamped going backwards against their own sequence
    i = middle(of(events, MEMBER, "records_consumed"))
    events[i]["mono_ms"] -= 5000.0
    events[i]["ts"] -= 5000.0


def second_run_started(events):
    harness = of(events, "harness")
    events.insert(harness[1], {**events[harness[0]], "seq": 2})
    renumber(events, "harness")


def an_event_after_run_finished(events):
    last = events[of(events, MEMBER)[-1]]
    events.append({**last, "seq": last["seq"] + 1, "mono_ms": events[-1]["mono_ms"] + 1})


def generation_goes_back(events):
    stamped = [i for i in of(events, MEMBER) if events[i].get("generation") is not None]
    first, last = events[stamped[0]]["generation"], events[stamped[-1]]["generation"]
    if last == first:
        pytest.skip("the member joined one generation only")
    events[stamped[-1]]["generation"] = first  # its last event, stamped with its first generation


def range_count_disagrees(events):
    i = middle(of(events, MEMBER, "records_consumed"))
    events[i]["ranges"][0]["count"] += 3


def commit_answered_before_sent(events):
    i = middle([k for k in of(events, MEMBER, "offsets_committed") if events[k].get("started_mono_ms") is not None])
    events[i]["started_mono_ms"] = events[i]["mono_ms"] + 1000.0


def successful_commit_with_error_code(events):
    i = middle([k for k in of(events, MEMBER, "offsets_committed") if events[k].get("success")])
    events[i]["error_code"] = 22


def assign_a_partition_that_does_not_exist(events):
    i = of(events, MEMBER, "partitions_assigned")[0]
    events[i]["partitions"] = [
        *events[i]["partitions"],
        {"topic": events[i]["partitions"][0]["topic"] if events[i]["partitions"] else "events", "partition": 999},
    ]


def a_fault_says_nothing_of_its_effects(events):
    events[of(events, "harness", "run_started")[0]]["format_version"] = 3  # faults say what they do
    faults = of(events, "fault", "fault_started")
    for i in faults:
        events[i] = with_effects(events[i])
    del events[middle(faults)]["effects"]


def _message_faulted(fault_id: str, mono_ms: float) -> dict:
    return {
        "name": "message_faulted",
        "ts": 1.0,
        "mono_ms": mono_ms,
        "source": "message-proxy",
        "seq": 1,
        "fault_id": fault_id,
        "member": MEMBER,
        "api": "Heartbeat",
        "action": "delay",
        "delay_ms": 100,
    }


def a_message_of_a_fault_that_never_started(events):
    i = middle(of(events, MEMBER))
    events.insert(i + 1, _message_faulted("f999", events[i]["mono_ms"]))


def a_message_acted_on_before_its_fault_began(events):
    started = events[middle(of(events, "fault", "fault_started"))]
    events.append(_message_faulted(started["fault_id"], started["mono_ms"] - 500))
    events.sort(key=lambda e: e["name"] == "run_finished")  # run_finished stays last


def a_member_says_it_is_in_a_host_that_never_started(events):
    i = of(events, MEMBER, "consumer_started")[0]
    events[i]["host"] = "member-host-9"  # no process_started of that host, with its pid or any


def a_member_starts_twice_in_one_incarnation(events):
    i = of(events, MEMBER, "consumer_started")[0]
    events.insert(i + 1, {**events[i], "protocol": "consumer"})  # and says another generation
    renumber(events, MEMBER)


def a_member_of_a_mixed_group_says_no_protocol(events):
    started = [i for i, e in enumerate(events) if e["name"] == "consumer_started" and e.get("member")]
    if len(started) < 2:
        pytest.skip("one member incarnation only")
    events[started[0]]["protocol"] = "consumer" if events[started[0]].get("protocol") != "consumer" else "classic-eager"
    del events[started[-1]]["protocol"]  # the group is mixed now, and this one says nothing


REFUSED: dict[str, tuple[str, Callable[[list[dict]], None]]] = {
    "swap-two-lines": ("writer-sequence", swap_a_members_lines),
    "drop-a-line": ("writer-sequence", drop_a_members_line),
    "repeat-a-seq": ("writer-sequence", repeat_a_seq_with_other_content),
    "restart-without-incarnation": ("writer-sequence", restart_the_producer_without_incarnation),
    "clock-back": ("writer-clock", stamp_a_members_event_back_in_time),
    "second-run-started": ("run-bounds", second_run_started),
    "after-run-finished": ("run-bounds", an_event_after_run_finished),
    "generation-back": ("generation-order", generation_goes_back),
    "range-count": ("record-fields", range_count_disagrees),
    "commit-before-sent": ("record-fields", commit_answered_before_sent),
    "commit-ok-with-error": ("record-fields", successful_commit_with_error_code),
    "partition-999": ("partitions-exist", assign_a_partition_that_does_not_exist),
    "fault-without-effects": ("fault-effects", a_fault_says_nothing_of_its_effects),
    "message-without-fault": ("message-faults", a_message_of_a_fault_that_never_started),
    "message-before-fault": ("message-faults", a_message_acted_on_before_its_fault_began),
    "host-never-started": ("hosted-members", a_member_says_it_is_in_a_host_that_never_started),
    "started-twice": ("member-protocol", a_member_starts_twice_in_one_incarnation),
    "mixed-without-protocol": ("member-protocol", a_member_of_a_mixed_group_says_no_protocol),
}


def test_every_promise_has_a_treatment_and_a_mutation():
    assert {p.treatment for p in PROMISES.values()} == {REFUSE, SET_ASIDE}
    mutated = {promise for promise, _ in REFUSED.values()} | {"produced", "event-lines"}
    assert mutated == set(PROMISES)


@pytest.mark.parametrize("history", HISTORIES)
def test_the_unmutated_history_keeps_every_promise(tmp_path, history):
    events = load_history(write(tmp_path, lines_of(history)))
    verdict = check_history(events)
    assert verdict.status == "pass" and verdict.checks["history-integrity"].status == "passed"
    assert events.report.run_finished and not (
        events.report.torn or events.report.duplicates or events.report.unknown_fields
    )


@pytest.mark.parametrize("history", HISTORIES)
@pytest.mark.parametrize("mutation", REFUSED)
def test_a_broken_promise_is_refused_naming_it_and_its_lines(tmp_path, history, mutation):
    promise, mutate = REFUSED[mutation]
    events = lines_of(history)
    mutate(events)
    path = write(tmp_path, events)
    with pytest.raises(BrokenHistory) as refused:
        load_history(path)
    broken = refused.value.broken
    assert promise in {b.promise for b in broken}, broken
    assert all(b.lines for b in broken) and f"{promise}:" in str(refused.value)
    # `check` says so, and exits 2: a history fault, not a verdict about the cluster
    result = CliRunner().invoke(main, ["check", str(tmp_path)])
    assert result.exit_code == 2 and promise in result.output, result.output


@pytest.mark.parametrize("history", HISTORIES)
def test_a_line_that_is_not_an_event_is_refused(tmp_path, history):
    events: list[dict | bytes] = list(lines_of(history))
    events[len(events) // 2] = b'{"name": "records_consumed", "ranges": [\n'
    with pytest.raises(HistoryError, match=rf"history.jsonl:{len(events) // 2 + 1}: not a JSON event"):
        load_history(write(tmp_path, events))


@pytest.mark.parametrize("history", HISTORIES)
def test_records_never_produced_are_set_aside_and_named_alone(tmp_path, history):
    events = lines_of(history)
    clean = check_history(load_history(write(tmp_path, events))).to_dict()
    # the case: a member consumed offsets past the last acknowledged one and the last high watermark
    i = middle(of(events, MEMBER, "records_consumed"))
    r = events[i]["ranges"][0]
    ends = [
        x["max_offset"]
        for e in events
        if e["name"] == "records_acked"
        for x in e["ranges"]
        if (x["topic"], x["partition"]) == (r["topic"], r["partition"])
    ]
    phantom = max(ends) + 1000
    events[i]["ranges"].append({**r, "min_offset": phantom, "max_offset": phantom + 9, "count": 10})
    verdict = check_history(load_history(write(tmp_path, events))).to_dict()
    assert verdict["status"] == "fail"
    assert [(v["check"], v["kind"]) for v in verdict["violations"]] == [("history-integrity", "never-produced")]
    v = verdict["violations"][0]
    assert v["partition"] == f"{r['topic']}-{r['partition']}" and v["offsets"] == f"{phantom}-{phantom + 9}"
    incarnation = events[i].get("incarnation") or 1  # a migrated member's middle batch may be a later life's
    assert v["members"] == [MEMBER if incarnation == 1 else f"{MEMBER}#{incarnation}"]
    # every other check judged the history without them, as it judged the unmutated one
    for name, result in verdict["checks"].items():
        if name != "history-integrity":
            assert result == clean["checks"][name], name


# -- what dying writers leave: counted, shown, no check changed ------------------------------


def torn_last_line(events):
    return [*events, json.dumps(events[-1]).encode()[:30]]


def torn_line_run_into(events):
    i = middle(of(events, MEMBER, "records_consumed"))
    cut = json.dumps(events[i + 1]).encode()[:25]
    return [*events[: i + 1], cut, *events[i + 1 :]]


def duplicate_line(events):
    i = middle(of(events, MEMBER, "records_consumed"))
    return [*events[: i + 1], events[i], *events[i + 1 :]]


def no_run_finished(events):
    return [e for e in events if e["name"] != "run_finished"]


TOLERATED = {
    "torn-last-line": (torn_last_line, "torn"),
    "torn-line-run-into": (torn_line_run_into, "recovered"),
    "duplicate-line": (duplicate_line, "duplicates"),
    "no-run-finished": (no_run_finished, "run_finished"),
}


@pytest.mark.parametrize("history", HISTORIES)
@pytest.mark.parametrize("leftover", TOLERATED)
def test_what_a_dying_writer_leaves_is_counted_and_changes_no_check(tmp_path, history, leftover):
    events = lines_of(history)
    clean = check_history(load_history(write(tmp_path, events))).to_dict()
    mutate, counted = TOLERATED[leftover]
    mutated = mutate(copy.deepcopy(events))
    if leftover == "torn-line-run-into":  # the cut-off line and the next one on one line
        i = next(k for k, e in enumerate(mutated) if isinstance(e, bytes))
        mutated[i : i + 2] = [mutated[i] + json.dumps(mutated[i + 1], separators=(",", ":")).encode() + b"\n"]
    loaded = load_history(write(tmp_path, mutated))
    report = loaded.report
    assert (not report.run_finished) if counted == "run_finished" else getattr(report, counted), report
    verdict = check_history(loaded).to_dict()
    for name, result in verdict["checks"].items():
        if name != "history-integrity":
            assert result == clean["checks"][name], name
    assert verdict["checks"]["history-integrity"]["status"] == "passed"
    result = CliRunner().invoke(main, ["check", str(tmp_path)])
    assert "history " in result.output and result.exit_code == {"pass": 0, "fail": 1}[clean["status"]], result.output
