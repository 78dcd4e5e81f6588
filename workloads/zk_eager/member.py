"""The member process of the 0.8 high-level consumer: its rebalancer thread and its consumer
thread (see the package's docstring). Usage: ``python -m workloads.zk_eager SPEC.json``."""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections import defaultdict

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError
from kazoo.retry import KazooRetry

from runtime.history import now
from runtime.zookeeper import publish_session
from workloads.client_log import warnings_logger
from workloads.consumer import librdkafka_loaded, process_records
from workloads.driver import Driver, MemberSpec
from workloads.fetching import ManualFetcher
from workloads.member_events import MemberEvents, member_writer
from workloads.poll_stall import TakesCommands
from workloads.zk_eager.assignment import Inputs, range_assignment
from workloads.zk_eager.layout import (
    BROKER_IDS,
    BROKER_TOPICS,
    GroupPaths,
    partition_count,
    read_offset,
    registration_data,
    subscribed_topics,
    thread_ids,
    write_offset,
)
from workloads.zk_settings import ZkEagerMemberSettings, ZkEagerSettings

SHUTDOWN_ZK_DEADLINE_S = 5.0  # the last commit and release on SIGTERM, if ZooKeeper answers
POLL_TIMEOUT_S = 0.2  # the consumer thread's poll; closing the fetchers waits for it, as 0.8 waited for a fetch
FETCHERS_STOP_TIMEOUT_S = 1.0  # a consumer thread that does not poll (a poll stall) is not waited for longer


class RebalanceAttemptFailed(Exception):
    """One attempt could not complete (a partition still owned, a znode gone): back off, retry."""


class SessionLost(Exception):
    """The ZooKeeper session expired during a rebalance: the new session rebalances from scratch."""


class ZkEagerMember(TakesCommands, Driver):
    """A poll stall (poll_stall.py) stops the consumer thread; the ZooKeeper session (kazoo's
    thread) and rebalances go on."""

    Settings = ZkEagerMemberSettings

    def __init__(self, spec: MemberSpec[ZkEagerMemberSettings], stop: threading.Event):
        self.spec = spec
        self.stop = stop
        self.zk_eager = ZkEagerSettings.model_validate(spec.settings.rebalance)  # workload.zk_eager
        self.paths = GroupPaths(spec.group)
        self.consumer_id = f"{spec.member}-{uuid.uuid4().hex[:8]}"
        [self.thread_id] = thread_ids(self.consumer_id)
        self.member_id: str | None = None
        self.generation: int | None = None
        self.events = MemberEvents(member_writer(spec), lambda: (self.member_id, self.generation))
        self.command_pending = threading.Event()

        # State shared by the consumer thread and the rebalancer, guarded by `lock`.
        self.lock = threading.Lock()
        self.owned: list[tuple[str, int]] = []  # partitions whose owner znodes are ours
        self.uncommitted: dict[tuple[str, int], int] = {}  # processed, not yet committed: next offset
        self.closing_fetchers = threading.Event()  # the rebalancer waits: drop the batch in hand
        self.fetchers_closed = threading.Event()  # the consumer thread's answer: it stopped

        self.wake = threading.Event()  # a watch fired, or the session changed
        self.session_lost = threading.Event()
        self.registered = False
        self.last_inputs: Inputs | None = None

        client_log = warnings_logger(f"zk-eager.{spec.member}", self.events)  # both clients' warnings
        self.fetcher = Consumer(spec.fetcher_config(f"{spec.group}.fetcher.{self.consumer_id}"), logger=client_log)
        self.fetching = ManualFetcher(self.fetcher, self.lock, self.events)
        self.zk = KazooClient(
            hosts=spec.settings.zookeeper_connect,
            timeout=self.zk_eager.zookeeper_session_timeout_ms / 1000,
            connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 1.5, "max_delay": 1.0},
            logger=client_log,
        )
        # ZkClient's retryUntilConnected: ZooKeeper calls wait out connection losses. The
        # rebalancer gives up on an expired session (its ephemerals are gone); commits do not.
        self.rebalance_retry = KazooRetry(
            max_tries=-1, delay=0.05, max_delay=1.0, ignore_expire=False, interrupt=stop.is_set
        )
        self.commit_retry = KazooRetry(
            max_tries=-1, delay=0.05, max_delay=1.0, ignore_expire=True, interrupt=stop.is_set
        )

    def zk_call(self, retry: KazooRetry, func, *args, **kwargs):
        return retry.copy()(func, *args, **kwargs)  # a KazooRetry counts attempts: one per call

    # --- the ZooKeeper session ----------------------------------------------------------

    def _on_session(self, state: str) -> None:
        """kazoo's connection thread: note what happened, block on nothing."""
        if state == KazooState.LOST:
            self.session_lost.set()
        elif state == KazooState.CONNECTED:
            self._publish_session()
        self.wake.set()

    def _publish_session(self) -> None:
        """Id and password of the live session, for a fault to expire it on the server
        (``harness.cluster.zookeeper.expire_session_as_client``)."""
        s = self.spec.settings
        if s.session_file:
            publish_session(
                self.zk.client_id, s.session_file, consumer_id=self.consumer_id, zookeeper_connect=s.zookeeper_connect
            )

    def _register(self) -> None:
        """The ephemeral /consumers/<g>/ids/<consumer id>: the consumer is in the group."""
        path = self.paths.registration(self.consumer_id)
        try:
            self.zk_call(
                self.rebalance_retry,
                self.zk.create,
                path,
                registration_data(self.spec.topics),
                ephemeral=True,
                makepath=True,
            )
        except NodeExistsError:
            stat = self.zk_call(self.rebalance_retry, self.zk.exists, path)
            if stat and stat.ephemeralOwner != self.zk.client_id[0]:
                raise  # the old session's node lingers; the next wake tries again
        self.registered = True
        self.member_id = self.consumer_id

    def _lose_session(self) -> None:
        """The session expired: its ephemeral znodes — registration and owners — are gone, so
        are the partitions. The consumer thread finishes (and commits) the batch in hand first:
        it has no idea, as the original's had none until the new session's rebalance."""
        with self.lock:
            self.session_lost.clear()
            self.registered = False
            if self.owned:
                self.events.partitions_lost(self.owned, incremental=False)
            self.owned = []
            self.uncommitted.clear()
            self.fetching.fetch([])

    # --- the rebalancer thread (the original's watcher thread) --------------------------

    def _on_watch(self, _event) -> None:
        self.wake.set()  # kazoo's callback thread: the rebalancer looks at what changed

    def rebalancer(self) -> None:
        force: str | None = "consumer started"
        while not self.stop.is_set():
            if not self.wake.wait(0.2) and force is None:
                continue
            self.wake.clear()
            try:
                if self.session_lost.is_set():
                    self._lose_session()
                if not self.registered:
                    if not self.zk.connected:
                        continue
                    self._register()
                    force = force or "new ZooKeeper session"
                inputs = self._read_inputs()
                reason = force or inputs.change_since(self.last_inputs)
                force = None
                if reason:
                    self._synced_rebalance(reason)
            except InterruptedError:
                return  # stopping
            except (KazooException, SessionLost) as e:  # e.g. expired meanwhile: the next wake starts over
                self.events.client_log("WARNING", f"rebalancer: {type(e).__name__}: {e}")
                self.wake.set()
                self.stop.wait(0.2)
            except Exception as e:  # a bug must not silently end rebalancing (the seed's lost exception)
                self.events.consumer_error(error=f"rebalancer: {type(e).__name__}: {e}", error_code=None, fatal=False)
                self.wake.set()
                self.stop.wait(1.0)

    def _read_inputs(self) -> Inputs:
        """Members, brokers and subscribed topics, each read with a watch (kazoo's are one-shot:
        every read re-arms them)."""
        call, zk, watch = (lambda f, *a, **k: self.zk_call(self.rebalance_retry, f, *a, **k)), self.zk, self._on_watch
        consumers, stat = call(zk.get_children, self.paths.ids, watch=watch, include_data=True)
        brokers = call(zk.get_children, BROKER_IDS, watch=watch)
        names = self.spec.topics
        if len(names) == 1 and names[0].startswith("^"):
            existing = call(zk.get_children, BROKER_TOPICS, watch=watch)
            names = sorted(subscribed_topics({"pattern": "white_list", "subscription": {names[0]: 1}}, existing))
        topics = []
        for topic in sorted(names):
            path = f"{BROKER_TOPICS}/{topic}"
            if call(zk.exists, path, watch=watch):  # a watch on creation too
                data, topic_stat = call(zk.get, path, watch=watch)
                topics.append((topic, partition_count(data), topic_stat.version))
        return Inputs(stat.cversion, tuple(sorted(consumers)), tuple(sorted(brokers)), tuple(topics))

    def _synced_rebalance(self, reason: str) -> None:
        """Up to rebalance_max_retries attempts, rebalance_backoff_ms apart; then give up
        until the next change (ConsumerRebalanceFailedException, caught by the watcher thread)."""
        s = self.zk_eager
        self.events.rebalance_started(reason, "EAGER")
        failure = ""
        for attempt in range(1, s.rebalance_max_retries + 1):
            try:
                self._attempt()
                return
            except RebalanceAttemptFailed as e:
                failure = str(e)
                self.events.group_sync_failed(failure, attempt=attempt)
            if self.session_lost.is_set():
                return  # the new session rebalances anyway
            if attempt < s.rebalance_max_retries and self.stop.wait(s.rebalance_backoff_ms / 1000):
                return
        self.events.rebalance_failed(attempts=s.rebalance_max_retries, reason=failure, trigger=reason)

    def _attempt(self) -> None:
        """One rebalance attempt: release everything, compute, read offsets, claim."""
        inputs = self.last_inputs = self._read_inputs()
        if not inputs.brokers:
            return  # the original: no broker to fetch from, keep things as they are until /brokers/ids changes
        self.events.group_join_sent()
        self._close_fetchers()
        with self.lock:
            self.closing_fetchers.clear()
            self._release("revoke")
            if self.consumer_id not in inputs.consumers:
                raise RebalanceAttemptFailed(f"{self.consumer_id} is not registered in {self.paths.ids}")
            self.generation = inputs.generation
            self.events.group_joined(
                generation=inputs.generation,
                member_id=self.consumer_id,
                leader_id=None,
                is_leader=False,
                protocol_name="range",
                members=list(inputs.consumers),
            )
            mine = self._my_partitions(inputs)
            # The original read the offsets before claiming: a previous owner that commits
            # and lets go in between makes this consumer start from an older offset.
            offsets = {
                key: self.zk_call(self.rebalance_retry, read_offset, self.zk, self.paths.offset(*key)) for key in mine
            }
            self._claim(mine)
            self.owned = mine
            self.fetching.fetch(
                [
                    TopicPartition(t, p, OFFSET_BEGINNING if offsets[key] is None else offsets[key])
                    for key in mine
                    for t, p in [key]
                ]
            )
            self.events.group_synced(generation=inputs.generation)
            self.events.partitions_assigned(mine, incremental=False)

    def _close_fetchers(self) -> None:
        """closeFetchers: stop fetching and wait until the consumer thread stops — at its poll's
        end or after the record in hand. The original waited for its fetcher threads, in a
        long poll (fetch.wait.max.ms) more often than not: meanwhile a consumer with nothing to
        close may already claim what this one still owns (the herd effect of seed 000)."""
        self.fetchers_closed.clear()
        self.closing_fetchers.set()
        if self.owned:
            self.fetchers_closed.wait(FETCHERS_STOP_TIMEOUT_S)

    def _fetchers_stopping(self) -> bool:
        """The consumer thread, at a stop point: is it asked to stop (rebalance or SIGTERM)?"""
        if self.closing_fetchers.is_set():
            self.fetchers_closed.set()
            return True
        return self.stop.is_set()

    def _my_partitions(self, inputs: Inputs) -> list[tuple[str, int]]:
        """This consumer thread's share, per topic, over every thread subscribed to it."""
        existing = [t for t, _, _ in inputs.topics]
        threads_by_topic: dict[str, list[str]] = defaultdict(list)
        for consumer_id in inputs.consumers:
            try:
                data, _ = self.zk_call(self.rebalance_retry, self.zk.get, self.paths.registration(consumer_id))
            except NoNodeError:
                raise RebalanceAttemptFailed(f"consumer {consumer_id} left while reading the group") from None
            for topic, count in subscribed_topics(json.loads(data), existing).items():
                threads_by_topic[topic] += thread_ids(consumer_id, count)
        mine = []
        for topic, partitions, _ in inputs.topics:
            share = range_assignment(range(partitions), threads_by_topic[topic]).get(self.thread_id, [])
            mine += [(topic, p) for p in share]
        return mine

    def _claim(self, partitions: list[tuple[str, int]]) -> None:
        """Create an ephemeral owner znode per partition. Any still owned by someone else: let go
        of those just claimed and fail the attempt (reflectPartitionOwnershipDecision)."""
        claimed, conflicts = [], []
        for t, p in partitions:
            path = self.paths.owner(t, p)
            try:
                self.zk_call(
                    self.rebalance_retry, self.zk.create, path, self.thread_id.encode(), ephemeral=True, makepath=True
                )
                claimed.append((t, p))
            except NodeExistsError:
                try:
                    holder = self.zk_call(self.rebalance_retry, self.zk.get, path)[0].decode()
                except NoNodeError:
                    holder = "a consumer that just let go"
                if holder == self.thread_id:
                    claimed.append((t, p))
                else:
                    conflicts.append(f"{t}-{p} is owned by {holder}")
            if self.session_lost.is_set():
                self._delete_owners(claimed, self.commit_retry)  # any made after the expiry are the new session's
                raise SessionLost("session expired while claiming")
        if conflicts:
            self._delete_owners(claimed, self.rebalance_retry)
            raise RebalanceAttemptFailed("; ".join(conflicts))

    def _release(self, trigger: str, retry: KazooRetry | None = None) -> None:
        """Under the lock: commit what was processed, stop fetching, delete our owner znodes."""
        self._commit(trigger, retry)
        self.fetching.fetch([])
        if self.owned:
            self.events.partitions_revoked(self.owned, incremental=False)
            self._delete_owners(self.owned, retry or self.rebalance_retry)
            self.owned = []

    def _delete_owners(self, partitions: list[tuple[str, int]], retry: KazooRetry) -> None:
        for t, p in partitions:
            try:
                self.zk_call(retry, self.zk.delete, self.paths.owner(t, p))
            except NoNodeError:
                pass

    # --- commits ------------------------------------------------------------------------

    def _commit(self, trigger: str, retry: KazooRetry | None = None) -> None:
        """Write processed offsets to ZooKeeper. No owner check, no generation: ZooKeeper takes
        any write, so a consumer that lost a partition can still overwrite its offset."""
        if not self.uncommitted:
            return
        offsets = sorted(self.uncommitted.items())
        _, started = now()
        for (t, p), offset in offsets:
            self.zk_call(retry or self.commit_retry, write_offset, self.zk, self.paths.offset(t, p), offset)
        self.uncommitted.clear()
        self.events.offsets_committed(offsets, trigger=trigger, started_mono_ms=started)  # ZooKeeper refuses none

    # --- the consumer thread ------------------------------------------------------------

    def run(self) -> int:
        s = self.spec
        self.events.consumer_started(
            pid=os.getpid(),
            group=s.group,
            protocol=s.protocol,
            assignor="range",
            group_instance_id=None,
            commit_mode=s.commit,
            session_timeout_ms=self.zk_eager.zookeeper_session_timeout_ms,
            max_poll_interval_ms=None,
            consumer_id=self.consumer_id,
            rebalance_max_retries=self.zk_eager.rebalance_max_retries,
            rebalance_backoff_ms=self.zk_eager.rebalance_backoff_ms,
            **librdkafka_loaded(),
        )
        self.zk.add_listener(self._on_session)
        self.zk.start_async()  # the rebalancer registers once connected (the lane may be cut right now)
        rebalancer = threading.Thread(target=self.rebalancer, name="rebalancer", daemon=True)
        rebalancer.start()
        reason = "end-of-run"
        try:
            while not self.stop.is_set():
                if self.command_pending.is_set():
                    self._obey(self.stop)
                epoch, batch = self.fetching.poll(s.batch_size, POLL_TIMEOUT_S)
                if self._fetchers_stopping():
                    continue  # the batch goes: whoever owns its partitions next fetches it again
                if batch:
                    self._process(batch, epoch)
        except InterruptedError:
            pass  # a commit waiting for ZooKeeper when SIGTERM came
        finally:
            self.stop.set()
            rebalancer.join(timeout=10)
            self._shutdown()
            self.events.consumer_stopped(reason)
        return 0

    def _process(self, batch, epoch: int) -> None:
        with self.lock:
            records = self.fetching.take(batch, epoch)
            if records is None:
                return  # fetched before a rebalance stopped fetching: the new owner reads it again
            # The rebalancer closing the fetchers (or SIGTERM) drops the rest of the batch.
            process_records(
                records, self.spec.processing_ms, self.uncommitted, self.events, interrupted=self._fetchers_stopping
            )
            self.fetching.processed(self.uncommitted)
            if self.spec.commit != "auto":  # sync; before-processing has no meaning here
                self._commit("after-processing")

    def _shutdown(self) -> None:
        """SIGTERM: commit, let go of the owner znodes, close the session (the registration goes)."""
        bounded = KazooRetry(max_tries=-1, delay=0.05, max_delay=0.5, deadline=SHUTDOWN_ZK_DEADLINE_S)
        with self.lock:
            try:
                if self.zk.connected:
                    self._release("revoke", bounded)
            except Exception as e:  # ZooKeeper out of reach: the session expiry releases for us
                self.events.client_log("WARNING", f"release on close: {type(e).__name__}: {e}")
        self.fetcher.close()
        self.zk.stop()
        self.zk.close()


main = ZkEagerMember.main
