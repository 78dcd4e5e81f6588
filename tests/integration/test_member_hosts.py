"""Members sharing a process (workload.members_per_host), on a real broker: twelve members in three
member hosts, crowd lanes for all but the faulted. A pause of one hosted member (modelled: its
poll loop frozen, its own lane cut) gets it evicted while the three members of its host go on;
a crash of another destroys its handle unclosed, and its neighbours keep their member ids. The
small form of scenarios/thousand.yaml (docs/scale.md)."""

from __future__ import annotations

from tests.integration.conftest import assert_healed, small_scenario

MEMBERS, PER_HOST = 12, 4
PAUSED, CRASHED = "consumer-2", "consumer-6"  # in member-host-1 and member-host-2
IN_FLIGHT_MS = 300  # a poll the member was in when frozen: consume(timeout=0.2) and its batch


def test_hosted_members_are_faulted_one_at_a_time(run_scenario):
    scenario = small_scenario(
        "hosted",
        duration_s=32,  # the crash's eviction (a 6 s session) comes 4 s before its end
        faults=[
            {"kind": "pause", "target": PAUSED, "at_s": 4, "duration_s": 12},  # twice its session
            {"kind": "crash", "target": CRASHED, "at_s": 22},  # SIGKILL: not restarted
        ],
    )
    scenario["topics"] = [{"name": "events", "partitions": 2 * MEMBERS}]
    scenario["workload"].update(
        consumers=MEMBERS, members_per_host=PER_HOST, lanes="on-demand", producer={"rate": 300}, warmup_timeout_s=120
    )
    run = run_scenario(scenario)
    assert run.exit_code == 0, run.output[-3000:]
    assert all(c["status"] == "passed" for c in run.verdict["checks"].values()), run.verdict["checks"]

    # Every member its own handle in its host: three hosts, one pid each, four members in each.
    started = {e["member"]: e for e in run.named("consumer_started") if e.get("incarnation", 1) == 1}
    assert len(started) == MEMBERS
    hosts = {e["process"]: e["pid"] for e in run.named("process_started") if e["role"] == "member-host"}
    assert sorted(hosts) == ["member-host-1", "member-host-2", "member-host-3"]
    for member, e in started.items():
        k = int(member.rsplit("-", 1)[1])
        assert e["host"] == f"member-host-{(k - 1) // PER_HOST + 1}" and e["pid"] == hosts[e["host"]], e

    # The pause: only the paused member's lane was cut, and the coordinator evicted only it.
    [pause] = [e for e in run.named("fault_started") if e["kind"] == "pause"]
    [pause_end] = [e for e in run.named("fault_healed") if e["fault_id"] == pause["fault_id"]]
    assert pause["details"]["modelled"].startswith("hosted in member-host-1")
    completed = [r for r in run.verdict["rebalances"] if r["status"] == "completed"]
    evicted = [r for r in completed if pause["mono_ms"] < r["start_mono_ms"] < pause_end["mono_ms"]]
    assert evicted and PAUSED not in evicted[-1]["members"] and len(evicted[-1]["members"]) == MEMBERS - 1, evicted
    # Its host's other members went on consuming while it was frozen, under the member ids they had.
    neighbours = [m for m in started if started[m]["host"] == "member-host-1" and m != PAUSED]
    during = [e for e in run.named("records_consumed") if pause["mono_ms"] < e["mono_ms"] < pause_end["mono_ms"]]
    assert {e["member"] for e in during} >= set(neighbours), sorted({e["member"] for e in during})
    # Its own poll loop stopped at its next poll: a consume already waiting (0.2 s at most) returned.
    assert not [e for e in during if e["member"] == PAUSED and e["mono_ms"] > pause["mono_ms"] + IN_FLIGHT_MS]

    # The crash: its handle destroyed without a close (no consumer_stopped, no LeaveGroup), its
    # neighbours untouched: still running the incarnation they started with.
    [crash] = [e for e in run.named("fault_started") if e["kind"] == "crash"]
    [destroyed] = [e for e in run.named("client_destroyed") if e["member"] == CRASHED]
    assert destroyed["mono_ms"] >= crash["mono_ms"]
    assert not [e for e in run.named("consumer_stopped") if e["member"] == CRASHED]
    after = [r for r in completed if r["start_mono_ms"] > crash["mono_ms"]]
    assert after and CRASHED not in after[0]["members"] and len(after[0]["members"]) == MEMBERS - 1, after
    assert not [e for e in run.named("consumer_started") if e.get("incarnation", 1) > 1 and e["member"] != PAUSED]
    assert_healed(run)
