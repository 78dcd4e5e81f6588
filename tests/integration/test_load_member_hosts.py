"""Beyond one machine: Locust's master and two workers on 127.0.0.1, a member host beside each
worker (load.member_hosts: on-workers), sharing no file with the run. One group whose members
come from both workers; their events reach the history over the host link, in the harness's
clocks; a poll stall on a member of the second worker, and what it and the group did about it."""

from __future__ import annotations

import pytest

from tests.integration.conftest import alive_pids, small_scenario

MAX_POLL_MS = 6000  # the stall (8 s) outlives it: the member leaves the group, and joins again after


@pytest.fixture(scope="module")
def run(module_run):
    scenario = small_scenario(
        "hosts-on-workers",
        duration_s=13,
        load={"workers": 2, "member_hosts": "on-workers", "stages": [{"kind": "hold", "for_s": 13}]},
        faults=[{"kind": "poll-stall", "target": "consumer-2", "at_s": 1, "duration_s": 8}],
    )
    scenario["workload"].update(consumers=3, max_poll_interval_ms=MAX_POLL_MS)
    return module_run("hosts-on-workers", scenario)


def test_one_group_from_both_workers_judged_whole(run):
    assert run.exit_code == 0, run.output[-3000:]
    assert all(c["status"] == "passed" for c in run.verdict["checks"].values()), run.verdict["checks"]
    hosts = {e["process"]: e["pid"] for e in run.named("process_started") if e["role"] == "member-host"}
    assert set(hosts) == {"member-host-w1", "member-host-w2"}
    # Each member in the host of its worker (by turns), with that host's pid.
    started = {e["member"]: e for e in run.named("consumer_started")}
    assert {m: e["host"] for m, e in started.items()} == {
        "consumer-1": "member-host-w1",
        "consumer-2": "member-host-w2",
        "consumer-3": "member-host-w1",
    }
    assert all(e["pid"] == hosts[e["host"]] for e in started.values())
    # Every member was given partitions: they all joined the one group.
    owners = {e["member"] for e in run.named("partitions_assigned") if e["partitions"]}
    assert owners == {"consumer-1", "consumer-2", "consumer-3"}


def test_each_hosts_clocks_were_aligned_and_the_error_recorded(run):
    aligned = run.named("clock_aligned")
    assert {e["host"] for e in aligned} == {"member-host-w1", "member-host-w2"}
    for e in aligned:  # one machine: the same clocks, so the offsets are within their error of 0
        assert e["samples"] >= 1 and 0 <= e["error_ms"] < 50, e
        assert abs(e["offset_ms"]) <= e["error_ms"] + 0.01 and abs(e["wall_offset_ms"]) <= e["error_ms"] + 0.01, e
    first = {h: min(e["mono_ms"] for e in aligned if e["host"] == h) for h in ("member-host-w1", "member-host-w2")}
    for member, e in {e["member"]: e for e in run.named("consumer_started")}.items():
        assert e["mono_ms"] > first[e["host"]], member  # no member event before its host was aligned


def test_the_fault_reached_a_member_of_the_second_worker_and_the_group_reacted(run):
    [stall] = run.named("poll_stall_started")
    [ended] = run.named("poll_stall_ended")
    assert stall["member"] == ended["member"] == "consumer-2" and stall["fault_id"] == "f1"
    assert ended["mono_ms"] - stall["mono_ms"] >= MAX_POLL_MS
    # The members of the first worker took consumer-2's partitions while it stalled past max.poll.interval.ms ...
    taken = [
        e
        for e in run.named("partitions_assigned")
        if e["member"] in ("consumer-1", "consumer-3") and stall["mono_ms"] < e["mono_ms"] < ended["mono_ms"]
    ]
    assert taken, [e for e in run.events if e.get("member") and stall["mono_ms"] < e["mono_ms"] < ended["mono_ms"]]
    # ... and consumer-2 had its share again after the stall.
    back = [
        e
        for e in run.named("partitions_assigned")
        if e["member"] == "consumer-2" and e["mono_ms"] > ended["mono_ms"] and e["partitions"]
    ]
    assert back


def test_cleanup_reached_every_worker(run):
    exits = {e["process"]: e["returncode"] for e in run.named("process_exited")}
    assert exits["member-host-w1"] == exits["member-host-w2"] == 0  # each said bye after its members' last events
    stopped = {e["member"] for e in run.named("consumer_stopped")}
    assert stopped == {"consumer-1", "consumer-2", "consumer-3"}
    assert alive_pids(run.events) == []
    # Nothing of a worker's host in the run directory: its files were its own.
    assert not list(run.run_dir.rglob("member-host-w*")), list(run.run_dir.rglob("member-host-w*"))
