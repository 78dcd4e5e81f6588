"""analysis/class_archive.py: where the analysis JVM's class archive lives, when a session maps
it, and that setup never leaves a torn one under its name (the JVM mapping one dies of SIGBUS)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from analysis import class_archive
from analysis.session import JAVA_OPTS_ENV
from runtime.errors import SetupError


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LAB_HOME", str(tmp_path / "home dir"))  # Spark's launcher splits on spaces
    monkeypatch.delenv(JAVA_OPTS_ENV, raising=False)
    return tmp_path / "home dir"


def steps(fail: str | None = None, write: bool = True):
    """A step runner standing in for setup's supervised children: `train` writes the staging file."""
    ran = []

    def run(name: str, argv: list[str], log: Path) -> int:
        step, staging = argv[-2], argv[-1]
        ran.append(step)
        if step == "train" and write:
            Path(staging).write_bytes(b"archive")
        log.write_text(f"{step}: boom\n")
        return 1 if step == fail else 0

    run.ran = ran
    return run


def test_a_session_maps_the_archive_only_once_it_is_built(home):
    assert class_archive.archive_options() == ""
    path = class_archive.archive_path()
    assert path.parent == home / "spark-class-archive" and path.suffix == ".jsa"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    os.utime(path, (0, 0))
    options = class_archive.archive_options()
    assert options.startswith(f'"-XX:SharedArchiveFile={path}" ')  # quoted: the path has a space
    assert "-Xlog:cds=off" in options  # a rejected archive's warnings would land on the CLI's stdout
    assert time.time() - path.stat().st_mtime < 60  # mapped now: no other setup sweeps it


def test_other_jvm_options_get_their_own_archive(home, monkeypatch):
    default = class_archive.archive_path()
    assert class_archive.archive_path() == default
    monkeypatch.setenv(JAVA_OPTS_ENV, "-XX:+UseParallelGC")
    assert class_archive.archive_path() != default


def test_setup_keeps_a_built_archive(home):
    path = class_archive.archive_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archived")
    run, said = steps(), []
    assert class_archive.build(said.append, run) is False
    assert run.ran == [] and said == ["analysis JVM class archive: already built"] and path.read_bytes() == b"archived"


def test_a_failed_training_analysis_is_a_setup_error_with_its_log(home):
    with pytest.raises(SetupError) as e:
        class_archive.build(lambda msg: None, steps(fail="train"))
    assert "the training analysis exited 1" in str(e.value) and "train: boom" in str(e.value)
    assert not class_archive.archive_path().exists()
    assert [p.suffix for p in class_archive.archive_path().parent.iterdir()] == [".log"]


@pytest.mark.parametrize("fail, write", [("check", True), (None, False)])
def test_an_archive_the_jvm_did_not_write_or_cannot_map_is_reported_not_kept(home, fail, write):
    said = []
    assert class_archive.build(said.append, steps(fail=fail, write=write)) is False
    assert "not built" in said[-1] and "load their classes from the jars" in said[-1]
    assert [p.suffix for p in class_archive.archive_path().parent.iterdir()] == [".log"]


def test_a_checked_archive_takes_its_name_and_leftovers_go(home):
    directory = class_archive.archive_path().parent
    directory.mkdir(parents=True)
    mapped_lately, unused = directory / "0123456789abcdef.jsa", directory / "fedcba9876543210.jsa"
    mapped_lately.write_bytes(b"another pyspark's, in use")
    unused.write_bytes(b"another pyspark's, unused")
    os.utime(unused, (0, 0))
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    interrupted = directory / f"{class_archive.archive_path().stem}.{pid_max + 1}.staging"  # its setup is gone
    interrupted.write_bytes(b"written after its setup was gone")
    concurrent = directory / f"{class_archive.archive_path().stem}.{os.getppid()}.staging"  # its setup lives
    concurrent.write_bytes(b"being written")

    run = steps()
    assert class_archive.build(lambda msg: None, run) is True
    assert run.ran == ["train", "check"]
    assert class_archive.archive_path().read_bytes() == b"archive"
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [
            class_archive.archive_path().name,
            mapped_lately.name,
            concurrent.name,
            class_archive.archive_path().stem + ".log",
        ]
    )
