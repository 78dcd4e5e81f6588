"""The capacity table's per-run figures (analysis.run_tables), from synthetic histories
(analysis.synthetic), each worked out again here from the events themselves: a joining member's
time to its first partition (`joins`), and what a single member's restart cost the group (the
`restart_*` columns of `runs`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.run_tables import RunRef, tables_of
from analysis.synthetic import SynthSpec, write_run
from oracle import vocabulary as ev
from tests.handouts import handed_out


def _run(tmp_path: Path, **spec) -> tuple[list[dict], dict, dict]:
    """(the history's events, the run's tables, its verdict)."""
    run = write_run(tmp_path, SynthSpec(**{"seed": 5, "fault": "none", "consumers": 4, "partitions": 8, **spec}))
    events = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    _, tables = tables_of(RunRef("k", "r", str(run)))
    assert isinstance(tables, dict), tables
    return events, tables, json.loads((run / "verdict.json").read_text())


@pytest.mark.parametrize("protocol", ["classic-eager", "classic-cooperative", "consumer"])
def test_each_incarnation_s_first_partition_is_its_start_to_its_first_non_empty_assignment(tmp_path, protocol):
    events, tables, _ = _run(tmp_path, protocol=protocol, restart_at_s=10)
    expected = {}
    for e in sorted(events, key=lambda e: e["mono_ms"]):
        slot = (e.get("member"), e.get("incarnation") or 1)
        if e["name"] == ev.CONSUMER_STARTED:
            expected[slot] = [e["mono_ms"], None]
        elif e["name"] == ev.PARTITIONS_ASSIGNED and e["partitions"] and expected[slot][1] is None:
            expected[slot][1] = e["mono_ms"]
    got = {(j["member"], j["inc"]): j["first_partition_ms"] for j in tables["joins"]}
    assert got == pytest.approx({slot: round(owned - started, 3) for slot, (started, owned) in expected.items()})
    assert ("consumer-4", 2) in got and len(got) == 5  # the restarted member's second incarnation too


@pytest.mark.parametrize("protocol", ["classic-eager", "classic-cooperative", "consumer"])
def test_a_single_member_s_restart_costs_what_was_handed_out_from_its_stop_until_the_group_changes_again(
    tmp_path, protocol
):
    events, tables, verdict = _run(tmp_path, protocol=protocol, restart_at_s=10)
    [stop, back] = [e for e in events if e["name"] == ev.GROUP_RESIZED]
    assert stop["stopped"] == back["started"] == ["consumer-4"]
    # the oracle's rebalances that began at or after the stop (nothing changed the group after it),
    # completed or not
    caused = [r for r in verdict["rebalances"] if r["start_mono_ms"] >= stop["mono_ms"] and not r["teardown"]]
    assert len(caused) >= 2  # the leave's and the rejoin's (a cooperative one in two phases)
    moved, last = handed_out(events, stop["mono_ms"])
    [row] = tables["runs"]
    assert row["restart_member"] == "consumer-4"
    assert row["restart_rebalances"] == len(caused)
    assert row["restart_rebalance_ms"] == pytest.approx(last - stop["mono_ms"], abs=0.01)
    assert row["restart_partitions_moved"] == moved > 0


def test_no_restart_no_restart_figures_and_a_member_that_never_owned_one_has_no_first_partition(tmp_path):
    _, tables, _ = _run(tmp_path, partitions=3)  # 4 members, 3 partitions: one owns nothing
    [row] = tables["runs"]
    assert (row["restart_member"], row["restart_rebalances"], row["restart_rebalance_ms"]) == (None, None, None)
    never = [j for j in tables["joins"] if j["first_partition_ms"] is None]
    assert len(never) == 1 and never[0]["first_assigned_mono"] is None


def test_only_a_member_stopped_alone_and_started_again_alone_is_a_restart(tmp_path):
    """Two leaving at once (churn) and the one that comes back is not a single member's restart,
    nor is a stop whose member does not come back next."""
    from analysis import run_tables
    from oracle.history import History

    events, _, _ = _run(tmp_path, restart_at_s=10)
    resized = [e for e in events if e["name"] == ev.GROUP_RESIZED]
    resized[0]["stopped"] = ["consumer-4", "consumer-3"]
    table = run_tables._RunTables(RunRef("k", "r", str(tmp_path)), History(events))
    assert table.restart(table.rebalances(run_tables.run_rebalances(table.h), [])) == {}
    resized[0]["stopped"], resized[1]["started"] = ["consumer-4"], ["consumer-2"]
    table = run_tables._RunTables(RunRef("k", "r", str(tmp_path)), History(events))
    assert table.restart(table.rebalances(run_tables.run_rebalances(table.h), [])) == {}
