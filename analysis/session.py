"""The Spark session every analysis runs in.

Embedded (`local[2]`) by default; any Spark master URL (`spark://host:7077`, …)
runs the same job on a cluster. The UI is off, adaptive execution is off, and the
driver binds to the loopback interface unless SPARK_DRIVER_HOST / SPARK_DRIVER_BIND
say otherwise (a cluster on other machines needs to reach it).
Generated code is off; the driver maps the class archive setup built
(analysis.class_archive; docs/analysis.md, "Speed").
Executors read the histories in their Python workers, with the oracle's code: on a
cluster, the job sends that code along (`ship_code`); each executor's Python needs
orjson, as the oracle does.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import tempfile
import zipfile
from pathlib import Path

DEFAULT_MASTER = "local[2]"
# The JVMs (driver and executors) live for one analysis and do little: the histories are read in
# Python workers, and the queries are a few summaries over a few thousand rows. So the serial
# collector (concurrent GC threads would only compete with the two task threads for the two
# cores) and the client compiler alone: C2's optimising compiles of a JVM's first seconds
# took the cores from the work and paid off in none of them (100 runs in a fresh process:
# 14.4–15.1 s with C1 alone, 16.3–19.9 s with C2 as well; docs/analysis.md, "Speed").
JAVA_OPTS_ENV = "REBALANCE_LAB_SPARK_JAVA_OPTS"
DEFAULT_JAVA_OPTS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"

_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
CONF = {
    "spark.ui.enabled": "false",
    "spark.driver.memory": "2g",
    "spark.ui.showConsoleProgress": "false",
    SHUFFLE_PARTITIONS: "2",  # an analysis sets its own while it runs (analysis.job)
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # An analysis's SQL is a few summaries over a few thousand rows: adaptive execution would
    # re-plan after every shuffle to optimise data there is none of.
    "spark.sql.adaptive.enabled": "false",
    # Generated code is compiled (Janino) for every new plan shape: for a few thousand rows,
    # compiling costs more than the rows do. Interpreted expressions and operators instead.
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # Do not hold a task back waiting for the executor that cached its input (3 s by default):
    # on a standalone cluster that wait, not the work, would set the pace.
    "spark.locality.wait": "0",
    # Parquet summary files and CRCs are noise in a results directory.
    "spark.hadoop.parquet.summary.metadata.level": "NONE",
    "spark.sql.parquet.compression.codec": "zstd",
}


_shipped: set[str] = set()  # the applications whose executors were sent the code


def ship_code(sc) -> None:
    """Send the code an executor's Python worker runs (the oracle, analysis.run_tables and .schema) with the
    job, once per application, when the executors are a cluster's: a local master's workers are
    this process's children and import what it imports."""
    if re.fullmatch(r"local(\[.*\])?", sc.master) or sc.applicationId in _shipped:
        return
    import oracle

    from . import run_tables

    staging = Path(tempfile.mkdtemp(prefix="rebalance-lab-code-"))
    atexit.register(shutil.rmtree, staging, True)
    archive = staging / "rebalance_lab_analysis.zip"
    oracle_dir, analysis_dir = Path(oracle.__file__).parent, Path(run_tables.__file__).parent
    with zipfile.ZipFile(archive, "w") as z:
        for path in oracle_dir.rglob("*.py"):
            z.write(path, f"oracle/{path.relative_to(oracle_dir)}")
        for path in (analysis_dir / "__init__.py", analysis_dir / "schema.py", Path(run_tables.__file__)):
            z.write(path, f"analysis/{path.name}")
    sc.addPyFile(str(archive))
    _shipped.add(sc.applicationId)


def _log4j_file() -> str:
    path = Path(tempfile.gettempdir()) / "rebalance-lab-spark-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        path.write_text(_LOG4J)
    return str(path)


def jvm_options() -> str:
    """The driver's and executors' JVM options (REBALANCE_LAB_SPARK_JAVA_OPTS replaces the defaults)."""
    return os.environ.get(JAVA_OPTS_ENV, DEFAULT_JAVA_OPTS)


def spark_session(
    master: str | None = None,
    app_name: str = "rebalance-lab-analyze",
    extra_conf: dict[str, str] | None = None,
    cds_options: str | None = None,
):
    """The active session if there is one (tests share one), else a new one for `master`.
    The driver maps the class archive `rebalance-lab setup` built, if there is one (`cds_options`:
    other class-data-sharing options instead, analysis.class_archive)."""
    from pyspark.sql import SparkSession

    from .class_archive import archive_options

    active = SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        return active
    if active is not None:
        active.stop()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    java_opts = f"-Dlog4j.configurationFile=file:{_log4j_file()} {jvm_options()}"
    cds_options = archive_options() if cds_options is None else cds_options
    builder = (
        SparkSession.builder.master(master or DEFAULT_MASTER)
        .appName(app_name)
        .config("spark.driver.host", os.environ.get("SPARK_DRIVER_HOST", "127.0.0.1"))
        .config("spark.driver.bindAddress", os.environ.get("SPARK_DRIVER_BIND", "127.0.0.1"))
        # the archive is a file on this machine: the driver's, never a remote executor's
        .config("spark.driver.extraJavaOptions", f"{java_opts} {cds_options}".strip())
        .config("spark.executor.extraJavaOptions", java_opts)
    )
    for key, value in {**CONF, **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except BaseException:  # a Ctrl-C while the JVM starts: PySpark loses it, and it ignores SIGINT
        _stop_launched_jvms()
        raise
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _stop_launched_jvms() -> None:
    """SIGTERM to this process's own children that run Spark's launcher (the gateway JVM PySpark
    started): only ours, never another process's."""
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if ppid == me and b"org.apache.spark.deploy.SparkSubmit" in (stat.parent / "cmdline").read_bytes():
                os.kill(int(stat.parent.name), signal.SIGTERM)
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
