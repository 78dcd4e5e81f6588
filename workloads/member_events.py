"""What a group member writes to the history: the one place the member events are spelt.

Every driver writes its events through a ``MemberEvents``, one method per member event of
docs/history.md ("Consumer events"), named as the event and taking its fields: the contract
between a driver and the history is these signatures. A driver never builds an event, nor
holds the raw history writer (tests/unit/test_member_events.py holds the drivers to it).

What it stamps on every event:

- ``member`` and ``incarnation`` (and ``driver`` for the java driver): the writer's context,
  the same on every line of one incarnation (``member_writer``);
- ``member_id`` and ``generation`` (a KIP-848 member epoch; the zk-eager ``cversion``): the
  member's own, as of the instant of writing, from the driver's ``identity`` — the driver
  keeps them where its group protocol needs them, the history only reads them;
- ``ts`` / ``mono_ms``: now, or (``at``) the instant another clock gave — a librdkafka log
  line's, a JVM's — with that clock's name in ``clock``.

A field the format does not name for the event is refused (``ValueError``), as an unknown
keyword is (``TypeError``): a driver gone astray fails its tests, not the oracle's reading.
``ABSENT`` leaves an optional field out of the line (``None`` writes null).

Shapes the format defines are made here too: topic-partitions (``(topic, partition)`` pairs
in), committed offsets (``((topic, partition), offset)`` pairs in), offset ranges (the
offsets processed per partition in), in the order the driver gives them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from oracle import vocabulary as ev
from oracle.fields import ENVELOPE, FIELDS
from runtime.history import HistoryWriter, offset_ranges, tp

if TYPE_CHECKING:
    from runtime.host_link import HostLink
    from workloads.driver import MemberSpec

# The `clock` of events stamped by another clock than the writer's (docs/history.md, Clock domains).
CLIENT_CLOCK = "client"  # librdkafka's log line
JVM_CLOCK = "jvm"  # the java driver's JVM

TopicPartition = tuple[str, int]
Identity = tuple[str | None, int | None]  # (member_id, generation)


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()  # an optional field this driver does not write


class Writer(Protocol):
    """The surface of ``runtime.history.HistoryWriter`` a member writes through."""

    def emit(self, name: str, *, ts: float | None = None, mono_ms: float | None = None, **fields) -> dict: ...


def member_writer(spec: MemberSpec, driver: str | None = None, link: HostLink | None = None) -> Writer:
    """The history writer of one member incarnation: ``member``, ``incarnation`` (and ``driver``)
    on every line. Through ``link`` for a member of a host on another machine (runtime/host_link.py:
    the harness appends its lines), else into the history file."""
    context = {ev.MEMBER: spec.member, ev.INCARNATION: spec.incarnation}
    if driver is not None:
        context[ev.DRIVER] = driver
    if link is not None:
        return link.writer(spec.member, **context)
    return HistoryWriter(spec.history, spec.member, **context)


def _nobody() -> Identity:
    return None, None


@dataclass(frozen=True)
class MemberEvents:
    """A member's events. ``identity`` says the member's (member_id, generation) now;
    ``catch_up``, if given, is entered around every event stamped now, before the identity is
    read — the librdkafka driver takes the client's log lines written so far, so an event
    carries the generation it acted in and comes after the steps that led to it."""

    writer: Writer
    identity: Callable[[], Identity] = _nobody
    catch_up: Callable[[], contextlib.AbstractContextManager] | None = None
    stamp: tuple[float, float, str] | None = None  # (ts, mono_ms, clock) of another clock

    def at(self, ts: float, mono_ms: float, clock: str) -> MemberEvents:
        """The same member's events, stamped at an instant of another clock. No catching up:
        whoever reads that clock writes in its order."""
        return replace(self, stamp=(ts, mono_ms, clock), catch_up=None)

    def _write(self, name: str, **fields) -> dict:
        fields = {k: v for k, v in fields.items() if v is not ABSENT}
        unknown = fields.keys() - FIELDS[name] - ENVELOPE
        if unknown:
            raise ValueError(f"{name} has no field {', '.join(sorted(unknown))} (docs/history.md)")
        with self.catch_up() if self.catch_up is not None else contextlib.nullcontext():
            member_id, generation = self.identity()
            stamp = {}
            if self.stamp is not None:
                ts, mono_ms, clock = self.stamp
                stamp = {ev.TS: ts, ev.MONO_MS: mono_ms, ev.CLOCK: clock}
            # Given ones (group_joined's, group_synced's) win over the stamped ones.
            return self.writer.emit(name, **stamp, **{ev.MEMBER_ID: member_id, ev.GENERATION: generation, **fields})

    # --- the member's life -------------------------------------------------------------------

    def consumer_started(
        self,
        *,
        pid: int,
        group: str,
        protocol: str,
        assignor: str,
        group_instance_id: str | None,
        commit_mode: str,
        session_timeout_ms: int,
        max_poll_interval_ms: int | None,
        processing: str = ABSENT,
        jvm_pid: int | None = ABSENT,
        consumer_id: str = ABSENT,
        rebalance_max_retries: int = ABSENT,
        rebalance_backoff_ms: int = ABSENT,
        processing_ms_ignored: float | None = ABSENT,
        subscription: Mapping[str, Any] = ABSENT,
        client_rack: str | None = ABSENT,
        client_library: str = ABSENT,
        client_version: str | None = ABSENT,
        host: str = ABSENT,
    ) -> dict:
        """Driver-specific fields: ``processing`` (librdkafka); ``consumer_id``,
        ``rebalance_max_retries``, ``rebalance_backoff_ms`` (zk-eager); ``jvm_pid``,
        ``processing_ms_ignored`` (java); every driver: ``subscription``
        (``MemberSpec.subscription_record``) and ``client_rack``; ``client_library`` and
        ``client_version``: the client library the process really loaded (every driver on a Kafka client);
        ``host``: the member host it lives in, for a hosted member (its ``pid`` is the host's)."""
        return self._write(
            ev.CONSUMER_STARTED,
            pid=pid,
            jvm_pid=jvm_pid,
            group=group,
            protocol=protocol,
            assignor=assignor,
            group_instance_id=group_instance_id,
            commit_mode=commit_mode,
            processing=processing,
            session_timeout_ms=session_timeout_ms,
            max_poll_interval_ms=max_poll_interval_ms,
            consumer_id=consumer_id,
            rebalance_max_retries=rebalance_max_retries,
            rebalance_backoff_ms=rebalance_backoff_ms,
            processing_ms_ignored=processing_ms_ignored,
            subscription=subscription,
            client_rack=client_rack,
            client_library=client_library,
            client_version=client_version,
            host=host,
        )

    def consumer_stopped(self, reason: str) -> dict:
        return self._write(ev.CONSUMER_STOPPED, reason=reason)

    def client_destroyed(self) -> dict:
        """Its handle was destroyed without a close: a crash of this one member of a member host."""
        return self._write(ev.CLIENT_DESTROYED)

    def consumer_error(self, *, error: str, error_code: int | None, fatal: bool, message: str = ABSENT) -> dict:
        return self._write(ev.CONSUMER_ERROR, error=error, error_code=error_code, fatal=fatal, message=message)

    def client_log(self, level: str, message: str) -> dict:
        return self._write(ev.CLIENT_LOG, level=level, message=message)

    def log_unrecognised(self, *, log: str, missing: str, client_version: str | None) -> dict:
        """The member acted on a protocol step its client's log said nothing readable of: the run
        cannot be judged whole (oracle.verdict: every check skipped, INCOMPLETE)."""
        return self._write(ev.LOG_UNRECOGNISED, log=log, missing=missing, client_version=client_version)

    def subscription_changed(self, topics: Mapping[str, int]) -> dict:
        return self._write(ev.SUBSCRIPTION_CHANGED, topics=dict(topics))

    # --- the group protocol ------------------------------------------------------------------

    def group_join_sent(self) -> dict:
        return self._write(ev.GROUP_JOIN_SENT)

    def group_joined(
        self,
        *,
        generation: int,
        member_id: str,
        leader_id: str | None,
        is_leader: bool | None,
        protocol_name: str,
        members: list[str] = ABSENT,
    ) -> dict:
        return self._write(
            ev.GROUP_JOINED,
            generation=generation,
            member_id=member_id,
            leader_id=leader_id,
            is_leader=is_leader,
            protocol_name=protocol_name,
            members=members,
        )

    def group_join_failed(self, error: str, *, error_code: int | None = ABSENT, message: str = ABSENT) -> dict:
        return self._write(ev.GROUP_JOIN_FAILED, error=error, error_code=error_code, message=message)

    def group_synced(self, *, generation: int = ABSENT) -> dict:
        """``generation``: the one the answer names, where the driver reads one (else the member's)."""
        return self._write(ev.GROUP_SYNCED, generation=generation)

    def group_sync_failed(
        self, error: str, *, error_code: int | None = ABSENT, message: str = ABSENT, attempt: int = ABSENT
    ) -> dict:
        return self._write(ev.GROUP_SYNC_FAILED, error=error, error_code=error_code, message=message, attempt=attempt)

    def heartbeat_failed(self, error: str, *, error_code: int | None = ABSENT) -> dict:
        return self._write(ev.HEARTBEAT_FAILED, error=error, error_code=error_code)

    def rebalance_started(self, reason: str, rebalance_protocol: str) -> dict:
        """``rebalance_protocol``: ``EAGER``, ``COOPERATIVE`` or ``NONE``."""
        return self._write(ev.REBALANCE_STARTED, reason=reason, rebalance_protocol=rebalance_protocol)

    def rebalance_failed(self, *, attempts: int, reason: str, trigger: str) -> dict:
        return self._write(ev.REBALANCE_FAILED, attempts=attempts, reason=reason, trigger=trigger)

    def coordinator_found(self, *, instance: str, address: str, answered_by: str) -> dict:
        return self._write(ev.COORDINATOR_FOUND, instance=instance, address=address, answered_by=answered_by)

    def coordinator_lost(self, *, instance: str, error: str, error_code: int | None, message: str) -> dict:
        return self._write(ev.COORDINATOR_LOST, instance=instance, error=error, error_code=error_code, message=message)

    # --- partitions ----------------------------------------------------------------------------

    def partitions_assigned(self, partitions: Iterable[TopicPartition], *, incremental: bool) -> dict:
        """``incremental``: ``partitions`` is the delta added (cooperative protocols)."""
        return self._write(ev.PARTITIONS_ASSIGNED, partitions=_partitions(partitions), incremental=incremental)

    def revoke_started(self, partitions: Iterable[TopicPartition], *, in_flight: int) -> dict:
        return self._write(ev.REVOKE_STARTED, partitions=_partitions(partitions), in_flight=in_flight)

    def partitions_revoked(self, partitions: Iterable[TopicPartition], *, incremental: bool) -> dict:
        return self._write(ev.PARTITIONS_REVOKED, partitions=_partitions(partitions), incremental=incremental)

    def partitions_lost(self, partitions: Iterable[TopicPartition], *, incremental: bool) -> dict:
        return self._write(ev.PARTITIONS_LOST, partitions=_partitions(partitions), incremental=incremental)

    # --- records and offsets ---------------------------------------------------------------------

    def records_consumed(
        self, processed: Mapping[TopicPartition, list[int]], *, e2e_ms: list[list[float]] = ABSENT
    ) -> dict:
        """``processed``: the offsets whose processing completed, per partition (written as ranges)."""
        return self._write(ev.RECORDS_CONSUMED, ranges=offset_ranges(processed), e2e_ms=e2e_ms)

    def offsets_committed(
        self,
        offsets: Iterable[tuple[TopicPartition, int]],
        *,
        trigger: str,
        started_mono_ms: float | None,
        error: str | None = None,
        error_code: int | None = None,
        error_message: str | None = ABSENT,
    ) -> dict:
        """One commit's answer: ``offsets`` the next to read per partition; it succeeded iff it
        has no ``error``; ``started_mono_ms`` when the request was made (None: not seen)."""
        started = round(started_mono_ms, 3) if started_mono_ms is not None else None
        return self._write(
            ev.OFFSETS_COMMITTED,
            offsets=[{**tp(*key), ev.OFFSET: offset} for key, offset in offsets],
            success=error is None,
            error=error,
            error_code=error_code,
            error_message=error_message,
            trigger=trigger,
            started_mono_ms=started,
        )

    # --- the harness's commands and test hooks -----------------------------------------------------

    def poll_stall_started(self, *, fault_id: str, duration_s: float) -> dict:
        return self._write(ev.POLL_STALL_STARTED, fault_id=fault_id, duration_s=duration_s)

    def poll_stall_ended(self, *, fault_id: str) -> dict:
        return self._write(ev.POLL_STALL_ENDED, fault_id=fault_id)

    def test_hook_armed(self, hook: str, params: dict) -> dict:
        return self._write(ev.TEST_HOOK_ARMED, hook=hook, params=params)

    def test_hook_fired(self, hook: str, *, join: int) -> dict:
        return self._write(ev.TEST_HOOK_FIRED, hook=hook, join=join)


def _partitions(partitions: Iterable[TopicPartition]) -> list[dict]:
    return [tp(topic, partition) for topic, partition in partitions]
