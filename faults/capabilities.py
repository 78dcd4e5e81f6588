"""What a cluster backend can do for a fault: the one vocabulary both sides speak.

A fault kind says what it needs (``FaultSpec.needs``, and ``needs_by_key`` where an option
adds to it); a backend says what it has (``capabilities`` on its class, harness/cluster/).
A scenario asking for something its backend lacks is refused at validation, with the reason
worded here, once. The names live in faults/ because fault kinds may not import the harness.
"""

from __future__ import annotations

import enum


class Capability(enum.Enum):
    """One thing a fault may need done to the cluster a run uses. Each member carries what it
    lets a fault do (``does``) and why a backend without it cannot (``missing_because``)."""

    # Signals to, and restarts of, what the run starts itself: members (poll stalls, join storms
    # and scaling included) and the producer. Every backend: they are processes of this machine.
    RUN_PROCESSES = ("pause, stop or restart the processes the run starts (members, the producer)", "it starts none")
    # The same to the cluster's own nodes: brokers (a rolling bounce too), ZooKeeper nodes, the
    # KRaft controller, the project's coordinator instances. A pause is SIGSTOP or a frozen
    # container's cgroup: either stops every thread, so one capability covers both.
    CLUSTER_NODES = ("pause, stop or restart the cluster's brokers, ZooKeeper or coordinator", "it does not run them")
    # Toxiproxy between every client lane and the brokers, and between brokers and ZooKeeper.
    NETWORK_LANES = (
        "cut or degrade network links",
        "its clients and brokers do not talk through the harness's own Toxiproxy",
    )
    # The message proxy (faults/message_proxy/) in front of every member lane's Toxiproxy proxies:
    # it reads the Kafka protocol, so a fault can act on one request or response of one member.
    # Both backends that start the cluster run it as a process of this machine.
    MESSAGE_LANES = (
        "act on single Kafka protocol messages",
        "its clients do not talk through the harness's own message proxy",
    )
    # Ending a broker's or coordinator instance's ZooKeeper session on the server.
    ZOOKEEPER_SESSIONS = ("expire ZooKeeper sessions", "that needs control of the cluster's brokers and ZooKeeper")
    # Creating or growing topics while the run goes, beyond those the run starts with.
    TOPIC_CHANGES = (
        "create or grow topics during the run",
        "the harness only creates the run's own topics there, and deletes them at the end",
    )
    # The brokers' GroupCoordinator log, read while the run goes: a trigger on the group's state.
    BROKER_LOGS = (
        "read the brokers' logs, where a trigger sees the group's states",
        "they are not the harness's to read",
    )
    # Stopping a node of the cluster (a broker, the KRaft controller) and starting it again on
    # another Kafka release, on the same data, with settings changed: a rolling upgrade. The
    # local backend swaps the classpath a node's JVM starts with; a container's image holds one.
    NODE_UPGRADES = (
        "restart the cluster's nodes on another Kafka release",
        "each of its images holds one Kafka release",
    )

    def __init__(self, does: str, missing_because: str):
        self.does = does
        self.missing_because = missing_because

    def refusal(self, backend: str) -> str:
        """Why a fault that needs this cannot run on ``backend``, which lacks it."""
        return f"the {backend} backend cannot {self.does}: {self.missing_because}"


EVERY_CAPABILITY = frozenset(Capability)


def lacking(needs: frozenset[Capability], has: frozenset[Capability]) -> list[Capability]:
    """What of ``needs`` a backend that ``has`` these lacks, in the vocabulary's order (stable messages)."""
    return [capability for capability in Capability if capability in needs and capability not in has]
