"""The ``compose`` backend: ZooKeeper (or a KRaft controller), brokers, Toxiproxy and the
project's coordinator as containers of one Compose project per run, on a real Docker
Engine, driven through testcontainers' DockerCompose.

The project is rendered by compose_topology.py (from compose/services/); every
container and its network carry the run's owner label, and the project is registered
(like a process) so `rebalance-lab cleanup` removes it if the harness dies. Faults act
on the containers through the engine: pause is `docker pause` (the cgroup freezer stops
every thread, as SIGSTOP does), a crash is `docker kill`, a restart `docker start`.
The members, the producer and the observer stay processes of this machine.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from faults.capabilities import EVERY_CAPABILITY, Capability
from harness.cluster import kinds, zookeeper
from harness.cluster.admin import ClusterAdmin, TopicSpec
from harness.cluster.backend import Cleaned, Cleanup, CleanupScope
from harness.cluster.kinds import (
    CLUSTER_KINDS,
    BrokerKind,
    CoordinatorKind,
    KRaftControllerKind,
    ToxiproxyKind,
    ZooKeeperKind,
)
from harness.cluster.message_lanes import MessageProxyServer, start_message_proxy
from harness.cluster.network import NetworkPlan
from harness.cluster.spec import ClusterSpec
from harness.paths import registry_dir
from harness.supervision.processes import (
    DETACHED_OWNERS,
    Supervisor,
    owner_alive,
    proc_start_time,
)
from harness.supervision.run_state import mark_killed, run_of, write_json_atomically
from harness.supervision.service import Service, stop_in_order
from harness.supervision.watchdog import ensure_watchdog
from runtime.errors import ClusterError, SetupError

if TYPE_CHECKING:
    from harness.cluster.compose_topology import Topology

Report = Callable[[str], None]


class Container(Service):
    """A service that is one container of the run's Compose project."""

    def __init__(self, name: str, cluster: ComposeCluster):
        super().__init__(name)
        self.cluster = cluster
        self._id: str | None = None
        self._last_pid: int | None = None  # of the start not yet recorded as ended
        self._lock = threading.Lock()  # the run's poll and a fault's kill may both see it end

    @property
    def logs(self) -> dict[str, Path]:
        # stdout: `docker logs`, collected when the project stops
        return {"stdout": self.cluster.workdir / "logs" / f"{self.name}.stdout"}

    @property
    def container(self):
        if self._id is None:
            self._id = self.cluster.compose.get_container(self.name, include_all=True).ID
        container = self.cluster.docker.containers.get(self._id)
        return container

    def _state(self) -> dict:
        return self.container.attrs["State"]

    @property
    def pid(self) -> int | None:
        return self._state().get("Pid") or None

    def started(self) -> None:
        """Compose (or we) started it: say so in the history, as a process start is."""
        self._last_pid = self.pid
        self.cluster.supervisor.record_start(self.name, self.role, self._last_pid)

    def exited(self) -> None:
        """Say once in the history that the start recorded last has ended."""
        with self._lock:
            pid, self._last_pid = self._last_pid, None
        if pid is not None:
            self.cluster.supervisor.record_exit(self.name, self.role, pid, self._state().get("ExitCode"))

    def start(self) -> None:
        self.container.start()
        self.started()

    def running(self) -> bool:
        return self._state()["Status"] in ("running", "paused")

    def paused(self) -> bool:
        return self._state()["Status"] == "paused"

    def pause(self) -> None:
        if not self.running():
            raise RuntimeError(f"{self.name} is not running")
        self.container.pause()

    def resume(self) -> None:
        if self.paused():
            self.container.unpause()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.running():
            self.resume()  # a frozen container cannot act on SIGTERM
            self.container.kill(signal=signal.Signals(sig).name)
            self.wait_stopped(time.monotonic() + 30)
        else:
            self.exited()

    def terminate(self) -> None:
        if self.running():
            self.resume()
            self.container.kill(signal="SIGTERM")

    def wait_stopped(self, deadline: float) -> None:
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.running():
            self.container.kill(signal="SIGKILL")
            while self.running():
                time.sleep(0.05)
        self.exited()

    def check_alive(self) -> None:
        if not self.running():
            tail = self.container.logs(tail=20).decode(errors="replace")
            raise ClusterError(f"{self.name} exited with code {self._state().get('ExitCode')} while starting:\n{tail}")


class JvmContainer(Container):
    @property
    def logs(self) -> dict[str, Path]:
        return {**super().logs, "server": self.cluster.workdir / "logs" / f"{self.name}.log"}


class ZooKeeperContainer(ZooKeeperKind, JvmContainer):
    pass


class KRaftControllerContainer(KRaftControllerKind, JvmContainer):
    pass


class BrokerContainer(BrokerKind, JvmContainer):
    def __init__(self, name: str, cluster: ComposeCluster, broker_id: int, port: int):
        super().__init__(name, cluster)
        self.broker_id, self.port = broker_id, port
        self.zookeeper_connect = cluster.zookeeper_connect
        self.zookeeper_session_timeout_ms = cluster.spec.broker_zookeeper_session_timeout_ms
        self._started = True  # Compose started it

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"


class ToxiproxyContainer(ToxiproxyKind, Container):
    pass


class CoordinatorContainer(CoordinatorKind, Container):
    def __init__(self, name: str, cluster: ComposeCluster):
        super().__init__(name, cluster)
        self.session_file = cluster.workdir / "data" / f"{name}.zk-session.json"


class ComposeCluster:
    """The cluster as a Compose project (harness.cluster.backend.ClusterBackend)."""

    name: ClassVar[str] = "compose"
    service_kinds: ClassVar[tuple[type, ...]] = CLUSTER_KINDS
    starts_cluster: ClassVar[bool] = True
    # As the local backend: a paused node is a frozen container, its logs are bind-mounted here.
    # It runs the whole cluster, each node from an image of one Kafka release: no rolling upgrade.
    capabilities: ClassVar[frozenset[Capability]] = EVERY_CAPABILITY - {Capability.NODE_UPGRADES}
    sasl_plain_listeners: ClassVar[bool] = False  # its topology has no SASL listener

    def __init__(self, spec: ClusterSpec, workdir: Path, supervisor: Supervisor, report: Report = lambda _m: None):
        self.spec = spec
        self.workdir = Path(workdir).resolve()
        self.supervisor = supervisor
        self.report = report
        self.services: dict[str, Container] = {}
        self.topology: Topology | None = None
        self.compose = None  # testcontainers' DockerCompose, once rendered
        self.docker = None  # the engine's Python client
        self.engine = None
        self.kafka_admin: ClusterAdmin | None = None
        self._toxiproxy = None
        self._registration: Path | None = None
        self.message_proxy_server: MessageProxyServer | None = None  # a process of this machine, not a container

    # ----------------------------------------------------------------- addresses

    @property
    def network(self) -> NetworkPlan:
        return self.topology.network

    @property
    def brokers(self) -> dict[str, BrokerContainer]:
        return {n: s for n, s in self.services.items() if isinstance(s, BrokerContainer)}

    @property
    def bootstrap_servers(self) -> str:
        return self.network.direct_bootstrap()

    @property
    def zookeeper_connect(self) -> str | None:
        return ",".join(f"127.0.0.1:{p}" for p in self.network.zookeeper_ports.values()) or None

    @property
    def toxiproxy(self):
        from faults.toxiproxy import ToxiproxyClient

        if self._toxiproxy is None:
            self._toxiproxy = ToxiproxyClient(f"http://127.0.0.1:{self.topology.toxiproxy_api_port}")
        return self._toxiproxy

    @property
    def message_proxy(self):
        return self.message_proxy_server.client if self.message_proxy_server else None

    def broker_names(self) -> list[str]:
        return list(self.topology.broker_ids)

    def lane_bootstrap_servers(self, lane: int) -> str:
        return self.network.lane_bootstrap(lane)

    def coordinator_names(self) -> list[str]:
        return self.spec.coordinator_names()

    def coordinator_addresses(self) -> dict[str, str]:
        return {name: f"127.0.0.1:{port}" for name, port in self.network.coordinator_ports.items()}

    def coordinator_leader(self) -> str | None:
        return kinds.coordinator_leader(self.coordinator_addresses())

    def describe(self) -> dict:
        return {
            "backend": self.name,
            "kafka": self.spec.kafka,
            "project": self.topology.project,
            "compose_file": str(self.topology.compose_file),
            "docker_host": self.engine.docker_host,
            "mode": "zookeeper" if self.topology.zookeeper_mode else "kraft",
            "bootstrap_servers": self.bootstrap_servers,
            "zookeeper_connect": self.zookeeper_connect,
            "toxiproxy_api": f"http://127.0.0.1:{self.topology.toxiproxy_api_port}",
            **({"message_proxy_api": self.message_proxy_server.api} if self.message_proxy_server else {}),
            "brokers": {n: {"id": b.broker_id, "port": b.port} for n, b in self.brokers.items()},
            "containers": {n: s._id for n, s in self.services.items()},
            "logs": {n: {k: str(v) for k, v in s.logs.items()} for n, s in self.services.items()},
            "workdir": str(self.workdir),
        }

    # ----------------------------------------------------------------- lifecycle

    def start(self, ready_timeout: float = 180.0) -> None:
        # On use, as the rest below: the command line loads every backend's class (`cluster up --backend`).
        from harness.cluster.compose_topology import render
        from harness.components.containers.engine import compose_env, ensure_engine
        from harness.components.containers.images import ensure_images

        t0 = time.monotonic()
        deadline = t0 + ready_timeout
        self.engine = ensure_engine(self.report)
        os.environ.update(compose_env(self.engine))  # for `docker compose` and the Python client alike
        project = project_name(self.supervisor.owner)
        self._register(project)  # from here on `cleanup` knows a live harness uses the engine (image builds too)
        images = ensure_images([self.spec.kafka], self.report, self.engine.docker_host)
        self.topology = render(
            self.spec,
            self.workdir,
            images,
            project,
            self.supervisor.owner,
            Path(self.spec.coordinator.history).parent
            if self.spec.coordinator and self.spec.coordinator.history
            else None,
        )
        self._make_services()
        if self.spec.message_proxy:  # listening before any broker advertises it
            self.message_proxy_server = start_message_proxy(
                self.spec.message_proxy, self.network, self.supervisor, self.workdir / "logs", deadline
            )
        import docker
        from testcontainers.compose import DockerCompose

        self.docker = docker.DockerClient(base_url=self.engine.docker_host)
        self.compose = DockerCompose(self.workdir, compose_file_name="compose.yaml", wait=True)
        try:
            self.compose.start()
        except Exception as e:  # `docker compose up` failed: say what it printed
            raise ClusterError(
                f"`docker compose up --wait` failed for {self.topology.compose_file}: {_output_of(e)}"
            ) from None
        for service in self.services.values():
            service.started()
        self.kafka_admin = ClusterAdmin(
            self.bootstrap_servers, list(self.topology.broker_ids.values()), str(self.workdir / "logs")
        )
        self.kafka_admin.wait_ready(deadline - time.monotonic(), self._check_alive)
        self.kafka_admin.create_topics(self.spec.topics, deadline - time.monotonic())
        self.kafka_admin.wait_every_broker_knows(
            {n: b.address for n, b in self.brokers.items()}, self.spec.topics, deadline
        )
        if self.spec.coordinator:
            while self.coordinator_leader() is None:
                if time.monotonic() > deadline:
                    raise ClusterError("the project's coordinator elected no leader in time")
                time.sleep(0.1)
        self.report(
            f"cluster ready in {time.monotonic() - t0:.1f}s (compose project {project}): Kafka "
            f"{self.spec.kafka}, {self.spec.brokers} brokers at {self.bootstrap_servers}"
        )

    def _make_services(self) -> None:
        t, n = self.topology, self.topology.network
        self.services["toxiproxy"] = ToxiproxyContainer("toxiproxy", self)
        for name in n.zookeeper_ports:
            self.services[name] = ZooKeeperContainer(name, self)
        if not t.zookeeper_mode:
            self.services["controller-1"] = KRaftControllerContainer("controller-1", self)
        for name, i in t.broker_ids.items():
            self.services[name] = BrokerContainer(name, self, i, n.direct[i])
        for name in n.coordinators:
            self.services[name] = CoordinatorContainer(name, self)

    def _check_alive(self) -> None:
        for service in self.services.values():
            service.check_alive()

    def poll_exits(self) -> list[str]:
        """Containers that stopped on their own since the last call (each recorded once)."""
        gone = [s for s in self.services.values() if s._last_pid is not None and not s.running()]
        for service in gone:
            service.exited()
        return [s.name for s in gone]

    def stop(self) -> None:
        """Every container in stop-tier order, their output kept in logs/, then the project removed."""
        if self.compose is None:
            stop_in_order([self.message_proxy_server] if self.message_proxy_server else [])
            self._unregister()
            return
        try:
            stop_in_order(
                [*self.services.values(), *([self.message_proxy_server] if self.message_proxy_server else [])]
            )
            for service in self.services.values():
                try:
                    service.logs["stdout"].write_bytes(service.container.logs())
                except Exception:  # a container already gone has nothing to keep
                    pass
        finally:
            self.compose.stop(down=True)
            self._unregister()

    # ----------------------------------------------------------------- ZooKeeper

    def zookeeper_session_timeout_s(self, name: str) -> float:
        return self.spec.zookeeper_session_timeout_s(name)

    def expire_zookeeper_session(self, name: str) -> dict:
        if name in self.coordinator_names():
            return zookeeper.expire_published_session(name, self.services[name].session_file, self.zookeeper_connect)
        jolokia = {z: f"http://127.0.0.1:{p}/jolokia/" for z, p in self.topology.jolokia_ports.items()}
        return zookeeper.expire_broker_session(name, self.topology.broker_ids, self.zookeeper_connect, jolokia)

    # ----------------------------------------------------------------- topics

    def create_topics(self, topics: list[TopicSpec], timeout: float = 60.0) -> None:
        self.kafka_admin.create_topics(topics, timeout)

    def add_partitions(self, topic: str, total: int, timeout: float = 60.0) -> None:
        self.kafka_admin.add_partitions(topic, total, timeout)

    # ----------------------------------------------------------------- what it leaves behind

    @classmethod
    def clean_up(cls, scope: CleanupScope, report: Report) -> Cleanup:
        """The compose projects of harnesses that died (or ``scope.owner``'s, live or not): every
        container, network and volume carrying the owner's label; their runs marked killed. With
        ``scope.detached``, the project's Docker Engine too — it outlives runs by design, like a
        `cluster up` cluster — unless a running harness has a project on it."""
        removed, failed = _remove_projects(scope)
        for entry in removed:
            report(
                f"removed compose project {entry['project']} (its containers and network), "
                f"left behind by {entry['owner']}"
            )
        cleanup = Cleanup([Cleaned("compose projects", e["project"], run_of(e["owner"])) for e in removed])
        if failed:
            cleanup.problems.append(
                "could not remove compose project "
                + "; ".join(failed)
                + " (start the engine it ran on, then run `rebalance-lab cleanup` again)"
            )
        if scope.detached and scope.owner is None:
            from harness.components.containers.engine import own_socket, stop_engine

            if users := live_projects(own_socket()):  # stopping the engine would take their containers with it
                report(f"left the project's Docker Engine running: running harnesses use it ({', '.join(users)})")
            else:
                stop_engine(report)
        return cleanup

    def _register(self, project: str) -> None:
        """Like a process: who owns the project, so `cleanup` (or the harness's watchdog) removes it
        if that harness dies."""
        if not self.supervisor.owner.startswith(DETACHED_OWNERS):
            ensure_watchdog()
        self._registration = compose_registry() / f"{project}.json"
        self._registration.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomically(
            self._registration,
            {  # a cleaner never reads it half-written
                "project": project,
                "directory": str(self.workdir),
                "docker_host": self.engine.docker_host,
                "owner": self.supervisor.owner,
                "owner_pid": os.getpid(),
                "owner_start_time": proc_start_time(os.getpid()),
            },
        )

    def _unregister(self) -> None:
        if self._registration:
            self._registration.unlink(missing_ok=True)


def project_name(owner: str) -> str:
    """Compose's project name for a harness's cluster: readable (the run's or cluster's name) and
    unique to the owner (shared pools' clusters all end in `cluster-N`)."""
    readable = "".join(ch for ch in owner.rsplit("/", 1)[-1].lower() if ch.isalnum() or ch == "-")[-32:].strip("-")
    return f"rl-{readable}-{hashlib.sha1(owner.encode()).hexdigest()[:6]}"


def compose_registry() -> Path:
    return registry_dir().parent / "compose-projects"


def _registrations() -> list[Path]:
    return sorted(compose_registry().glob("*.json")) if compose_registry().exists() else []


def _owner_alive(entry: dict) -> bool:
    return owner_alive(entry["owner_pid"], entry.get("owner_start_time"))


def live_projects(docker_host: str) -> list[str]:
    """The compose projects on that engine whose harness still runs: the engine must stay up."""
    live = []
    for path in _registrations():
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):  # removed meanwhile
            continue
        if entry.get("docker_host") == docker_host and _owner_alive(entry):
            live.append(entry["project"])
    return live


def _remove_projects(scope: CleanupScope) -> tuple[list[dict], list[str]]:
    """Remove the projects in ``scope`` (ComposeCluster.clean_up): the registrations of those
    removed, and what could not be (its engine does not answer), which does not stop the others.

    As with processes, a detached cluster (`cluster up`) has no living owner by design: the
    cleanup at the start of a run leaves it alone, `rebalance-lab cleanup` does not; a live
    owner's project goes only when the scope names that owner (`cluster down`)."""
    from harness.cluster.compose_topology import OWNER_LABEL
    from harness.components.containers.engine import remove_labelled

    removed, failed = [], []
    for path in _registrations():
        with _registration_held(path) as held:
            if held is None:  # removed by a cleaner we waited for, or not a registration at all
                continue
            entry, forget = held
            if scope.owner not in (None, entry["owner"]) or scope.owner_pid not in (None, entry.get("owner_pid")):
                continue
            alive = _owner_alive(entry)
            if (alive and scope.owner is None) or (entry["owner"].startswith(DETACHED_OWNERS) and not scope.detached):
                continue
            try:
                remove_labelled(entry["docker_host"], f"{OWNER_LABEL}={entry['owner']}")
            except (SetupError, ClusterError, OSError) as e:
                failed.append(f"{entry['project']}: {e}")
                continue
            forget()
            removed.append(entry)
            # still holding the registration: a cleaner that waited for it finds the run marked too
            if not alive and (run_dir := run_of(entry["owner"])):
                mark_killed(run_dir, scope.by, [{"compose_project": entry["project"]}])
    return removed, failed


@contextmanager
def _registration_held(path: Path) -> Iterator[tuple[dict, Callable[[], None]] | None]:
    """A project's registration, locked so that of two cleaners (a `cleanup` and the start of a
    run in another terminal or pytest worker) one removes the project while the other waits, then
    skips it; None once it is gone. With it, `forget()` deletes this registration file, and not
    one its harness wrote anew under the same name since (a new file: written atomically)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # deleted meanwhile
        fd = None
    if fd is None:
        yield None
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        held = os.fstat(fd)

        def forget() -> None:
            try:
                if os.stat(path).st_ino == held.st_ino:
                    path.unlink()
            except FileNotFoundError:
                pass

        entry = None
        if held.st_nlink:  # else: the cleaner that held the lock before us removed it
            try:
                entry = json.loads(os.read(fd, 1 << 20))
            except ValueError:  # not a registration: they are written whole (atomically)
                forget()
        yield (entry, forget) if entry is not None else None
    finally:
        os.close(fd)  # releases the lock


def _output_of(e: Exception) -> str:
    stderr = getattr(e, "stderr", None)
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else str(e)
    return "\n".join(text.strip().splitlines()[-20:])
