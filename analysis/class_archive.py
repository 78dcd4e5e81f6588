"""The analysis JVM's class archive (HotSpot's class data sharing, CDS).

A Spark session loads ~24,000 classes, and a fresh JVM parses and verifies each one
from Spark's jars. `rebalance-lab setup` runs one analysis of a few synthetic runs in a
JVM that archives every class it loaded when it exits (`-XX:ArchiveClassesAtExit`),
then a session that must map the result (`-Xshare:on`); every later session's driver
maps it (`-XX:SharedArchiveFile`) and starts in about half the time (figures in
docs/analysis.md, "Speed").

The archive is only valid for the JVM build (and its base archive) and the jars it was
dumped with; it is kept under a fingerprint of both and of the JVM options, so another
JDK or another pyspark gets its own. A stale one the JVM rejects costs nothing but the
speed-up: the JVM checks every jar's size and mtime itself and loads from the jars.
A torn one would crash the JVM mapping it (SIGBUS), so only a checked archive, synced
to disk, takes the name. A training analysis that fails is a setup error (`analyze`
would fail the same way); a JVM that writes no usable archive is only reported.

The steps run as children of setup (harness/components/install.py supervises them: their own
process group, killed with their JVM on Ctrl-C, and a killed JVM writes nothing):

    python3 -m analysis.class_archive train|check ARCHIVE
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from runtime.errors import SetupError
from runtime.home import lab_home

# The JVM prints a rejected archive's reasons as warnings on stdout, the CLI's output.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
# Archives of another JDK, pyspark or JVM options that no session has mapped for this long go.
UNUSED_FOR_S = 30 * 86400
STEP_TIMEOUT_S = 900
# Runs a step's argv with its output in a log; returns its exit code once it and its JVM are gone.
StepRunner = Callable[[str, list[str], Path], int]


def _java() -> Path:
    """The java that spark-submit runs: JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    java = Path(home, "bin", "java") if home else Path(shutil.which("java") or "java")
    return java.resolve()


def _spark_jars() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home(), "jars")


def archive_path() -> Path:
    """Where the archive for this JVM, these jars and the sessions' JVM options lives."""
    from .session import jvm_options

    digest = hashlib.sha256(jvm_options().encode())
    java = _java()
    # libjvm.so and the JDK's base archive (classes*.jsa), which a dynamic archive extends
    for f in [java, *sorted(java.parents[1].glob("lib/server/*"))] + sorted(_spark_jars().glob("*.jar")):
        st = f.stat() if f.exists() else None
        digest.update(f"{f}:{st and st.st_size}:{st and st.st_mtime_ns}\n".encode())
    return lab_home() / "spark-class-archive" / f"{digest.hexdigest()[:16]}.jsa"


def _option(flag: str, path: Path) -> str:
    # quoted: Spark's launcher splits extraJavaOptions on whitespace, and honours quotes
    return f'"{flag}={path}"'


def archive_options() -> str:
    """The driver's JVM options that map the archive, if it was built ('' if not)."""
    path = archive_path()
    if not path.exists():
        return ""
    try:
        os.utime(path)  # in use: not swept as another setup's stale archive
    except OSError:
        pass
    return f"{_option('-XX:SharedArchiveFile', path)} {_QUIET}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _sweep(keep: Path) -> None:
    """Staging files of setups that are gone, and archives nobody mapped for UNUSED_FOR_S."""
    for leftover in keep.parent.glob("*.*.staging"):
        if not _alive(int(leftover.name.split(".")[1])):
            leftover.unlink(missing_ok=True)
    for other in keep.parent.glob("*.jsa"):
        try:
            if other != keep and time.time() - other.stat().st_mtime > UNUSED_FOR_S:
                other.unlink()
        except OSError:
            pass


def _publish(staging: Path, target: Path) -> None:
    """`staging` under the name `target`, on disk before it has the name (a torn archive crashes the JVM)."""
    with open(staging, "rb") as f:
        os.fsync(f.fileno())
    os.replace(staging, target)
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def build(report: Callable[[str], None], run_step: StepRunner) -> bool:
    """Build the archive unless it exists; True if built. SetupError if the training analysis fails."""
    target = archive_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    _sweep(target)
    if target.exists():
        report("analysis JVM class archive: already built")
        return False
    staging = target.with_name(f"{target.stem}.{os.getpid()}.staging")
    log = target.with_suffix(".log")
    log.unlink(missing_ok=True)
    report("analysis JVM class archive: one analysis of synthetic runs, its classes archived as the JVM exits …")
    try:
        for step, (what, _) in STEPS.items():
            code = run_step(f"class-archive-{step}", [sys.executable, "-m", __name__, step, str(staging)], log)
            if step == "train" and code != 0:
                tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
                raise SetupError(
                    f"the analysis JVM's class archive could not be built: {what} exited {code} (log: {log})\n{tail}"
                )
            if code != 0 or not staging.exists():
                report(
                    f"analysis JVM class archive: not built ({what} exited {code}, log: {log}); "
                    "Spark sessions load their classes from the jars"
                )
                return False
        size = staging.stat().st_size
        _publish(staging, target)
    finally:
        staging.unlink(missing_ok=True)
    report(f"analysis JVM class archive: built ({size / 2**20:.0f} MB, {target})")
    return True


def _train(target: Path) -> None:
    """One analysis (and its rerun from the cache) in a JVM that archives its classes
    into `target` on exit; returns once that JVM has exited, so the archive is complete."""
    from .job import analyze
    from .session import spark_session
    from .synthetic import FAULTS, PROTOCOLS, SynthSpec, write_run

    spark = spark_session(
        app_name="rebalance-lab-class-archive", cds_options=_option("-XX:ArchiveClassesAtExit", target)
    )
    with tempfile.TemporaryDirectory(prefix="rebalance-lab-class-archive-") as tmp:
        runs = Path(tmp, "runs")
        for seed, (protocol, fault) in enumerate(zip(PROTOCOLS, FAULTS, strict=False), start=1):
            write_run(runs / f"synth-{seed}", SynthSpec(seed, protocol, fault))
        for _ in range(2):
            analyze([str(runs)], Path(tmp, "out"), spark=spark, run_reports="all")
    _stop(spark)  # the JVM writes the archive on its way out


def _stop(spark) -> None:
    """Stop the session and wait for its JVM to exit (it does when pyspark's gateway closes its stdin)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    gateway.proc.stdin.close()
    if gateway.proc.wait(timeout=STEP_TIMEOUT_S) != 0:
        sys.exit(f"the JVM exited {gateway.proc.returncode}")


def _check(archive: Path) -> None:
    """A session whose JVM must map `archive` (-Xshare:on: it refuses to start otherwise) runs a query."""
    from .session import spark_session

    spark = spark_session(
        app_name="rebalance-lab-class-archive", cds_options=f"{_option('-XX:SharedArchiveFile', archive)} -Xshare:on"
    )
    if spark.range(3).count() != 3:
        sys.exit("the session mapping the archive counted wrong")
    _stop(spark)


# `python3 -m analysis.class_archive STEP STAGING`: what a failure of the step means, and the step
STEPS = {"train": ("the training analysis", _train), "check": ("a session mapping the archive with -Xshare:on", _check)}

if __name__ == "__main__":
    STEPS[sys.argv[1]][1](Path(sys.argv[2]))
