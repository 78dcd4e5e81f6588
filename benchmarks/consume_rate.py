"""How fast the instrumented member consumes, next to a bare confluent-kafka consumer
reading the same pre-filled topic on the same cluster in the same run, commit policy for
commit policy.

    python3 benchmarks/consume_rate.py [--records 500000] [--partitions 6] [--rounds 2]

Starts a real local cluster (Kafka 3.9, one broker), fills a topic with N small records,
then consumes all of it five times a round, in turns:

    ceiling      bare, no commits at all: what the client alone can do
    bare-auto    bare, librdkafka's defaults (enable.auto.commit and enable.auto.offset.store
                 on: every message handed to the app is committed in the background), what a
                 plain confluent-kafka app does
    member-auto  the member, `commit: auto` (it stores each batch's offsets after processing;
                 librdkafka commits them in the background)
    bare-sync    bare, committing synchronously after each batch
    member-sync  the member, `commit: sync` (a synchronous commit after each batch)

A bare consumer is a poll loop in this process with no processing, on the member's own
client settings minus its debug log and its commit settings (auto.commit.interval.ms stays
the member's, 1 s). The member is the project's process (`workloads/consumer.py`), started
the way `harness/run/clients.py` starts it: its spec file, `processing_ms: 0`. Each consumer
is in a group of its own so each reads from offset 0. A consumer's time runs from its
assignment to the last record of every partition: for a bare one its on_assign callback and
the message itself, for the member its `partitions_assigned` and `records_consumed` lines in
its history (CLOCK_MONOTONIC both). The goal (the member at 0.9x or better) is judged like
for like: member-auto/bare-auto and member-sync/bare-sync; a synchronous commit per batch is
a round trip no instrumentation can save, so member-sync/ceiling is printed for reference
only. On a busy machine single rounds vary by tens of percent: use --rounds 3 or more and
compare means.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from benchmarks.measuring import produce_all  # noqa: E402
from harness.cluster import ClusterSpec, TopicSpec, local_cluster  # noqa: E402
from oracle.protocols import GENERATIONS  # noqa: E402
from workloads.consumer import LibrdkafkaSettings, client_config  # noqa: E402
from workloads.driver import MemberSpec, protocol_fields  # noqa: E402

TOPIC = "events"
# (kind, consumer, commits, label) in the order each round runs them; a member right after
# its like-for-like bare consumer.
CONTESTANTS = (
    ("ceiling", "bare", "none", "bare, no commits"),
    ("bare-auto", "bare", "auto", "bare, librdkafka defaults (auto commit)"),
    ("member-auto", "member", "auto", "member, commit: auto"),
    ("bare-sync", "bare", "sync", "bare, sync commit per batch"),
    ("member-sync", "member", "sync", "member, commit: sync"),
)


def member_spec(bootstrap: str, group: str, commit: str, history: Path, workdir: Path) -> MemberSpec:
    return MemberSpec(
        member="consumer-1",
        incarnation=1,
        history=str(history),
        bootstrap_servers=bootstrap,
        group=group,
        topics=[TOPIC],
        **protocol_fields(GENERATIONS["classic-eager"]),
        assignor="range",
        commit=commit,
        processing_ms=0,
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1_000,
        max_poll_interval_ms=300_000,
        control_file=str(workdir / "control.json"),
        settings=LibrdkafkaSettings(),
    )


def fill(bootstrap: str, partitions: int, records: int) -> dict[int, int]:
    """N records of 16 bytes, round-robin over the partitions; the last offset of each."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 1_000_000,
            "acks": "all",
        }
    )
    last: dict[int, int] = {}

    def delivered(err, msg):
        if err is None:
            last[msg.partition()] = max(last.get(msg.partition(), -1), msg.offset())

    payload = b"x" * 16
    produce_all(producer, TOPIC, records, lambda _: payload, partition=lambda i: i % partitions, on_delivery=delivered)
    return last


def bare(spec: MemberSpec, last: dict[int, int], commits: str) -> float:
    """Records/s of a plain poll loop on the member's client settings. `commits`: "none" (the
    ceiling), "auto" (librdkafka's defaults) or "sync" (a synchronous commit after each batch)."""
    conf = {
        k: v
        for k, v in client_config(spec).items()
        if k not in ("debug", "enable.auto.commit", "enable.auto.offset.store")
    }
    if commits != "auto":
        conf["enable.auto.commit"] = False
    consumer = Consumer(conf)
    assigned: list[float] = []
    consumer.subscribe([TOPIC], on_assign=lambda c, ps: assigned.append(time.monotonic()))
    remaining, count, done = dict(last), 0, 0.0
    while remaining:
        ends: dict[int, int] = {}
        for msg in consumer.consume(num_messages=spec.batch_size, timeout=0.2):
            if msg.error():
                continue
            count += 1
            ends[msg.partition()] = msg.offset() + 1
            if remaining.get(msg.partition()) == msg.offset():
                del remaining[msg.partition()]
        done = time.monotonic()  # as the member's records_consumed: the batch's commit comes after
        if commits == "sync" and ends:
            consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in sorted(ends.items())], asynchronous=False)
    consumer.close()
    return count / (done - assigned[0])


def member(spec: MemberSpec, last: dict[int, int], workdir: Path) -> float:
    """Records/s of the member process, read off its history."""
    spec_file = workdir / f"{spec.group}.json"
    spec_file.write_text(json.dumps(asdict(spec), indent=2))
    history = Path(spec.history)
    proc = subprocess.Popen(
        [sys.executable, "-m", "workloads.consumer", str(spec_file)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=open(workdir / f"{spec.group}.stderr", "w"),  # noqa: SIM115 (the child's)
    )
    remaining, records, assigned, done, pos = dict(last), 0, None, None, 0
    try:
        deadline = time.monotonic() + 600
        while remaining and time.monotonic() < deadline:
            time.sleep(0.05)
            if not history.exists():
                continue
            with open(history, "rb") as f:
                f.seek(pos)
                chunk = f.read()
            complete = chunk.rfind(b"\n") + 1
            pos += complete
            for line in chunk[:complete].splitlines():
                e = json.loads(line)
                if e["name"] == "partitions_assigned" and assigned is None:
                    assigned = e["mono_ms"]
                elif e["name"] == "records_consumed":
                    for r in e["ranges"]:
                        records += r["count"]
                        if remaining.get(r["partition"], -1) in range(r["min_offset"], r["max_offset"] + 1):
                            del remaining[r["partition"]]
                            done = e["mono_ms"]
        if remaining:
            raise RuntimeError(f"member did not finish; see {workdir}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return records / ((done - assigned) / 1000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2, help="every contestant in turn, this many times")
    parser.add_argument("--keep", type=Path, help="work directory to keep (cluster logs, histories)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="rl-bench-rate-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        spec = ClusterSpec(
            kafka="3.9",
            brokers=1,
            broker_config={"group.initial.rebalance.delay.ms": 0},
            topics=[TopicSpec(TOPIC, args.partitions)],
        )
        with local_cluster(spec, work / "cluster") as cluster:
            t0 = time.monotonic()
            last = fill(cluster.bootstrap_servers, args.partitions, args.records)
            print(
                f"{args.records:,} records of 16 bytes on {args.partitions} partitions, filled in "
                f"{time.monotonic() - t0:.1f} s; load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            rates: dict[str, list[float]] = {kind: [] for kind, *_ in CONTESTANTS}
            for i in range(1, args.rounds + 1):
                for kind, consumer, commits, label in CONTESTANTS:
                    history = work / f"history-{kind}-{i}.jsonl"
                    # A bare consumer takes only client settings from the spec, not its commit policy.
                    spec = member_spec(
                        cluster.bootstrap_servers,
                        f"rate-{kind}-{i}",
                        "sync" if commits == "none" else commits,
                        history,
                        work,
                    )
                    rate = bare(spec, last, commits) if consumer == "bare" else member(spec, last, work)
                    rates[kind].append(rate)
                    print(f"round {i} {kind:<11} {label:<42} {rate:>10,.0f} records/s", flush=True)
    mean = {kind: statistics.mean(r) for kind, r in rates.items()}
    print("mean records/s: " + ", ".join(f"{kind} {rate:,.0f}" for kind, rate in mean.items()))
    for member_kind, bare_kind in (("member-auto", "bare-auto"), ("member-sync", "bare-sync")):
        ratio = mean[member_kind] / mean[bare_kind]
        print(
            f"{member_kind}/{bare_kind} = {ratio:.3f}x  (like for like; goal >= 0.9x: "
            f"{'met' if ratio >= 0.9 else 'NOT met'})"
        )
    for kind in ("bare-auto", "member-auto", "bare-sync", "member-sync"):
        print(f"{kind}/ceiling = {mean[kind] / mean['ceiling']:.2f}x  (reference: what the commit policy costs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
