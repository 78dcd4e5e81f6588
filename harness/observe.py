"""The harness's own view of the group while a run goes: lag and group state.

It runs as a separate process (``python -m harness.observe SPEC.json``) because
librdkafka's coordinator-bound admin calls (DescribeConsumerGroups,
ListConsumerGroupOffsets) can abort the calling process when a broker connection
drops mid-request (librdkafka issue #4605) — exactly what chaos runs do. The
supervisor restarts it if it dies; the harness itself never links those calls.

Every sample goes into the history (``lag_sampled``, ``group_described``), so
what the harness saw when it declared the group stable or drained is on record
for the oracle, and a small status file tells the harness the latest view.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.child import read_spec, stop_on_signals
from harness.history import HistoryWriter, now

REQUEST_TIMEOUT_S = 5
STATUS_MAX_AGE_MS = 4000


@dataclass
class ObserverSpec:
    history: str
    status_file: str
    bootstrap_servers: str
    group: str
    topics: list[str]
    topic_pattern: str | None = None  # a pattern subscription: every matching topic counts
    interval_s: float = 1.0


class GroupObserver:
    def __init__(self, spec: ObserverSpec):
        from confluent_kafka.admin import AdminClient

        from harness.cluster.local import QUIET_CLIENT_LOG

        self.spec = spec
        self.partitions: list[tuple[str, int]] = []
        self.admin = AdminClient({"bootstrap.servers": spec.bootstrap_servers, "logger": QUIET_CLIENT_LOG,
                                  "socket.connection.setup.timeout.ms": 3000})

    def refresh_partitions(self) -> None:
        """The group's partitions as of now: partitions and topics may be added mid-run."""
        topics = self.admin.list_topics(timeout=REQUEST_TIMEOUT_S).topics
        pattern = re.compile(self.spec.topic_pattern) if self.spec.topic_pattern else None
        self.partitions = sorted(
            (name, p) for name, md in topics.items()
            if (pattern.match(name) if pattern else name in self.spec.topics) for p in md.partitions)

    def lag(self) -> list[dict]:
        """Committed offset, high watermark and lag of every partition."""
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        self.refresh_partitions()
        tps = [TopicPartition(t, p) for t, p in self.partitions]
        fut = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(self.spec.group, tps)],
                                                     request_timeout=REQUEST_TIMEOUT_S)[self.spec.group]
        committed = {(tp.topic, tp.partition): tp.offset for tp in fut.result(REQUEST_TIMEOUT_S).topic_partitions}
        latest = self.admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, request_timeout=REQUEST_TIMEOUT_S)
        rows = []
        for tp, f in latest.items():
            hw = f.result(REQUEST_TIMEOUT_S).offset
            if hw < 0:
                raise LookupError(f"no high watermark for {tp.topic}-{tp.partition} (leader unavailable)")
            c = committed.get((tp.topic, tp.partition))
            c = c if c is not None and c >= 0 else None
            rows.append({"topic": tp.topic, "partition": tp.partition, "committed": c, "high_watermark": hw,
                         "lag": hw - (c or 0)})
        return sorted(rows, key=lambda r: (r["topic"], r["partition"]))

    def describe(self) -> dict:
        if not self.partitions:
            self.refresh_partitions()
        fut = self.admin.describe_consumer_groups([self.spec.group], request_timeout=REQUEST_TIMEOUT_S)[self.spec.group]
        d = fut.result(REQUEST_TIMEOUT_S)
        members = {m.client_id + "/" + m.member_id: sorted(
            [tp.topic, tp.partition] for tp in (m.assignment.topic_partitions or [])) for m in d.members}
        assigned = {tuple(tp) for tps in members.values() for tp in tps}
        return {"state": d.state.name, "coordinator": d.coordinator.id if d.coordinator else None,
                "members": members, "covers_all": assigned >= set(self.partitions)}


def main(argv: list[str]) -> int:
    spec = read_spec(ObserverSpec, argv)
    stop = stop_on_signals()
    history = HistoryWriter(spec.history, "observer")
    observer = GroupObserver(spec)
    last_group = None
    failures = 0
    while not stop.is_set():
        started = time.monotonic()
        status: dict = {}
        try:
            status["lag"] = observer.lag()
            history.emit("lag_sampled", group=spec.group, partitions=status["lag"])
        except Exception as e:  # a broker down mid-fault: no sample this time
            status["lag_error"] = f"{type(e).__name__}: {e}"
        try:
            group = observer.describe()
            status["group"] = group
            if group != last_group:  # only changes: the group view is bulky and mostly constant
                history.emit("group_described", group=spec.group, **group)
                last_group = group
        except Exception as e:
            status["group_error"] = f"{type(e).__name__}: {e}"
        # An admin client whose requests keep timing out after a broker died can stay
        # wedged on stale metadata; a fresh one re-bootstraps.
        failures = failures + 1 if ("lag_error" in status or "group_error" in status) else 0
        if failures >= 3:
            observer, failures = GroupObserver(spec), 0
        status["mono_ms"] = now()[1]
        tmp = spec.status_file + ".tmp"
        Path(tmp).write_text(json.dumps(status))
        os.replace(tmp, spec.status_file)
        stop.wait(max(0.0, spec.interval_s - (time.monotonic() - started)))
    return 0


class ObserverStatus:
    """The harness's side: reads the observer's latest status file."""

    def __init__(self, status_file: Path):
        self.status_file = Path(status_file)

    def _fresh(self) -> dict | None:
        try:
            status = json.loads(self.status_file.read_text())
        except (OSError, ValueError):
            return None
        return status if now()[1] - status["mono_ms"] <= STATUS_MAX_AGE_MS else None

    def is_stable(self) -> bool:
        """The broker says Stable, and the members' assignments cover every partition."""
        status = self._fresh()
        group = (status or {}).get("group")
        return bool(group and group["state"] == "STABLE" and group["covers_all"])

    def coordinator(self) -> int | None:
        """The broker id coordinating the group, from a fresh sample."""
        group = (self._fresh() or {}).get("group")
        return group.get("coordinator") if group else None

    def drained(self) -> bool:
        status = self._fresh()
        lag = (status or {}).get("lag")
        return bool(lag) and all(r["lag"] == 0 for r in lag)


def spec_json(spec: ObserverSpec) -> str:
    return json.dumps(asdict(spec), indent=2)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
