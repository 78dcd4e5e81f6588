"""The message proxy in front of the member lanes a run's ``message`` faults need (network.py).

One process of this machine for every backend: the members reach it, and it reaches
Toxiproxy's lane proxies, on 127.0.0.1 (a container's are published there). It writes what
it does to a message straight into the run's history, as every process of a run does.
"""

from __future__ import annotations

import sys
from pathlib import Path

from faults.message_proxy.client import MessageProxyClient, MessageProxyError
from harness.cluster.kinds import MessageProxyKind
from harness.cluster.network import NetworkPlan
from harness.cluster.ports import free_port
from harness.cluster.spec import ClusterSpec, MessageProxySpec
from harness.supervision.processes import Supervisor
from harness.supervision.service import LocalProcess

NAME = "message-proxy"


class MessageProxyServer(MessageProxyKind, LocalProcess):
    def __init__(self, supervisor: Supervisor, logs_dir: Path, history: str | None):
        super().__init__(NAME, supervisor, logs_dir)
        self.port = free_port()
        self.history = history or str(logs_dir / f"{NAME}.history.jsonl")
        self.client = MessageProxyClient(self.api)

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "faults.message_proxy",
            "--control-port",
            str(self.port),
            "--history",
            self.history,
            "--log-dir",
            str(self.logs_dir),
        ]

    def wait_ready(self, deadline: float) -> None:
        self.wait_answering(
            self.client.health, MessageProxyError, f"the message proxy's control API at {self.api}", deadline
        )


def message_lanes(spec: ClusterSpec) -> frozenset[int]:
    """The client lanes whose Kafka traffic passes the message proxy (none without one)."""
    return spec.message_proxy.lanes if spec.message_proxy else frozenset()


def start_message_proxy(
    spec: MessageProxySpec, network: NetworkPlan, supervisor: Supervisor, logs_dir: Path, deadline: float
) -> MessageProxyServer:
    """Started, with a listener for each of its lanes' brokers, before any broker advertises them."""
    server = MessageProxyServer(supervisor, logs_dir, spec.history)
    server.start()
    server.wait_ready(deadline)
    for name, route in network.message_routes.items():
        member, broker = network.message_lane_member(name)
        server.client.add_lane(name, route.listen, route.upstream, member, broker)
    return server
