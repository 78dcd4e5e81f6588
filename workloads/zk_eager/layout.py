"""Where a 0.8 consumer group keeps itself in ZooKeeper, and how its znodes read and write
(the original's layout: see the package's docstring)."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
THREADS_PER_CONSUMER = 1  # one consumer thread per process: thread "<consumer id>-0"


def thread_ids(consumer_id: str, count: int = THREADS_PER_CONSUMER) -> list[str]:
    return [f"{consumer_id}-{i}" for i in range(count)]


@dataclass(frozen=True)
class GroupPaths:
    """Where a 0.8 consumer group keeps itself in ZooKeeper."""

    group: str

    @property
    def ids(self) -> str:
        return f"/consumers/{self.group}/ids"

    def registration(self, consumer_id: str) -> str:
        return f"{self.ids}/{consumer_id}"

    def owners(self, topic: str) -> str:
        return f"/consumers/{self.group}/owners/{topic}"

    def owner(self, topic: str, partition: int) -> str:
        return f"{self.owners(topic)}/{partition}"

    def offset(self, topic: str, partition: int) -> str:
        return f"/consumers/{self.group}/offsets/{topic}/{partition}"


def registration_data(topics: list[str]) -> bytes:
    """The original's registration: a static subscription (topic -> thread count), or a
    whitelist regex (our pattern subscriptions, "^…")."""
    pattern = len(topics) == 1 and topics[0].startswith("^")
    return json.dumps(
        {
            "version": 1,
            "subscription": dict.fromkeys(topics, THREADS_PER_CONSUMER),
            "pattern": "white_list" if pattern else "static",
            "timestamp": str(int(time.time() * 1000)),
        }
    ).encode()


def subscribed_topics(registration: dict, existing: list[str]) -> dict[str, int]:
    """Topic -> thread count of one registered consumer, a whitelist expanded over ``existing``."""
    subscription = registration.get("subscription") or {}
    if registration.get("pattern") == "white_list":
        return {t: count for regex, count in subscription.items() for t in existing if re.match(regex, t)}
    return {t: int(count) for t, count in subscription.items()}


def partition_count(topic_data: bytes) -> int:
    """A broker-written /brokers/topics/<topic>: {"partitions": {"0": [replicas], …}, …}."""
    return len(json.loads(topic_data)["partitions"])


def read_offset(zk: KazooClient, path: str) -> int | None:
    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return None
    return int(data)


def write_offset(zk: KazooClient, path: str, offset: int) -> None:
    value = str(offset).encode()
    try:
        zk.set(path, value)
    except NoNodeError:
        try:
            zk.create(path, value, makepath=True)
        except NodeExistsError:  # another consumer created it in between: last writer wins
            zk.set(path, value)
