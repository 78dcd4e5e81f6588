"""A group member driven by Kafka's own Java client: the ``java`` driver.

The member is Kafka's system-test tool ``org.apache.kafka.tools.VerifiableConsumer``
(from the tools jar of the same release as the cluster), run as a child JVM of
this wrapper. The wrapper translates what the JVM prints into the history's
vocabulary, so the oracle judges the Java client exactly as it judges librdkafka.

The JVM prints two kinds of lines, and we make it print both on ONE pipe:

* its JSON events (``partitions_assigned``, ``records_consumed``, ``record_data``,
  ``offsets_committed``, ``shutdown_complete`` …) on stdout;
* the client's coordinator log (log4j, configured here to write to stdout too,
  each line prefixed with ``LOG_MARK``): generations, member ids, leaders,
  heartbeat and commit errors, lost partitions, auto-commits.

Both go through the JVM's one ``System.out`` stream, whose lock keeps each line
whole and keeps the order in which the JVM wrote them. That order matters: the
generation logged by "Successfully joined group" must be known before the
``partitions_assigned`` that follows it, exactly as in the JVM.

Events are stamped with the JVM's own clock (the JSON events' ``timestamp``, the log
lines' date, both wall-clock milliseconds, turned into the shared monotonic clock
with the offset between the two measured here): this wrapper reads the pipe when
it gets the CPU, and on a busy machine that can be long after the JVM wrote — after
another member's events, say. The JVM runs in the wrapper's
process group (no new session), so a pause fault's SIGSTOP of the group stops
its heartbeat thread as well, and a crash's SIGKILL of the group kills it.

Limits of VerifiableConsumer, by design of that tool: one topic, no pattern
subscription; no per-record processing time (``processing_ms`` is recorded as
``processing_ms_ignored``); commits are synchronous after every poll (``sync``) or
Kafka's auto-commit (``auto``), never before processing; no poll stall (the
command is acknowledged with a ``client_log`` warning, and nothing stalls).

Whatever the JVM prints that becomes no event (INFO lines, stack traces) goes to this
process's stdout, i.e. the member's log file, with our wall-clock time; set
``RL_JAVA_DEBUG=1`` to see the coordinator's DEBUG lines there too.

Usage: ``python -m workloads.verifiable SPEC.json`` (a ``workloads.driver.MemberSpec`` whose
``settings`` are ``JavaSettings``).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from runtime.errors import SetupError
from runtime.history import now
from workloads.driver import Driver, MemberSpec
from workloads.member_events import JVM_CLOCK, MemberEvents, Writer, member_writer
from workloads.poll_stall import read_command

MAIN_CLASS = "org.apache.kafka.tools.VerifiableConsumer"
ASSIGNOR_CLASSES = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}
CLOSE_GRACE_S = 20.0  # consumer.close() waits for LeaveGroup; a JVM that takes longer is killed
LOG_MARK = "@@rl "  # prefix of the client's log lines on the JVM's stdout

# The coordinator logger (AbstractCoordinator logs under its subclass's name) at DEBUG:
# leader ids, MEMBER_ID_REQUIRED and auto-commits are only logged there. The rebalance
# listener invoker at INFO: "Lost previously assigned partitions" tells a loss from a
# revocation (VerifiableConsumer's onPartitionsLost is the default, which revokes).
_COORDINATOR = "org.apache.kafka.clients.consumer.internals.ConsumerCoordinator"
_INVOKER = "org.apache.kafka.clients.consumer.internals.ConsumerRebalanceListenerInvoker"
_PATTERN = LOG_MARK + "%d{yyyy-MM-dd'T'HH:mm:ss.SSSZ} %p %c{1} %m%n"
_LOG_DATE = re.compile(r"^(?P<date>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4}) (?P<rest>.*)$")

# Kafka 3.9 logs through reload4j (log4j 1), 4.x through log4j2: both files are
# written and both named on the command line; each backend reads its own.
LOG4J1 = f"""log4j.rootLogger=WARN, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.Target=System.out
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern={_PATTERN}
log4j.logger.{_COORDINATOR}=DEBUG
log4j.logger.{_INVOKER}=INFO
"""
LOG4J2 = f"""rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = {_PATTERN}
logger.coordinator.name = {_COORDINATOR}
logger.coordinator.level = DEBUG
logger.invoker.name = {_INVOKER}
logger.invoker.level = INFO
"""

# Kafka's error codes the group protocol answers with, keyed by the default message
# the Java client logs (org.apache.kafka.common.protocol.Errors; same texts in 3.9 and 4.1).
KAFKA_ERRORS = {
    "The server experienced an unexpected error when processing the request.": ("UNKNOWN_SERVER_ERROR", -1),
    "This server does not host this topic-partition.": ("UNKNOWN_TOPIC_OR_PARTITION", 3),
    "The request timed out.": ("REQUEST_TIMED_OUT", 7),
    "The server disconnected before a response was received.": ("NETWORK_EXCEPTION", 13),
    "The coordinator is loading and hence can't process requests.": ("COORDINATOR_LOAD_IN_PROGRESS", 14),
    "The coordinator is not available.": ("COORDINATOR_NOT_AVAILABLE", 15),
    "This is not the correct coordinator.": ("NOT_COORDINATOR", 16),
    "Specified group generation id is not valid.": ("ILLEGAL_GENERATION", 22),
    "The coordinator is not aware of this member.": ("UNKNOWN_MEMBER_ID", 25),
    "The group is rebalancing, so a rejoin is needed.": ("REBALANCE_IN_PROGRESS", 27),
    "Group authorization failed.": ("GROUP_AUTHORIZATION_FAILED", 30),
    "The group member needs to have a valid member id before actually entering a consumer group.": (
        "MEMBER_ID_REQUIRED",
        79,
    ),
    "The broker rejected this static consumer since another consumer with the same group.instance.id "
    "has registered with a different member.id.": ("FENCED_INSTANCE_ID", 82),
}
_CODES = dict(KAFKA_ERRORS.values())
_ERROR_NAME = re.compile(r"\b(?:" + "|".join(_CODES) + r")\b")

# A failed commit reaches VerifiableConsumer (or the auto-commit log) as an exception
# message; known by its start: (message prefix, exception). Some are raised before any
# request is sent (the member is not in a stable generation) ...
_LOCAL_COMMIT_FAILURES = (
    ("Offset commit cannot be completed since the consumer is not part of an active group", "CommitFailedException"),
    ("Offset commit cannot be completed since the consumer is undergoing a rebalance", "RebalanceInProgressException"),
)
# ... the others answer a request, whose broker error the client logged just before.
_COMMIT_EXCEPTIONS = (
    ("Commit cannot be completed since the group has already rebalanced", "CommitFailedException"),
    ("Offset commit cannot be completed since the", "RebalanceInProgressException"),
    ("Timeout of ", "TimeoutException"),
    ("due to retriable error", "RetriableCommitFailedException"),
)


@dataclass(frozen=True)
class JavaSettings:
    """What only the java driver reads (``MemberSpec.settings``): the JVM, from the harness (which
    installed it)."""

    kafka_line: str = "3.9"  # the Kafka release whose tools (and client) run: the cluster's, or workload.client's
    kafka_tools: str | None = None  # the tools' classpath for kafka_line (None: not installed, the member says so)
    jvm_options: list[str] = field(default_factory=list)  # what every JVM of a run gets


def unsupported(spec: MemberSpec) -> list[str]:
    """Why VerifiableConsumer cannot run this member, if it cannot."""
    reasons = []
    if len(spec.topics) != 1 or spec.topics[0].startswith("^"):
        reasons.append(f"VerifiableConsumer subscribes to exactly one topic by name, not {spec.topics}")
    if spec.commit == "before-processing":
        reasons.append("VerifiableConsumer commits after each poll (sync) or by auto-commit, never before processing")
    if spec.assignor not in ASSIGNOR_CLASSES:
        reasons.append(f"no Java assignor for {spec.assignor!r}")
    return reasons


def consumer_properties(spec: MemberSpec) -> str:
    """Client settings VerifiableConsumer has no option for (``--consumer.config``)."""
    props = {
        "client.id": spec.member,  # member ids start with it, like librdkafka's
        "heartbeat.interval.ms": spec.heartbeat_interval_ms,
        "max.poll.interval.ms": spec.max_poll_interval_ms,
        "auto.commit.interval.ms": spec.auto_commit_interval_ms,
        "max.poll.records": spec.batch_size,
        "metadata.max.age.ms": spec.metadata_refresh_ms,
        **({"client.rack": spec.client_rack} if spec.client_rack else {}),
    }
    return "".join(f"{k}={v}\n" for k, v in props.items())


def kafka_tools(spec: MemberSpec[JavaSettings]) -> str:
    """The classpath of Kafka's tools (VerifiableConsumer) for this member's Kafka line, as the
    harness found them installed (``JavaSettings.kafka_tools``)."""
    if not spec.settings.kafka_tools:
        raise SetupError(
            f"Kafka tools for Kafka {spec.settings.kafka_line} (VerifiableConsumer, the java driver) "
            "are not installed. Run `rebalance-lab setup`."
        )
    return spec.settings.kafka_tools


def client_release(classpath: str | None) -> str | None:
    """The release of the kafka-clients jar on the classpath, read where the JVM's AppInfoParser reads
    it ("Kafka version: …" in its log): ``kafka/kafka-version.properties`` inside the jar. None if
    there is none, or it does not say."""
    jar = next((p for p in (classpath or "").split(":") if Path(p).name.startswith("kafka-clients-")), None)
    if jar is None:
        return None
    try:
        with zipfile.ZipFile(jar) as z:
            text = z.read("kafka/kafka-version.properties").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    return next((line.split("=", 1)[1].strip() for line in text.splitlines() if line.startswith("version=")), None)


def command(spec: MemberSpec[JavaSettings], classpath: str, config_dir: Path) -> list[str]:
    """The JVM's command line; writes its config files into ``config_dir``."""
    stem = config_dir / f"{spec.member}-{spec.incarnation}"
    files = {"consumer.properties": consumer_properties(spec), "log4j.properties": LOG4J1, "log4j2.properties": LOG4J2}
    for suffix, text in files.items():
        Path(f"{stem}.{suffix}").write_text(text)
    argv = [
        "java",
        *spec.settings.jvm_options,
        f"-Dlog4j.configuration=file:{stem}.log4j.properties",
        f"-Dlog4j2.configurationFile={stem}.log4j2.properties",
        "-cp",
        classpath,
        MAIN_CLASS,
        "--bootstrap-server",
        spec.bootstrap_servers,
        "--group-id",
        spec.group,
        "--topic",
        spec.topics[0],
        "--session-timeout",
        str(spec.session_timeout_ms),
        "--reset-policy",
        "earliest",
        "--assignment-strategy",
        ASSIGNOR_CLASSES[spec.assignor],
        "--consumer.config",
        f"{stem}.consumer.properties",
        "--verbose",
    ]  # one record_data line per record: exact offset ranges, gaps included
    if spec.group_instance_id:
        argv += ["--group-instance-id", spec.group_instance_id]
    if spec.commit == "auto":
        argv.append("--enable-autocommit")
    return argv


# --------------------------------------------------------------------- the JVM's lines

_CONTEXT = re.compile(r"^\[Consumer [^\]]*\] ")
_GENERATION = re.compile(
    r"Generation\{generationId=(?P<gen>-?\d+), memberId='(?P<member>[^']*)', "
    r"protocol='(?P<proto>[^']*)'\}"
)
_LEADER = re.compile(r"leader='(?P<leader>[^']*)'")
_HEARTBEAT_FAILED = re.compile(r"^Attempt to heartbeat with (?!stale ).* failed due to (?P<err>\w+), resetting")
_COMMIT_FAILED = re.compile(
    r"^(?:OffsetCommit failed with Generation\{[^}]*\}: |"
    r"Offset commit failed on partition \S+ at offset \d+: )(?P<msg>.*)$"
)
_AUTO_COMMIT = re.compile(
    r"^(?P<what>Sending asynchronous|Completed asynchronous|Asynchronous|Sending synchronous|"
    r"Synchronous|Auto-commit)(?: auto-commit)? of offsets (?P<map>\{.*?\})"
    r"(?P<tail>(?: failed| timed out| was interrupted).*)?$"
)
_MAP_ENTRY = re.compile(r"(?P<topic>[A-Za-z0-9._-]+)-(?P<partition>\d+)=OffsetAndMetadata\{offset=(?P<offset>\d+)")
_COMMITTED = re.compile(
    r"^Committed offset (?P<offset>\d+) for partition "
    r"(?P<topic>[A-Za-z0-9._-]+)-(?P<partition>\d+)$"
)
_RECORD = re.compile(r'"topic":"(?P<topic>(?:[^"\\]|\\.)*)","partition":(?P<partition>\d+),"offset":(?P<offset>\d+)\}$')
_LEAVING = "consumer pro-actively leaving the group"


def kafka_error(message: str) -> tuple[str | None, int | None]:
    """(Errors name, code) of the error a Java client log line names or quotes, or (None, None)."""
    if named := _ERROR_NAME.search(message):
        return named[0], _CODES[named[0]]
    return next((error for text, error in KAFKA_ERRORS.items() if text in message), (None, None))


def _offsets(text: str) -> dict[tuple[str, int], int]:
    """``{events-0=OffsetAndMetadata{offset=5, …}, …}`` → {(topic, partition): offset}."""
    return {(m["topic"], int(m["partition"])): int(m["offset"]) for m in _MAP_ENTRY.finditer(text)}


def _partitions(parts: list[dict]) -> list[tuple[str, int]]:
    return sorted((p["topic"], p["partition"]) for p in parts)


class Translator:
    """Turns the JVM's stdout, line by line in the JVM's order, into history events.

    It keeps what the member knows of its group (generation, member id) to stamp on
    every event, like the librdkafka driver, and the context a JSON event needs from
    the log lines before it (a loss, a commit's broker error, its start time).
    """

    def __init__(
        self, writer: Writer, cooperative: bool, echo: Callable[[str], None] = lambda _l: None, jvm_clock: bool = False
    ):
        self._events = MemberEvents(writer, lambda: (self.member_id, self.generation))
        self.echo = echo  # where unparsed JVM output goes (the member's log file)
        self.jvm_clock = jvm_clock  # stamp events with the JVM's time of writing (else: when read)
        wall, mono = now()
        self.clock_offset_ms = wall - mono
        self.jvm_wall_ms: float | None = None  # the JVM's clock at the line being translated
        self.cooperative = cooperative
        self.generation: int | None = None
        self.member_id: str | None = None
        self.leader_id: str | None = None  # from the JoinGroup response, for the next group_joined
        self.lost_next = False  # the next partitions_revoked is a loss
        self.record_offsets: dict[tuple[str, int], list[int]] = defaultdict(list)  # record_data since the last summary
        self.commit_started: float | None = None  # mono ms of the poll whose offsets the next commit carries
        self.commit_error: tuple[str, int | None] | None = None  # broker error logged for the pending commit
        self.auto_sent: dict[str, deque[float]] = defaultdict(deque)  # async auto-commit: offsets text -> sent at
        self.sync_auto: tuple[dict[tuple[str, int], int], dict[tuple[str, int], int], float] | None = None
        self.fatal_pending = False  # VerifiableConsumer logged that it terminates; its cause follows
        self.shutdown_complete = False

    @property
    def events(self) -> MemberEvents:
        """The member's events, stamped when the JVM wrote the line being translated (when known)."""
        if self.jvm_wall_ms is None:
            return self._events
        return self._events.at(self.jvm_wall_ms, self.mono(), JVM_CLOCK)

    def mono(self) -> float:
        """Monotonic ms of the line being translated: when the JVM wrote it, or when we read it."""
        return self.jvm_wall_ms - self.clock_offset_ms if self.jvm_wall_ms is not None else now()[1]

    def line(self, text: str) -> None:
        if text.startswith("{"):
            try:
                event = json.loads(text)
            except ValueError:
                self.echo(text)
                return
            if self.jvm_clock and "timestamp" in event:
                self.jvm_wall_ms = float(event["timestamp"])
            self.json_event(event, text)
        elif text.startswith(LOG_MARK):
            text = text[len(LOG_MARK) :]
            if m := _LOG_DATE.match(text):
                text = m["rest"]
                if self.jvm_clock:
                    self.jvm_wall_ms = datetime.strptime(m["date"], "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000.0
            level, logger, message = (text.split(" ", 2) + ["", ""])[:3]
            self.log_line(level, logger, _CONTEXT.sub("", message))
        else:
            self.continuation(text)

    # --- JSON events -----------------------------------------------------------------

    def json_event(self, event: dict, text: str = "") -> None:
        name = event.get("name")  # VerifiableConsumer's names, not the history's (some are spelt alike)
        if name == "record_data":
            m = _RECORD.search(text)  # hot path: no need to parse the record's value
            key = (m["topic"], int(m["partition"])) if m else (event["topic"], event["partition"])
            self.record_offsets[key].append(int(m["offset"]) if m else event["offset"])
        elif name == "records_consumed":
            self.records_consumed(event)
        elif name == "partitions_assigned":
            self.events.partitions_assigned(_partitions(event["partitions"]), incremental=self.cooperative)
        elif name == "partitions_revoked":
            lost, self.lost_next = self.lost_next, False
            gone = self.events.partitions_lost if lost else self.events.partitions_revoked
            gone(_partitions(event["partitions"]), incremental=self.cooperative)
        elif name == "offsets_committed":
            self.offsets_committed(event)
        elif name in ("startup_complete", "shutdown_complete"):
            self.shutdown_complete = name == "shutdown_complete"
            self.echo(text)

    def records_consumed(self, event: dict) -> None:
        """One poll's summary. The ranges come from its record_data lines; a summary
        whose count disagrees with them is reported, never silently trusted."""
        offsets, self.record_offsets = self.record_offsets, defaultdict(list)
        for part in event["partitions"]:
            key = (part["topic"], part["partition"])
            if key not in offsets and part["count"] == part["maxOffset"] - part["minOffset"] + 1:
                offsets[key] = list(range(part["minOffset"], part["maxOffset"] + 1))  # run without --verbose
            elif len(offsets.get(key, ())) != part["count"]:
                self.events.client_log(
                    "WARN",
                    f"records_consumed summary {part} does not match {len(offsets.get(key, ()))} record_data lines",
                )
        self.commit_started = self.mono()  # VerifiableConsumer commits right after printing this
        if offsets:
            self.events.records_consumed(offsets)

    def offsets_committed(self, event: dict) -> None:
        offsets = {(o["topic"], o["partition"]): o["offset"] for o in event["offsets"]}
        if event["success"] and not offsets:
            return  # an empty poll's empty commit
        self._emit_commit(
            offsets, None if event["success"] else event.get("error") or "?", "after-processing", self.commit_started
        )

    def _emit_commit(
        self, offsets: dict[tuple[str, int], int], error: str | None, trigger: str, started: float | None
    ) -> None:
        name, code = self._commit_error(error) if error else (None, None)
        if not error:
            self.commit_error = None
        self.events.offsets_committed(
            sorted(offsets.items()),
            trigger=trigger,
            started_mono_ms=started,
            error=name,
            error_code=code,
            error_message=error,
        )

    def _commit_error(self, message: str) -> tuple[str, int | None]:
        """Name a failed commit: a failure raised before any request is sent names its
        exception; one that answers a request takes the broker error the client logged
        for it (Errors name and code), else the error its message names, else its exception."""
        local = next((exc for prefix, exc in _LOCAL_COMMIT_FAILURES if message.startswith(prefix)), None)
        if local:
            return local, None
        broker_error, self.commit_error = self.commit_error, None
        name, code = broker_error or kafka_error(message)
        if name:
            return name, code
        return next((exc for prefix, exc in _COMMIT_EXCEPTIONS if message.startswith(prefix)), "KafkaException"), None

    # --- the client's log --------------------------------------------------------------

    def log_line(self, level: str, logger: str, m: str) -> None:
        handled = True
        if m == "(Re-)joining group":
            self.events.group_join_sent()
        elif m.startswith("Received successful JoinGroup response") and (leader := _LEADER.search(m)):
            self.leader_id = leader["leader"]
        elif m.startswith("Successfully joined group with generation") and (g := _GENERATION.search(m)):
            self.generation, self.member_id = int(g["gen"]), g["member"]
            leader, self.leader_id = self.leader_id, None
            self.events.group_joined(
                generation=self.generation,
                member_id=self.member_id,
                leader_id=leader,
                is_leader=leader == self.member_id if leader else None,
                protocol_name=g["proto"],
            )
        elif m.startswith("JoinGroup failed"):
            self.events.group_join_failed(kafka_error(m)[0] or m[:300])
        elif m.startswith("Successfully synced group in generation") and (g := _GENERATION.search(m)):
            self.events.group_synced(generation=int(g["gen"]))
        elif m.startswith("SyncGroup failed"):
            self.events.group_sync_failed(kafka_error(m)[0] or m[:300])
        elif hb := _HEARTBEAT_FAILED.search(m):
            self.events.heartbeat_failed(hb["err"])
        elif m.startswith("Attempt to heartbeat failed since coordinator"):
            self.events.heartbeat_failed(m)
        elif m.startswith("Request joining group due to: "):
            reason = m.split(": ", 1)[1]
            if reason == "group is already rebalancing":  # a heartbeat answered REBALANCE_IN_PROGRESS
                self.events.heartbeat_failed("REBALANCE_IN_PROGRESS")
            if reason != _LEAVING:
                self.events.rebalance_started(reason, "COOPERATIVE" if self.cooperative else "EAGER")
        elif m.startswith("Lost previously assigned partitions"):
            self.lost_next = True
        elif c := _COMMIT_FAILED.search(m):
            name, code = kafka_error(c["msg"])
            self.commit_error = (name, code) if name else self.commit_error
        elif m.startswith("OffsetCommit failed") and "fenced" in m:
            self.commit_error = ("FENCED_INSTANCE_ID", 82)
        elif a := _AUTO_COMMIT.match(m):
            self.auto_commit(a["what"], a["map"], (a["tail"] or "").removeprefix(" failed").lstrip(": ") or None)
        elif c := _COMMITTED.match(m):
            self.partition_committed((c["topic"], int(c["partition"])), int(c["offset"]))
        elif logger == "VerifiableConsumer" and level == "ERROR":
            self.fatal_pending = True
        else:
            handled = False
        if level in ("WARN", "ERROR", "FATAL") and not handled:
            self.events.client_log(level, m[:500])
        if not handled and (level != "DEBUG" or os.environ.get("RL_JAVA_DEBUG")):
            self.echo(f"{level} {logger} {m}")

    def continuation(self, text: str) -> None:
        """A line that is neither JSON nor a log line: a stack trace, a multi-line message."""
        if self.fatal_pending and text.strip():
            self.fatal_pending = False
            exception, _, message = text.strip().partition(": ")
            name = exception.rsplit(".", 1)[-1]
            self.events.consumer_error(
                error=name, error_code=kafka_error(message)[1], fatal=True, message=message[:500]
            )
        self.echo(text)

    # --- auto-commit (enable.auto.commit: VerifiableConsumer prints no event for it) ---

    def auto_commit(self, what: str, text: str, error: str | None) -> None:
        """Kafka's auto-commit lines: asynchronous ones while polling (sent, then completed
        or failed), synchronous ones before a rebalance or at close (sent, then each
        partition's "Committed offset", or failed)."""
        offsets = _offsets(text)
        if not offsets:
            return
        mono = self.mono()
        if what == "Sending asynchronous":
            self.auto_sent[text].append(mono)
        elif what in ("Completed asynchronous", "Asynchronous"):
            sent_at = self.auto_sent[text]
            self._emit_commit(
                offsets, error if what == "Asynchronous" else None, "auto", sent_at.popleft() if sent_at else None
            )
        elif what == "Sending synchronous":
            self.sync_auto = (offsets, dict(offsets), mono)
        elif self.sync_auto:  # the synchronous one failed, timed out or was interrupted
            sent, _, started = self.sync_auto
            self.sync_auto = None
            self._emit_commit(sent, error, "auto", started)

    def partition_committed(self, key: tuple[str, int], offset: int) -> None:
        if not self.sync_auto:
            return  # sync commit mode: VerifiableConsumer prints offsets_committed itself
        sent, waiting, started = self.sync_auto
        if waiting.get(key) == offset:
            del waiting[key]
        if not waiting:  # every partition of the synchronous auto-commit answered
            self.sync_auto = None
            self._emit_commit(sent, None, "auto", started)


# --------------------------------------------------------------------- the member


def _die_with_parent() -> None:
    """In the JVM child: SIGKILL if the wrapper dies, so no JVM outlives its member
    (PR_SET_PDEATHSIG; the harness kills the whole group anyway)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


class JavaMember(Driver):
    """The wrapper of one VerifiableConsumer JVM. It cannot stall the JVM's poll loop: a poll-stall
    command is answered with a warning."""

    Settings = JavaSettings
    takes_client_config = False  # VerifiableConsumer reads its settings from a file
    needs_kafka_tools = True
    client_distribution = "kafka-clients"  # a release's tools and client (JavaSettings.kafka_tools)
    one_topic_by_name = True  # its --topic
    commits_before_processing = False  # it commits what it has consumed, after
    request_timeout_ms = 30_000  # the Java consumer's request.timeout.ms

    @classmethod
    def answer_timeout_ms(
        cls, api: str, session_timeout_ms: int, max_poll_interval_ms: int, heartbeat_interval_ms: int
    ) -> int:
        """The Java consumer waits request.timeout.ms for every answer but a JoinGroup's, which the
        coordinator may hold a whole round: the rebalance timeout plus 5 s (AbstractCoordinator)."""
        if api == "JoinGroup":
            return max(cls.request_timeout_ms, max_poll_interval_ms + 5_000)
        return cls.request_timeout_ms

    def __init__(self, spec: MemberSpec[JavaSettings], stop: threading.Event):
        self.spec = spec
        self.stop = stop
        self.translator = Translator(member_writer(spec, driver="java"), spec.cooperative, self._echo, jvm_clock=True)
        self.command_pending = threading.Event()

    @property
    def events(self) -> MemberEvents:
        return self.translator.events

    @staticmethod
    def _echo(text: str) -> None:
        wall, _ = now()
        stamp = time.strftime("%H:%M:%S", time.localtime(wall / 1000)) + f".{int(wall % 1000):03d}"
        sys.stdout.write(f"{stamp} {text}\n")
        sys.stdout.flush()

    def run(self) -> int:
        s, t, stop = self.spec, self.translator, self.stop
        reasons, error, classpath = unsupported(s), "UNSUPPORTED", None
        if not reasons:
            try:
                classpath = kafka_tools(s)
            except SetupError as e:
                reasons, error = [str(e)], "NOT_INSTALLED"
        config_dir = Path(s.control_file).parent if s.control_file else Path(tempfile.mkdtemp(prefix="rl-java-"))
        jvm = None
        if not reasons:
            jvm = subprocess.Popen(
                command(s, classpath, config_dir),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        t.events.consumer_started(
            pid=os.getpid(),
            jvm_pid=jvm.pid if jvm else None,
            group=s.group,
            protocol=s.protocol,
            assignor=s.assignor,
            group_instance_id=s.group_instance_id,
            commit_mode=s.commit,
            session_timeout_ms=s.session_timeout_ms,
            max_poll_interval_ms=s.max_poll_interval_ms,
            processing_ms_ignored=s.processing_ms or None,
            subscription=s.subscription_record,
            client_rack=s.client_rack,
            client_library="kafka-clients",
            client_version=client_release(classpath),
        )
        if jvm is None:
            t.events.consumer_error(error=error, error_code=None, fatal=True, message="; ".join(reasons))
            t.events.consumer_stopped("error")
            return 2
        threading.Thread(target=self._stop_jvm, args=(stop, jvm), daemon=True).start()
        for raw in jvm.stdout:
            t.line(raw.decode("utf-8", "replace").rstrip("\r\n"))
            if self.command_pending.is_set():
                self._refuse_command()
        jvm.wait()
        stopped = stop.is_set()
        t.events.consumer_stopped("end-of-run" if stopped else "error")
        return 0 if stopped and t.shutdown_complete else 1

    @staticmethod
    def _stop_jvm(stop: threading.Event, jvm: subprocess.Popen) -> None:
        """On our SIGTERM, SIGTERM the JVM: its shutdown hook closes the consumer (revoke,
        LeaveGroup) and prints shutdown_complete. A JVM that hangs is killed."""
        stop.wait()
        if jvm.poll() is None:
            jvm.send_signal(signal.SIGTERM)
        try:
            jvm.wait(CLOSE_GRACE_S)
        except subprocess.TimeoutExpired:
            jvm.kill()

    def _refuse_command(self) -> None:
        self.command_pending.clear()
        command = read_command(self.spec.control_file)
        command_text = json.dumps(command) if command else "?"
        self.events.client_log(
            "WARN", f"java driver: VerifiableConsumer cannot stall its poll loop; ignored {command_text}"
        )


main = JavaMember.main


if __name__ == "__main__":
    sys.exit(main(sys.argv))
