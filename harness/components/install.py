"""`rebalance-lab setup`: fetch and build the real components, idempotently.

Everything lands under ``lab_home()/components``; each component directory gets a
``.installed`` marker holding exactly what was installed, so a second run compares
markers and does nothing. Kafka comes from Maven Central through ``mvn`` (a
generated POM, ``dependency:copy-dependencies``), Toxiproxy is built from source
with ``go install``, the Jolokia JVM agent (JMX over HTTP, for ZooKeeper's
session MBeans) is one artifact copied by ``mvn``, the Python side is checked
against the pins in pyproject.toml, and the analysis JVM's class archive is built
once per JDK and pyspark (analysis.class_archive).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from harness.components import versions
from harness.paths import components_dir
from harness.supervision.processes import Supervisor
from harness.supervision.stop_signals import deferred
from runtime.errors import SetupError

Report = Callable[[str], None]


def _python_pins() -> dict[str, str]:
    """The Python distributions the harness imports at run time, with their pins, as
    pyproject.toml's dependencies write them (the one place they are written); from the
    installed distribution's metadata when the source tree is not at hand."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if pyproject.exists():
        with open(pyproject, "rb") as f:
            requirements = tomllib.load(f)["project"]["dependencies"]
    else:
        requirements = [r for r in metadata.requires("rebalance-lab") or [] if "extra ==" not in r]
    return dict(re.fullmatch(r"([A-Za-z0-9_.\-]+)==([\w.]+)", r.strip()).groups() for r in requirements)


PYTHON_PINS = _python_pins()

_OFFLINE_HINTS = (
    "Could not transfer",
    "Could not resolve",
    "UnknownHost",
    "Connection refused",
    "Network is unreachable",
    "timed out",
    "dial tcp",
    "no such host",
)


# --------------------------------------------------------------------------- tools


def _tool(name: str, how: str) -> str:
    path = shutil.which(name)
    if not path:
        raise SetupError(f"`{name}` is not on PATH. {how}")
    return path


def java_major() -> int:
    java = _tool("java", "Install a JDK 17 or newer (Debian: `apt-get install openjdk-17-jdk-headless`).")
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not m:
        raise SetupError(f"could not read the Java version from `java -version`: {out.strip()!r}")
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 else major


def _check_java() -> None:
    major = java_major()
    if major < versions.JAVA_MIN_MAJOR:
        raise SetupError(
            f"Java {major} found; Kafka 4.x brokers need Java {versions.JAVA_MIN_MAJOR}+ "
            "(Debian: `apt-get install openjdk-17-jdk-headless`)."
        )


def _check_go() -> str:
    go = _tool("go", "Install Go 1.23 or newer (Debian bookworm-backports: `apt-get install golang-1.23`).")
    out = subprocess.run([go, "version"], capture_output=True, text=True).stdout
    m = re.search(r"go(\d+)\.(\d+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < versions.GO_MIN:
        raise SetupError(f"Toxiproxy {versions.TOXIPROXY_VERSION} needs Go >= 1.23; `go version` says: {out.strip()}")
    return go


def _explain_failure(what: str, registry: str, output: str) -> SetupError:
    tail = "\n".join(output.strip().splitlines()[-15:])
    if any(h in output for h in _OFFLINE_HINTS):
        return SetupError(f"{what} failed: {registry} is unreachable from this machine.\n{tail}")
    return SetupError(f"{what} failed.\n{tail}")


def _run_step(
    name: str, argv: list[str], log: Path, timeout: float | None = None, env: dict | None = None, cwd: str | None = None
) -> int:
    """One step of setup to completion, its output in `log`: in its own process group, registered
    (`cleanup` finds it if setup dies), the whole group killed on any way out — a Ctrl-C, SIGTERM
    (the `setup` command takes it like Ctrl-C), an error, the timeout."""
    try:
        return Supervisor(owner="setup").run(
            name, "setup", argv, log, timeout=timeout, env=env, cwd=Path(cwd) if cwd else None
        )
    except subprocess.TimeoutExpired:
        raise SetupError(f"{name} took more than {timeout / 60:.0f} minutes (log: {log})") from None


def run_to_its_end(
    argv: list[str], env: dict | None = None, grace_s: float = 120.0, report: Report = lambda _msg: None
) -> subprocess.CompletedProcess:
    """A step that must clean up after itself rather than be killed (dpkg's package database,
    debootstrap's mounts in the rootfs it builds): run as subprocess.run(capture_output=True,
    text=True) would, but on a Ctrl-C or SIGTERM to setup (or an error) it gets SIGTERM and
    `grace_s` to finish on its own (debootstrap's exit trap unmounts), and SIGKILL only then —
    subprocess.run would SIGKILL it after 0.25 s. More Ctrl-Cs meanwhile do not shorten that."""
    proc = None
    try:
        with deferred():  # a Ctrl-C as it starts (it may already run its trap's set-up) comes once proc is known
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        out, err = proc.communicate()
    except BaseException:
        if proc is None:
            raise
        with deferred():  # more Ctrl-Cs wait for it to clean up; the first of them is raised after
            proc.terminate()
            with contextlib.suppress(Exception):  # a console gone with its terminal (SIGHUP) must not skip the wait
                report(f"waiting up to {grace_s:.0f} s for {Path(argv[0]).name} to clean up after itself …")
            try:
                proc.communicate(timeout=grace_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):  # its children may hold its pipes open
                    proc.communicate(timeout=10)
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _run_tool(name: str, argv: list[str], env: dict | None = None, cwd: str | None = None) -> tuple[int, str]:
    """A tool (mvn, go, pip) run as a step of setup; its exit code and its output (kept in
    ``components/logs/<name>.log`` for a look after a failure)."""
    log = components_dir() / "logs" / f"{name}.log"
    log.unlink(missing_ok=True)
    code = _run_step(name, argv, log, env=env, cwd=cwd)
    return code, log.read_text(errors="replace") if log.exists() else ""


def _read_marker(directory: Path) -> dict | None:
    try:
        return json.loads((directory / ".installed").read_text())
    except (OSError, ValueError):
        return None


def _write_marker(directory: Path, marker: dict) -> None:
    (directory / ".installed").write_text(json.dumps(marker, indent=2, sort_keys=True))


def _mvn(what: str, *args: str, cwd: str) -> None:
    """Run Maven in batch mode, quietly; a failure is explained (unreachable Central or not)."""
    mvn = _tool("mvn", "Install Apache Maven (Debian: `apt-get install maven`).")
    _check_java()
    code, output = _run_tool(
        "mvn-" + re.sub(r"[^a-z0-9.]+", "-", what.lower()).strip("-"), [mvn, "-B", "-q", *args], cwd=cwd
    )
    if code != 0:
        raise _explain_failure(what, "Maven Central", output)


def _replace_dir(target: Path, staging: Path, name: str) -> None:
    """Move a fully populated staging directory to ``target/name``: a half-copied
    directory must never carry a marker."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    shutil.move(str(staging), target / name)


# --------------------------------------------------------------------------- Kafka


@dataclass(frozen=True)
class KafkaDist:
    """An installed Kafka release (or its tools): where its jars are. What the release can do
    is its catalogue entry's (`release`); which metadata mode a cluster runs is the scenario's."""

    line: str
    version: str
    lib_dir: Path

    @property
    def release(self) -> versions.KafkaRelease:
        return versions.kafka_release(self.version)

    def classpath(self) -> str:
        return ":".join(str(p) for p in sorted(self.lib_dir.glob("*.jar")))


def _release(version: str) -> versions.KafkaRelease:
    """The catalogue's entry for `version` (exact or line); SetupError naming the range if unsupported."""
    try:
        return versions.kafka_release(version)
    except ValueError as e:
        raise SetupError(str(e)) from None


def _kafka_dir(release: versions.KafkaRelease) -> Path:
    return components_dir() / f"kafka-{release.version}"


def _kafka_marker(release: versions.KafkaRelease) -> dict:
    return {
        "kafka": release.version,
        "scala": versions.SCALA_BINARY,
        "extra": [":".join(c) for c in release.slf4j_bindings],
    }


def _kafka_pom(
    release: versions.KafkaRelease, artifact: tuple[str, str] = ("org.apache.kafka", f"kafka_{versions.SCALA_BINARY}")
) -> str:
    deps = [(*artifact, release.version), *release.slf4j_bindings]
    dep_xml = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rebalance-lab</groupId><artifactId>kafka-{release.version}</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{dep_xml}
  </dependencies>
</project>
"""


@contextlib.contextmanager
def component_lock(name: str):
    """Hold the lock of one component directory (``components/.locks/<name>.lock``): several
    pytest workers or campaigns asking for the same release at once install it once — the
    others wait here, then find its marker. flock is released by the kernel if the holder dies."""
    locks = components_dir() / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{name}.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _resolve_classpath(what: str, pom: str, target: Path, marker: dict, report: Report) -> bool:
    """Resolve a POM's runtime classpath into ``target/lib``. Returns False if already there.

    Under the component's lock, into a staging directory beside the target (same file system)
    that is renamed into place whole, the marker written last: a failed or interrupted install
    leaves nothing that looks installed, and a reader never sees a half-copied lib/."""
    if _read_marker(target) == marker:
        report(f"{what}: already installed in {target}")
        return False
    with component_lock(target.name):
        if _read_marker(target) == marker:  # another process installed it while we waited
            report(f"{what}: installed meanwhile by another process, in {target}")
            return False
        report(f"{what}: resolving from Maven Central with mvn …")
        started = time.monotonic()
        target.parent.mkdir(parents=True, exist_ok=True)
        # What an installer killed outright (SIGKILL: no finally ran) left: ours to clear, under the lock.
        for left in [*target.parent.glob(f".{target.name}.staging-*"), *target.parent.glob(f".{target.name}.old-*")]:
            shutil.rmtree(left, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.staging-", dir=target.parent))
        try:
            (staging / "pom").mkdir()
            (staging / "pom" / "pom.xml").write_text(pom)
            _mvn(
                f"resolving {what}",
                "dependency:copy-dependencies",
                f"-DoutputDirectory={staging / 'lib'}",
                "-DincludeScope=runtime",
                cwd=str(staging / "pom"),
            )
            shutil.rmtree(staging / "pom")
            _write_marker(staging, marker)
            if target.exists():  # an older, unmarked or half-made one: out of the way first
                old = target.with_name(f".{target.name}.old-{os.getpid()}")
                target.rename(old)
                shutil.rmtree(old, ignore_errors=True)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    jars = len(list((target / "lib").glob("*.jar")))
    report(f"{what}: installed ({jars} jars) in {time.monotonic() - started:.0f} s")
    return True


def install_kafka(version: str, report: Report) -> bool:
    """Resolve one Kafka release (exact or line) with its runtime classpath. False if already there."""
    release = _release(version)
    untested = "" if release.tested else " (a release the project has not tested)"
    return _resolve_classpath(
        f"Kafka {release.version}{untested}", _kafka_pom(release), _kafka_dir(release), _kafka_marker(release), report
    )


def kafka_installed(version: str) -> bool:
    release = _release(version)
    return _read_marker(_kafka_dir(release)) == _kafka_marker(release)


def kafka_dist(version: str) -> KafkaDist:
    """The installed release `version` (exact or line); SetupError if it is not installed."""
    release = _release(version)
    target = _kafka_dir(release)
    if _read_marker(target) != _kafka_marker(release):
        raise SetupError(
            f"Kafka {release.version} is not installed. Run `rebalance-lab setup --kafka {release.version}`."
        )
    return KafkaDist(release.line, release.version, target / "lib")


# --------------------------------------------------------------------------- Kafka tools
# The tools jar of the same release (VerifiableConsumer, for the java driver), kept
# apart from the broker's classpath: it pulls Connect and Jetty the brokers never load.


def _kafka_tools_dir(release: versions.KafkaRelease) -> Path:
    return components_dir() / f"kafka-tools-{release.version}"


def _kafka_tools_marker(release: versions.KafkaRelease) -> dict:
    return {
        "kafka-tools": ":".join((*versions.KAFKA_TOOLS_ARTIFACT, release.version)),
        "extra": _kafka_marker(release)["extra"],
    }


def install_kafka_tools(version: str, report: Report) -> bool:
    release = _release(version)
    return _resolve_classpath(
        f"Kafka tools {release.version}",
        _kafka_pom(release, versions.KAFKA_TOOLS_ARTIFACT),
        _kafka_tools_dir(release),
        _kafka_tools_marker(release),
        report,
    )


def kafka_tools_installed(version: str) -> bool:
    release = _release(version)
    return _read_marker(_kafka_tools_dir(release)) == _kafka_tools_marker(release)


def kafka_tools(version: str) -> KafkaDist:
    """Kafka's tools (VerifiableConsumer) of one release (exact or line), with their runtime classpath."""
    release = _release(version)
    target = _kafka_tools_dir(release)
    if _read_marker(target) != _kafka_tools_marker(release):
        raise SetupError(
            f"Kafka tools {release.version} (VerifiableConsumer, the java driver) "
            f"are not installed. Run `rebalance-lab setup --kafka {release.version}`."
        )
    return KafkaDist(release.line, release.version, target / "lib")


# --------------------------------------------------------------------------- Jolokia


def _jolokia_coordinates() -> str:
    group, artifact, version, classifier = versions.JOLOKIA_AGENT
    return f"{group}:{artifact}:{version}:jar:{classifier}"


def _jolokia_dir() -> Path:
    return components_dir() / f"jolokia-{versions.JOLOKIA_AGENT[2]}"


def _jolokia_jar() -> Path:
    _, artifact, version, classifier = versions.JOLOKIA_AGENT
    return _jolokia_dir() / "lib" / f"{artifact}-{version}-{classifier}.jar"


def _jolokia_installed() -> bool:
    return _read_marker(_jolokia_dir()) == {"jolokia": _jolokia_coordinates()} and _jolokia_jar().exists()


def install_jolokia(report: Report) -> bool:
    """Copy the pinned Jolokia JVM agent jar (self-contained) from Maven Central. False if already there."""
    version = versions.JOLOKIA_AGENT[2]
    if _jolokia_installed():
        report(f"Jolokia agent {version}: already installed in {_jolokia_dir()}")
        return False
    report(f"Jolokia agent {version}: fetching from Maven Central with mvn …")
    with tempfile.TemporaryDirectory(prefix="rl-jolokia-") as tmp:
        staging = Path(tmp, "lib")
        # dependency:copy needs no POM; an empty working directory keeps any project
        # around the caller's directory out of it.
        _mvn(
            f"fetching {_jolokia_coordinates()}",
            "dependency:copy",
            f"-Dartifact={_jolokia_coordinates()}",
            f"-DoutputDirectory={staging}",
            cwd=tmp,
        )
        _replace_dir(_jolokia_dir(), staging, "lib")
    _write_marker(_jolokia_dir(), {"jolokia": _jolokia_coordinates()})
    report(f"Jolokia agent {version}: installed")
    return True


def jolokia_agent() -> Path:
    """The Jolokia JVM agent jar, for ``java -javaagent:<jar>=…``."""
    if not _jolokia_installed():
        raise SetupError(f"the Jolokia agent {versions.JOLOKIA_AGENT[2]} is not installed. Run `rebalance-lab setup`.")
    return _jolokia_jar()


# --------------------------------------------------------------------------- Toxiproxy


def _toxiproxy_dir() -> Path:
    return components_dir() / f"toxiproxy-{versions.TOXIPROXY_VERSION}"


def install_toxiproxy(report: Report) -> bool:
    target = _toxiproxy_dir()
    marker = {"toxiproxy": versions.TOXIPROXY_VERSION}
    if _read_marker(target) == marker and (target / "server").exists():
        report(f"Toxiproxy {versions.TOXIPROXY_VERSION}: already installed in {target}")
        return False
    go = _check_go()
    report(f"Toxiproxy {versions.TOXIPROXY_VERSION}: building with go install …")
    target.mkdir(parents=True, exist_ok=True)
    code, output = _run_tool(
        "go-install",
        [go, "install", f"{versions.TOXIPROXY_MODULE}@{versions.TOXIPROXY_VERSION}"],
        env={"GOBIN": str(target)},
    )
    if code != 0:
        raise _explain_failure("building Toxiproxy", "the Go module proxy", output)
    _write_marker(target, marker)
    report(f"Toxiproxy {versions.TOXIPROXY_VERSION}: built {target / 'server'}")
    return True


def toxiproxy_binary() -> Path:
    binary = _toxiproxy_dir() / "server"
    if not binary.exists():
        raise SetupError(f"Toxiproxy {versions.TOXIPROXY_VERSION} is not built. Run `rebalance-lab setup`.")
    return binary


# --------------------------------------------------------------------------- the analysis JVM's class archive


def install_class_archive(report: Report) -> bool:
    from analysis import (
        class_archive,  # `run` imports this module, and never the analysis
    )

    return class_archive.build(report, lambda name, argv, log: _run_step(name, argv, log, class_archive.STEP_TIMEOUT_S))


# --------------------------------------------------------------------------- Python


def install_python(report: Report) -> bool:
    missing = []
    for dist, pin in PYTHON_PINS.items():
        try:
            if metadata.version(dist) != pin:
                missing.append(f"{dist}=={pin}")
        except metadata.PackageNotFoundError:
            missing.append(f"{dist}=={pin}")
    if not missing:
        report("Python packages: already installed at their pinned versions")
        return False
    report(f"Python packages: pip install {' '.join(missing)} …")
    code, output = _run_tool("pip-install", [sys.executable, "-m", "pip", "install", "-q", *missing])
    if code != 0:
        raise _explain_failure("pip install", "PyPI", output)
    report("Python packages: installed")
    return True


# --------------------------------------------------------------------------- all


def default_kafka_releases() -> list[str]:
    """What `setup` installs when asked for no release: the default of each major."""
    return [versions.kafka_release(v).version for v in (versions.DEFAULT_KAFKA, versions.DEFAULT_KAFKA_4)]


def setup_all(report: Report, kafka_releases: list[str] | None = None) -> bool:
    """Install everything; returns True if anything changed. `kafka_releases`: exact releases or lines."""
    changed = install_python(report)
    for version in kafka_releases or default_kafka_releases():
        changed |= install_kafka(version, report)
        changed |= install_kafka_tools(version, report)
    changed |= install_jolokia(report)
    changed |= install_toxiproxy(report)
    changed |= install_class_archive(report)
    return changed


def _to_stderr(message: str) -> None:
    print(f"setup: {message}", file=sys.stderr, flush=True)


def installed_for(scenario, kafka: str | None = None, report: Report = _to_stderr) -> None:
    """What a run of `scenario` (or, without one, a cluster of Kafka `kafka`) needs from this
    machine, installed now: SetupError if it cannot be. An external cluster needs only clients.

    The Kafka release is the one component installed on first use (the issue's "resolved from
    Maven Central on first use"): a scenario may name any supported release, and `setup` cannot
    know them all in advance. Under the component's lock, so concurrent runs install it once."""
    if scenario is not None and scenario.workload.client_requirement is not None:
        _client_available(scenario.workload.client_requirement)
    if scenario is not None and scenario.cluster.external:
        return
    version = kafka or scenario.cluster.kafka
    release = _release(version)
    if not release.tested:
        report(
            f"Kafka {release.version} is a release the project has not tested (tested: "
            f"{', '.join(versions.TESTED_KAFKA_RELEASES)}): a run whose broker log lines are not "
            "recognised ends INCOMPLETE"
        )
    toxiproxy_binary(), jolokia_agent()  # what `setup` installs: missing, the run stops before fetching Kafka
    if not kafka_installed(version):
        install_kafka(version, report)
    kafka_dist(version)
    if scenario is not None and scenario.workload.driver_class.needs_kafka_tools:
        # Kafka's tools of the java driver's client release: workload.client's, else the cluster's own.
        client = scenario.workload.client_requirement
        tools = client.version if client is not None and client.distribution.registry == "maven" else version
        if not kafka_tools_installed(tools):
            install_kafka_tools(tools, report)
        kafka_tools(tools)
    # A rolling-broker-upgrade's release, installed before the run, not in its middle; in KRaft its
    # tools too: finalizing runs that release's FeatureCommand.
    for fault in scenario.faults if scenario is not None else ():
        for upgrade in fault.kafka_releases():
            upgrade = _release(upgrade).version
            if not kafka_installed(upgrade):
                install_kafka(upgrade, report)
            kafka_dist(upgrade)
            if scenario.cluster.metadata == "kraft":
                if not kafka_tools_installed(upgrade):
                    install_kafka_tools(upgrade, report)
                kafka_tools(upgrade)


def _client_available(requirement) -> None:
    """workload.client's release exists where it comes from (PyPI asked once, unless installed already); its
    environment is installed by the run's first use, not here."""
    from harness.components import client_envs  # it imports this module

    problem = client_envs.pypi_problem(requirement) if requirement.distribution.registry == "pypi" else None
    if problem:
        raise SetupError(f"workload.client: {problem}")
