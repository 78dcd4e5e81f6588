"""A load profile run by Locust against a real cluster: the group's size follows the profile
(the harness starts and stops real members as Locust's user count moves), and Locust's
`rebalance` requests are the oracle's rebalances — same count, same durations."""

from __future__ import annotations

import csv
import json
import math
import threading
import urllib.request
from pathlib import Path

from harness.cluster.ports import free_port
from tests.integration.conftest import small_scenario

# The shipped small profile: ramp 2 -> 6, one member every 3.2 s; then churn: up one by one to 6
# every 8 s, 2 leave at once.
PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "ramp-churn-small.yaml"
SIZES = [3, 4, 5, 6, 4, 5, 6, 4, 5, 6, 4]  # the counts the profile moves through, in order


def test_locust_runs_the_profile_and_its_rebalance_rows_are_the_oracles(run_scenario):
    run = run_scenario(PROFILE)
    assert run.exit_code == 0, run.output[-3000:]
    assert all(c["status"] == "passed" for c in run.verdict["checks"].values()), run.verdict["checks"]

    # The group followed Locust's user count, change by change (a change done in two steps
    # while a leaving member's slot frees up says the same count twice).
    resized = run.named("group_resized")
    sizes = [e["members"] for i, e in enumerate(resized) if i == 0 or e["members"] != resized[i - 1]["members"]]
    assert sizes == SIZES, [(e["members"], e["started"], e["stopped"]) for e in resized]
    # A member needed again is its slot's next incarnation: never more slots than the peak.
    started = run.named("consumer_started")
    assert {e["member"] for e in started} == {f"consumer-{i}" for i in range(1, 7)}
    assert max(e["incarnation"] for e in started) >= 3
    [locust] = [e for e in run.named("process_exited") if e["process"] == "load"]
    assert locust["returncode"] == 0

    # Locust's CSV: one `rebalance` row, whose count and durations are the verdict's.
    durations = [r["duration_ms"] for r in run.verdict["rebalances"] if r["status"] == "completed"]
    [row] = [r for r in csv.DictReader((run.run_dir / "load" / "locust_stats.csv").open()) if r["Type"] == "rebalance"]
    assert row["Name"] == "classic-eager"
    # Not one completed rebalance per change: on a loaded machine a change's rebalance may be
    # superseded by the next change's (CI31: a member the profile added left again before its join
    # phase ended). Locust counts the completed ones, as the verdict does.
    assert int(row["Request Count"]) == len(durations) > 0, (row, durations)
    assert int(row["Failure Count"]) == 0
    assert math.isclose(float(row["Min Response Time"]), min(durations), abs_tol=0.01)
    assert math.isclose(float(row["Max Response Time"]), max(durations), abs_tol=0.01)
    assert math.isclose(float(row["Average Response Time"]) * len(durations), sum(durations), abs_tol=0.1)
    # and its history file shows them arriving while the run went, not all at the end
    history = list(csv.DictReader((run.run_dir / "load" / "locust_stats_history.csv").open()))
    counts = [int(r["Total Request Count"]) for r in history if r["Type"] == "rebalance"]
    assert counts and 0 < counts[len(counts) // 2] < len(durations), counts


def test_locust_distributed_master_and_workers_on_localhost_run_the_profile(run_scenario):
    """Locust's distributed mode: a master (the shape, the count) and two workers (the users; the
    first one tells the rebalances), all on 127.0.0.1; the master's CSV still equals the verdict.
    The group is a KIP-848 one: a load profile runs on the `consumer` protocol too."""
    scenario = small_scenario(
        "load-dist", duration_s=10, load={"workers": 2, "stages": [{"kind": "ramp", "to": 4, "over_s": 6}]}
    )
    scenario["cluster"] = {"kafka": "4.4", "brokers": 1}
    scenario["workload"].update(protocol="consumer", assignor="uniform")
    for key in ("session_timeout_ms", "heartbeat_interval_ms"):  # a KIP-848 group's timing is the brokers'
        scenario["workload"].pop(key)
    scenario["topics"] = [{"name": "events", "partitions": 8}]
    run = run_scenario(scenario)
    assert run.exit_code == 0, run.output[-3000:]
    exits = {e["process"]: e["returncode"] for e in run.named("process_exited") if e["process"].startswith("load")}
    assert exits == {"load": 0, "load-worker-1": 0, "load-worker-2": 0}, exits  # the master quit, the workers with it
    # The harness follows the user count every half second: on a loaded machine it may see 2 -> 4 at once.
    resized = [e["members"] for e in run.named("group_resized")]
    assert resized and resized[-1] == 4 and resized == sorted(set(resized)), resized
    durations = [r["duration_ms"] for r in run.verdict["rebalances"] if r["status"] == "completed"]
    [row] = [r for r in csv.DictReader((run.run_dir / "load" / "locust_stats.csv").open()) if r["Type"] == "rebalance"]
    assert row["Name"] == "consumer"
    assert int(row["Request Count"]) == len(durations) >= 2, (row, durations)
    assert math.isclose(float(row["Max Response Time"]), max(durations), abs_tol=0.01)


def test_locust_web_ui_on_localhost_shows_the_rebalances_while_the_run_goes(run_scenario, tmp_path):
    """Locust's web UI (`load.web_port`, on 127.0.0.1, the profile started by itself): its stats
    have the `rebalance` row, percentiles included, before the history says the run is done;
    once the run is over the server is stopped, Locust exits, and its CSV equals the verdict."""
    port = free_port()
    scenario = small_scenario(
        "load-web", duration_s=14, load={"web_port": port, "stages": [{"kind": "ramp", "to": 4, "over_s": 8}]}
    )
    seen: list[tuple[dict, bool]] = []  # (the UI's rebalance row, whether the history had `phase: done` then)
    stop = threading.Event()

    def done_yet() -> bool:
        for history in (tmp_path / "runs").glob("*/history.jsonl"):
            for line in history.read_text().splitlines():
                if '"phase"' in line and '"done"' in line:
                    event = json.loads(line)
                    if event.get("name") == "phase" and event.get("phase") == "done":
                        return True
        return False

    def watch() -> None:
        while not stop.wait(0.5):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats/requests", timeout=2) as answer:
                    stats = json.load(answer)["stats"]
            except (OSError, ValueError):
                continue  # not up yet, or gone
            rows = [row for row in stats if row["method"] == "rebalance" and row["num_requests"]]
            if rows:
                seen.append((rows[0], done_yet()))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        run = run_scenario(scenario)
    finally:
        stop.set()
        watcher.join(10)
    assert run.exit_code == 0, run.output[-3000:]
    [locust] = [e for e in run.named("process_exited") if e["process"] == "load"]
    assert locust["returncode"] == 0  # the web server did not keep it up after the profile
    live = [row for row, done in seen if not done]
    assert live, seen[-1:]
    assert live[0]["name"] == "classic-eager" and "response_time_percentile_0.95" in live[0], live[0]
    durations = [r["duration_ms"] for r in run.verdict["rebalances"] if r["status"] == "completed"]
    [row] = [r for r in csv.DictReader((run.run_dir / "load" / "locust_stats.csv").open()) if r["Type"] == "rebalance"]
    assert 0 < live[0]["num_requests"] <= int(row["Request Count"]) == len(durations), (live[0], row, durations)
