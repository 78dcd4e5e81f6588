"""The coordinator instance: a TCP server in front of the groups it leads.

Every request first asks whether this instance leads (see ``election``); the
groups are only in memory while it does, reloaded from ZooKeeper at each
takeover. One lock guards them; requests that wait for a rebalance (JoinGroup,
SyncGroup) wait outside it.
"""

from __future__ import annotations

import json
import socketserver
import threading
import time
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from oracle import vocabulary as ev
from runtime.history import HistoryWriter

from . import protocol as p
from .election import Leadership
from .group import Group, NotLeader, Variant
from .store import GroupStore

TICK_S = 0.05  # session expiry and join deadlines are this precise
REPLY_MARGIN_S = 10.0  # a waiting request gives up this long after its rebalance deadline at the latest


def _now_ms() -> float:
    return time.monotonic() * 1000.0


@dataclass(frozen=True)
class Instance:
    name: str
    host: str
    port: int

    def identity(self) -> dict:
        return {"name": self.name, "address": f"{self.host}:{self.port}"}


class Coordinator:
    def __init__(
        self,
        instance: Instance,
        variant: Variant,
        zk: KazooClient,
        history: HistoryWriter,
        session_timeout_s: float,
        watch_topics: bool,
    ):
        self.instance = instance
        self.variant = variant
        self.zk = zk
        self.history = history
        self.store = GroupStore(zk)
        self.watch_topics = watch_topics  # v1 watches the subscribed topics in ZooKeeper
        self.watched: set[str] = set()
        self.groups: dict[str, Group] = {}
        self.lock = threading.RLock()
        self.leadership = Leadership(
            zk, f"{self.store.root}/election", instance.identity(), session_timeout_s, self._elected, self._resigned
        )
        self.stopping = threading.Event()

    # --------------------------------------------------------------- leadership

    def _elected(self) -> None:
        with self.lock:
            epoch = self.store.take_over(self.instance.name)
            now = _now_ms()
            self.groups = {
                name: Group.restore(snapshot, offsets, now, **self._group_kwargs(name))
                for name, (snapshot, offsets) in self.store.load().items()
            }
            self.history.emit(
                ev.COORDINATOR_ELECTED, instance=self.instance.name, epoch=epoch, groups=sorted(self.groups)
            )

    def _resigned(self, reason: str) -> None:
        # Called from kazoo's thread too: no ZooKeeper calls, and never wait for the lock
        # (a request may hold it while blocked on ZooKeeper). Members learn from NOT_COORDINATOR.
        self.history.emit(ev.COORDINATOR_RESIGNED, instance=self.instance.name, reason=reason)
        threading.Thread(target=self._drop_groups, daemon=True).start()

    def _drop_groups(self) -> None:
        with self.lock:
            for group in self.groups.values():
                group.unload(f"{self.instance.name} is no longer the coordinator", _now_ms())
            self.groups = {}

    def _group_kwargs(self, name: str) -> dict:
        def emit(event: str, **fields) -> None:
            self.history.emit(event, group=name, coordinator=self.instance.name, **fields)

        return {
            "variant": self.variant,
            "emit": emit,
            "persist": self._persist,
            "partitions_of": self._partitions_of(name),
        }

    def _persist(self, snapshot: dict) -> None:
        try:
            self.store.save_group(snapshot)
        except NotLeader as e:
            self.leadership.step_down(str(e))
            raise

    def _partitions_of(self, name: str):
        def partitions_of(topics: list[str]) -> dict[str, int]:
            if self.watch_topics:
                for topic in set(topics) - self.watched:
                    self.watched.add(topic)
                    self.zk.DataWatch(f"/brokers/topics/{topic}", self._topic_changed(topic))
            return self.store.partition_counts(topics)

        return partitions_of

    def _topic_changed(self, topic: str):
        seen = []

        def changed(data, stat, event=None):
            if seen and event is not None:  # the first call is the watch being set
                with self.lock:
                    for group in self.groups.values():
                        if any(topic in m.topics for m in group.members.values()):
                            group.metadata_changed(f"topic {topic} changed in ZooKeeper", _now_ms())
            seen.append(True)

        return changed

    # --------------------------------------------------------------- requests

    def handle(self, request: dict) -> dict:
        api = request.get("api")
        if api not in p.APIS:
            return p.error(p.INVALID_REQUEST, f"unknown api {api!r}")
        try:
            if api == "FindCoordinator":
                return self._find_coordinator()
            if not self.leadership.leading():
                return p.error(p.NOT_COORDINATOR, f"{self.instance.name} is not the coordinator")
            group_id = request.get("group")
            if not group_id:
                return p.error(p.INVALID_REQUEST, "group: required")
            return getattr(self, f"_{api}")(group_id, request)
        except (KeyError, TypeError, ValueError) as e:
            return p.error(p.INVALID_REQUEST, f"{api}: {type(e).__name__}: {e}")
        except KazooException as e:
            return p.error(p.COORDINATOR_NOT_AVAILABLE, f"ZooKeeper: {type(e).__name__}")

    def _find_coordinator(self) -> dict:
        leader = self.leadership.leader()
        if leader is None:
            return p.error(p.COORDINATOR_NOT_AVAILABLE, "no coordinator elected")
        return {
            **p.error(p.NONE),
            "leader": leader["name"],
            "address": leader["address"],
            "instance": self.instance.name,
        }

    def _group(self, group_id: str) -> Group:
        if group_id not in self.groups:
            self.groups[group_id] = Group(group_id, **self._group_kwargs(group_id))
        return self.groups[group_id]

    def _wait(self, reply, timeout_s: float) -> dict:
        response = reply.wait(timeout_s)
        return response if response is not None else p.error(p.REBALANCE_IN_PROGRESS, "the rebalance did not finish")

    def _JoinGroup(self, group_id: str, r: dict) -> dict:
        with self.lock:
            group = self._group(group_id)
            reply = group.join(
                r.get("member_id") or "",
                r.get("client_id") or "member",
                int(r["session_timeout_ms"]),
                int(r.get("rebalance_timeout_ms") or r["session_timeout_ms"]),
                r["protocols"],
                _now_ms(),
            )
            deadline_s = max(0.0, (group.join_deadline - _now_ms()) / 1000)
        return self._wait(reply, deadline_s + REPLY_MARGIN_S)

    def _SyncGroup(self, group_id: str, r: dict) -> dict:
        with self.lock:
            group = self._group(group_id)
            reply = group.sync(r["member_id"], int(r["generation_id"]), r.get("assignments"), _now_ms())
            timeout_s = max((m.rebalance_timeout_ms for m in group.members.values()), default=0) / 1000
        return self._wait(reply, timeout_s + REPLY_MARGIN_S)

    def _Heartbeat(self, group_id: str, r: dict) -> dict:
        with self.lock:
            return self._group(group_id).heartbeat(r["member_id"], int(r["generation_id"]), _now_ms())

    def _LeaveGroup(self, group_id: str, r: dict) -> dict:
        with self.lock:
            return self._group(group_id).leave(r["member_id"], _now_ms())

    def _OffsetCommit(self, group_id: str, r: dict) -> dict:
        offsets = [
            {"topic": o["topic"], "partition": int(o["partition"]), "offset": int(o["offset"])} for o in r["offsets"]
        ]
        with self.lock:
            group = self._group(group_id)
            response = group.commit(r["member_id"], int(r["generation_id"]), offsets, _now_ms())
            if response["error_code"] != p.NONE:
                return response
            try:
                self.store.save_offsets(group_id, r["member_id"], group.generation, offsets)
            except NotLeader as e:
                self.leadership.step_down(str(e))
                return p.error(p.NOT_COORDINATOR, str(e))
            group.offsets.update({(o["topic"], o["partition"]): o["offset"] for o in offsets})
            return response

    def _OffsetFetch(self, group_id: str, r: dict) -> dict:
        with self.lock:
            offsets = self._group(group_id).offsets
            return {
                **p.error(p.NONE),
                "offsets": [
                    {
                        "topic": x["topic"],
                        "partition": int(x["partition"]),
                        "offset": offsets.get((x["topic"], int(x["partition"])), -1),
                    }
                    for x in r["partitions"]
                ],
            }

    def _DescribeGroup(self, group_id: str, r: dict) -> dict:
        with self.lock:
            return {**p.error(p.NONE), **self._group(group_id).describe()}

    # --------------------------------------------------------------- time

    def ticker(self) -> None:
        while not self.stopping.wait(TICK_S):
            if not self.leadership.leading():
                continue
            with self.lock:
                for group in list(self.groups.values()):
                    group.tick(_now_ms())


class _Handler(socketserver.StreamRequestHandler):
    coordinator: Coordinator

    def handle(self) -> None:
        for line in self.rfile:
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("not an object")
            except ValueError as e:
                self.wfile.write(p.encode(p.error(p.INVALID_REQUEST, f"not a JSON object: {e}")))
                return
            response = self.server.coordinator.handle(request)  # type: ignore[attr-defined]
            self.wfile.write(p.encode({"correlation_id": request.get("correlation_id"), **response}))
            self.wfile.flush()


class CoordinatorServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, coordinator: Coordinator):
        self.coordinator = coordinator
        super().__init__((coordinator.instance.host, coordinator.instance.port), _Handler)
