"""analysis/class_archive.py: where the analysis JVM's class archive lives, when a session maps
it, and that setup never leaves a torn one under its name (the JVM mapping one dies of SIGBUS)."""
from __future__ import annotations

import subprocess

import pytest

from analysis import class_archive
from analysis.session import JAVA_OPTS_ENV
from runtime.errors import SetupError


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path))
    return tmp_path


def test_a_session_maps_the_archive_only_once_it_is_built(home):
    assert class_archive.driver_options() == ""
    path = class_archive.archive_path()
    assert path.parent == home / "spark-class-archive" and path.suffix == ".jsa"
    path.parent.mkdir()
    path.write_bytes(b"")
    options = class_archive.driver_options().split()
    assert options[0] == f"-XX:SharedArchiveFile={path}"
    assert "-Xlog:cds=off" in options  # a rejected archive's warnings would land on the CLI's stdout


def test_other_jvm_options_get_their_own_archive(home, monkeypatch):
    default = class_archive.archive_path()
    assert class_archive.archive_path() == default
    monkeypatch.setenv(JAVA_OPTS_ENV, "-XX:+UseParallelGC")
    assert class_archive.archive_path() != default


def test_setup_keeps_a_built_archive(home, monkeypatch):
    path = class_archive.archive_path()
    path.parent.mkdir()
    path.write_bytes(b"archived")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("no training when the archive exists"))
    said = []
    assert class_archive.build(said.append) is False
    assert said == ["analysis JVM class archive: already built"] and path.read_bytes() == b"archived"


@pytest.mark.parametrize("failing", ["train", "check"])
def test_a_failed_step_leaves_no_archive_and_says_which(home, monkeypatch, failing):
    def run(argv, **kwargs):
        step, staging = argv[-2], argv[-1]
        if step == "train":
            open(staging, "wb").write(b"torn")
        return subprocess.CompletedProcess(argv, 1 if step == failing else 0, "", "boom")

    monkeypatch.setattr(subprocess, "run", run)
    with pytest.raises(SetupError) as e:
        class_archive.build(lambda msg: None)
    assert str(class_archive.archive_path()) in str(e.value) and "boom" in str(e.value)
    assert ("training analysis" if failing == "train" else "-Xshare:on") in str(e.value)
    assert list((home / "spark-class-archive").iterdir()) == []


def test_a_checked_archive_takes_its_name_and_clears_other_ones_and_leftovers(home, monkeypatch):
    stale = home / "spark-class-archive" / "0123456789abcdef.jsa"
    stale.parent.mkdir()
    stale.write_bytes(b"another pyspark's")
    dead = subprocess.Popen(["true"])
    dead.wait()
    interrupted = stale.parent / f"{class_archive.archive_path().stem}.{dead.pid}.staging"
    interrupted.write_bytes(b"written after its setup was gone")

    def run(argv, **kwargs):
        if argv[-2] == "train":
            open(argv[-1], "wb").write(b"archive")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(subprocess, "run", run)
    assert class_archive.build(lambda msg: None) is True
    assert [p.name for p in stale.parent.iterdir()] == [class_archive.archive_path().name]
