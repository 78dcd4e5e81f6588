"""Every message fault on real brokers: each valid (protocol, API, action), one run each.

    python3 benchmarks/message_matrix.py [--protocols classic-cooperative,consumer] [--api SyncGroup …]
                                         [--action error …] [--runs-dir DIR] [--fresh-clusters]

The APIs are those each protocol generation's members send (oracle/protocols.py), the actions
the message proxy's (faults/message.py); an `error` puts in one typical error of its API
(ERRORS below, held to those the API may be answered with). Each run is a one-broker Kafka 4.x
cluster (KRaft; the runs share it) with two members: consumer-1's `api` responses are acted on
from the first second of the workload, and consumer-1 is restarted (SIGTERM) at 6 s, so it also
leaves, finds its coordinator, joins, syncs and fetches its offsets inside the fault's window.
Each row says how many messages the proxy acted on (`message_faulted`), what consumer-1 did
next as its history says it, and the run's verdict. A row whose fault acted on no message, or
whose run did not pass, is flagged; the exit code is 1 if any was.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from faults.message import ACTIONS  # noqa: E402
from faults.message_proxy.apis import APIS  # noqa: E402
from harness.cluster.shared import ClusterPool, runs_in_a_row  # noqa: E402
from harness.paths import new_stamped_dir  # noqa: E402
from harness.run.loop import Run  # noqa: E402
from harness.scenario import load_scenario_data  # noqa: E402
from harness.scenario.overrides import scenario_text  # noqa: E402
from oracle import vocabulary as ev  # noqa: E402
from oracle.history import load_history  # noqa: E402
from oracle.protocols import GENERATIONS  # noqa: E402

PROTOCOLS = ("classic-cooperative", "consumer")
KAFKA = "4.4"
# One typical error per API: what a broker answers while its group moves or its coordinator does.
ERRORS = {
    "JoinGroup": "UNKNOWN_MEMBER_ID",
    "SyncGroup": "REBALANCE_IN_PROGRESS",
    "Heartbeat": "REBALANCE_IN_PROGRESS",
    "LeaveGroup": "UNKNOWN_MEMBER_ID",
    "ConsumerGroupHeartbeat": "FENCED_MEMBER_EPOCH",
    "OffsetCommit": "NOT_COORDINATOR",
    "OffsetFetch": "NOT_COORDINATOR",
    "FindCoordinator": "COORDINATOR_NOT_AVAILABLE",
    "Fetch": "NOT_LEADER_OR_FOLLOWER",
}
DELAY_MS = 2000
RESTART_AT_S = 6
# What consumer-1 does next that says how it took the fault (its consumed ranges and good commits say nothing).
TELLING = {
    ev.GROUP_JOIN_SENT,
    ev.GROUP_JOINED,
    ev.GROUP_JOIN_FAILED,
    ev.GROUP_SYNCED,
    ev.GROUP_SYNC_FAILED,
    ev.HEARTBEAT_FAILED,
    ev.REBALANCE_STARTED,
    ev.PARTITIONS_LOST,
    ev.PARTITIONS_REVOKED,
    ev.CONSUMER_ERROR,
    ev.OFFSETS_COMMITTED,
    ev.CLIENT_LOG,
}
NEXT_WITHIN_MS = 15_000
SHOWN = 4


def combinations(protocols: list[str], apis: list[str], actions: list[str]) -> list[tuple[str, str, str]]:
    return [
        (protocol, api, action)
        for protocol in protocols
        for api in GENERATIONS[protocol].kafka_apis
        if not apis or api in apis
        for action in ACTIONS
        if not actions or action in actions
    ]


def scenario(protocol: str, api: str, action: str) -> dict:
    name = f"mm-{protocol}-{api}-{action}".lower()
    fault: dict = {
        "kind": "message",
        "target": "consumer-1",
        "api": api,
        "action": action,
        "count": 2 if action == "delay" else 1,
        "at_s": 1,
        "duration_s": 17,
    }
    if action == "delay":
        fault["delay_ms"] = DELAY_MS
    if action == "error":
        fault["error"] = ERRORS[api]
    return {
        "name": name,
        "seed": 1,
        "duration_s": 20,
        "cluster": {"kafka": KAFKA, "brokers": 1},
        "topics": [{"name": "events", "partitions": 4}],
        "workload": {
            "group": name,
            "protocol": protocol,
            "consumers": 2,
            "commit": "sync",
            "processing_ms": 1,
            "session_timeout_ms": 6000,
            "heartbeat_interval_ms": 1000,
            "producer": {"rate": 100, "linger_ms": 50},
        },
        "faults": [
            fault,
            {"kind": "rolling-restart", "targets": ["consumer-1"], "at_s": RESTART_AT_S, "down_s": 1},
        ],
        "recovery": {"timeout_s": 90, "stable_for_s": 2},
    }


def what_next(events: list[dict], acted: list[dict]) -> str:
    """consumer-1's telling events after the first message the proxy acted on, in order."""
    if not acted:
        return "-"
    t0 = acted[0]["mono_ms"]
    shown: list[str] = []
    for e in events:
        if e.get("source") != "consumer-1" or not t0 < e["mono_ms"] <= t0 + NEXT_WITHIN_MS:
            continue
        if e["name"] not in TELLING or (e["name"] == ev.OFFSETS_COMMITTED and e["success"]):
            continue
        word = e["name"]
        if e["name"] == ev.OFFSETS_COMMITTED:
            word = f"commit failed {e.get('error')}"
        elif e.get("error"):
            word = f"{word} ({str(e['error'])[:40]})"
        elif e["name"] == ev.CLIENT_LOG:
            word = f"log: {e['message'][:40]}"
        if not shown or shown[-1] != word:
            shown.append(word)
        if len(shown) == SHOWN:
            break
    return " > ".join(shown) or "nothing telling"


def row(protocol: str, api: str, action: str, run_dir: Path | None, exit_code: int, seconds: float) -> dict:
    events = load_history(run_dir / "history.jsonl") if run_dir else []
    acted = [e for e in events if e["name"] == ev.MESSAGE_FAULTED]
    verdict_file = run_dir / "verdict.json" if run_dir else None
    status = json.loads(verdict_file.read_text())["status"] if verdict_file and verdict_file.exists() else "none"
    ok = bool(acted) and exit_code == 0
    return {
        "protocol": protocol,
        "api": api,
        "action": action,
        "acted": len(acted),
        "versions": sorted({e["api_version"] for e in acted}),
        "next": what_next(sorted(events, key=lambda e: e["mono_ms"]), acted),
        "verdict": status,
        "exit_code": exit_code,
        "seconds": round(seconds),
        "ok": ok,
        "run_dir": str(run_dir) if run_dir else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocols", default=",".join(PROTOCOLS), help="comma-separated protocol generations")
    parser.add_argument("--api", action="append", default=[], help="only this API (repeatable)")
    parser.add_argument("--action", action="append", default=[], choices=ACTIONS, help="only this action (repeatable)")
    parser.add_argument("--runs-dir", type=Path, default=ROOT / "runs")
    parser.add_argument("--fresh-clusters", action="store_true", help="a cluster of its own for each run")
    args = parser.parse_args()
    protocols = [p for p in args.protocols.split(",") if p]
    unknown = [p for p in protocols if p not in GENERATIONS] + [a for a in args.api if a not in APIS]
    if unknown:
        print(f"message_matrix: unknown protocol or API: {', '.join(unknown)}", file=sys.stderr)
        return 2
    combos = combinations(protocols, args.api, args.action)
    if not combos:
        print("message_matrix: no (protocol, API, action) left to run", file=sys.stderr)
        return 2
    out = new_stamped_dir(args.runs_dir, "message-matrix", kind="matrix")
    rows: list[dict] = []
    pool = (
        None
        if args.fresh_clusters
        else ClusterPool(out / "clusters", f"message-matrix:{out.resolve()}", print, lanes=3)
    )
    t_all = time.monotonic()
    with runs_in_a_row(pool):
        for i, (protocol, api, action) in enumerate(combos, 1):
            data = scenario(protocol, api, action)
            path = out / f"{data['name']}.yaml"
            path.write_text(scenario_text(data))
            print(f"[{i}/{len(combos)}] {protocol} {api} {action}", flush=True)
            t0 = time.monotonic()
            result = Run(load_scenario_data(data, path), path, out, lambda _m: None, pool=pool).execute()
            rows.append(row(protocol, api, action, result.run_dir, result.exit_code, time.monotonic() - t0))
            (out / "matrix.json").write_text(json.dumps(rows, indent=2) + "\n")
            if result.stopped:
                break
    print(f"\n{len(rows)} runs in {time.monotonic() - t_all:.0f} s ({out})")
    print(f"{'protocol':20} {'api':23} {'action':18} {'acted':>5}  {'verdict':8} next")
    for r in rows:
        flag = "" if r["ok"] else "  <-- " + ("nothing acted on" if not r["acted"] else f"exit {r['exit_code']}")
        print(f"{r['protocol']:20} {r['api']:23} {r['action']:18} {r['acted']:>5}  {r['verdict']:8} {r['next']}{flag}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
