"""The harness's own view of the group while a run goes: lag and group state.

It runs as a separate process (``python -m workloads.observer SPEC.json``) because
librdkafka's coordinator-bound admin calls (DescribeConsumerGroups) can abort the
calling process when a broker connection drops mid-request (librdkafka issue #4605)
— exactly what chaos runs do. The supervisor restarts it if it dies; the harness
itself never links those calls. Committed offsets are read through a consumer handle
of the group, not the admin API: librdkafka's ListConsumerGroupOffsets dereferences
the consumer-group state an admin client does not have when the broker answers
NOT_COORDINATOR (a segfault; the group's coordinator still loading on a fresh
cluster, or moving; librdkafka issue #5040, still in 2.16). A consumer that never
subscribes never joins the group.

Every sample goes into the history (``lag_sampled``, ``group_described``), so
what the harness saw when it declared the group stable or drained is on record
for the oracle, and a small status file tells the harness the latest view
(read by ``ObserverStatus``, kept here beside the writer of that file).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from oracle import vocabulary as ev
from runtime.child import read_spec, stop_on_signals
from runtime.history import HistoryWriter, now
from runtime.logs import QUIET_CLIENT_LOG
from runtime.zookeeper import QUIET_ZK_LOG

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
    # Members subscribed to different topics: a JSON file of member name -> its topics, which the
    # harness writes as it starts members. A topic counts only where some member subscribes to it.
    subscriptions_file: str | None = None
    interval_s: float = 1.0
    zookeeper_connect: str | None = None  # zk-eager: the group lives in ZooKeeper, the brokers know nothing of it
    coordinators: dict[str, str] | None = None  # coordinator-v*: instance -> address; the group lives there
    # cluster.client_config of an external cluster (security settings): under the harness's own keys
    client_settings: dict = field(default_factory=dict)
    # Kafka 3.7's unstable ConsumerGroupDescribe: the group is described with its schema, by the observer
    # itself (workloads/group_describe.py); the release catalogue says where (KafkaRelease).
    describe_by_own_request: bool = False
    incarnation: int = 1  # the supervisor restarts it: each life writes the history as a writer of its own


class GroupObserver:
    def __init__(self, spec: ObserverSpec):
        from confluent_kafka.admin import AdminClient

        self.spec = spec
        self.partitions: list[tuple[str, int]] = []
        self.settings = {
            **spec.client_settings,
            "bootstrap.servers": spec.bootstrap_servers,
            "logger": QUIET_CLIENT_LOG,
            "socket.connection.setup.timeout.ms": 3000,
        }
        self.admin = AdminClient(self.settings)
        self._offsets = None  # the consumer handle committed() reads through, made at its first call
        self._topic_names: dict[tuple[int, int], str] = {}  # topic id -> name (Kafka 3.7's describe: ids only)

    def refresh_partitions(self) -> None:
        """The group's partitions as of now: partitions and topics may be added mid-run."""
        topics = self.admin.list_topics(timeout=REQUEST_TIMEOUT_S).topics
        pattern = re.compile(self.spec.topic_pattern) if self.spec.topic_pattern else None
        self.partitions = sorted(
            (name, p)
            for name, md in topics.items()
            if (pattern.match(name) if pattern else name in self.spec.topics)
            for p in md.partitions
        )

    def wanted(self, clients: Iterable[str]) -> set[tuple[str, int]]:
        """The partitions the group must cover with these members (client ids = member names): all,
        unless members subscribe to different topics — then those of a topic one of them subscribes to."""
        subscribed = self.subscriptions()
        if subscribed is None:
            return set(self.partitions)
        topics: set[str] = set()
        for client in clients:
            if client not in subscribed:  # not told of it (yet): it may subscribe to any
                return set(self.partitions)
            topics.update(subscribed[client])
        return {(t, p) for t, p in self.partitions if t in topics}

    def subscriptions(self) -> dict[str, list[str]] | None:
        """Member name -> its topics, as the harness last wrote them; None: every member subscribes alike."""
        if not self.spec.subscriptions_file:
            return None
        try:
            return json.loads(Path(self.spec.subscriptions_file).read_text())
        except (OSError, ValueError):
            return None

    def lag(self) -> list[dict]:
        """Committed offset, high watermark and lag of every partition."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        self.refresh_partitions()
        tps = [TopicPartition(t, p) for t, p in self.partitions]
        committed = self.committed(tps)
        latest = self.admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, request_timeout=REQUEST_TIMEOUT_S)
        rows = []
        for tp, f in latest.items():
            hw = f.result(REQUEST_TIMEOUT_S).offset
            if hw < 0:
                raise LookupError(f"no high watermark for {tp.topic}-{tp.partition} (leader unavailable)")
            c = committed.get((tp.topic, tp.partition))
            c = c if c is not None and c >= 0 else None
            rows.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "committed": c,
                    "high_watermark": hw,
                    "lag": hw - (c or 0),
                }
            )
        return sorted(rows, key=lambda r: (r["topic"], r["partition"]))

    def committed(self, tps) -> dict[tuple[str, int], int | None]:
        from confluent_kafka import Consumer

        if self._offsets is None:
            self._offsets = Consumer({**self.settings, "group.id": self.spec.group, "enable.auto.commit": False})
        return {(tp.topic, tp.partition): tp.offset for tp in self._offsets.committed(tps, timeout=REQUEST_TIMEOUT_S)}

    def close(self) -> None:
        if self._offsets is not None:
            self._offsets.close()

    def describe(self) -> dict:
        if not self.partitions:
            self.refresh_partitions()
        if self.spec.describe_by_own_request:
            return self._describe_early_access()
        fut = self.admin.describe_consumer_groups([self.spec.group], request_timeout=REQUEST_TIMEOUT_S)[self.spec.group]
        d = fut.result(REQUEST_TIMEOUT_S)
        members = {
            m.client_id + "/" + m.member_id: sorted(
                [tp.topic, tp.partition] for tp in (m.assignment.topic_partitions or [])
            )
            for m in d.members
        }
        assigned = {tuple(tp) for tps in members.values() for tp in tps}
        return {
            "state": d.state.name,
            "coordinator": d.coordinator.id if d.coordinator else None,
            "members": members,
            "covers_all": assigned >= self.wanted(m.client_id for m in d.members),
        }

    def _describe_early_access(self) -> dict:
        from workloads.group_describe import describe_37

        d = describe_37(self.spec.bootstrap_servers, self.spec.group, REQUEST_TIMEOUT_S)
        ids = {topic_id for m in d.members for topic_id, _ in m.assignment}
        if not ids <= self._topic_names.keys():  # 3.7 names assigned topics by id only
            self._topic_names = self._topic_ids()
        members = {
            f"{m.client_id}/{m.member_id}": sorted([self._topic_names.get(t, ""), p] for t, p in m.assignment)
            for m in d.members
        }
        assigned = {tuple(tp) for tps in members.values() for tp in tps}
        return {
            "state": d.state.upper(),  # "stable" -> "STABLE", as the admin client names the states
            "coordinator": d.coordinator,
            "members": members,
            "covers_all": assigned >= self.wanted(m.client_id for m in d.members),
        }

    def _topic_ids(self) -> dict[tuple[int, int], str]:
        from confluent_kafka import TopicCollection

        topics = sorted({t for t, _ in self.partitions})
        described = self.admin.describe_topics(TopicCollection(topics), request_timeout=REQUEST_TIMEOUT_S)
        return {
            (d.topic_id.get_most_significant_bits(), d.topic_id.get_least_significant_bits()): d.name
            for d in (f.result(REQUEST_TIMEOUT_S) for f in described.values())
        }


class ZooKeeperGroupObserver(GroupObserver):
    """A zk-eager group (the 0.8 consumer): members, owners and offsets are znodes. High
    watermarks still come from the brokers. ZooKeeper is read directly, never through a proxy."""

    def __init__(self, spec: ObserverSpec):
        from kazoo.client import KazooClient

        from workloads.zk_eager.layout import GroupPaths

        super().__init__(spec)
        self.paths = GroupPaths(spec.group)
        self.zk = KazooClient(hosts=spec.zookeeper_connect, timeout=10, logger=QUIET_ZK_LOG)
        self.zk.start(timeout=REQUEST_TIMEOUT_S)

    def close(self) -> None:
        super().close()
        self.zk.stop()
        self.zk.close()

    def _get(self, path: str) -> str | None:
        from kazoo.exceptions import NoNodeError

        try:
            return self.zk.get(path)[0].decode()
        except NoNodeError:
            return None

    def committed(self, tps) -> dict[tuple[str, int], int | None]:
        offsets = {(tp.topic, tp.partition): self._get(self.paths.offset(tp.topic, tp.partition)) for tp in tps}
        return {key: int(o) if o is not None else None for key, o in offsets.items()}

    def describe(self) -> dict:
        """STABLE once every partition is owned by the thread the range assignment over the
        registered consumers gives it: every consumer has finished its own rebalance."""
        from kazoo.exceptions import NoNodeError

        from workloads.zk_eager.assignment import range_assignment
        from workloads.zk_eager.layout import thread_ids

        if not self.partitions:
            self.refresh_partitions()
        try:
            consumers = sorted(self.zk.get_children(self.paths.ids))
        except NoNodeError:
            consumers = []
        owners = {(t, p): o for t, p in self.partitions if (o := self._get(self.paths.owner(t, p))) is not None}
        threads = [t for c in consumers for t in thread_ids(c)]

        def client(consumer_id: str) -> str:  # its member name
            return consumer_id.rsplit("-", 1)[0]

        def key(consumer_id: str) -> str:  # "client-id/member-id" like the brokers' view
            return f"{client(consumer_id)}/{consumer_id}"

        subscribed = self.subscriptions() or {}
        expected = {}
        for topic in sorted({t for t, _ in self.partitions}):
            # the 0.8 consumer: per topic, over the threads of the consumers subscribed to it
            mine = [t for t in threads if topic in subscribed.get(client(t.rsplit("-", 1)[0]), [topic])]
            share = range_assignment([p for t, p in self.partitions if t == topic], mine)
            expected.update({(topic, p): thread for thread, ps in share.items() for p in ps})

        members = {key(c): [] for c in consumers}
        for (t, p), thread in sorted(owners.items()):
            members.setdefault(key(thread.rsplit("-", 1)[0]), []).append([t, p])
        settled = bool(self.partitions) and owners == expected
        return {
            "state": "STABLE" if settled else "REBALANCING",
            "coordinator": None,
            "members": members,
            "covers_all": set(owners) >= self.wanted(client(c) for c in consumers),
        }


class ProjectCoordinatorObserver(GroupObserver):
    """A group of the project's coordinator: its leader instance answers DescribeGroup and
    OffsetFetch (asked directly, never through a member's proxy). High watermarks still
    come from the brokers."""

    def _ask(self, api: str, **fields) -> dict:
        from coordinator.protocol import Address, Connection, CoordinatorError

        for address in self.spec.coordinators.values():
            connection = Connection(Address.parse(address), connect_timeout_s=1.0)
            try:
                return connection.request(api, REQUEST_TIMEOUT_S, group=self.spec.group, **fields)
            except (ConnectionError, CoordinatorError):
                continue  # not the leader, paused, down: the next instance
            finally:
                connection.close()
        raise LookupError(f"no coordinator instance answered {api}")

    def committed(self, tps) -> dict[tuple[str, int], int | None]:
        answer = self._ask("OffsetFetch", partitions=[{"topic": tp.topic, "partition": tp.partition} for tp in tps])
        return {(o["topic"], o["partition"]): o["offset"] if o["offset"] >= 0 else None for o in answer["offsets"]}

    def describe(self) -> dict:
        if not self.partitions:
            self.refresh_partitions()
        leader = self._ask("FindCoordinator")["leader"]
        d = self._ask("DescribeGroup")
        members = {
            f"{m['client_id']}/{m['member_id']}": sorted([a["topic"], a["partition"]] for a in m["assignment"])
            for m in d["members"]
        }
        assigned = {tuple(tp) for tps in members.values() for tp in tps}
        return {
            "state": d["state"].upper() if d["state"] == "Stable" else d["state"],
            "coordinator": leader,
            "generation": d["generation_id"],
            "members": members,
            "covers_all": assigned >= self.wanted(m["client_id"] for m in d["members"]),
        }


def observer_for(spec: ObserverSpec) -> GroupObserver:
    if spec.coordinators:
        return ProjectCoordinatorObserver(spec)
    return ZooKeeperGroupObserver(spec) if spec.zookeeper_connect else GroupObserver(spec)


def _sample(observer: GroupObserver, spec: ObserverSpec, history: HistoryWriter, last_group: dict | None) -> dict:
    """One look at the group: its lag and its description into the history (the description
    only when it changed since `last_group`), and the status the harness reads."""
    status: dict = {}
    try:
        status["lag"] = observer.lag()
        history.emit(ev.LAG_SAMPLED, group=spec.group, partitions=status["lag"])
    except Exception as e:  # a broker down mid-fault: no sample this time
        status["lag_error"] = f"{type(e).__name__}: {e}"
    try:
        status["group"] = observer.describe()
        if status["group"] != last_group:  # only changes: the group view is bulky and mostly constant
            history.emit(ev.GROUP_DESCRIBED, group=spec.group, **status["group"])
    except Exception as e:
        status["group_error"] = f"{type(e).__name__}: {e}"
    status["mono_ms"] = now()[1]
    return status


def main(argv: list[str]) -> int:
    spec = read_spec(ObserverSpec, argv)
    stop = stop_on_signals()
    history = HistoryWriter(spec.history, "observer", incarnation=spec.incarnation)
    observer = observer_for(spec)
    last_group = None
    failures = 0
    try:
        while not stop.is_set():
            started = time.monotonic()
            status = _sample(observer, spec, history, last_group)
            last_group = status.get("group", last_group)
            # An admin client whose requests keep timing out after a broker died can stay
            # wedged on stale metadata; a fresh one re-bootstraps.
            failures = failures + 1 if ("lag_error" in status or "group_error" in status) else 0
            if failures >= 3:
                observer.close()
                observer, failures = observer_for(spec), 0
            tmp = spec.status_file + ".tmp"
            Path(tmp).write_text(json.dumps(status))
            os.replace(tmp, spec.status_file)
            stop.wait(max(0.0, spec.interval_s - (time.monotonic() - started)))
    finally:  # its consumer handle leaves cleanly, its ZooKeeper session ends now (or at exit)
        with contextlib.suppress(Exception):
            observer.close()
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

    def _stable_group(self) -> dict | None:
        group = (self._fresh() or {}).get("group")
        return group if group and group["state"] == "STABLE" and group["covers_all"] else None

    def is_stable(self) -> bool:
        """The broker says Stable, and the members' assignments cover every partition."""
        return self._stable_group() is not None

    def formed(self, members: Iterable[str], exactly: bool = False) -> bool:
        """Stable, and each of these members (client ids) is in it: the group the workload
        started has formed. ``exactly``: and no other member is — one that went without leaving
        the group (a static member stopped, a member killed) is in it until its session expires,
        and its partitions with it."""
        group = self._stable_group()
        if group is None:
            return False
        wanted, present = set(members), {key.split("/", 1)[0] for key in group["members"]}
        return wanted == present if exactly else wanted <= present

    def coordinator(self) -> int | str | None:
        """The broker id coordinating the group (or the project's coordinator instance), from a fresh sample."""
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
