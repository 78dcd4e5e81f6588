"""`rebalance-lab image build`: the harness itself as a container image, built here as the
compose backend's images are (no registry is reachable), on top of rebalance-lab/jre:

    /opt/rebalance-lab/src    the project (its packages, compose/, bugs/, scenarios/, suites/, …),
                              installed editable, as a checkout is: `rebalance-lab` on PATH
    /opt/rebalance-lab/deps   its pinned Python dependencies, from wheels built on this machine
                              (`pip wheel`, cached under the lab home), found through a .pth file
    /opt/rebalance-lab/home   the lab home (REBALANCE_LAB_HOME): these Kafka releases' jars and
                              tools, Jolokia's agent and Toxiproxy, copied from this lab home

Tagged ``rebalance-lab/harness:<version>`` and by the digest of its inputs: built again only when
one of them changed. Run a suite in it against a cluster on this machine's 127.0.0.1 with the
host's network (docs/ci.md).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import time
from importlib import metadata
from pathlib import Path

from harness.components import install, versions
from harness.components.containers import images
from harness.paths import components_dir
from runtime.errors import SetupError

NAME = "harness"
# What of the checkout the image carries: the packages, and the files they read at run time.
SOURCES = (
    "harness",
    "analysis",
    "faults",
    "workloads",
    "coordinator",
    "runtime",
    "oracle",
    "compose",
    "bugs",
    "docs",
    "scenarios",
    "suites",
    "profiles",
    "pyproject.toml",
    "README.md",
)
IMAGE_ROOT = "/opt/rebalance-lab"
IMAGE_LAB_HOME = f"{IMAGE_ROOT}/home"


def harness_version() -> str:
    return metadata.version("rebalance-lab")


def version_tag() -> str:
    return f"rebalance-lab/{NAME}:{harness_version()}"


def _source_files() -> list[tuple[Path, str]]:
    files = []
    for entry in SOURCES:
        path = images.REPO / entry
        if path.is_file():
            files.append((path, f"src/{entry}"))
            continue
        for p in sorted(path.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
                files.append((p, f"src/{p.relative_to(images.REPO)}"))
    return files


def _requirements() -> list[str]:
    """The harness's pinned dependencies, and the pip and setuptools that install them in the image."""
    return [f"{name}=={pin}" for name, pin in install.PYTHON_PINS.items()] + list(versions.HARNESS_IMAGE_PIP)


def wheels_dir() -> Path:
    digest = hashlib.sha256("\n".join([sys.version.split()[0], *_requirements()]).encode()).hexdigest()[:12]
    return components_dir() / f"harness-wheels-{digest}"


def ensure_wheels(report: images.Report) -> Path:
    """Every requirement as a wheel for this Python (the image's Debian Python is the same minor
    release), built once with `pip wheel` and kept under the lab home."""
    target = wheels_dir()
    marker = {"requirements": _requirements(), "python": sys.version.split()[0]}
    if install._read_marker(target) == marker:
        return target
    report(f"wheels for the image: pip wheel {len(marker['requirements'])} requirements …")
    staging = target.with_name(target.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    code, output = install._run_tool(
        "pip-wheel-image",
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--disable-pip-version-check",
            "-w",
            str(staging),
            *_requirements(),
        ],
    )
    if code != 0:
        raise install._explain_failure("pip wheel (the image's dependencies)", "PyPI", output)
    install._write_marker(staging, marker)  # complete: then, and only then, in place
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    report(f"wheels for the image: {len(list(target.glob('*.whl')))} in {target}")
    return target


def _component_dirs(kafka_lines: list[str]) -> list[Path]:
    """This lab home's components a run in the image needs: SetupError naming what is missing."""
    dirs = [install._toxiproxy_dir(), install._jolokia_dir()]
    install.toxiproxy_binary(), install.jolokia_agent()
    for line in kafka_lines:
        release = install._release(line)
        install.kafka_dist(line), install.kafka_tools(line)
        dirs += [install._kafka_dir(release), install._kafka_tools_dir(release)]
    return dirs


def harness_recipe(kafka_lines: list[str], wheels: Path) -> images.Recipe:
    wheel_files = sorted(wheels.glob("*.whl"))
    [pip_wheel] = [w for w in wheel_files if w.name.startswith("pip-")] or [None]
    if pip_wheel is None:
        raise SetupError(f"{wheels}: no wheel of pip (remove the directory and build again)")
    home = [
        (p, f"home/{p.relative_to(components_dir().parent)}")
        for d in _component_dirs(kafka_lines)
        for p in sorted(d.rglob("*"))
        if p.is_file()
    ]
    sources = _source_files()
    digest = hashlib.sha256()
    for path, target in sources:
        digest.update(target.encode() + b"\0" + path.read_bytes())
    requirements = " ".join(f"'{r}'" for r in _requirements())
    jre = images.jre_recipe().tag
    dockerfile = (
        f"FROM {jre} AS deps\n"
        "COPY wheels/ /wheels/\n"
        # pip runs from its own wheel: the Debian image has no pip of its own
        f"RUN python3 /wheels/{pip_wheel.name}/pip install -q --disable-pip-version-check --no-index "
        f"--find-links /wheels --target /deps {requirements}\n"
        f"FROM {jre}\n"
        f"COPY --from=deps /deps {IMAGE_ROOT}/deps\n"
        # found by every Python process, whatever its PYTHONPATH (the members' names the source)
        "RUN site=$(python3 -c 'import site; print(site.getsitepackages()[0])') && mkdir -p \"$site\" "
        f'&& echo {IMAGE_ROOT}/deps > "$site/rebalance-lab-deps.pth"\n'
        f"COPY home/ {IMAGE_LAB_HOME}/\n"
        f"COPY src/ {IMAGE_ROOT}/src/\n"
        "RUN python3 -m pip install -q --disable-pip-version-check --no-index --no-deps --no-build-isolation "
        f"--break-system-packages -e {IMAGE_ROOT}/src && rebalance-lab --help > /dev/null\n"
        f"ENV REBALANCE_LAB_HOME={IMAGE_LAB_HOME}\n"
        "WORKDIR /work\n"
        'ENTRYPOINT ["rebalance-lab"]\n'
    )
    return images.Recipe(
        NAME,
        images.jre_recipe(),
        (
            harness_version(),
            *_requirements(),
            *(w.name for w in wheel_files),
            *(f"{t}:{p.stat().st_size}" for p, t in home),
            digest.hexdigest(),
            dockerfile,
        ),
        dockerfile=dockerfile,
        files=(*((w, f"wheels/{w.name}") for w in wheel_files), *home, *sources),
    )


def build_harness_image(kafka_lines: list[str], report: images.Report) -> dict:
    """Build (or find) the harness image; what it is: tags, size, seconds, whether it was built now."""
    import docker
    from docker.errors import BuildError, ImageNotFound

    from harness.components.containers.engine import ensure_engine

    t0 = time.monotonic()
    engine = ensure_engine(report)
    recipe = harness_recipe(kafka_lines, ensure_wheels(report))
    client = docker.DockerClient(base_url=engine.docker_host, timeout=1800)
    try:
        try:
            client.images.get(recipe.parent.tag)
        except ImageNotFound:
            raise SetupError(
                f"the image {recipe.parent.tag} (Debian, Java, Python) is not built: run `rebalance-lab setup --compose`"
            ) from None
        try:
            image = client.images.get(recipe.tag)
            built = False
        except ImageNotFound:
            report(f"image {recipe.tag}: building …")
            try:
                images._build(client, recipe)
            except BuildError as e:
                log = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in e.build_log)
                raise SetupError(f"building image {recipe.tag} failed: {e.msg}\n{log[-2000:]}") from None
            image = client.images.get(recipe.tag)
            built = True
        repository, tag = version_tag().split(":")
        image.tag(repository, tag)
        return {
            "tag": version_tag(),
            "digest_tag": recipe.tag,
            "id": image.id,
            "size_bytes": image.attrs.get("Size", 0),
            "built": built,
            "seconds": round(time.monotonic() - t0, 1),
            "kafka": [install._release(line).version for line in kafka_lines],
            "docker_host": engine.docker_host,
        }
    finally:
        client.close()
