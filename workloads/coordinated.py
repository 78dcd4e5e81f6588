"""A group member of the project's own coordinator (``coordinator/``, docs/coordinator.md),
run as its own OS process like the other drivers and writing the same history events.

Membership, assignment and offsets go through the coordinator's line-JSON protocol
(JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch); records
come from the real brokers through a librdkafka consumer with a manual assignment,
positioned at the offsets the coordinator keeps. What differs between variants is
the member's side of seeds 001-003:

- ``coordinator-v1``: the JoinGroup response carries the assignment (the coordinator
  ran the assignor); ILLEGAL_GENERATION on a heartbeat announces a rebalance; the
  session timeout doubles as the rebalance timeout; heartbeats come from the poll loop.
- ``coordinator-v2``: JoinGroup then SyncGroup, the leader member assigns;
  REBALANCE_IN_PROGRESS announces a rebalance; otherwise as v1.
- ``coordinator-v3``: v2 with KIP-62: the rebalance timeout is ``max.poll.interval.ms``,
  heartbeats come from a background thread, and a poll loop that has not polled for
  ``max.poll.interval.ms`` makes that thread leave the group.

Threads: the poll loop (main thread) fetches, processes, commits and runs every
rebalance (revoke, JoinGroup, SyncGroup, OffsetFetch), as a Kafka client does inside
``poll()``; it alone touches the fetcher. v3 adds the heartbeat thread, which only
heartbeats, notes a rebalance for the poll loop, and declares partitions lost (after
the batch in hand: a member processing when it is evicted is a zombie until then).
JoinGroup and SyncGroup are long polls, waited for on a helper thread of their own so
SIGTERM never waits for a rebalance to finish.

Rebalances are eager: everything is revoked (processed progress committed first,
with the generation still current) before JoinGroup is sent. A member that learns it
is out of the group (UNKNOWN_MEMBER_ID, a stale generation) loses its partitions
without committing. A coordinator that moved (NOT_COORDINATOR, no answer) is found
again with FindCoordinator; the member keeps its assignment meanwhile, as Kafka's do.

Usage: ``python -m workloads.coordinated SPEC.json`` (a ``workloads.driver.MemberSpec`` whose
``settings`` are ``CoordinatedSettings``).
"""

from __future__ import annotations

import enum
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from coordinator.assignors import ASSIGNORS
from coordinator.group import Variant, variant
from coordinator.protocol import (
    COORDINATOR_NOT_AVAILABLE,
    ILLEGAL_GENERATION,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    Address,
    Connection,
    CoordinatorError,
)
from runtime.history import now, tp
from workloads.client_log import warnings_logger
from workloads.consumer import librdkafka_loaded, process_records
from workloads.driver import Driver, MemberSpec
from workloads.fetching import ManualFetcher
from workloads.member_events import MemberEvents, member_writer
from workloads.poll_stall import TakesCommands

POLL_TIMEOUT_S = 0.2  # the fetcher's poll
REQUEST_TIMEOUT_S = 5.0  # OffsetCommit, OffsetFetch, LeaveGroup, Heartbeat at most
FIND_TIMEOUT_S = 1.0  # FindCoordinator, per instance: a paused one must not hold discovery up for long
REDISCOVER_BACKOFF_S = 0.2  # between losing the coordinator and asking for it again
LONG_POLL_MARGIN_S = 15.0  # the server answers a waiting JoinGroup/SyncGroup up to 10 s after its deadline
HEARTBEAT_TICK_S = 0.05  # the heartbeat thread's clock (heartbeats and max.poll.interval checks)
SHUTDOWN_PATIENCE_S = 5.0  # the last commit and LeaveGroup on SIGTERM, if the coordinator answers
METADATA_TIMEOUT_S = 5.0  # the leader's partition counts, from the brokers

JOIN_CHANNEL, GROUP_CHANNEL, HEARTBEAT_CHANNEL = "join", "group", "heartbeat"


@dataclass(frozen=True)
class CoordinatedSettings:
    """What only the coordinator driver reads (``MemberSpec.settings``)."""

    coordinators: dict[str, str]  # instance name -> this member's lane to it


# --------------------------------------------------------------------- variants and signals


def rebalance_timeout_ms(variant: Variant, spec: MemberSpec) -> int:
    """What JoinGroup declares: the session timeout before KIP-62, max.poll.interval.ms after."""
    return variant.rebalance_timeout_ms(spec.session_timeout_ms, spec.max_poll_interval_ms)


class Signal(enum.Enum):
    """What a refused heartbeat or commit tells the member about its place in the group."""

    REBALANCE = "rebalance"  # the group rebalances: commit, revoke everything, rejoin
    FENCED = "fenced"  # its generation is over: the partitions are lost already, rejoin
    EVICTED = "evicted"  # it is no longer a member: partitions lost, rejoin as a new member


_GENERATION_ERRORS = {
    REBALANCE_IN_PROGRESS: Signal.REBALANCE,
    ILLEGAL_GENERATION: Signal.FENCED,
    UNKNOWN_MEMBER_ID: Signal.EVICTED,
}


def commit_signal(code: int) -> Signal | None:
    """A refused OffsetCommit. A generation that was current is still accepted while the group
    prepares a rebalance, so ILLEGAL_GENERATION means the group moved on without us."""
    return _GENERATION_ERRORS.get(code)


def heartbeat_signal(variant: Variant, code: int) -> Signal | None:
    """A refused heartbeat. v1 announces a rebalance with ILLEGAL_GENERATION (seed 001): the
    generation is still current, so it is a reason to revoke, not proof of being fenced."""
    return Signal.REBALANCE if code == variant.rebalance_signal else _GENERATION_ERRORS.get(code)


# --------------------------------------------------------------------- finding the coordinator


class CoordinatorUnavailable(Exception):
    """No usable answer from the group's coordinator (it moved, none is elected, or it is out of
    reach): the request was not served and the coordinator is looked up again."""

    def __init__(self, name: str, code: int | None, detail: str = "", sent: bool = True):
        self.name, self.code = name, code
        self.sent = sent  # False: no coordinator was found to send the request to
        super().__init__(detail or name)


class Stopping(Exception):
    """SIGTERM came while waiting for the coordinator."""


class CoordinatorLink:
    """Where the group's coordinator is, as far as this member knows, and one connection to it per
    channel. Each channel is used by one thread (the long polls, the poll loop, the heartbeats), so
    a JoinGroup waiting for a rebalance never holds up a heartbeat or a commit.

    ``instances`` maps each coordinator instance to this member's own lane to it: FindCoordinator
    answers with the leader's *name*, which is looked up here, never dialled as announced.
    """

    def __init__(
        self,
        group: str,
        instances: Mapping[str, str],
        events: MemberEvents,
        backoff_s: float = REDISCOVER_BACKOFF_S,
        find_timeout_s: float = FIND_TIMEOUT_S,
    ):
        self.group = group
        self.instances = {name: Address.parse(address) for name, address in instances.items()}
        self.events = events
        self.backoff_s = backoff_s
        self.find_timeout_s = find_timeout_s
        self._lock = threading.Lock()  # one discovery at a time; the others wait for its answer
        self._leader: str | None = None
        self._suspect: str | None = None  # the instance last lost: asked last
        self._quiet_until = 0.0  # no FindCoordinator before this (monotonic s)
        self._finders: dict[str, Connection] = {}
        self._channels: dict[str, Connection] = {}

    def request(self, channel: str, api: str, timeout_s: float, **fields) -> dict:
        """One attempt at the current coordinator. Raises ``CoordinatorError`` for a group error,
        ``CoordinatorUnavailable`` when the coordinator did not serve it (then forgotten)."""
        leader = self.leader()
        conn = self._channels.get(channel)
        if conn is None or conn.address != self.instances[leader]:
            if conn is not None:
                conn.close()
            conn = self._channels[channel] = Connection(self.instances[leader])
        try:
            return conn.request(api, timeout_s, group=self.group, **fields)
        except CoordinatorError as e:
            if e.code not in (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE):
                raise
            self._lost(leader, e.name, e.code, str(e))
            raise CoordinatorUnavailable(e.name, e.code, str(e)) from e
        except ConnectionError as e:
            self._lost(leader, "ConnectionError", None, str(e))
            raise CoordinatorUnavailable("ConnectionError", None, str(e)) from e

    def leader(self) -> str:
        """The coordinator's instance name; asks the instances in turn if it is not known."""
        with self._lock:
            if self._leader is not None:
                return self._leader
            time.sleep(max(0.0, self._quiet_until - time.monotonic()))
            # The instance just lost is asked last: paused or cut off, it would only time out.
            for name in sorted(self.instances, key=lambda n: n == self._suspect):
                try:
                    answer = self._finder(name).request("FindCoordinator", self.find_timeout_s, group=self.group)
                except (CoordinatorError, ConnectionError):
                    continue  # not elected yet, or out of reach: the next one may know
                if answer.get("leader") in self.instances:
                    self._leader = answer["leader"]
                    self.events.coordinator_found(
                        instance=self._leader, address=str(self.instances[self._leader]), answered_by=name
                    )
                    return self._leader
            self._quiet_until = time.monotonic() + self.backoff_s
            raise CoordinatorUnavailable(
                "COORDINATOR_NOT_AVAILABLE",
                COORDINATOR_NOT_AVAILABLE,
                f"none of {', '.join(self.instances)} knows a coordinator",
                sent=False,
            )

    def _finder(self, name: str) -> Connection:
        if name not in self._finders:
            self._finders[name] = Connection(self.instances[name], connect_timeout_s=self.find_timeout_s)
        return self._finders[name]

    def _lost(self, name: str, error: str, code: int | None, detail: str) -> None:
        with self._lock:
            if self._leader != name:
                return  # another thread lost it (and maybe found the next one) already
            self._leader, self._suspect = None, name
            self._quiet_until = time.monotonic() + self.backoff_s
        self.events.coordinator_lost(instance=name, error=error, error_code=code, message=detail[:300])

    def close(self) -> None:
        for conn in [*self._channels.values(), *self._finders.values()]:
            conn.close()


# --------------------------------------------------------------------- the group protocol


class GroupMembership:
    """The member's side of the group protocol: who it is in the group (member id, generation)
    and the requests that carry it. Knows nothing of fetching or processing; the driver decides
    what a refusal means for its partitions (``heartbeat_signal``, ``commit_signal``)."""

    def __init__(
        self,
        link: CoordinatorLink,
        variant: Variant,
        spec: MemberSpec,
        events: MemberEvents,
        partition_counts: Callable[[list[str]], dict[str, int]],
        stop: threading.Event,
    ):
        self.link = link
        self.variant = variant
        self.spec = spec
        self.events = events
        self.partition_counts = partition_counts
        self.stop = stop
        self.member_id = ""  # "" until the coordinator gives one (and again once it forgot us)
        self.generation: int | None = None
        self.leader_id: str | None = None
        self.protocol_name: str | None = None
        self.assigned_counts: dict[str, int] | None = None  # what the leader assigned from, last time

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.leader_id == self.member_id

    @property
    def long_poll_timeout_s(self) -> float:
        return rebalance_timeout_ms(self.variant, self.spec) / 1000 + LONG_POLL_MARGIN_S

    # --- joining -----------------------------------------------------------------------

    def join(self) -> list[tuple[str, int]] | None:
        """JoinGroup (and SyncGroup, v2/v3) until the member has a generation and its assignment.
        None once stopping."""
        try:
            while True:
                self.events.group_join_sent()
                try:
                    try:
                        joined = self._long_poll(
                            "JoinGroup",
                            member_id=self.member_id,
                            client_id=self.spec.member,
                            session_timeout_ms=self.spec.session_timeout_ms,
                            rebalance_timeout_ms=rebalance_timeout_ms(self.variant, self.spec),
                            protocols=[{"name": self.spec.assignor, "topics": self.spec.topics}],
                        )
                    except CoordinatorError as e:
                        self._join_refused(self.events.group_join_failed, e)
                        continue
                    self._joined(joined)
                    if self.variant.coordinator_assigns:
                        assignment = joined["assignment"]
                    else:
                        try:
                            assignment = self._sync(joined)
                        except CoordinatorError as e:
                            self._join_refused(self.events.group_sync_failed, e)
                            continue
                except CoordinatorUnavailable:
                    continue  # found again (after a backoff), joined again with the same member id
                self.events.group_synced(generation=self.generation)
                return sorted((a["topic"], int(a["partition"])) for a in assignment)
        except Stopping:
            return None

    def _joined(self, response: dict) -> None:
        self.generation, self.member_id = response["generation_id"], response["member_id"]
        self.leader_id, self.protocol_name = response.get("leader_id"), response["protocol_name"]
        # The leader knows the whole generation: it is complete once each of them has its assignment.
        members = {"members": [m["member_id"] for m in response["members"]]} if response.get("members") else {}
        self.events.group_joined(
            generation=self.generation,
            member_id=self.member_id,
            leader_id=self.leader_id,
            is_leader=self.is_leader,
            protocol_name=self.protocol_name,
            **members,
        )

    def _sync(self, joined: dict) -> list[dict]:
        """SyncGroup; the leader brings the assignment it computed over the generation's members."""
        fields = {}
        if self.is_leader:
            subscriptions = {m["member_id"]: m["topics"] for m in joined["members"]}
            counts = self.partition_counts(sorted({t for topics in subscriptions.values() for t in topics}))
            assignment = ASSIGNORS[self.protocol_name](subscriptions, counts)
            self.assigned_counts = counts
            fields["assignments"] = {member: [tp(t, p) for t, p in tps] for member, tps in assignment.items()}
        return self._long_poll("SyncGroup", member_id=self.member_id, generation_id=self.generation, **fields)[
            "assignment"
        ]

    def _join_refused(self, failed: Callable[..., dict], e: CoordinatorError) -> None:
        """JoinGroup or SyncGroup refused: ``failed`` writes which (group_join_failed, group_sync_failed)."""
        failed(e.name, error_code=e.code, message=str(e)[:300])
        if e.code == UNKNOWN_MEMBER_ID:
            self.member_id = ""  # removed meanwhile: join as a new member
        elif e.code not in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION) and self.stop.wait(REDISCOVER_BACKOFF_S):
            raise Stopping

    def _long_poll(self, api: str, **fields) -> dict:
        """JoinGroup and SyncGroup are answered when the rebalance gets that far, up to the
        rebalance timeout: wait for the answer on a helper thread, so SIGTERM is not held up."""
        outcome: dict = {}
        done = threading.Event()

        def call() -> None:
            try:
                outcome["response"] = self.link.request(JOIN_CHANNEL, api, self.long_poll_timeout_s, **fields)
            except Exception as e:  # handed to the waiting thread
                outcome["error"] = e
            finally:
                done.set()

        threading.Thread(target=call, name=api, daemon=True).start()
        while not done.wait(0.1):
            if self.stop.is_set():
                raise Stopping  # the helper thread is abandoned with its connection
        if "error" in outcome:
            raise outcome["error"]
        return outcome["response"]

    # --- while a member --------------------------------------------------------------------

    def heartbeat(self, timeout_s: float) -> None:
        self.link.request(
            HEARTBEAT_CHANNEL, "Heartbeat", timeout_s, member_id=self.member_id, generation_id=self.generation
        )

    def commit(self, offsets: list[tuple[tuple[str, int], int]]) -> None:
        self.link.request(
            GROUP_CHANNEL,
            "OffsetCommit",
            REQUEST_TIMEOUT_S,
            member_id=self.member_id,
            generation_id=self.generation,
            offsets=[{**tp(t, p), "offset": o} for (t, p), o in offsets],
        )

    def committed(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The group's committed offsets; -1 where none was committed yet."""
        response = self.link.request(
            GROUP_CHANNEL, "OffsetFetch", REQUEST_TIMEOUT_S, partitions=[tp(t, p) for t, p in partitions]
        )
        return {(o["topic"], int(o["partition"])): int(o["offset"]) for o in response["offsets"]}

    def leave(self, channel: str, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.link.request(channel, "LeaveGroup", timeout_s, member_id=self.member_id)


# --------------------------------------------------------------------- the member


class CoordinatedMember(TakesCommands, Driver):
    """A poll stall (poll_stall.py) stops the poll loop; in v1/v2 so do the heartbeats, in v3
    the heartbeat thread goes on."""

    Settings = CoordinatedSettings
    client_distribution = "confluent-kafka"  # its fetcher: the project's coordinator keeps the group

    def __init__(self, spec: MemberSpec[CoordinatedSettings], stop: threading.Event, fetcher=None):
        self.spec = spec
        self.stop = stop
        # The member's side of the design its generation names: the coordinator's own definition.
        self.variant = variant(spec.coordinator_variant)
        # The member id is "" until the coordinator gives one (and again once it forgot the member): null.
        self.events = MemberEvents(member_writer(spec), lambda: (self.group.member_id or None, self.group.generation))
        self.command_pending = threading.Event()
        self.link = CoordinatorLink(spec.group, spec.settings.coordinators, self.events)
        self.group = GroupMembership(self.link, self.variant, spec, self.events, self._partition_counts, stop)

        # `lock`: held by the poll loop while it processes, commits or rebalances. The heartbeat
        # thread takes it only to declare partitions lost, so it waits for the batch in hand.
        self.lock = threading.RLock()
        # `state_lock`: in_group and rejoin_reason, which the heartbeat thread must read and set
        # without waiting for a batch (it heartbeats on while the poll loop is busy: KIP-62).
        self.state_lock = threading.Lock()
        self.in_group = False  # has a generation's assignment; heartbeats are due
        self.rejoin_reason: str | None = None  # a rebalance the poll loop must start
        self.assignment: list[tuple[str, int]] = []
        self.uncommitted: dict[tuple[str, int], int] = {}  # processed, not yet committed: next offset
        self.last_poll = time.monotonic()
        self.next_heartbeat = 0.0
        self.next_auto_commit = 0.0
        self.next_metadata_check = 0.0
        self.closing = False

        if fetcher is None:
            fetcher = Consumer(
                spec.fetcher_config(f"{spec.group}.fetcher.{spec.member}.{spec.incarnation}"),
                logger=warnings_logger(f"coordinated.{spec.member}", self.events),
            )
        self.fetcher = fetcher
        # assign()/unassign() only from the poll loop; the rebalance decides what, under `lock`.
        self.fetching = ManualFetcher(fetcher, self.lock, self.events)

    @property
    def heartbeat_interval_s(self) -> float:
        return self.spec.heartbeat_interval_ms / 1000

    # --- the poll loop (main thread) ---------------------------------------------------------

    def run(self) -> int:
        s = self.spec
        self.events.consumer_started(
            pid=os.getpid(),
            group=s.group,
            protocol=s.protocol,
            assignor=s.assignor,
            group_instance_id=None,
            commit_mode=s.commit,
            session_timeout_ms=s.session_timeout_ms,
            max_poll_interval_ms=s.max_poll_interval_ms,
            **librdkafka_loaded(),
        )
        unsupported = self._unsupported()
        if unsupported:
            self.events.consumer_error(error="UNSUPPORTED", error_code=None, fatal=True, message=unsupported)
            self.fetcher.close()
            self.events.consumer_stopped("error")
            return 1
        if self.variant.background_heartbeats:
            threading.Thread(target=self._heartbeat_thread, name="heartbeat", daemon=True).start()
        try:
            while not self.stop.is_set():
                self.poll_once()
        finally:
            self._shutdown()
            self.events.consumer_stopped("end-of-run")
        return 0

    def _unsupported(self) -> str | None:
        s = self.spec
        if any(t.startswith("^") for t in s.topics):
            return f"{s.protocol} members subscribe to topics by name, not to a pattern ({', '.join(s.topics)})"
        if s.assignor not in ASSIGNORS:
            return f"{s.protocol} has no assignor {s.assignor!r} (only {', '.join(ASSIGNORS)})"
        if not s.settings.coordinators:
            return f"{s.protocol} needs the coordinator instances' addresses (settings.coordinators)"
        return None

    def poll_once(self) -> None:
        """One turn of the poll loop: what a Kafka client does in poll(), then the batch."""
        if self.command_pending.is_set():
            self._obey(self.stop)
        self.last_poll = time.monotonic()
        if self.rejoin_reason is not None or not self.in_group:
            self._rebalance()
            return
        if not self.variant.background_heartbeats and time.monotonic() >= self.next_heartbeat:
            self._heartbeat()  # v1/v2: a poll loop that stalls stops heartbeating
            if self.rejoin_reason is not None:
                return  # the rebalance starts at the next turn, before anything more is fetched
        self._watch_partition_counts()
        timeout = POLL_TIMEOUT_S
        if not self.variant.background_heartbeats:
            timeout = min(timeout, max(0.0, self.next_heartbeat - time.monotonic()))
        epoch, batch = self.fetching.poll(self.spec.batch_size, timeout)
        if batch:
            self._process(batch, epoch)
        if self.spec.commit == "auto" and time.monotonic() >= self.next_auto_commit:
            self.next_auto_commit = time.monotonic() + self.spec.auto_commit_interval_ms / 1000
            with self.lock:
                self._commit_processed("auto")

    def _process(self, batch, epoch: int) -> None:
        with self.lock:
            records = self.fetching.take(batch, epoch)
            if records is None:
                return  # fetched before the assignment changed: the partitions' owner reads it again
            if self.spec.commit == "before-processing":
                # The deliberately faulty mode: progress committed before the work is done.
                ends = {}
                for msg in records:
                    ends[(msg.topic(), msg.partition())] = msg.offset() + 1
                self._commit_offsets(ends, "before-processing")
                if epoch != self.fetching.epoch:
                    return  # the refusal said the partitions are lost: not ours to process
            # SIGTERM drops the rest of the batch: the next owner reads it again from the commit.
            process_records(
                records, self.spec.processing_ms, self.uncommitted, self.events, interrupted=self.stop.is_set
            )
            self.fetching.processed(self.uncommitted)
            if self.spec.commit == "sync":
                self._commit_processed("after-processing")
            elif self.spec.commit == "before-processing":
                self.uncommitted.clear()

    # --- commits ---------------------------------------------------------------------------

    def _commit_processed(self, trigger: str) -> None:
        """Under the lock. A refused commit keeps the progress uncommitted (a rebalance commits
        it, or the next owner reads it again)."""
        if self._commit_offsets(dict(self.uncommitted), trigger):
            self.uncommitted.clear()

    def _commit_offsets(self, offsets: dict[tuple[str, int], int], trigger: str) -> bool:
        """Under the lock: one commit; a refusal is acted on (rejoin, or partitions lost)."""
        generation = self.group.generation
        try:
            return self._commit(offsets, trigger)
        except CoordinatorError as e:
            self._refused("commit", e, commit_signal(e.code), generation)
            return False

    def _commit(self, offsets: dict[tuple[str, int], int], trigger: str, patience_s: float = 0.0) -> bool:
        """OffsetCommit with the member's generation; every attempt is written. A coordinator that
        moved is tried again (found anew) for ``patience_s``; False if it never answered.
        Raises ``CoordinatorError`` when the coordinator refused the commit."""
        if not offsets:
            return True
        entries = sorted(offsets.items())
        deadline = time.monotonic() + patience_s
        written = False
        while True:
            _, started = now()
            try:
                self.group.commit(entries)
            except CoordinatorError as e:
                self._emit_commit(entries, trigger, started, e.name, e.code)
                raise
            except CoordinatorUnavailable as e:
                # An attempt that found no coordinator to send to is no commit; the outcome is
                # written all the same if nothing else will be.
                give_up = time.monotonic() >= deadline or (self.stop.is_set() and not self.closing)
                if e.sent or (give_up and not written):
                    self._emit_commit(entries, trigger, started, e.name, e.code)
                    written = True
                if give_up:
                    return False
                continue
            self._emit_commit(entries, trigger, started)
            return True

    def _emit_commit(
        self, entries, trigger: str, started: float, error: str | None = None, error_code: int | None = None
    ) -> None:
        self.events.offsets_committed(
            entries, trigger=trigger, started_mono_ms=started, error=error, error_code=error_code
        )

    # --- rebalancing (poll loop) -----------------------------------------------------------

    def _rebalance(self) -> None:
        """Eager: commit and revoke everything, then join; the new assignment starts at the
        group's committed offsets."""
        with self.lock:
            with self.state_lock:
                reason, self.rejoin_reason = self.rejoin_reason, None
                self.in_group = False  # no more heartbeats: the JoinGroup speaks for the member now
            if reason is not None:
                self.events.rebalance_started(reason, "EAGER")
            if self.assignment:
                # A coordinator that moved gets a session timeout to answer: longer, and the
                # group would have moved on without the member anyway.
                self._revoke(patience_s=self.spec.session_timeout_ms / 1000)
        self.fetching.follow()  # stop fetching before the (long) join
        assignment = self.group.join()
        if assignment is None:
            return  # stopping
        with self.lock:
            self.assignment = assignment
            self.events.partitions_assigned(assignment, incremental=False)
            epoch = self.fetching.epoch
            # The join took as long as the rebalance did: it counts as a poll and as a heartbeat.
            self.last_poll = time.monotonic()
            self.next_heartbeat = self.last_poll + self.heartbeat_interval_s
            with self.state_lock:
                self.in_group = True
        self.next_metadata_check = time.monotonic() + self.spec.metadata_refresh_ms / 1000
        positions = self._positions(assignment, epoch)
        with self.lock:
            if positions is not None and self.fetching.epoch == epoch:  # not lost meanwhile
                self.fetching.fetch(positions)

    def _revoke(self, patience_s: float) -> None:
        """Under the lock: commit what was processed (the generation is still current: accepted
        while the group prepares the rebalance), then give everything back."""
        try:
            self._commit(dict(self.uncommitted), "revoke", patience_s)
        except CoordinatorError as e:  # fenced already: the next owner reads the uncommitted records again
            if e.code == UNKNOWN_MEMBER_ID:
                self.group.member_id = ""
        self.events.partitions_revoked(self.assignment, incremental=False)
        self._drop_assignment()

    def _positions(self, partitions: list[tuple[str, int]], epoch: int) -> list[TopicPartition] | None:
        """Where fetching starts: the committed offsets (from the beginning where none is)."""
        if not partitions:
            return []
        while not self.stop.is_set() and self.fetching.epoch == epoch:
            try:
                committed = self.group.committed(partitions)
            except CoordinatorUnavailable:
                continue  # found again after a backoff
            except CoordinatorError as e:
                self.events.consumer_error(
                    error=e.name, error_code=e.code, fatal=False, message=f"OffsetFetch: {e}"[:300]
                )
                self.stop.wait(REDISCOVER_BACKOFF_S)
                continue
            return [TopicPartition(t, p, _position(committed.get((t, p), -1))) for t, p in partitions]
        return None

    def _drop_assignment(self) -> None:
        """Under the lock: nothing owned, nothing fetched; what was fetched before is stale."""
        self.assignment = []
        self.uncommitted.clear()
        self.fetching.fetch([])

    def _watch_partition_counts(self) -> None:
        """The leader rejoins when a subscribed topic's partition count changed since it assigned
        (Kafka's leader watches metadata the same way). In v1 the coordinator watches them."""
        if not self.group.is_leader or self.group.assigned_counts is None:
            return
        if time.monotonic() < self.next_metadata_check:
            return
        self.next_metadata_check = time.monotonic() + self.spec.metadata_refresh_ms / 1000
        try:
            counts = self._read_partition_counts(sorted({*self.spec.topics, *self.group.assigned_counts}))
        except KafkaException:
            return  # brokers out of reach: look again next time
        if counts != self.group.assigned_counts:
            with self.state_lock:
                self.rejoin_reason = f"partition counts changed: {self.group.assigned_counts} -> {counts}"

    def _partition_counts(self, topics: list[str]) -> dict[str, int]:
        """For the leader's assignment, from the brokers' metadata; retried until they answer."""
        while True:
            try:
                return self._read_partition_counts(topics)
            except KafkaException as e:
                self.events.client_log("WARNING", f"partition counts for the assignment: {e}"[:500])
                if self.stop.wait(REDISCOVER_BACKOFF_S):
                    raise Stopping from None

    def _read_partition_counts(self, topics) -> dict[str, int]:
        counts = {}
        for topic in topics:
            metadata = self.fetcher.list_topics(topic, timeout=METADATA_TIMEOUT_S).topics.get(topic)
            if metadata is not None and metadata.error is None:
                counts[topic] = len(metadata.partitions)
        return counts

    # --- heartbeats (poll loop in v1/v2, heartbeat thread in v3) ------------------------------

    def _heartbeat_thread(self) -> None:
        """KIP-62: heartbeats go on while the poll loop processes; a poll loop that has not polled
        for max.poll.interval.ms is presumed stuck, and the member leaves the group for it."""
        max_poll_s = self.spec.max_poll_interval_ms / 1000
        while not self.stop.wait(HEARTBEAT_TICK_S):
            if not self.in_group:
                continue
            if time.monotonic() - self.last_poll > max_poll_s:
                self._leave_for_max_poll()
            elif time.monotonic() >= self.next_heartbeat:
                self._heartbeat()

    def _heartbeat(self) -> None:
        generation = self.group.generation
        self.next_heartbeat = time.monotonic() + self.heartbeat_interval_s
        try:
            self.group.heartbeat(timeout_s=min(REQUEST_TIMEOUT_S, max(1.0, self.heartbeat_interval_s)))
        except CoordinatorUnavailable:
            self.next_heartbeat = time.monotonic()  # the link waits out its backoff before looking again
        except CoordinatorError as e:
            self.events.heartbeat_failed(e.name, error_code=e.code)
            self._refused("heartbeat", e, heartbeat_signal(self.variant, e.code), generation)

    def _leave_for_max_poll(self) -> None:
        """The heartbeat thread leaves at once (no heartbeat goes out meanwhile: it is this
        thread), then declares the partitions lost once the batch in hand, if any, is done."""
        generation = self.group.generation
        self.events.consumer_error(
            error="_MAX_POLL_EXCEEDED",
            error_code=None,
            fatal=False,
            message=f"max.poll.interval.ms ({self.spec.max_poll_interval_ms} ms) exceeded: leaving the group",
        )
        try:
            self.group.leave(HEARTBEAT_CHANNEL)
        except (CoordinatorError, CoordinatorUnavailable) as e:
            self.events.client_log("WARNING", f"LeaveGroup: {e}"[:500])
        self._lose("max.poll.interval.ms exceeded", generation, new_member=True)

    def _refused(self, request: str, e: CoordinatorError, signal_: Signal | None, generation: int | None) -> None:
        """A heartbeat or commit of ``generation`` was refused: rejoin, or partitions lost."""
        if signal_ is None:
            self.events.consumer_error(error=e.name, error_code=e.code, fatal=False, message=f"{request}: {e}"[:300])
        elif signal_ is Signal.REBALANCE:
            with self.state_lock:
                if self.in_group and self.group.generation == generation:
                    self.rejoin_reason = f"{request}: {e.name}"
        else:
            self._lose(f"{request}: {e.name}", generation, new_member=signal_ is Signal.EVICTED)

    def _lose(self, reason: str, generation: int | None, new_member: bool) -> None:
        """The member is out of ``generation``: its partitions went without a commit (any commit
        would be, and should be, refused). Waits for the batch in hand: until it is done the
        member is a zombie, processing what it no longer owns."""
        with self.lock:
            if not self.in_group or self.group.generation != generation:
                return  # lost or revoked already, or rejoining: the refusal was for a past membership
            if self.assignment:
                self.events.partitions_lost(self.assignment, incremental=False)
            self._drop_assignment()
            if new_member:
                self.group.member_id = ""
            with self.state_lock:
                self.in_group = False
                self.rejoin_reason = reason

    # --- SIGTERM ---------------------------------------------------------------------------

    def _shutdown(self) -> None:
        """Commit, revoke, leave the group, close."""
        self.closing = True
        with self.lock:
            with self.state_lock:
                self.in_group = False
            try:
                if self.assignment:
                    self._revoke(patience_s=SHUTDOWN_PATIENCE_S)
                if self.group.member_id:
                    self.group.leave(GROUP_CHANNEL, timeout_s=SHUTDOWN_PATIENCE_S)
            except (CoordinatorError, CoordinatorUnavailable) as e:  # the session timeout removes us instead
                self.events.client_log("WARNING", f"leaving the group on close: {e}"[:500])
        self.fetcher.close()
        self.link.close()


def _position(committed: int) -> int:
    return committed if committed >= 0 else OFFSET_BEGINNING


main = CoordinatedMember.main


if __name__ == "__main__":
    sys.exit(main(sys.argv))
