"""The members' client library at the release a scenario asks for (``workload.client``).

One process loads one librdkafka, so each confluent-kafka release gets an environment of its
own under the lab home, ``components/confluent-kafka-<version>/``: a venv holding that release's
wheel and nothing else (the members import only it and the standard library; the project's own
code reaches them through PYTHONPATH, never installed there). The pinned release
(pyproject.toml) needs none: its members run in the harness's own interpreter, as always.

Installed once, whoever asks first (`setup --client`, a run, several pytest workers at once):
under an exclusive lock per release, built in a staging directory beside the target, checked
(it imports, and says which librdkafka it loaded), marked, then moved into place with one
rename. A failed or interrupted install leaves no directory that looks installed.

A Java client release (``kafka-clients==X``) is Kafka's tools of release X (the java driver
runs their VerifiableConsumer): ``java_tools`` is the one place that asks the Kafka installer
for them.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from harness.components import install, versions
from harness.paths import components_dir
from runtime.errors import SetupError
from workloads.client_versions import DISTRIBUTIONS, ClientRequirement, parse_client

CONFLUENT_KAFKA = DISTRIBUTIONS["confluent-kafka"]
KAFKA_CLIENTS = DISTRIBUTIONS["kafka-clients"]
PYPI_TIMEOUT_S = 20
PROJECT_ROOT = Path(__file__).resolve().parents[2]  # what the members' PYTHONPATH names: this code, not a copy
_WHEEL_TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"
# The release the environment imports, and the librdkafka it loads (libversion(): a (text, int) pair, or
# a bare text in some releases, e.g. 2.12.0).
_PROBE = (
    "import importlib.metadata as m, confluent_kafka as c; v = c.libversion(); "
    "print(m.version('confluent-kafka'), v[0] if isinstance(v, tuple) else v)"
)


def default_client(distribution: str, kafka_release: str | None = None) -> ClientRequirement:
    """What members run when ``workload.client`` is absent: the pinned confluent-kafka; for the java
    driver, the client of the cluster's own release."""
    if distribution == CONFLUENT_KAFKA.name:
        return ClientRequirement(CONFLUENT_KAFKA, install.PYTHON_PINS[CONFLUENT_KAFKA.name])
    return ClientRequirement(KAFKA_CLIENTS, kafka_release or "")


def is_pinned(requirement: ClientRequirement) -> bool:
    """The harness's own confluent-kafka: its members need no environment of their own."""
    return requirement == default_client(CONFLUENT_KAFKA.name)


# ------------------------------------------------------------------ confluent-kafka environments


def env_dir(requirement: ClientRequirement) -> Path:
    return components_dir() / f"{requirement.distribution.name}-{requirement.version}"


def _marker(requirement: ClientRequirement) -> dict:
    return {"client": str(requirement), "python": sys.version.split()[0]}


def _installed(target: Path, requirement: ClientRequirement) -> bool:
    try:
        marker = json.loads((target / ".installed").read_text())
    except (OSError, ValueError):
        return False
    return {k: marker.get(k) for k in _marker(requirement)} == _marker(requirement) and _python(target).exists()


def _python(target: Path) -> Path:
    return target / "bin" / "python"


def installed_librdkafka(requirement: ClientRequirement) -> str | None:
    """The librdkafka version the environment's import reported when it was installed (None: not installed)."""
    target = env_dir(requirement)
    if not _installed(target, requirement):
        return None
    return json.loads((target / ".installed").read_text()).get("librdkafka")


def install_client(requirement: ClientRequirement, report: install.Report) -> bool:
    """Install one confluent-kafka release's environment. False if it was there already (or needs
    none: the pinned release, the harness's own)."""
    if requirement.distribution is not CONFLUENT_KAFKA:
        raise ValueError(f"{requirement}: not a Python client (java_tools installs the Java ones)")
    if is_pinned(requirement):
        report(f"{requirement}: the harness's own (pinned in pyproject.toml); no environment needed")
        return False
    target = env_dir(requirement)
    if _installed(target, requirement):
        report(f"{requirement}: already installed in {target}")
        return False
    with install.component_lock(f"{requirement.distribution.name}-{requirement.version}"):
        if _installed(target, requirement):  # another process installed it while this one waited
            report(f"{requirement}: installed meanwhile by another process, in {target}")
            return False
        started = time.monotonic()
        report(f"{requirement}: installing its environment from PyPI (wheels only) …")
        staging = target.with_name(f".staging-{target.name}-{os.getpid()}")
        # What an installer of this release killed outright (SIGKILL: no finally) left: nobody builds it now.
        for left in target.parent.glob(f".staging-{target.name}-*"):
            shutil.rmtree(left, ignore_errors=True)
        try:
            _build(requirement, staging)
            if target.exists():  # a directory without a valid marker: whatever it is, it is not installed
                shutil.rmtree(target)
            os.rename(staging, target)  # the one step that makes it installed
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        librdkafka = installed_librdkafka(requirement)
        report(f"{requirement}: installed (librdkafka {librdkafka}) in {time.monotonic() - started:.1f} s")
    return True


def _build(requirement: ClientRequirement, staging: Path) -> None:
    """The environment in ``staging``, checked and marked (the caller moves it into place)."""
    name = f"client-{requirement.distribution.name}-{requirement.version}"
    # No pip inside: the harness's pip installs into it (--python), seconds faster than ensurepip.
    code, output = install._run_tool(f"venv-{name}", [sys.executable, "-m", "venv", "--without-pip", str(staging)])
    if code != 0:
        raise SetupError(f"creating the environment for {requirement} failed:\n{output.strip()[-2000:]}")
    code, output = install._run_tool(
        f"pip-{name}",
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(_python(staging)),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            "--only-binary=:all:",
            str(requirement),
        ],
    )
    if code != 0:
        if "No matching distribution" in output or "Could not find a version" in output:
            raise SetupError(
                f"workload.client: {requirement}: PyPI has no {_WHEEL_TAG} wheel of it for this machine "
                f"(wheels only; the floor is {requirement.distribution.floor})"
            )
        raise install._explain_failure(f"pip install {requirement}", "PyPI", output)
    # Checked as the members will load it: only the environment's own packages and the standard library.
    probe = subprocess.run(
        [str(_python(staging)), "-I", "-c", _PROBE],
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = probe.stdout.split()
    if probe.returncode != 0 or len(said) != 2 or said[0] != requirement.version:
        raise SetupError(f"{requirement}: installed, but it does not import as that release: {probe.stderr[-1000:]}")
    (staging / ".installed").write_text(
        json.dumps({**_marker(requirement), "librdkafka": said[1]}, indent=2, sort_keys=True)
    )


def member_python(requirement: ClientRequirement | None, report: install.Report = lambda _m: None) -> str:
    """The interpreter a member on ``requirement`` runs in: the harness's own for the pinned release
    (or none given), else that release's environment, installed now if it is not yet."""
    if not needs_env(requirement):
        return sys.executable
    if not _installed(env_dir(requirement), requirement):
        install_client(requirement, report)
    return str(_python(env_dir(requirement)))


def needs_env(requirement: ClientRequirement | None) -> bool:
    """Members on it run in an environment of its own (a confluent-kafka release other than the pinned one)."""
    return requirement is not None and requirement.distribution is CONFLUENT_KAFKA and not is_pinned(requirement)


def member_environment(requirement: ClientRequirement | None) -> dict:
    """What a member in a release's environment needs on top of the harness's environment: the
    project's code on its path, and nothing of the harness's own site-packages (no user site)."""
    if not needs_env(requirement):
        return {}
    return {"PYTHONPATH": str(PROJECT_ROOT), "PYTHONNOUSERSITE": "1"}


def pypi_problem(requirement: ClientRequirement) -> str | None:
    """Why PyPI cannot give this release as a wheel for this interpreter, or None. An installed (or
    the pinned) release needs no asking."""
    if is_pinned(requirement) or _installed(env_dir(requirement), requirement):
        return None
    files = _pypi_files(requirement.distribution.name)
    stem = re.sub(r"[-_.]+", "_", requirement.distribution.name) + f"-{requirement.version}-"
    released = [f for f in files if f.startswith((stem, f"{requirement.distribution.name}-{requirement.version}."))]
    if not released:
        return f"PyPI has no release {requirement.version} of {requirement.distribution.name}"
    machine = os.uname().machine
    if not any(f"-{_WHEEL_TAG}-" in f and "manylinux" in f and f.endswith(f"{machine}.whl") for f in released):
        return (
            f"PyPI has no {_WHEEL_TAG} manylinux {machine} wheel of {requirement} "
            f"(wheels only: the floor is {requirement.distribution.floor})"
        )
    return None


@functools.lru_cache(maxsize=4)
def _pypi_files(project: str) -> tuple[str, ...]:
    """Every file name PyPI's simple index (PEP 691, what pip reads) lists for ``project``: asked once a process."""
    request = urllib.request.Request(
        f"https://pypi.org/simple/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=PYPI_TIMEOUT_S) as answer:
            return tuple(f["filename"] for f in json.load(answer).get("files", []))
    except urllib.error.HTTPError as e:
        raise SetupError(f"workload.client: asking PyPI about {project} failed: HTTP {e.code}") from None
    except (OSError, ValueError) as e:
        raise SetupError(
            f"workload.client: PyPI is unreachable from this machine ({e}); cannot check {project}"
        ) from None


# ------------------------------------------------------------------ Java clients (Kafka's tools)


def java_tools(requirement: ClientRequirement) -> str | None:
    """The classpath of Kafka's tools of the requirement's release (VerifiableConsumer and that
    release's kafka-clients), or None if they are not installed: the one call into the Kafka
    installer for a Java client."""
    if java_release_problem(requirement) or not install.kafka_tools_installed(requirement.version):
        return None
    return install.kafka_tools(requirement.version).classpath()


def java_release_problem(requirement: ClientRequirement) -> str | None:
    """Why the harness cannot run this Java client release (the Kafka catalogue's word), or None."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", requirement.version):
        return f"{requirement}: the java driver runs Kafka's tools of one exact release (X.Y.Z)"
    try:
        versions.kafka_release(requirement.version)
    except ValueError as e:
        return f"the java driver runs Kafka's tools of that release: {e}"
    return None


def requirement_of(text: str | None) -> ClientRequirement | None:
    return parse_client(text) if text else None
