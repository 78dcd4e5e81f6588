"""The analysis JVM's class archive (HotSpot's class data sharing, CDS).

A Spark session loads ~24,000 classes, and a fresh JVM parses and verifies each one
from Spark's jars. `rebalance-lab setup` runs one analysis of a few synthetic runs in a
JVM that archives every class it loaded when it exits (`-XX:ArchiveClassesAtExit`);
every later session maps that archive instead (`-XX:SharedArchiveFile`): a fresh
`rebalance-lab analyze` of 100 runs takes ~37 s instead of ~44 s, its Spark session
starts in 2.5 s instead of 5 (docs/analysis.md, "Speed").

The archive is only valid for the JVM build and the jars it was dumped with; it is
kept under a fingerprint of both (and of the JVM options), so another JDK or another
pyspark gets its own. A stale one the JVM rejects costs nothing but the speed-up: the
JVM checks every jar's size and mtime itself and falls back to loading from the jars.
A training analysis that fails is a setup error: `analyze` would fail the same way.

    python3 -m analysis.class_archive train|check ARCHIVE   # the two steps setup runs
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

from runtime.errors import SetupError
from runtime.home import lab_home

# The JVM prints a rejected archive's reasons as warnings on stdout, the CLI's output.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


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
    for f in [java, *sorted(java.parents[1].glob("lib/server/libjvm.so"))]:
        st = f.stat() if f.exists() else None
        digest.update(f"{f}:{st and st.st_size}:{st and st.st_mtime_ns}\n".encode())
    jars = _spark_jars()
    for jar in sorted(jars.glob("*.jar")):
        st = jar.stat()
        digest.update(f"{jar}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return lab_home() / "spark-class-archive" / f"{digest.hexdigest()[:16]}.jsa"


def driver_options() -> str:
    """The driver options that map the archive, if it was built."""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path} {_QUIET}" if path.exists() else ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def build(report: Callable[[str], None]) -> bool:
    """Build the archive unless it exists; True if built."""
    target = archive_path()
    if target.exists():
        report("analysis JVM class archive: already built")
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    for leftover in target.parent.glob("*.*.staging"):  # an interrupted setup's JVM writes it as it exits
        if not _alive(int(leftover.name.split(".")[1])):
            leftover.unlink(missing_ok=True)
    staging = target.with_name(f"{target.stem}.{os.getpid()}.staging")
    report("analysis JVM class archive: one analysis of synthetic runs, its classes archived as the JVM exits …")
    try:
        # a torn archive crashes the JVM that maps it (SIGBUS): only a checked one takes the name
        for step, what in (("train", "the training analysis"), ("check", "a session mapping it with -Xshare:on")):
            try:
                proc = subprocess.run([sys.executable, "-m", __name__, step, str(staging)],
                                      capture_output=True, text=True, timeout=900)
            except subprocess.TimeoutExpired:
                raise SetupError(f"the analysis JVM's class archive ({target}) could not be built: "
                                 f"{what} took more than 15 minutes") from None
            if proc.returncode != 0 or not staging.exists():
                raise SetupError(f"the analysis JVM's class archive ({target}) could not be built: {what} exited "
                                 f"{proc.returncode}\n{(proc.stdout + proc.stderr)[-3000:]}")
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)
    for other in target.parent.glob("*.jsa"):  # another JDK's or pyspark's: 170 MB each
        if other != target:
            other.unlink(missing_ok=True)
    report(f"analysis JVM class archive: built ({target.stat().st_size / 2**20:.0f} MB)")
    return True


def _train(target: Path) -> None:
    """One analysis (and its rerun from the Parquet cache) in a JVM that archives its classes
    into `target` on exit; returns once that JVM has exited, so the archive is complete."""
    from pyspark import SparkContext

    from .job import analyze
    from .session import spark_session
    from .synthetic import FAULTS, PROTOCOLS, SynthSpec, write_run

    spark = spark_session(app_name="rebalance-lab-class-archive", archive=f"-XX:ArchiveClassesAtExit={target}")
    gateway = SparkContext._gateway
    with tempfile.TemporaryDirectory(prefix="rebalance-lab-class-archive-") as tmp:
        runs = Path(tmp, "runs")
        for seed, (protocol, fault) in enumerate(zip(PROTOCOLS, FAULTS), start=1):
            write_run(runs / f"synth-{seed}", SynthSpec(seed, protocol, fault))
        for _ in range(2):
            analyze([str(runs)], Path(tmp, "out"), spark=spark, run_reports="all")
    spark.stop()
    # the JVM exits when its stdin closes (pyspark's gateway), and writes the archive on its way out
    gateway.proc.stdin.close()
    if gateway.proc.wait(timeout=600) != 0:
        sys.exit(f"the training JVM exited {gateway.proc.returncode}")


def _check(archive: Path) -> None:
    """A session whose JVM must map `archive` (-Xshare:on: it refuses to start otherwise) runs a query."""
    from .session import spark_session

    spark = spark_session(app_name="rebalance-lab-class-archive", archive=f"-XX:SharedArchiveFile={archive} -Xshare:on")
    if spark.range(3).count() != 3:
        sys.exit("the session mapping the archive counted wrong")
    spark.stop()


if __name__ == "__main__":
    {"train": _train, "check": _check}[sys.argv[1]](Path(sys.argv[2]))
