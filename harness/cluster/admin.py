"""What the harness asks of a running cluster through Kafka's own Admin API — readiness,
topics, partitions — whichever backend brought the brokers up."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from runtime.errors import AuthenticationFailed, ClusterError
from runtime.logs import QUIET_CLIENT_LOG
from runtime.secrets import redact_text


@dataclass
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int | None = None  # None: min(3, brokers)
    config: dict = field(default_factory=dict)


class ClusterAdmin:
    def __init__(
        self, bootstrap_servers: str, broker_ids: list[int], logs_hint: str, client_settings: dict | None = None
    ):
        self.bootstrap_servers = bootstrap_servers
        self.broker_ids = set(broker_ids)  # empty: whichever brokers the cluster has (an external one)
        self.logs_hint = logs_hint  # where to look when the cluster does not come up
        self.client_settings = dict(client_settings or {})  # an external cluster's security settings
        self.brokers_seen = 0
        self.auth_error: str | None = None  # the cluster refused the credentials (librdkafka's _AUTHENTICATION)

    def client(self, bootstrap_servers: str | None = None):
        from confluent_kafka.admin import AdminClient

        # Connection errors while brokers start or crash are expected; keep them off the terminal.
        return AdminClient(
            {
                **self.client_settings,
                "bootstrap.servers": bootstrap_servers or self.bootstrap_servers,
                "socket.connection.setup.timeout.ms": 3000,
                "logger": QUIET_CLIENT_LOG,
                "error_cb": self._on_error,
            }
        )

    def _on_error(self, error) -> None:
        from confluent_kafka import KafkaError

        if error.code() == KafkaError._AUTHENTICATION and self.auth_error is None:
            self.auth_error = error.str()

    def check_authenticated(self, admin=None) -> None:
        """Raise AuthenticationFailed (bad input, exit 2) once the cluster has refused the credentials."""
        if admin is not None:
            admin.poll(0)  # serves error_cb
        if self.auth_error is not None:
            raise AuthenticationFailed(
                f"{self.logs_hint} refused the client settings' credentials: "
                f"{redact_text(self.auth_error)} (check cluster.client_config / --client-config)"
            )

    def wait_ready(self, timeout: float, check_alive: Callable[[], None] = lambda: None) -> None:
        """Ready: every broker registered and listed in metadata, and a controller known."""
        from confluent_kafka import KafkaError, KafkaException

        deadline = time.monotonic() + timeout
        admin = self.client()
        seen: set[int] = set()
        while time.monotonic() < deadline:
            check_alive()
            self.check_authenticated(admin)
            try:
                md = admin.list_topics(timeout=2)
                seen = set(md.brokers)
                if seen and seen >= self.broker_ids and md.controller_id >= 0:
                    self.brokers_seen = len(seen)
                    return
            except KafkaException as e:
                if e.args and e.args[0].code() == KafkaError._AUTHENTICATION and self.auth_error is None:
                    self.auth_error = e.args[0].str()
            self.check_authenticated(admin)
            time.sleep(0.25)
        raise ClusterError(
            f"brokers not ready after {timeout:.0f}s: metadata lists {sorted(seen)} "
            f"of {sorted(self.broker_ids)}; logs in {self.logs_hint}"
        )

    def create_topics(self, topics: list[TopicSpec], timeout: float = 60.0) -> None:
        """Create topics and wait until every partition has a leader."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import NewTopic

        if not topics:
            return
        deadline = time.monotonic() + timeout
        pending = list(topics)
        while pending:
            # On a busy machine a client may not learn the controller from its first metadata
            # ("Failed while waiting for controller") and keep waiting on it: a retriable
            # error is tried again, with a fresh client, until the deadline.
            admin = self.client()  # referenced until its futures are read ("handle destroyed" otherwise)
            futures = admin.create_topics(
                [
                    NewTopic(
                        t.name,
                        t.partitions,
                        t.replication_factor or min(3, len(self.broker_ids) or self.brokers_seen),
                        config=dict(t.config),
                    )
                    for t in pending
                ],
                operation_timeout=30,
                request_timeout=max(5.0, min(15.0, deadline - time.monotonic())),
            )
            by_name = {t.name: t for t in pending}
            retry = []
            for name, fut in futures.items():
                topic = by_name[name]
                try:
                    fut.result()
                except KafkaException as e:
                    error = e.args[0]
                    if error.name() == "TOPIC_ALREADY_EXISTS":
                        continue
                    if not (error.retriable() or error.code() == KafkaError._TIMED_OUT) or time.monotonic() >= deadline:
                        raise ClusterError(f"creating topic {topic.name} failed: {error.str()}") from None
                    retry.append(topic)
            if retry:
                time.sleep(1)
            pending = retry
        self.wait_leaders(topics, max(10.0, deadline - time.monotonic()))

    def add_partitions(self, topic: str, total: int, timeout: float = 60.0) -> None:
        """Grow a topic to ``total`` partitions and wait until every one has a leader."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewPartitions

        admin = self.client()  # keep a reference: a collected client fails its futures ("handle destroyed")
        try:
            admin.create_partitions([NewPartitions(topic, total)], operation_timeout=30)[topic].result()
        except KafkaException as e:
            raise ClusterError(f"adding partitions to {topic} failed: {e.args[0].str()}") from None
        self.wait_leaders([TopicSpec(topic, total)], timeout)

    def delete_topics(self, names: list[str], timeout: float = 30.0) -> list[str]:
        """Delete topics (gone already counts as deleted); what could not be deleted, with why."""
        from confluent_kafka import KafkaException

        if not names:
            return []
        admin = self.client()
        failed = []
        for name, fut in admin.delete_topics(names, operation_timeout=timeout, request_timeout=timeout).items():
            try:
                fut.result()
            except KafkaException as e:
                if e.args[0].name() != "UNKNOWN_TOPIC_OR_PART":
                    failed.append(f"topic {name}: {e.args[0].str()}")
        return failed

    def delete_group(self, group: str, timeout: float = 30.0) -> list[str]:
        """Delete a consumer group once its members have left (NON_EMPTY_GROUP is retried until
        the coordinator has seen them go); what could not be deleted, with why."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + timeout
        while True:
            admin = self.client()
            try:
                admin.delete_consumer_groups([group], request_timeout=max(1.0, deadline - time.monotonic()))[
                    group
                ].result()
                return []
            except KafkaException as e:
                error = e.args[0]
                if error.name() == "GROUP_ID_NOT_FOUND":
                    return []
                if time.monotonic() >= deadline or error.name() not in (
                    "NON_EMPTY_GROUP",
                    "COORDINATOR_NOT_AVAILABLE",
                    "NOT_COORDINATOR",
                    "COORDINATOR_LOAD_IN_PROGRESS",
                ):
                    return [f"group {group}: {error.str()}"]
            time.sleep(0.5)

    def wait_every_broker_knows(
        self, broker_addresses: dict[str, str], topics: list[TopicSpec], deadline: float
    ) -> None:
        """Each broker's own metadata cache (ZooKeeper mode: filled by the controller's
        UpdateMetadata, which may lag) lists every broker, the controller and every
        partition's leader — whichever broker a client asks first gives the whole picture."""
        from confluent_kafka import KafkaException

        def complete(address: str) -> bool:
            # A client that knows only this broker sends its first metadata request there.
            try:
                md = self.client(address).list_topics(timeout=2)
            except KafkaException:
                return False
            return set(md.brokers) >= self.broker_ids and md.controller_id >= 0 and led(md, topics)

        waiting = dict(broker_addresses)
        while waiting and time.monotonic() < deadline:
            waiting = {name: address for name, address in waiting.items() if not complete(address)}
            if waiting:
                time.sleep(0.25)
        if waiting:
            raise ClusterError(
                f"{', '.join(sorted(waiting))}: metadata still incomplete at the start deadline; "
                f"logs in {self.logs_hint}"
            )

    def health_problems(self, timeout: float) -> list[str]:
        """What keeps the cluster from being as good as new, waited out for up to ``timeout``:
        a broker missing from metadata, no controller, a partition of any topic (the internal
        ones included) without a leader or with a replica out of sync. [] when healthy."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + timeout
        admin = self.client()
        while True:
            try:
                md = admin.list_topics(timeout=5)
                problems = (
                    [f"brokers {sorted(self.broker_ids - set(md.brokers))} missing from metadata"]
                    if not set(md.brokers) >= self.broker_ids
                    else []
                )
                problems += ["no controller"] if md.controller_id < 0 else []
                for topic in md.topics.values():
                    problems += [
                        f"{topic.topic}-{p.id}: "
                        + (
                            "no leader"
                            if p.leader < 0
                            else f"in-sync replicas {sorted(p.isrs)} of {sorted(p.replicas)}"
                        )
                        for p in topic.partitions.values()
                        if p.leader < 0 or set(p.isrs) != set(p.replicas)
                    ]
            except KafkaException as e:
                problems = [f"metadata request failed: {e.args[0].str()}"]
            if not problems or time.monotonic() >= deadline:
                return problems[:5] + ([f"… {len(problems) - 5} more"] if len(problems) > 5 else [])
            time.sleep(0.5)

    def wait_leaders(self, topics: list[TopicSpec], timeout: float) -> None:
        admin = self.client()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if led(admin.list_topics(timeout=5), topics):
                return
            time.sleep(0.25)
        raise ClusterError(f"topics {[t.name for t in topics]} have no leader for every partition after {timeout:.0f}s")


def led(md, topics: list[TopicSpec]) -> bool:
    """The metadata has every topic with all its partitions, each with a leader."""
    return all(
        t.name in md.topics
        and len(md.topics[t.name].partitions) == t.partitions
        and all(p.leader >= 0 for p in md.topics[t.name].partitions.values())
        for t in topics
    )
