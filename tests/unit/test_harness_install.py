"""harness/components/install.py: pins agree with pyproject.toml; Kafka POM and classpath; missing tools explained;
a stopped setup leaves no tool running, and lets a step that must clean up after itself do so."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path
from xml.etree import ElementTree

import pytest

from harness.components import install, versions
from harness.supervision.processes import process_state, registered
from harness.supervision.stop_signals import like_ctrl_c
from runtime.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, SetupError
from tests.conftest import signals_at_default

REPO = Path(__file__).resolve().parents[2]
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def test_python_pins_equal_pyproject_dependencies():
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = {}
    for dep in deps:
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([\w.]+)", dep)
        assert m, f"{dep!r} is not pinned with =="
        pins[m[1]] = m[2]
    assert pins == install.PYTHON_PINS


def test_classpath_lists_the_jars_sorted(tmp_path):
    for name in ("kafka_2.13-3.9.2.jar", "zookeeper-3.8.4.jar", "kafka-clients-3.9.2.jar", "NOTICE.txt"):
        (tmp_path / name).write_text("")
    dist = install.KafkaDist("3.9", "3.9.2", tmp_path)
    assert dist.classpath() == ":".join(
        str(tmp_path / n) for n in ("kafka-clients-3.9.2.jar", "kafka_2.13-3.9.2.jar", "zookeeper-3.8.4.jar")
    )
    assert dist.release.zookeeper and not install.KafkaDist("4.1", "4.1.1", tmp_path).release.zookeeper
    assert install.KafkaDist("3.9", "3.9.2", tmp_path / "missing").classpath() == ""


@pytest.mark.parametrize("version", versions.TESTED_KAFKA_RELEASES)
def test_kafka_pom_pins_kafka_and_an_slf4j_binding(version):
    release = versions.kafka_release(version)
    pom = ElementTree.fromstring(install._kafka_pom(release))  # also proves it is well-formed XML
    deps = [
        tuple(d.findtext(f"m:{k}", namespaces=POM_NS) for k in ("groupId", "artifactId", "version"))
        for d in pom.iterfind("m:dependencies/m:dependency", POM_NS)
    ]
    assert ("org.apache.kafka", f"kafka_{versions.SCALA_BINARY}", version) in deps
    for binding in release.slf4j_bindings:
        assert binding in deps
    assert len(deps) == 1 + len(release.slf4j_bindings)
    assert pom.findtext("m:packaging", namespaces=POM_NS) == "pom"


def test_kafka_pom_versions_are_the_pinned_ones():
    def pom(text):
        return install._kafka_pom(versions.kafka_release(text))

    assert "<version>3.9.2</version>" in pom("3.9")
    assert "slf4j-reload4j" in pom("3.3.2") and "slf4j-reload4j" in pom("3.9")
    assert "<version>4.4.0</version>" in pom("4.4")
    assert "log4j-slf4j" in pom("4.0.2") and "log4j-slf4j" in pom("4.4")


@pytest.fixture
def no_tools(monkeypatch, tmp_path):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    monkeypatch.setattr(install.shutil, "which", lambda name: None)


@pytest.mark.parametrize(
    "action, tool, how",
    [
        (lambda: install.java_major(), "java", "openjdk-17-jdk-headless"),
        (lambda: install.install_kafka("3.9", print), "mvn", "apt-get install maven"),
        (lambda: install.install_toxiproxy(print), "go", "golang-1.23"),
    ],
    ids=["java", "mvn", "go"],
)
def test_missing_tool_says_which_and_how_to_get_it(no_tools, action, tool, how):
    with pytest.raises(SetupError) as info:
        action()
    assert f"`{tool}` is not on PATH" in str(info.value)
    assert how in str(info.value)
    assert info.value.exit_code == EXIT_BAD_INPUT


def test_kafka_dist_before_setup_says_to_run_setup(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    with pytest.raises(SetupError, match=r"Kafka 3\.9\.2 is not installed\. Run `rebalance-lab setup --kafka 3\.9\.2`"):
        install.kafka_dist("3.9")
    with pytest.raises(SetupError, match=r"Kafka 2\.8 is older than the supported range"):
        install.kafka_dist("2.8")


def test_unreachable_registry_is_named():
    err = install._explain_failure(
        "resolving Kafka 3.9.2",
        "Maven Central",
        "[ERROR] Could not transfer artifact org.apache.kafka:kafka_2.13:pom:3.9.2",
    )
    assert str(err).startswith("resolving Kafka 3.9.2 failed: Maven Central is unreachable from this machine.")


def _until(predicate, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_stopped_setup_stops_the_tool_it_was_running_and_its_children(tmp_path, monkeypatch, sig):
    """`setup` killed while Maven resolves Kafka: a stand-in `mvn` that started a child of its own;
    both go with setup, nothing stays registered, nothing is marked installed."""
    bin_dir, pids = tmp_path / "bin", tmp_path / "mvn.pids"
    bin_dir.mkdir()
    stand_ins = {
        "java": "echo 'openjdk version \"17.0.9\" 2023-10-17' >&2",
        "mvn": f"sleep 300 &\necho $$ $! > {pids}\nwait",
    }
    for tool, script in stand_ins.items():
        (bin_dir / tool).write_text(f"#!/bin/sh\n{script}\n")
        (bin_dir / tool).chmod(0o755)
    home = tmp_path / "home"
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(home))
    # as from a terminal, even where pytest itself runs with some ignored (a background job, nohup)
    setup = subprocess.Popen(
        [sys.executable, "-m", "harness", "setup", "--kafka", "3.9"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
        preexec_fn=signals_at_default,
    )
    mvn = child = None
    try:
        _until(lambda: pids.exists() and pids.read_text().endswith("\n"))
        mvn, child = map(int, pids.read_text().split())
        setup.send_signal(sig)
        out, _ = setup.communicate(timeout=60)
    finally:
        setup.kill()
        if mvn and process_state(mvn) not in (None, "Z"):  # the test failed: not left running for 300 s
            os.killpg(mvn, signal.SIGKILL)
    assert setup.returncode == EXIT_INTERRUPTED, out
    assert "setup: interrupted" in out and "Traceback" not in out
    _until(lambda: process_state(mvn) in (None, "Z") and process_state(child) in (None, "Z"), timeout=10)
    assert registered() == []
    assert not list(home.rglob(".installed"))


def test_a_step_run_to_its_end_gives_its_output_and_exit_code():
    out = install.run_to_its_end(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (out.returncode, out.stdout, out.stderr) == (3, "out\n", "err\n")


def test_a_stop_as_the_step_starts_still_gives_it_time_to_clean_up(tmp_path, monkeypatch):
    """The Ctrl-C lands while Popen is returning (under load the step may already run): it must
    still get SIGTERM and its grace, not be left running while setup unwinds."""
    cleaned = tmp_path / "cleaned"
    script = f"trap 'echo unmounted > {cleaned}; exit 143' TERM\nwhile :; do sleep 0.05; done"
    started = []

    class StoppedAsItStarts(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)
            time.sleep(0.3)  # the shell has set its trap
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(install.subprocess, "Popen", StoppedAsItStarts)
    try:
        with pytest.raises(KeyboardInterrupt), like_ctrl_c():
            install.run_to_its_end(["sh", "-c", script], grace_s=30)
        assert cleaned.read_text() == "unmounted\n"
    finally:
        for proc in started:
            proc.kill()
            proc.communicate()


def test_a_stopped_setup_gives_a_step_time_to_clean_up_after_itself(tmp_path):
    """debootstrap's exit trap unmounts what it mounted in the rootfs: a SIGKILL 0.25 s after the
    Ctrl-C, as subprocess.run gives, would leave the mounts; SIGTERM and time do not."""
    ready, cleaning, cleaned = tmp_path / "ready", tmp_path / "cleaning", tmp_path / "cleaned"
    script = (
        f"trap 'echo > {cleaning}; sleep 0.5; echo unmounted > {cleaned}; exit 143' TERM\n"
        f"echo > {ready}\nwhile :; do sleep 0.05; done"
    )

    def sigterm_to_setup_twice():  # the second while it cleans up: no shorter for that
        _until(ready.exists, timeout=30)
        os.kill(os.getpid(), signal.SIGTERM)
        _until(cleaning.exists, timeout=30)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=sigterm_to_setup_twice, daemon=True).start()
    with pytest.raises(KeyboardInterrupt), like_ctrl_c():  # as `setup` takes SIGTERM
        install.run_to_its_end(["sh", "-c", script], grace_s=30)
    assert cleaned.read_text() == "unmounted\n"


def _fake_mvn(calls: list, fail: bool = False, hold_s: float = 0.3):
    """A stand-in for Maven: writes one jar into the outputDirectory it is given, slowly."""

    def mvn(what, *args, cwd):
        calls.append(what)
        time.sleep(hold_s)  # long enough for a second installer to arrive and wait on the lock
        if fail:
            raise SetupError(f"{what} failed.")
        out = Path(next(a for a in args if a.startswith("-DoutputDirectory=")).split("=", 1)[1])
        out.mkdir(parents=True)
        (out / "kafka_2.13-3.7.2.jar").write_text("")

    return mvn


def test_concurrent_first_uses_install_a_release_once(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    calls: list = []
    monkeypatch.setattr(install, "_mvn", _fake_mvn(calls))
    results = []
    threads = [threading.Thread(target=lambda: results.append(install.install_kafka("3.7.2", print))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and sorted(results) == [False, False, True]
    assert install.kafka_dist("3.7").version == "3.7.2" and install.kafka_dist("3.7.2").classpath().endswith(".jar")
    # Nothing but the release and the lock is left beside it: no staging directory.
    assert {p.name for p in (tmp_path / "components").iterdir()} - {"logs"} == {".locks", "kafka-3.7.2"}


def test_a_failed_install_leaves_nothing_that_looks_installed(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    monkeypatch.setattr(install, "_mvn", _fake_mvn([], fail=True, hold_s=0))
    with pytest.raises(SetupError):
        install.install_kafka("4.0.2", print)
    assert not install.kafka_installed("4.0.2")
    assert not (tmp_path / "components" / "kafka-4.0.2").exists()
    assert not [p for p in (tmp_path / "components").iterdir() if "staging" in p.name]


def test_what_a_killed_installer_left_is_cleared_by_the_next(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    monkeypatch.setattr(install, "_mvn", _fake_mvn([], hold_s=0))
    components = tmp_path / "components"
    # A SIGKILLed installer runs no `finally`: its staging directory and a half-moved old one stay.
    for left in (".kafka-3.7.2.staging-abc123", ".kafka-3.7.2.old-4242"):
        (components / left / "lib").mkdir(parents=True)
    assert install.install_kafka("3.7.2", print)
    assert {p.name for p in components.iterdir()} - {"logs"} == {".locks", "kafka-3.7.2"}


def test_an_unsupported_release_is_refused_before_maven(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    monkeypatch.setattr(install, "_mvn", _fake_mvn(calls := []))
    with pytest.raises(SetupError, match="older than the supported range"):
        install.install_kafka("3.2.3", print)
    assert calls == []
