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
import json
import re
import shutil
import subprocess
import sys
import tempfile
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
    line: str
    version: str
    lib_dir: Path

    @property
    def zookeeper_mode(self) -> bool:
        return self.line in versions.KAFKA_LINES_WITH_ZOOKEEPER

    def classpath(self) -> str:
        return ":".join(str(p) for p in sorted(self.lib_dir.glob("*.jar")))


def _kafka_dir(line: str) -> Path:
    return components_dir() / f"kafka-{versions.KAFKA_RELEASES[line]}"


def _kafka_marker(line: str) -> dict:
    return {
        "kafka": versions.KAFKA_RELEASES[line],
        "scala": versions.SCALA_BINARY,
        "extra": [":".join(c) for c in versions.SLF4J_BINDINGS[line]],
    }


def _kafka_pom(line: str, artifact: tuple[str, str] = ("org.apache.kafka", f"kafka_{versions.SCALA_BINARY}")) -> str:
    deps = [(*artifact, versions.KAFKA_RELEASES[line])]
    deps += versions.SLF4J_BINDINGS[line]
    dep_xml = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rebalance-lab</groupId><artifactId>kafka-{line}</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{dep_xml}
  </dependencies>
</project>
"""


def _resolve_classpath(what: str, pom: str, target: Path, marker: dict, report: Report) -> bool:
    """Resolve a POM's runtime classpath into ``target/lib``. Returns False if already there."""
    if _read_marker(target) == marker:
        report(f"{what}: already installed in {target}")
        return False
    report(f"{what}: resolving from Maven Central with mvn …")
    with tempfile.TemporaryDirectory(prefix="rl-kafka-") as tmp:
        Path(tmp, "pom.xml").write_text(pom)
        staging = Path(tmp, "lib")
        _mvn(
            f"resolving {what}",
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
            "-DincludeScope=runtime",
            cwd=tmp,
        )
        _replace_dir(target, staging, "lib")
    _write_marker(target, marker)
    jars = len(list((target / "lib").glob("*.jar")))
    report(f"{what}: installed ({jars} jars)")
    return True


def install_kafka(line: str, report: Report) -> bool:
    """Resolve one Kafka release with its runtime classpath. Returns False if already there."""
    return _resolve_classpath(
        f"Kafka {versions.KAFKA_RELEASES[line]}", _kafka_pom(line), _kafka_dir(line), _kafka_marker(line), report
    )


def _known_line(line: str) -> None:
    if line not in versions.KAFKA_RELEASES:
        raise SetupError(f"unknown Kafka line {line!r}; known: {', '.join(versions.KAFKA_RELEASES)}")


def kafka_dist(line: str) -> KafkaDist:
    _known_line(line)
    target = _kafka_dir(line)
    if _read_marker(target) != _kafka_marker(line):
        raise SetupError(f"Kafka {versions.KAFKA_RELEASES[line]} is not installed. Run `rebalance-lab setup`.")
    return KafkaDist(line, versions.KAFKA_RELEASES[line], target / "lib")


# --------------------------------------------------------------------------- Kafka tools
# The tools jar of the same release (VerifiableConsumer, for the java driver), kept
# apart from the broker's classpath: it pulls Connect and Jetty the brokers never load.


def _kafka_tools_dir(line: str) -> Path:
    return components_dir() / f"kafka-tools-{versions.KAFKA_RELEASES[line]}"


def _kafka_tools_marker(line: str) -> dict:
    return {
        "kafka-tools": ":".join((*versions.KAFKA_TOOLS_ARTIFACT, versions.KAFKA_RELEASES[line])),
        "extra": _kafka_marker(line)["extra"],
    }


def install_kafka_tools(line: str, report: Report) -> bool:
    return _resolve_classpath(
        f"Kafka tools {versions.KAFKA_RELEASES[line]}",
        _kafka_pom(line, versions.KAFKA_TOOLS_ARTIFACT),
        _kafka_tools_dir(line),
        _kafka_tools_marker(line),
        report,
    )


def kafka_tools(line: str) -> KafkaDist:
    """Kafka's tools (VerifiableConsumer) for one Kafka line, with their runtime classpath."""
    _known_line(line)
    target = _kafka_tools_dir(line)
    if _read_marker(target) != _kafka_tools_marker(line):
        raise SetupError(
            f"Kafka tools {versions.KAFKA_RELEASES[line]} (VerifiableConsumer, the java driver) "
            "are not installed. Run `rebalance-lab setup`."
        )
    return KafkaDist(line, versions.KAFKA_RELEASES[line], target / "lib")


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


def setup_all(report: Report, kafka_lines: list[str] | None = None) -> bool:
    """Install everything; returns True if anything changed."""
    changed = install_python(report)
    for line in kafka_lines or list(versions.KAFKA_RELEASES):
        changed |= install_kafka(line, report)
        changed |= install_kafka_tools(line, report)
    changed |= install_jolokia(report)
    changed |= install_toxiproxy(report)
    changed |= install_class_archive(report)
    return changed


def installed_for(scenario, kafka: str | None = None) -> None:
    """What a run of `scenario` (or, without one, a cluster of Kafka `kafka`) needs from this
    machine, installed now: SetupError if it cannot be. An external cluster needs only clients."""
    if scenario is not None and scenario.workload.client_requirement is not None:
        _client_available(scenario.workload.client_requirement)
    if scenario is not None and scenario.cluster.external:
        return
    line = kafka or scenario.cluster.kafka
    kafka_dist(line), toxiproxy_binary(), jolokia_agent()
    if scenario is not None and scenario.workload.driver_class.needs_kafka_tools:
        _java_client_installed(scenario.workload.client_requirement, line)


def _java_client_installed(requirement, line: str) -> None:
    """The java driver's tools: of workload.client's release, else of the cluster's own."""
    from harness.components import client_envs  # it imports this module

    if requirement is None or requirement.distribution.registry != "maven":
        kafka_tools(line)
    elif client_envs.java_tools(requirement) is None:
        raise SetupError(
            f"Kafka tools {requirement.version} (VerifiableConsumer, the java driver's client {requirement}) "
            f"are not installed. Run `rebalance-lab setup --client {requirement}`."
        )


def _client_available(requirement) -> None:
    """workload.client's release exists where it comes from (PyPI asked once, unless installed already); its
    environment is installed by the run's first use, not here."""
    from harness.components import client_envs  # it imports this module

    problem = client_envs.pypi_problem(requirement) if requirement.distribution.registry == "pypi" else None
    if problem:
        raise SetupError(f"workload.client: {problem}")
