"""One coordinator instance: ``python -m coordinator SPEC.json`` (a ``CoordinatorSpec``)."""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass

from kazoo.client import KazooClient, KazooState

from oracle import vocabulary as ev
from runtime.child import read_spec, stop_on_signals
from runtime.history import HistoryWriter
from runtime.zookeeper import QUIET_ZK_LOG, publish_session

from .group import variant
from .server import Coordinator, CoordinatorServer, Instance


@dataclass
class CoordinatorSpec:
    name: str
    port: int
    zookeeper_connect: str  # this instance's own link to ZooKeeper (a proxy, so it can be cut)
    variant: str  # v1 | v2 | v3
    history: str
    session_file: str  # where the live ZooKeeper session is published, for expiry faults
    zookeeper_session_timeout_ms: int = 6000
    initial_rebalance_delay_ms: int = 3000
    host: str = "127.0.0.1"


def claim_incarnation(beside: str) -> int:
    """This instance's life: 1 at its first start, 2 after a restart, … — each life writes the
    history as a writer of its own (docs/history.md, Promises). Claimed as a file beside its
    session file, where a restart finds it whichever backend restarted it."""
    n = 1
    while True:
        try:
            os.close(os.open(f"{beside}.incarnation-{n}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            return n
        except FileExistsError:
            n += 1
        except OSError:  # nowhere to count: a number no earlier life of it can have had (ms since the epoch)
            return time.time_ns() // 1_000_000


def main(argv: list[str]) -> int:
    spec = read_spec(CoordinatorSpec, argv)
    stop = stop_on_signals()
    history = HistoryWriter(
        spec.history, spec.name, instance=spec.name, incarnation=claim_incarnation(spec.session_file)
    )
    zk = KazooClient(
        hosts=spec.zookeeper_connect,
        timeout=spec.zookeeper_session_timeout_ms / 1000,
        connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 1.5, "max_delay": 1.0},
        logger=QUIET_ZK_LOG,
    )

    def on_state(state: str) -> None:
        history.emit(ev.COORDINATOR_ZOOKEEPER_STATE, state=state)
        if state == KazooState.CONNECTED:
            threading.Thread(
                target=lambda: publish_session(
                    zk.client_id, spec.session_file, zookeeper_connect=spec.zookeeper_connect
                ),
                daemon=True,
            ).start()

    zk.add_listener(on_state)
    design = variant(spec.variant, spec.initial_rebalance_delay_ms)
    coordinator = Coordinator(
        Instance(spec.name, spec.host, spec.port),
        design,
        zk,
        history,
        session_timeout_s=spec.zookeeper_session_timeout_ms / 1000,
        watch_topics=design.coordinator_assigns,  # who assigns must see partitions come
    )
    server = CoordinatorServer(coordinator)  # listening before anything else: the harness waits for the port
    history.emit(ev.COORDINATOR_STARTED, pid=os.getpid(), variant=spec.variant, address=f"{spec.host}:{spec.port}")
    zk.start_async()
    threads = [
        threading.Thread(target=coordinator.leadership.run, name="election", daemon=True),
        threading.Thread(target=coordinator.ticker, name="ticker", daemon=True),
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="server", daemon=True),
    ]
    for t in threads:
        t.start()
    while not stop.wait(0.5):
        pass
    coordinator.stopping.set()
    coordinator.leadership.stop()
    server.shutdown()
    server.server_close()
    zk.stop()
    zk.close()
    history.emit(ev.COORDINATOR_STOPPED, reason="end-of-run")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
