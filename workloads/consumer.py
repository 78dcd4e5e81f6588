"""A group member on the brokers' classic protocol (confluent-kafka / librdkafka),
run as its own OS process so faults can pause or kill exactly one member.

It records what a member does, in the history's vocabulary: joins (with
generation and member id), assignments, revocations, losses, processed offset
ranges and every commit with its outcome.

librdkafka does not expose the generation to Python, so we read it where
librdkafka says it: its ``cgrp`` debug log ("JoinGroup response: GenerationId
N … my MemberId M"). The lines are read from librdkafka's own stderr output as
its threads write them (``workloads.client_log``), so each protocol step is
stamped when the client took it, not when the application next polled; a
rebalance callback first takes every line written before it, so the generation
is known before ``on_assign`` runs.

Usage: ``python -m workloads.consumer SPEC.json`` (see ``ConsumerSpec``).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_END, Consumer, KafkaError, KafkaException, TopicPartition

from oracle import vocabulary as ev
from oracle.protocols import GENERATIONS
from runtime.child import read_spec, stop_on_signals
from runtime.history import HistoryWriter, latency_histogram, now, offset_ranges, tp
from workloads.client_log import WARNING, ClientLine, StderrTap, client_instant
from workloads.poll_stall import TakesCommands, listen_for_commands
from workloads.worker import Worker

EMIT_EVERY_MS = 100  # processed ranges are written at least this often while a batch runs


@dataclass
class ConsumerSpec:
    member: str
    incarnation: int
    history: str
    bootstrap_servers: str
    group: str
    topics: list[str]  # names, or one regex starting with "^" (pattern subscription)
    protocol: str  # classic-eager | classic-cooperative | classic-static
    assignor: str
    commit: str  # sync | auto | before-processing
    processing_ms: float
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    auto_commit_interval_ms: int = 1000
    batch_size: int = 500
    control_file: str | None = None  # commands from the harness (poll stalls), announced by SIGUSR1
    metadata_refresh_ms: int = 5000
    kafka_line: str = "3.9"  # which Kafka release the cluster runs (the java driver uses its client)
    # The java driver's JVM, from the harness (which installed it): Kafka's tools classpath for
    # kafka_line (None: not installed, the member says so), and the JVM options every JVM of a run gets.
    kafka_tools: str | None = None
    jvm_options: list[str] = field(default_factory=list)
    zookeeper_connect: str | None = None  # this member's lane to ZooKeeper (zk-eager)
    zk_eager: dict | None = None  # ZkEagerSettings (zk-eager)
    session_file: str | None = None  # where a ZooKeeper-based member publishes its session (for expiry faults)
    coordinators: dict[str, str] | None = None  # coordinator-v*: instance name -> this member's lane to it
    # Test-only switches for this member (workload.test_hooks, docs/history.md): "consume_unassigned"
    # ({topic, partition}), "sigterm_after_join" ({join}). None in every real run.
    test_hooks: dict | None = None
    # cluster.client_config of an external cluster (security settings): under the harness's own keys
    client_settings: dict = field(default_factory=dict)
    revoke_hold_ms: float = 0  # stay in the revoke callback this long after recording it (workload.revoke_hold_ms)
    processing: str = "inline"  # inline | worker: batches processed on a thread of their own (workloads.worker)

    @property
    def group_instance_id(self) -> str | None:
        return f"{self.group}-{self.member}" if self.protocol == "classic-static" else None


    @property
    def cooperative(self) -> bool:
        """Rebalance callbacks carry deltas: cooperative-sticky, and KIP-848 always."""
        return self.assignor == "cooperative-sticky" or self.protocol == "consumer"

    def client_config(self) -> dict:
        if self.protocol == "consumer":
            # KIP-848: the brokers assign (remote assignor) and own session/heartbeat timing.
            group = {"group.protocol": "consumer", "group.remote.assignor": self.assignor}
        else:
            group = {"partition.assignment.strategy": self.assignor, "session.timeout.ms": self.session_timeout_ms,
                     "heartbeat.interval.ms": self.heartbeat_interval_ms}
        conf = {
            **self.client_settings,
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group,
            "client.id": self.member,
            **group,
            "max.poll.interval.ms": self.max_poll_interval_ms,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": self.commit == "auto",
            # Auto-commit only what was processed: we store offsets after processing.
            "enable.auto.offset.store": False,
            "auto.commit.interval.ms": self.auto_commit_interval_ms,
            "topic.metadata.refresh.interval.ms": self.metadata_refresh_ms,
            "debug": "cgrp",
        }
        if self.group_instance_id:
            conf["group.instance.id"] = self.group_instance_id
        return conf

    def fetcher_config(self, group_id: str) -> dict:
        """Fetching only, for members whose group lives elsewhere (zk-eager, the project's
        coordinator): a manual assignment, a group id of its own, nothing committed to Kafka."""
        return {**self.client_settings, "bootstrap.servers": self.bootstrap_servers, "group.id": group_id, "client.id": self.member,
                "enable.auto.commit": False, "enable.auto.offset.store": False, "auto.offset.reset": "earliest",
                "topic.metadata.refresh.interval.ms": self.metadata_refresh_ms}


# --------------------------------------------------------------------- cgrp log reader

_JOIN_SENT = re.compile(r'Joining group "(?P<group>[^"]*)"')
_JOINED = re.compile(r"JoinGroup response: GenerationId (?P<gen>-?\d+), Protocol (?P<proto>\S*), "
                     r"LeaderId (?P<leader>\S*)(?P<me> \(me\))?, my MemberId (?P<member>\S*), .*: (?P<err>.*)$")
_SYNCED = re.compile(r"SyncGroup response: (?P<result>.*)$")
_HB_ERROR = re.compile(r"heartbeat error response in state .*\): (?P<err>.*)$")
_REBALANCING = re.compile(r"(?:is rebalancing|initiating rebalance) \((?P<kind>\w+)\) .*: (?P<reason>[^:]*)$")
# librdkafka's rejoin: a cooperative member told by a heartbeat that the group rebalances, or
# seeing its topics' metadata change, rejoins at once and logs only this (no "is rebalancing").
_REJOINING = re.compile(r'Rejoining group(?: with \d+ owned partition\(s\)| without an assignment): (?P<reason>.*)$')
# KIP-848 (group.protocol=consumer): no JoinGroup/SyncGroup; the member epoch comes with heartbeats.
_EPOCH = re.compile(r'ConsumerGroupHeartbeat response received for member id "(?P<member>[^"]*)" with epoch (?P<epoch>-?\d+)')
_EPOCH_ZERO_SENT = re.compile(r"ConsumerGroupHeartbeat of member id .*generation id 0,")
# The effective subscription (what JoinGroup carries): a header line, then one line per topic.
_SUBSCRIPTION = re.compile(r"effective subscription list changed from \d+ to (?P<count>\d+) topic\(s\)")
_SUBSCRIBED_TOPIC = re.compile(r"\bTopic (?P<topic>\S+) with (?P<partitions>-?\d+) partition\(s\)$")


class GroupLogReader:
    """Turns librdkafka's cgrp debug lines into history events and group state. Each event
    carries the instant librdkafka made its line (``Member.emit_client``)."""

    def __init__(self, member: "Member"):
        self.member = member
        self.subscription: dict[str, int] = {}
        self.subscription_lines_due = 0
        self.epoch_zero_sent = False  # KIP-848: joining (again) — its epoch-0 heartbeat went out, no epoch yet
        self.rebalancing = False  # rebalance_started written, the member not yet synced again
        self.line: ClientLine | None = None  # the line being read

    def emit(self, name: str, **fields) -> None:
        self.member.emit_client(self.line, name, **fields)

    def __call__(self, line: ClientLine) -> None:
        self.line, msg, m = line, line.message, self.member
        if self.subscription_lines_due and (t := _SUBSCRIBED_TOPIC.search(msg)):
            self._subscribed_topic(t["topic"], int(t["partitions"]))
        elif "effective subscription list changed" in msg and (s := _SUBSCRIPTION.search(msg)):
            self.subscription, self.subscription_lines_due = {}, int(s["count"])
            if not self.subscription_lines_due:
                self.emit(ev.SUBSCRIPTION_CHANGED, topics={})
        elif "ConsumerGroupHeartbeat" in msg or "Target assignment acked" in msg:
            self._kip848(msg)
        elif "JoinGroup response:" in msg and (j := _JOINED.search(msg)):
            if int(j["gen"]) >= 0 and j["err"] == "(no error)":
                m.generation, m.member_id = int(j["gen"]), j["member"]
                self.emit(ev.GROUP_JOINED, generation=m.generation, member_id=m.member_id, leader_id=j["leader"],
                          is_leader=bool(j["me"]), protocol_name=j["proto"])
            else:
                self.emit(ev.GROUP_JOIN_FAILED, error=j["err"])
        elif "Joining group" in msg and _JOIN_SENT.search(msg):
            self.emit(ev.GROUP_JOIN_SENT)
            m.join_sent()
        elif "SyncGroup response:" in msg and (s := _SYNCED.search(msg)):
            if s["result"].startswith("Success"):
                self.rebalancing = False
                self.emit(ev.GROUP_SYNCED)
            else:
                self.emit(ev.GROUP_SYNC_FAILED, error=s["result"])
        elif "heartbeat error response" in msg and (h := _HB_ERROR.search(msg)):
            self.emit(ev.HEARTBEAT_FAILED, error=h["err"])
        elif (r := _REBALANCING.search(msg)) and "unsubscribe" not in msg:
            self._rebalance_started(r["reason"], r["kind"])
        elif "Rejoining group" in msg and (r := _REJOINING.search(msg)) and not self.rebalancing:
            # (A rejoin inside a rebalance already announced — an eager member's after its revoke,
            # a retried JoinGroup — is that rebalance; a cooperative member's second join is a new one.)
            self._rebalance_started(r["reason"], "COOPERATIVE" if GENERATIONS[m.spec.protocol].incremental else "EAGER")
        elif line.level <= WARNING:
            self.emit(ev.CLIENT_LOG, level=line.level_name, message=msg[:500])

    def _rebalance_started(self, reason: str, protocol: str) -> None:
        self.rebalancing = True
        self.emit(ev.REBALANCE_STARTED, reason=reason.strip(), rebalance_protocol=protocol)

    def _subscribed_topic(self, topic: str, partitions: int) -> None:
        """With a pattern subscription each member subscribes to the topics *its* metadata
        matched, and JoinGroup carries exactly that: the assignor only gives a topic to
        members subscribed to it, so the oracle needs every member's list."""
        self.subscription[topic] = partitions
        self.subscription_lines_due -= 1
        if not self.subscription_lines_due:
            self.emit(ev.SUBSCRIPTION_CHANGED, topics=dict(sorted(self.subscription.items())))

    def _kip848(self, msg: str) -> None:
        """The member's epoch is its generation: it reaches the group epoch whose target
        assignment it is reconciling towards. Heartbeats repeat it; only changes matter."""
        m = self.member
        if (e := _EPOCH.search(msg)) and int(e["epoch"]) > 0:
            if int(e["epoch"]) != m.generation or self.epoch_zero_sent:
                m.generation, m.member_id, self.epoch_zero_sent = int(e["epoch"]), e["member"], False
                self.emit(ev.GROUP_JOINED, generation=m.generation, member_id=m.member_id, leader_id=None,
                          is_leader=False, protocol_name=m.spec.assignor)
        elif _EPOCH_ZERO_SENT.search(msg) and not self.epoch_zero_sent:
            # The first join, or a rejoin after the member was fenced: its epoch starts from 0 again.
            # (Retried epoch-0 heartbeats are the same join.)
            self.epoch_zero_sent = True
            self.emit(ev.GROUP_JOIN_SENT)
        elif "Target assignment acked" in msg:
            self.rebalancing = False
            self.emit(ev.GROUP_SYNCED)


# --------------------------------------------------------------------- the member


class Member(TakesCommands):
    """The librdkafka member. A poll stall (poll_stall.py) stops its poll loop; librdkafka's
    heartbeat thread goes on."""

    def __init__(self, spec: ConsumerSpec):
        self.spec = spec
        self.history = HistoryWriter(spec.history, spec.member, member=spec.member, incarnation=spec.incarnation)
        self.generation: int | None = None
        self.member_id: str | None = None
        self.assigned: set[tuple[str, int]] = set()  # what the group gave this member, as of its last callback
        self.uncommitted: dict[tuple[str, int], int] = {}  # processed, not yet committed: next offset
        self.progress_lock = threading.Lock()  # `uncommitted` and `progress_new`: the worker writes them too
        self.progress_new = False  # progress processed since the poll loop last tried to commit (processing: worker)
        self.unstored: dict[tuple[str, int], int] = {}  # commit: auto, processing: worker: for the poll loop to store
        self._retry_at = 0.0  # when a failed commit of processed progress may be tried again without new records
        self.command_pending = threading.Event()
        self.last_mono_ms: float | None = None  # the member's latest event: client lines are not stamped before it
        self.joins_sent = 0
        hooks = spec.test_hooks or {}
        self.sigterm_after_join: int | None = (hooks.get("sigterm_after_join") or {}).get("join")
        # No logger: librdkafka prints each line itself, from its own threads, as it happens.
        self.tap = StderrTap(GroupLogReader(self)).start()
        conf = spec.client_config()
        if spec.commit == "auto":
            conf["on_commit"] = self._on_auto_commit
        self.consumer = Consumer(conf)
        unassigned = hooks.get("consume_unassigned")
        self.non_owner = NonOwnerFetch(spec, unassigned["topic"], unassigned["partition"]) if unassigned else None
        self.worker = Worker(self._process, self._worker_failed) if spec.processing == "worker" else None

    def emit(self, name: str, **fields) -> None:
        """An event stamped now. Every line librdkafka wrote before is read first: the event
        carries the generation it acted in, and comes after the steps that led to it."""
        with self.tap.caught_up():
            self._write(name, None, **fields)

    def emit_client(self, line: ClientLine, name: str, **fields) -> None:
        """An event stamped when librdkafka made ``line`` (called while the tap reads it)."""
        self._write(name, line, **fields)

    def _write(self, name: str, line: ClientLine | None, **fields) -> None:
        stamp = {}
        if line is not None:
            ts, mono_ms = client_instant(line.wall_ms, self.last_mono_ms)
            stamp = {"ts": ts, "mono_ms": mono_ms, "clock": "client"}
        event = self.history.emit(name, **stamp, **{"member_id": self.member_id, "generation": self.generation,
                                                    **fields})
        self.last_mono_ms = event["mono_ms"]

    def join_sent(self) -> None:
        """Test-only (sigterm_after_join): a static member gone right after its JoinGroup went
        out is still counted by the coordinator, which waits out its session for it."""
        self.joins_sent += 1
        if self.joins_sent == self.sigterm_after_join:
            self._write(ev.TEST_HOOK_FIRED, None, hook="sigterm_after_join", join=self.joins_sent)
            os.kill(os.getpid(), signal.SIGTERM)

    # --- rebalance callbacks (served from consume(), on this thread) ---------------

    def _on_assign(self, consumer, partitions) -> None:
        self.emit(ev.PARTITIONS_ASSIGNED, partitions=_tps(partitions), incremental=self.spec.cooperative)
        self.assigned |= {(p.topic, p.partition) for p in partitions}
        if self.spec.cooperative:
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)

    def _on_revoke(self, consumer, partitions) -> None:
        if self.worker:  # it may hold records of these partitions: they are finished first
            self.emit(ev.REVOKE_STARTED, partitions=_tps(partitions), in_flight=self.worker.in_flight)
            self.worker.drain()
            self._store_progress()  # auto: the commit librdkafka makes as the partitions go carries it
        # Still the owner here: commit processed progress before giving partitions away.
        revoked = {(p.topic, p.partition) for p in partitions}
        self._commit({k: v for k, v in self.uncommitted.items() if k in revoked}, "revoke")
        self.emit(ev.PARTITIONS_REVOKED, partitions=_tps(partitions), incremental=self.spec.cooperative)
        if self.spec.revoke_hold_ms:  # still inside the callback, still the owner: a fault's window
            time.sleep(self.spec.revoke_hold_ms / 1000)
        self.assigned -= revoked
        for k in revoked:
            self.uncommitted.pop(k, None)
        if self.spec.cooperative:
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()

    def _on_lost(self, consumer, partitions) -> None:
        # No commit: the group has moved on, any commit would (and should) be fenced.
        if self.worker:  # it knew no better than the member: what it held is processed first
            self.worker.drain()
        with self.progress_lock:
            for p in partitions:
                self.unstored.pop((p.topic, p.partition), None)
        self.emit(ev.PARTITIONS_LOST, partitions=_tps(partitions), incremental=self.spec.cooperative)
        for p in partitions:
            self.uncommitted.pop((p.topic, p.partition), None)
            self.assigned.discard((p.topic, p.partition))
        if self.spec.cooperative:
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()

    def _worker_failed(self, e: BaseException) -> None:
        self.emit(ev.CONSUMER_ERROR, error=f"worker: {type(e).__name__}: {e}", error_code=None, fatal=True)

    def _on_auto_commit(self, err, partitions) -> None:
        offsets = [{**tp(p.topic, p.partition), "offset": p.offset} for p in partitions if p.offset >= 0]
        if offsets or err:
            self._emit_commit(offsets, "auto", err, started=None)

    # --- commits --------------------------------------------------------------------

    def _commit(self, offsets: dict[tuple[str, int], int], trigger: str) -> bool:
        if not offsets:
            return True
        tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        _, started = now()
        try:
            result = self.consumer.commit(offsets=tps, asynchronous=False)
            errors = [p.error for p in result or [] if p.error]
            err = errors[0] if errors else None
        except KafkaException as e:
            err = e.args[0]
        self._emit_commit([{**tp(t, p), "offset": o} for (t, p), o in sorted(offsets.items())], trigger, err, started)
        return err is None

    def _emit_commit(self, offsets, trigger, err: KafkaError | None, started: float | None) -> None:
        self.emit(ev.OFFSETS_COMMITTED, offsets=offsets, success=err is None,
                  error=err.name() if err else None, error_code=err.code() if err else None,
                  trigger=trigger, started_mono_ms=round(started, 3) if started is not None else None)

    # --- the poll loop ------------------------------------------------------------------

    def run(self, stop: threading.Event) -> int:
        s = self.spec
        self.emit(ev.CONSUMER_STARTED, pid=os.getpid(), group=s.group, protocol=s.protocol, assignor=s.assignor,
                  group_instance_id=s.group_instance_id, commit_mode=s.commit, processing=s.processing,
                  session_timeout_ms=s.session_timeout_ms, max_poll_interval_ms=s.max_poll_interval_ms)
        for hook, params in sorted((s.test_hooks or {}).items()):
            self.emit(ev.TEST_HOOK_ARMED, hook=hook, params=params)
        self.consumer.subscribe(s.topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost)
        if self.worker:
            self.worker.start()
        reason = "end-of-run"
        try:
            while not stop.is_set():
                if self.command_pending.is_set():
                    self._obey(stop)
                batch = self.consumer.consume(num_messages=s.batch_size, timeout=0.2)
                self._handle(batch)
                if self.non_owner and self.generation is not None:
                    self.non_owner.consume(self.assigned, self.emit)
        except KafkaException as e:
            err = e.args[0]
            self.emit(ev.CONSUMER_ERROR, error=err.name(), error_code=err.code(), fatal=err.fatal())
            reason = "error"
        finally:
            if self.non_owner:
                self.non_owner.close()
            if self.worker:  # what it holds is processed while the member still owns it
                self.worker.drain()
                with contextlib.suppress(KafkaException):  # a consumer that failed fatally stores nothing
                    self._store_progress()
            self.consumer.close()  # revokes (and commits in _on_revoke) and leaves the group
            if self.worker:
                self.worker.stop()
            self.emit(ev.CONSUMER_STOPPED, reason=reason)
            self.tap.stop()
        return 0 if reason == "end-of-run" else 1

    def _handle(self, batch) -> None:
        records = records_of(batch, self.emit)
        if self.worker:
            # The poll loop commits what the worker finished: a synchronous commit from the worker
            # while this thread sits in a rebalance callback would wait for that callback to end.
            with self.progress_lock:
                fresh, self.progress_new = self.progress_new, False
            self._commit_progress(retry=not fresh)
            self._store_progress()
        elif not records:
            self._commit_progress(retry=True)
        if not records:
            return
        if self.spec.commit == "before-processing":
            # The deliberately faulty mode: progress is committed before the work is done,
            # so a crash mid-batch skips the rest of the batch for good.
            ends = {}
            for msg in records:
                ends[(msg.topic(), msg.partition())] = msg.offset() + 1
            self._commit(ends, "before-processing")
        if self.worker:
            self.worker.submit(records)
        else:
            self._process(records)

    def _process(self, records) -> None:
        """Process a batch, then commit (sync, inline) or store (auto) its progress: on the poll
        loop's thread, or on the worker's."""
        done: dict[tuple[str, int], int] = {}
        process_records(records, self.spec.processing_ms, done, self.emit)
        if self.spec.commit == "sync":
            with self.progress_lock:
                self.uncommitted.update(done)
                self.progress_new = True
            if not self.worker:
                self._commit_progress(retry=False)
        elif self.spec.commit == "auto":
            if self.worker:  # the poll loop stores it: store_offsets from the worker's thread waits while
                with self.progress_lock:  # the poll loop sits in a rebalance callback, which waits for the worker
                    self.unstored.update(done)
            else:
                self._store(done)

    def _store_progress(self) -> None:
        """commit: auto, processing: worker — store (on the poll loop's thread) what the worker
        processed, for librdkafka's next auto commit."""
        with self.progress_lock:
            done, self.unstored = self.unstored, {}
        self._store({k: o for k, o in done.items() if k in self.assigned})

    def _store(self, done: dict[tuple[str, int], int]) -> None:
        if done:
            self.consumer.store_offsets(offsets=[TopicPartition(t, p, o) for (t, p), o in done.items()])

    def _commit_progress(self, retry: bool) -> None:
        """Commit processed progress (sync): just processed, or (`retry`) what an earlier commit
        failed to commit — a rebalance was in progress — at most once a second while no new
        progress carries it. A failed commit keeps the progress (on_revoke commits it too)."""
        if self.spec.commit != "sync" or (retry and time.monotonic() < self._retry_at):
            return
        with self.progress_lock:
            offsets = dict(self.uncommitted)
        if not offsets:
            return
        if retry:
            self._retry_at = time.monotonic() + 1.0
        if self._commit(offsets, "retry" if retry else "after-processing"):
            with self.progress_lock:  # what the worker finished meanwhile stays for the next commit
                for key, offset in offsets.items():
                    if self.uncommitted.get(key) == offset:
                        del self.uncommitted[key]


class NonOwnerFetch:
    """Test-only (workload.librdkafka.test_hooks.consume_unassigned): the member also reads one partition
    through a handle of its own (manual assignment from the log end, a group id of its own, no
    commits) and writes what it processed as the member's records_consumed — a non-owner
    consuming what the owner does. Only while the group has never given the member that
    partition: once it has, the member would be a former owner, another story."""

    def __init__(self, spec: ConsumerSpec, topic: str, partition: int):
        self.spec = spec
        self.partition = (topic, partition)
        self.consumer = Consumer(spec.fetcher_config(f"{spec.group}.non-owner.{spec.member}.{spec.incarnation}"))
        self.consumer.assign([TopicPartition(topic, partition, OFFSET_END)])
        self.retired = False

    def consume(self, assigned: set[tuple[str, int]], emit) -> None:
        self.retired = self.retired or self.partition in assigned
        if self.retired:
            return
        records = records_of(self.consumer.consume(num_messages=self.spec.batch_size, timeout=0), emit)
        if records:
            process_records(records, self.spec.processing_ms, {}, emit)

    def close(self) -> None:
        self.consumer.close()


def records_of(batch, emit) -> list:
    """The records of a consumed batch; its errors go to the history as consumer_error."""
    records = [msg for msg in batch if msg.error() is None]
    if len(records) < len(batch):
        for msg in batch:
            if (err := msg.error()) is not None:
                emit(ev.CONSUMER_ERROR, error=err.name(), error_code=err.code(), fatal=err.fatal())
    return records


def process_records(records, processing_ms: float, uncommitted: dict[tuple[str, int], int], emit,
                    interrupted=None) -> None:
    """Process records one by one (``processing_ms`` each), writing ``records_consumed`` at
    least every EMIT_EVERY_MS while processing takes time (without it a batch takes well under
    a millisecond: one line) and noting the next offset per partition in ``uncommitted`` as it
    is written. The rest of the batch is dropped once ``interrupted()`` (a driver's rebalance,
    say)."""
    processed: dict[tuple[str, int], list[int]] = defaultdict(list)
    created: list[int] = []  # the records' CreateTime (ms), for their end-to-end latency
    pause, every = processing_ms / 1000.0, EMIT_EVERY_MS / 1000.0
    emit_at = time.monotonic() + every
    for msg in records:  # per record: kept to the few calls it needs (the rate is part of the figures)
        if interrupted is not None and interrupted():
            break
        if pause:
            time.sleep(pause)
        processed[msg.topic(), msg.partition()].append(msg.offset())
        kind, stamp = msg.timestamp()
        if kind:  # not TIMESTAMP_NOT_AVAILABLE
            created.append(stamp)
        if pause and time.monotonic() >= emit_at:
            _consumed(processed, created, uncommitted, emit)
            processed, created, emit_at = defaultdict(list), [], time.monotonic() + every
    if processed:
        _consumed(processed, created, uncommitted, emit)


def _consumed(processed: dict[tuple[str, int], list[int]], created: list[int], uncommitted: dict[tuple[str, int], int],
              emit) -> None:
    done_ms = time.time() * 1000.0  # the producer stamped CreateTime with this host's wall clock too
    emit(ev.RECORDS_CONSUMED, ranges=offset_ranges(processed), e2e_ms=latency_histogram(done_ms - c for c in created))
    # Only what the history has may be committed: a member that fails to write it commits nothing of it.
    for key, offsets in processed.items():
        uncommitted[key] = offsets[-1] + 1  # the next after the last one processed


def _tps(partitions) -> list[dict]:
    return [tp(p.topic, p.partition) for p in sorted(partitions, key=lambda p: (p.topic, p.partition))]


def main(argv: list[str]) -> int:
    member = Member(read_spec(ConsumerSpec, argv))
    listen_for_commands(member)
    return member.run(stop_on_signals())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
