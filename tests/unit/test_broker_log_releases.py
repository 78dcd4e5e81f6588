"""Every supported Kafka release's GroupCoordinator lines are recognised (harness/run/brokerlog.py):
lines recorded from real brokers of each release (tests/fixtures/broker_logs/<version>[-consumer].log,
only the group's lines), and what a run does when the lines it needs are not there.

The classic ones and 4.4.0-consumer come from the smoke scenario's runs; 3.7.2-consumer and
3.8.1-consumer from a group of confluent-kafka 2.6.1 members (librdkafka's KIP-848 early access) on a 3.7.2 (3.8.1) KRaft broker
with the early-access settings (versions.CONSUMER_PROTOCOL_EARLY_ACCESS_CONFIG)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.synthetic import SynthSpec, synthetic_history
from harness.components import versions
from harness.run import brokerlog
from oracle import check_history
from oracle import vocabulary as ev
from runtime.history import HistoryWriter
from runtime.recognition import log_unrecognised

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "broker_logs"
RECORDED = sorted(p.stem for p in FIXTURES.glob("*.log"))

# What a smoke run's group does on every release (members join, one is evicted, all leave at the end),
# as the events the harness makes of the coordinator's lines.
CLASSIC = {
    ev.COORDINATOR_PREPARING_REBALANCE,
    ev.COORDINATOR_STABILIZED,
    ev.COORDINATOR_ASSIGNMENT_RECEIVED,
    ev.COORDINATOR_MEMBER_REMOVED,
}
CONSUMER = {ev.COORDINATOR_PREPARING_REBALANCE, ev.COORDINATOR_TARGET_ASSIGNMENT, ev.COORDINATOR_MEMBER_JOINED}


def _events(stem: str) -> list[tuple[float, str, dict]]:
    lines = (FIXTURES / f"{stem}.log").read_text().splitlines()
    return [parsed for line in lines if (parsed := brokerlog.parse_line(line))]


@pytest.mark.parametrize("stem", RECORDED)
def test_a_recorded_release_is_in_the_catalogue(stem):
    release = versions.kafka_release(stem.removesuffix("-consumer"))
    assert release.tested and release.version == stem.removesuffix("-consumer")
    if stem.endswith("-consumer"):
        assert release.consumer_protocol is not None


@pytest.mark.parametrize("stem", RECORDED)
def test_each_releases_coordinator_lines_give_the_events_a_run_needs(stem):
    events = _events(stem)
    protocol = "consumer" if stem.endswith("-consumer") else "classic"
    names = {name for _, name, _ in events}
    assert names >= (CONSUMER if protocol == "consumer" else CLASSIC), f"{stem}: only {sorted(names)}"
    [group] = {fields["group"] for _, _, fields in events if "group" in fields}  # one group's lines
    assert brokerlog.missing_lines(protocol, group, names) is None


def test_the_releases_the_acceptance_names_have_their_lines_recorded():
    assert {"3.3.2", "3.7.2", "3.9.2", "4.0.2", "4.4.0"} <= set(RECORDED)
    assert {"3.7.2-consumer", "4.4.0-consumer"} <= set(RECORDED)


def test_a_run_without_the_lines_it_needs_names_them():
    assert "Stabilized group" in brokerlog.missing_lines("classic", "g1", {ev.COORDINATOR_PREPARING_REBALANCE})
    assert "Computed a new target assignment" in brokerlog.missing_lines("consumer", "g1", set())
    assert brokerlog.missing_lines("classic", "g1", {ev.COORDINATOR_STABILIZED}) is None


def test_a_coordinator_log_keeps_the_group_lines_it_did_not_recognise(tmp_path):
    log = tmp_path / "broker-1.log"
    log.write_text(
        "[2026-11-21T19:42:28.052+0000] INFO [GroupCoordinator 1]: Stabilized group g1 generation 1 "
        "(__consumer_offsets-2) with 1 members (kafka.coordinator.group.GroupCoordinator)\n"
        "[2026-11-21T19:42:29.052+0000] INFO [GroupCoordinator 1]: Group g1 settled at generation 2 in new words\n"
        "[2026-11-21T19:42:29.053+0000] INFO something about another group g2\n"
    )
    reader = brokerlog.CoordinatorLog(log, "broker-1", "g1")
    assert [name for _, name, _ in reader.new_events()] == [ev.COORDINATOR_STABILIZED]
    assert reader.seen == {ev.COORDINATOR_STABILIZED}
    assert reader.unrecognised == [
        "[2026-11-21T19:42:29.052+0000] INFO [GroupCoordinator 1]: Group g1 settled at generation 2 in new words"
    ]


def test_an_unrecognised_log_makes_the_run_incomplete_naming_what_is_missing(tmp_path):
    events = synthetic_history(SynthSpec(seed=3))
    assert check_history(events).status == "pass"  # the same history, every log read: judged
    path = tmp_path / "history.jsonl"
    log_unrecognised(
        HistoryWriter(path, "harness"),
        "server logs of the brokers, Kafka 4.4.0",
        "the GroupCoordinator's `Stabilized group G generation N` lines of group g1",
    )
    said = [{**e, "mono_ms": events[-1]["mono_ms"] - 1, "ts": events[-1]["ts"] - 1} for e in _read(path)]
    verdict = check_history(sorted(events[:-1] + said, key=lambda e: e["mono_ms"]) + events[-1:])
    assert verdict.status == "incomplete"
    reasons = set(verdict.skipped_checks.values())
    assert len(reasons) == 1 and "Kafka 4.4.0" in next(iter(reasons)) and "Stabilized group" in next(iter(reasons))
    assert "history-integrity" not in verdict.skipped_checks


def _read(path: Path) -> list[dict]:
    import json

    return [json.loads(line) for line in path.read_text().splitlines()]
