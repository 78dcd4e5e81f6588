"""What the message proxy costs a member lane: the maximum sustainable consume rate and the p99
produce-to-consume latency through a lane with it and through one without it, in one run.

    python3 benchmarks/message_proxy_cost.py [--records 1000000] [--size 100] [--partitions 6]
                                             [--rounds 3] [--window 10] [--load 0.8]
                                             [--light 2000] [--no-proxy] [--keep DIR]

Starts a real local cluster (Kafka 3.9, one broker, two client lanes) whose lane 1 passes
the message proxy (member -> message proxy -> Toxiproxy -> broker) and lane 2 does not
(member -> Toxiproxy -> broker): the same broker, topic and records for both, the proxy the
only difference. Every client is a process of its own (no GIL shared); a consumer is a bare
confluent-kafka poll loop, assigned every partition (no group rebalance in the figures).

1. Ceiling: a producer on the broker's direct listener fills the topic with N records; then,
   a round at a time and the lanes' order alternating, one consumer per lane drains the whole
   backlog: rate = records / (last record's receipt - first's), nothing else running.
2. Maximum sustainable rate: a producer as fast as it goes (outrunning any consumer) while,
   the lanes alternating, one consumer per lane reads from the end for --window seconds
   (after a second of warm-up): records/s it kept while a producer shares the cores.
3. Latency: the producer at --load x the median maximum rate without the proxy, each record
   carrying CLOCK_MONOTONIC at its produce() call; the same windows: p50/p99 of receipt -
   produce time (the same clock, one machine) and the rate each consumer kept up with.
4. For reference, the same at --light records/s (default 2,000: a member's usual pace),
   where the hop itself shows rather than the queues of a saturated machine.

The proxy process's CPU time is read from /proc around each phase on its lane. Printed:
each round's figures, the medians, the ratios and whether issue 45's goals hold (rate with
the proxy >= 0.9x without; p99 with it <= p99 without + 2 ms). On a busy machine single
rounds vary by tens of percent: compare medians, and note the load average printed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.measuring import produce_all  # noqa: E402

TOPIC = "events"
STAMP = struct.Struct(">q")  # CLOCK_MONOTONIC ns at produce(), the record's first 8 bytes
PROXIED, DIRECT = 1, 2  # the lanes: through the message proxy, and not
LANE_NAMES = {PROXIED: "with proxy", DIRECT: "without"}
RATE_GOAL, P99_GOAL_MS = 0.9, 2.0


# --- the client processes (this file run with --role) ------------------------------------------


def role_fill(bootstrap: str, records: int, size: int) -> dict:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000, "acks": "1"}
        | {"queue.buffering.max.messages": 1_000_000}
    )
    payload = bytes(size - STAMP.size)
    produce_all(producer, TOPIC, records, lambda _: STAMP.pack(time.monotonic_ns()) + payload)
    return {"records": records}


def role_produce(bootstrap: str, rate: float, size: int, seconds: float) -> dict:
    """Records at ``rate`` a second, paced by the clock (a burst of what is due each tick)."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 1, "acks": "1", "queue.buffering.max.messages": 1_000_000}
    )
    payload = bytes(size - STAMP.size)
    stop: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))  # the benchmark's steps end: report, then go
    start = time.monotonic()
    sent = 0
    while (now := time.monotonic()) - start < seconds and not stop:
        due = min(int((now - start) * rate) - sent, 5_000)
        if due <= 0:
            producer.poll(0)
            time.sleep(0.0005)
            continue
        for _ in range(due):
            try:
                producer.produce(TOPIC, STAMP.pack(time.monotonic_ns()) + payload)
            except BufferError:
                producer.poll(0.01)
                break
            sent += 1
        producer.poll(0)
    producer.flush(30)
    return {"sent": sent, "rate": sent / (time.monotonic() - start)}


def _consumer(bootstrap: str, group: str, offsets: dict[int, int]):
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
        | {"enable.partition.eof": False}
    )
    consumer.assign([TopicPartition(TOPIC, p, o) for p, o in offsets.items()])
    return consumer


def role_drain(bootstrap: str, group: str, ends: dict[int, int]) -> dict:
    """Every record from offset 0 to ``ends``: records / (last receipt - first receipt)."""
    ends = {int(p): e for p, e in ends.items()}  # JSON's keys are strings
    consumer = _consumer(bootstrap, group, dict.fromkeys(ends, 0))
    remaining = {p: e for p, e in ends.items() if e > 0}
    count, first, last = 0, None, 0.0
    deadline = time.monotonic() + 600
    while remaining and time.monotonic() < deadline:
        head = consumer.poll(0.5)  # as role_latency: no wait for a full batch
        now = time.monotonic()
        batch = [head, *consumer.consume(num_messages=10_000, timeout=0)] if head is not None else []
        for msg in batch:
            if msg.error():
                continue
            STAMP.unpack_from(msg.value())  # the same work per record as the latency consumer
            count += 1
            if msg.offset() + 1 >= remaining.get(msg.partition(), 1 << 62):
                del remaining[msg.partition()]
        if batch:
            first = first if first is not None else now
            last = now
    consumer.close()
    if remaining:
        raise SystemExit(f"drain did not finish: {remaining}")
    return {"records": count, "seconds": last - first, "rate": count / (last - first)}


def role_latency(bootstrap: str, group: str, partitions: int, warmup: float, window: float) -> dict:
    """From the end of every partition: receipt - produce time of each record in the window."""
    from confluent_kafka import OFFSET_END

    consumer = _consumer(bootstrap, group, dict.fromkeys(range(partitions), OFFSET_END))
    latencies: list[int] = []
    start = time.monotonic()
    while (elapsed := time.monotonic() - start) < warmup + window:
        # poll() returns at the first record; consume() would wait for a full batch or its timeout.
        head = consumer.poll(0.1)
        now = time.monotonic_ns()
        batch = [head, *consumer.consume(num_messages=10_000, timeout=0)] if head is not None else []
        if elapsed < warmup:
            continue
        for msg in batch:
            if not msg.error():
                latencies.append(now - STAMP.unpack_from(msg.value())[0])
    consumer.close()
    latencies.sort()
    n = len(latencies)
    if not n:
        raise SystemExit("no record in the window: is the producer running?")
    pct = lambda q: latencies[min(n - 1, int(q * n))] / 1e6
    return {"records": n, "rate": n / window, "p50_ms": pct(0.50), "p99_ms": pct(0.99), "max_ms": latencies[-1] / 1e6}


ROLES = {"fill": role_fill, "produce": role_produce, "drain": role_drain, "latency": role_latency}


# --- the benchmark ---------------------------------------------------------------------------


def client(role: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, __file__, "--role", role, json.dumps(kwargs)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )


def result(proc: subprocess.Popen, timeout: float = 900) -> dict:
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:  # interrupted or timed out: the client goes with the benchmark
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        raise SystemExit(f"a client process failed (exit {proc.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def proxy_cpu(pid: int) -> float:
    from harness.supervision.processes import cpu_seconds, proc_stat

    stat = proc_stat(pid)
    return cpu_seconds(stat) if stat else float("nan")


def end_offsets(bootstrap: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "rl-bench-offsets"})
    ends = {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in range(partitions)}
    c.close()
    return ends


def lanes_in_turn(i: int) -> tuple[int, int]:
    """Alternating order, so a trend in the machine's load does not favour one lane."""
    return (PROXIED, DIRECT) if i % 2 else (DIRECT, PROXIED)


def median(values: list[float]) -> float:
    return statistics.median(values)


def windows(args, boot: dict[int, str], pid: int | None, direct: str, rate: float | None, step: str):
    """One producer at ``rate`` (None: as fast as it can) throughout; a consumer per lane and
    round in turn reading from the end for --window seconds. Their figures, the proxy's CPU
    seconds in each of its windows, and what the producer kept."""
    figures: dict[int, list[dict]] = {PROXIED: [], DIRECT: []}
    cpu: list[float] = []
    seconds = args.rounds * 2 * (args.window + 1 + 4) + 10
    producer = client("produce", bootstrap=direct, rate=rate or 1e12, size=args.size, seconds=seconds)
    try:
        time.sleep(2)  # the producer at its pace before the first window
        for i in range(1, args.rounds + 1):
            for lane in lanes_in_turn(i):
                before = proxy_cpu(pid) if pid else 0.0
                r = result(
                    client(
                        "latency",
                        bootstrap=boot[lane],
                        group=f"{step}-{lane}-{i}",
                        partitions=args.partitions,
                        warmup=1.0,
                        window=args.window,
                    )
                )
                if lane == PROXIED and pid:
                    cpu.append((proxy_cpu(pid) - before) / (args.window + 1))
                figures[lane].append(r)
                print(
                    f"{step:<9} round {i} lane {lane} {LANE_NAMES[lane]:<10} {r['rate']:>10,.0f} records/s  "
                    f"p50 {r['p50_ms']:7.2f} ms  p99 {r['p99_ms']:7.2f} ms  max {r['max_ms']:7.2f} ms  "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    finally:
        producer.terminate()
    produced = result(producer)
    return figures, cpu, produced


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000, help="the backlog each maximum-rate drain reads")
    parser.add_argument("--size", type=int, default=100, help="bytes per record (>= 8)")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3, help="each lane this many times, per step")
    parser.add_argument("--window", type=float, default=10.0, help="seconds each latency consumer measures")
    parser.add_argument("--load", type=float, default=0.8, help="the latency step's rate, x the max without proxy")
    parser.add_argument("--light", type=float, default=2000, help="a reference latency step's rate (0: none)")
    parser.add_argument("--no-proxy", action="store_true", help="both lanes without the proxy (an A/A check)")
    parser.add_argument("--keep", type=Path, help="work directory to keep (cluster logs)")
    args = parser.parse_args()
    if args.no_proxy:
        LANE_NAMES[PROXIED] = "lane 1 (A/A)"

    from harness.cluster import ClusterSpec, TopicSpec, local_cluster
    from harness.cluster.spec import MessageProxySpec

    with tempfile.TemporaryDirectory(prefix="rl-bench-proxy-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        spec = ClusterSpec(
            kafka="3.9",
            brokers=1,
            lanes=2,
            topics=[TopicSpec(TOPIC, args.partitions)],
            message_proxy=None if args.no_proxy else MessageProxySpec(lanes=frozenset({PROXIED}), history=None),
        )
        with local_cluster(spec, work / "cluster") as cluster:
            boot = {lane: cluster.lane_bootstrap_servers(lane) for lane in (PROXIED, DIRECT)}
            pid = cluster.message_proxy_server.pid if cluster.message_proxy_server else None
            print(f"lane {PROXIED} ({LANE_NAMES[PROXIED]}): {boot[PROXIED]}; lane {DIRECT}: {boot[DIRECT]}")
            t0 = time.monotonic()
            result(client("fill", bootstrap=cluster.bootstrap_servers, records=args.records, size=args.size))
            ends = end_offsets(cluster.bootstrap_servers, args.partitions)
            print(
                f"{sum(ends.values()):,} records of {args.size} bytes on {args.partitions} partitions, filled in "
                f"{time.monotonic() - t0:.1f} s; load average {os.getloadavg()[0]:.1f}",
                flush=True,
            )

            # Step 1a: the consume ceiling, a whole backlog drained per lane and round.
            drains: dict[int, list[float]] = {PROXIED: [], DIRECT: []}
            cpu_drain: list[float] = []
            for i in range(1, args.rounds + 1):
                for lane in lanes_in_turn(i):
                    before = proxy_cpu(pid) if pid else 0.0
                    r = result(client("drain", bootstrap=boot[lane], group=f"drain-{lane}-{i}", ends=ends))
                    if lane == PROXIED and pid:
                        cpu_drain.append(proxy_cpu(pid) - before)
                    drains[lane].append(r["rate"])
                    print(
                        f"drain     round {i} lane {lane} {LANE_NAMES[lane]:<10} {r['rate']:>10,.0f} records/s "
                        f"({r['seconds']:.2f} s)  load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
            ceiling = {lane: median(v) for lane, v in drains.items()}

            # Step 1b: the maximum sustainable rate: a producer faster than any consumer, the
            # consumer reading from the end, on the same two cores as everything else.
            live = windows(args, boot, pid, cluster.bootstrap_servers, None, "max rate")
            max_rate = {lane: median([r["rate"] for r in v]) for lane, v in live[0].items()}
            target = args.load * max_rate[DIRECT]

            # Step 2: latency at --load x the sustainable rate without the proxy.
            lat, cpu_latency, produced = windows(args, boot, pid, cluster.bootstrap_servers, target, "latency")

            # For reference: a member's usual pace, where the hop itself shows, not the queues of a busy machine.
            light = windows(args, boot, pid, cluster.bootstrap_servers, args.light, "light")[0] if args.light else None

    p50 = {lane: median([r["p50_ms"] for r in v]) for lane, v in lat.items()}
    p99 = {lane: median([r["p99_ms"] for r in v]) for lane, v in lat.items()}
    kept = {lane: median([r["rate"] for r in v]) for lane, v in lat.items()}
    ratio = max_rate[PROXIED] / max_rate[DIRECT]
    extra = p99[PROXIED] - p99[DIRECT]
    print()
    print(
        f"medians of {args.rounds} rounds; records of {args.size} bytes on {args.partitions} partitions; "
        f"load average at the end {os.getloadavg()[0]:.1f}"
    )
    print(
        f"consume ceiling (backlog drained): with proxy {ceiling[PROXIED]:,.0f}, without {ceiling[DIRECT]:,.0f} "
        f"records/s = {ceiling[PROXIED] / ceiling[DIRECT]:.3f}x"
    )
    print(
        f"max sustainable rate (producer outrunning): with proxy {max_rate[PROXIED]:,.0f}, "
        f"without {max_rate[DIRECT]:,.0f} records/s"
    )
    print(
        f"latency at {target:,.0f} records/s ({args.load:.0%} of the max without; the producer kept "
        f"{produced['rate']:,.0f}): with proxy p50 {p50[PROXIED]:.2f} / p99 {p99[PROXIED]:.2f} ms "
        f"({kept[PROXIED]:,.0f}/s), without p50 {p50[DIRECT]:.2f} / p99 {p99[DIRECT]:.2f} ms ({kept[DIRECT]:,.0f}/s)"
    )
    if light:
        lp50 = {lane: median([r["p50_ms"] for r in v]) for lane, v in light.items()}
        lp99 = {lane: median([r["p99_ms"] for r in v]) for lane, v in light.items()}
        print(
            f"latency at {args.light:,.0f} records/s (reference): with proxy p50 {lp50[PROXIED]:.2f} / p99 "
            f"{lp99[PROXIED]:.2f} ms, without p50 {lp50[DIRECT]:.2f} / p99 {lp99[DIRECT]:.2f} ms "
            f"({lp99[PROXIED] - lp99[DIRECT]:+.2f} ms p99)"
        )
    if pid:
        drained = sum(ends.values()) * len(cpu_drain)
        print(
            f"proxy CPU: {sum(cpu_drain):.2f} s over {len(cpu_drain)} drains ({sum(cpu_drain) / drained * 1e6:.2f} µs "
            f"a record); {median(live[1]):.0%} of a core at the max rate, {median(cpu_latency):.0%} at {target:,.0f}/s"
        )
    print(f"rate with/without = {ratio:.3f}x  (goal >= {RATE_GOAL}x: {'met' if ratio >= RATE_GOAL else 'NOT met'})")
    print(
        f"p99 with - without = {extra:+.2f} ms  (goal <= +{P99_GOAL_MS:.0f} ms: "
        f"{'met' if extra <= P99_GOAL_MS else 'NOT met'})"
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--role":  # a client process of the benchmark
        print(json.dumps(ROLES[sys.argv[2]](**json.loads(sys.argv[3]))), flush=True)
        sys.exit(0)
    sys.exit(main())
