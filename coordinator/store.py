"""Group metadata and offsets in ZooKeeper, written only by the current leader.

Fencing: taking over bumps ``/…/epoch``; every later write is a transaction that
also checks the epoch node still has the version this leader gave it. A leader
that was paused, expired or cut off — and does not know it yet — cannot write:
its transaction fails and it answers NOT_COORDINATOR (``NotLeader``).
"""

from __future__ import annotations

import json

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError

from .group import NotLeader

ROOT = "/rebalance-lab/coordinator"
BROKER_TOPICS = "/brokers/topics"  # written by the brokers (ZooKeeper mode)


class GroupStore:
    def __init__(self, zk: KazooClient, root: str = ROOT):
        self.zk = zk
        self.root = root
        self.epoch_version: int | None = None

    @property
    def epoch_path(self) -> str:
        return f"{self.root}/epoch"

    def group_path(self, group: str) -> str:
        return f"{self.root}/groups/{group}"

    def offset_path(self, group: str, topic: str, partition: int) -> str:
        return f"{self.group_path(group)}/offsets/{topic}/{partition}"

    # --------------------------------------------------------------- taking over

    def take_over(self, instance: str) -> int:
        """Bump the leader epoch: from now on the previous leader's writes fail."""
        self.zk.ensure_path(f"{self.root}/groups")
        try:
            self.zk.create(self.epoch_path, b"", makepath=True)
        except NodeExistsError:
            pass
        stat = self.zk.set(self.epoch_path, json.dumps({"leader": instance}).encode())
        self.epoch_version = stat.version
        return stat.version

    def load(self) -> dict[str, tuple[dict, dict[tuple[str, int], int]]]:
        """Every group's metadata and committed offsets."""
        groups = {}
        for group in self.zk.get_children(f"{self.root}/groups"):
            data, _ = self.zk.get(self.group_path(group))
            if not data:
                continue
            offsets = {}
            base = f"{self.group_path(group)}/offsets"
            for topic in self._children(base):
                for partition in self._children(f"{base}/{topic}"):
                    value, _ = self.zk.get(f"{base}/{topic}/{partition}")
                    offsets[(topic, int(partition))] = json.loads(value)["offset"]
            groups[group] = (json.loads(data), offsets)
        return groups

    def _children(self, path: str) -> list[str]:
        try:
            return self.zk.get_children(path)
        except NoNodeError:
            return []

    # --------------------------------------------------------------- fenced writes

    def save_group(self, snapshot: dict) -> None:
        path = self.group_path(snapshot["group"])
        self._write({path: json.dumps(snapshot, sort_keys=True).encode()})

    def save_offsets(self, group: str, member_id: str, generation: int, offsets: list[dict]) -> None:
        self._write(
            {
                self.offset_path(group, o["topic"], int(o["partition"])): json.dumps(
                    {"offset": int(o["offset"]), "member_id": member_id, "generation": generation}
                ).encode()
                for o in offsets
            }
        )

    def _write(self, values: dict[str, bytes]) -> None:
        """One transaction: the epoch check, then set (or create) every node."""
        if self.epoch_version is None:
            raise NotLeader("this instance never took over")
        try:
            missing = [path for path in values if self.zk.exists(path) is None]
            for path in missing:
                parent = path.rsplit("/", 1)[0]
                self.zk.ensure_path(parent)
            tx = self.zk.transaction()
            tx.check(self.epoch_path, self.epoch_version)
            for path, value in values.items():
                if path in missing:
                    tx.create(path, value)
                else:
                    tx.set_data(path, value)
            results = tx.commit()
        except KazooException as e:  # connection loss, expired session: not a leader we can trust
            raise NotLeader(f"ZooKeeper write failed: {type(e).__name__}") from e
        failures = [r for r in results if isinstance(r, Exception)]
        if failures:
            raise NotLeader(f"fenced: the leader epoch moved on ({type(failures[0]).__name__})")

    # --------------------------------------------------------------- the brokers' metadata

    def partition_counts(self, topics: list[str]) -> dict[str, int]:
        """Topic -> partitions, as the brokers registered them (topics not created yet are left out)."""
        counts = {}
        for topic in topics:
            try:
                data, _ = self.zk.get(f"{BROKER_TOPICS}/{topic}")
            except NoNodeError:
                continue
            counts[topic] = len(json.loads(data)["partitions"])
        return counts
