"""The compose backend's images, built here: no registry is reachable.

    rebalance-lab/base         Debian (debootstrap --variant=minbase), imported
    rebalance-lab/jre          + OpenJDK 17 and Python 3, from Debian's packages
    rebalance-lab/kafka        + one Kafka release's jars (what setup resolved from Maven Central)
                                 and Jolokia's agent: ZooKeeper nodes, controllers, brokers
    rebalance-lab/toxiproxy    + the Toxiproxy server setup built with go install
    rebalance-lab/coordinator  + the project's coordinator and what it imports (Python only)

Each tag is a digest of its inputs (versions, files), so an image is built once and again
only when an input changes; a second `setup --compose` finds them all and says so.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from harness.components import install, versions
from runtime.errors import SetupError

Report = Callable[[str], None]
REPO = Path(__file__).resolve().parents[3]
ROLE_LABEL = "rebalance-lab.image"
# What the coordinator image carries: the project's packages the coordinator imports, and kazoo.
COORDINATOR_PACKAGES = ("coordinator", "runtime", "oracle")
COORDINATOR_DISTRIBUTIONS = ("kazoo",)


@dataclass(frozen=True)
class Images:
    """The images a topology runs (built by `rebalance-lab setup --compose`) and where things are in them."""

    kafka: str  # Java and the Kafka line's jars (and Jolokia's agent): ZooKeeper, controller, brokers
    toxiproxy: str
    coordinator: str  # Python and the project's coordinator package
    kafka_classpath: str = "/opt/kafka/libs/*"
    jolokia_agent: str = "/opt/jolokia/jolokia-agent.jar"
    toxiproxy_binary: str = "/usr/local/bin/toxiproxy-server"


@dataclass(frozen=True)
class Recipe:
    """One image: its name, what it is built from, and its tag (a digest of all of that)."""

    name: str
    parent: Recipe | None
    inputs: tuple[str, ...]  # everything the image depends on, as text (versions, file digests)
    dockerfile: str = ""
    files: tuple[tuple[Path, str], ...] = ()  # (source on this machine, path in the build context)

    @property
    def tag(self) -> str:
        digest = hashlib.sha256("\n".join([self.parent.tag if self.parent else "", *self.inputs]).encode())
        return f"rebalance-lab/{self.name}:{digest.hexdigest()[:12]}"


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree_digest(root: Path, pattern: str = "*.py") -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob(pattern)):
        if "__pycache__" not in path.parts:
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def base_recipe() -> Recipe:
    return Recipe("base", None, ("debootstrap", "minbase", versions.IMAGE_SUITE, versions.IMAGE_MIRROR))


def jre_recipe() -> Recipe:
    packages = " ".join(versions.IMAGE_PACKAGES)
    return Recipe(
        "jre",
        base_recipe(),
        (packages,),
        dockerfile=(
            f"FROM {base_recipe().tag}\n"
            "RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "
            f"{packages} && rm -rf /var/lib/apt/lists/*\n"
        ),
    )


def kafka_recipe(line: str) -> Recipe:
    dist = install.kafka_dist(line)
    jars = sorted(Path(p) for p in dist.classpath().split(":"))
    agent = install.jolokia_agent()
    return Recipe(
        f"kafka-{dist.version}",
        jre_recipe(),
        (dist.version, *(f"{j.name}:{j.stat().st_size}" for j in jars), agent.name),
        dockerfile=(
            f"FROM {jre_recipe().tag}\nCOPY libs/ /opt/kafka/libs/\n"
            "COPY jolokia-agent.jar /opt/jolokia/jolokia-agent.jar\n"
        ),
        files=(*((j, f"libs/{j.name}") for j in jars), (agent, "jolokia-agent.jar")),
    )


def toxiproxy_recipe() -> Recipe:
    binary = install.toxiproxy_binary()
    return Recipe(
        "toxiproxy",
        base_recipe(),
        (versions.TOXIPROXY_VERSION, _file_digest(binary)),
        dockerfile=f"FROM {base_recipe().tag}\nCOPY toxiproxy-server /usr/local/bin/toxiproxy-server\n",
        files=((binary, "toxiproxy-server"),),
    )


def coordinator_recipe() -> Recipe:
    sources: list[tuple[Path, str]] = []
    for package in COORDINATOR_PACKAGES:
        sources += [
            (p, f"site/{p.relative_to(REPO)}")
            for p in sorted((REPO / package).rglob("*.py"))
            if "__pycache__" not in p.parts
        ]
    pins = []
    for name in COORDINATOR_DISTRIBUTIONS:
        dist = metadata.distribution(name)
        pins.append(f"{name}=={dist.version}")
        for f in dist.files or []:
            if f.suffix == ".py" and not str(f).startswith(".."):
                sources.append((Path(f.locate()), f"site/{f}"))
    digests = [_tree_digest(REPO / p) for p in COORDINATOR_PACKAGES]
    return Recipe(
        "coordinator",
        jre_recipe(),
        (*pins, *digests),
        dockerfile=(
            f"FROM {jre_recipe().tag}\nCOPY site/ /opt/rebalance-lab/\nENV PYTHONPATH=/opt/rebalance-lab\n"
            # Fail the build, not the run, if something it imports is missing.
            'RUN python3 -c "import coordinator.__main__, kazoo.client"\n'
        ),
        files=tuple(sources),
    )


def recipes(kafka_lines: list[str]) -> list[Recipe]:
    """Every image the compose backend needs for these Kafka lines, parents first."""
    return [
        base_recipe(),
        jre_recipe(),
        *(kafka_recipe(line) for line in kafka_lines),
        toxiproxy_recipe(),
        coordinator_recipe(),
    ]


def image_set(kafka_line: str) -> Images:
    """The images a cluster of this Kafka line runs (tags only: nothing is built here)."""
    return Images(
        kafka=kafka_recipe(kafka_line).tag, toxiproxy=toxiproxy_recipe().tag, coordinator=coordinator_recipe().tag
    )


def missing(docker_host: str, kafka_lines: list[str]) -> list[str]:
    """Tags of the images not built yet."""
    import docker
    from docker.errors import ImageNotFound

    client = docker.DockerClient(base_url=docker_host, timeout=60)
    try:
        absent = []
        for recipe in recipes(kafka_lines):
            try:
                client.images.get(recipe.tag)
            except ImageNotFound:
                absent.append(recipe.tag)
        return absent
    finally:
        client.close()


def ensure_images(kafka_lines: list[str], report: Report = lambda _m: None, docker_host: str | None = None) -> Images:
    """Build what is missing (parents first); the images of the first line's cluster."""
    import docker
    from docker.errors import BuildError, ImageNotFound

    from harness.components.containers.engine import ensure_engine

    client = docker.DockerClient(base_url=docker_host or ensure_engine(report).docker_host, timeout=600)
    try:
        for recipe in recipes(kafka_lines):
            try:
                client.images.get(recipe.tag)
                continue
            except ImageNotFound:
                pass
            t0 = time.monotonic()
            report(f"image {recipe.tag}: building …")
            try:
                if recipe.parent is None:
                    _import_base(client, recipe, report)
                else:
                    _build(client, recipe)
            except BuildError as e:
                log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in e.build_log)
                raise SetupError(f"building image {recipe.tag} failed: {e.msg}\n{log[-2000:]}") from None
            report(f"image {recipe.tag}: built in {time.monotonic() - t0:.0f}s")
    finally:
        client.close()
    return image_set(kafka_lines[0])


def _build(client, recipe: Recipe) -> None:
    with tempfile.TemporaryDirectory(prefix="rl-image-") as tmp:
        context = Path(tmp)
        (context / "Dockerfile").write_text(recipe.dockerfile)
        for source, target in recipe.files:
            (context / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, context / target)
        # The host's network: the project's dockerd gives containers no route out (no masquerading).
        client.images.build(
            path=str(context),
            tag=recipe.tag,
            network_mode="host",
            rm=True,
            forcerm=True,
            labels={ROLE_LABEL: recipe.name},
        )


def _import_base(client, recipe: Recipe, report: Callable[[str], None]) -> None:
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin")
    if not debootstrap:
        raise SetupError("debootstrap is not installed: run `rebalance-lab setup --compose`")
    with tempfile.TemporaryDirectory(prefix="rl-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        # Killed, it would leave /proc and /sys mounted in the rootfs, a directory about to be deleted.
        out = install.run_to_its_end(
            [debootstrap, "--variant=minbase", versions.IMAGE_SUITE, str(root), versions.IMAGE_MIRROR], report=report
        )
        if out.returncode != 0:
            raise SetupError(f"debootstrap {versions.IMAGE_SUITE} failed:\n{(out.stdout + out.stderr)[-2000:]}")
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        try:
            client.api.import_image_from_stream(
                tar.stdout,
                repository=recipe.tag.split(":")[0],
                tag=recipe.tag.split(":")[1],
                changes=[f"LABEL {ROLE_LABEL}={recipe.name}"],
            )
        finally:
            tar.stdout.close()
            tar.wait()
