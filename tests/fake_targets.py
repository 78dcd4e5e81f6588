"""A stand-in for the run's ``Targets`` (faults/base.py), for unit tests of faults.

It implements the whole protocol (tests/unit/test_harness_faults.py checks that it and
``harness.run.targets.RunTargets`` keep up with it). Instead of touching processes, proxies and
topics it records each action as ``(seconds since creation, method, name, *arguments)`` in
``calls``; questions (``resolve``, ``is_running``, ``group_names``, ``proxies``, …) are
answered from a small model of the run: brokers, members, and who is stopped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class FakeRelease:
    """What a fault reads of the release catalogue's facts (harness.components.versions.KafkaRelease)."""

    version: str
    zookeeper: bool = True
    kraft: bool = True

    @property
    def line(self) -> str:
        return ".".join(self.version.split(".")[:2])


def fake_release(text: str) -> FakeRelease:
    """A release as the catalogue would give it: ZooKeeper mode up to 3.9, "3.9" is 3.9.2."""
    version = {"3.8": "3.8.1", "3.9": "3.9.2", "4.3": "4.3.1", "4.4": "4.4.0"}.get(text, text)
    if not version[0].isdigit():
        raise ValueError(f"{text!r} is not a Kafka release")
    return FakeRelease(version, zookeeper=version < "4")


class FakeToxiproxy:
    """Records what a network fault does to its proxies, in its targets' ``calls``."""

    def __init__(self, targets: FakeTargets):
        self.targets = targets

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        self.targets._record("set_enabled", proxy, enabled)

    def add_toxic(self, proxy: str, name: str, kind: str, stream: str, **attributes) -> None:
        self.targets._record("add_toxic", proxy, name, attributes)

    def remove_toxic(self, proxy: str, name: str) -> None:
        self.targets._record("remove_toxic", proxy, name)


class FakeMessageProxy:
    """Records the rules a message fault gives the message proxy, in its targets' ``calls``."""

    def __init__(self, targets: FakeTargets):
        self.targets = targets

    def add_rule(self, rule: dict) -> None:
        self.targets._record("add_rule", rule["member"], rule)

    def remove_rule(self, fault_id: str) -> None:
        self.targets._record("remove_rule", fault_id)


class FakeTargets:
    def __init__(
        self,
        broken: tuple[str, ...] = (),
        brokers: int = 3,
        consumers: int = 3,
        coordinator: str = "broker-1",
        zookeeper_session_timeout_s: float = 6.0,
        kafka: str = "3.9.2",
        metadata: str = "zookeeper",
    ):
        self.t0 = time.monotonic()
        self.calls: list[tuple] = []
        self.broken = broken  # names whose every action raises, as a process that is not there
        self.brokers = [f"broker-{i}" for i in range(1, brokers + 1)]
        self.consumers = [f"consumer-{i}" for i in range(1, consumers + 1)]
        self.started = consumers  # highest member number handed out: new members get new numbers
        self.coordinator = coordinator
        self.session_timeout_s = zookeeper_session_timeout_s
        self.stopped: set[str] = set()
        self._toxiproxy = FakeToxiproxy(self)
        self._message_proxy = FakeMessageProxy(self)
        self.release, self.metadata = fake_release(kafka), metadata
        self.controllers = ["controller-1"] if metadata == "kraft" else []

    def _record(self, *call):
        if call[1] in self.broken:
            raise RuntimeError(f"no process named {call[1]!r}")
        self.calls.append((time.monotonic() - self.t0, *call))

    def actions(self):
        return [c[1:] for c in self.calls]

    # --- names ----------------------------------------------------------------------------

    def resolve(self, name):
        return self.coordinator if name == "coordinator" else name

    def group_names(self, which):
        return list({"brokers": self.brokers, "controllers": self.controllers}.get(which, self.consumers))

    def is_running(self, name):
        return name not in self.stopped

    # --- processes --------------------------------------------------------------------------

    def pause(self, name):
        self._record("pause", name)

    def resume(self, name):
        self._record("resume", name)

    def kill(self, name, sig):
        self._record("kill", name, sig)
        self.stopped.add(name)

    def restart(self, name, changes=None):
        # A restart with changes records them (faults.base.MemberChanges); a plain one as before.
        self._record("restart", name, *([changes] if changes is not None else []))
        self.stopped.discard(name)

    # --- rolling upgrades -------------------------------------------------------------------

    def cluster_kafka(self):
        return self.release, self.metadata

    def kafka_release(self, text):
        return fake_release(text)

    def restart_node(self, name, kafka, settings):
        self._record("restart_node", name, kafka, dict(settings))
        return {"process": name, "kafka": kafka, "settings": dict(settings)}

    def finalize_features(self, kafka, started_mono_ms):
        self._record("finalize_features", kafka)
        return {"kafka": kafka}

    # --- network ----------------------------------------------------------------------------

    def proxies(self, target, link):
        return [f"{target}.to.{self.resolve(link)}"]

    def toxiproxy(self):
        return self._toxiproxy

    def message_proxy(self):
        return self._message_proxy

    def request_timeout_ms(self, member, api):
        return {"JoinGroup": 303_000}.get(api, 60_000)  # a librdkafka member's, at the workload's defaults

    # --- ZooKeeper --------------------------------------------------------------------------

    def expire_zookeeper_session(self, name):
        self._record("expire_zookeeper_session", name)
        return {"session_id": "0x1"}

    def zookeeper_session_timeout_s(self, name):
        return self.session_timeout_s

    # --- members ----------------------------------------------------------------------------

    def command(self, member, command):
        self._record("command", member, command)

    def start_consumers(self, count, subscription=None):
        new = [f"consumer-{self.started + i}" for i in range(1, count + 1)]
        self.started += count
        self.consumers += new
        self._record("start_consumers", count, new)
        return new

    def scale_consumers(self, count, subscription=None):
        if count >= len(self.consumers):
            return self.start_consumers(count - len(self.consumers), subscription)
        stopped, self.consumers = self.consumers[count:], self.consumers[:count]
        self._record("scale_consumers", count, stopped)
        return stopped

    # --- topics -----------------------------------------------------------------------------

    def add_partitions(self, topic, total):
        self._record("add_partitions", topic, total)

    def create_topic(self, topic, partitions):
        self._record("create_topic", topic, partitions)
