"""The Spark session every analysis runs in.

Embedded (`local[2]`) by default; any Spark master URL (`spark://host:7077`, …)
runs the same job on a cluster. The UI is off, an analysis's shuffles use one
partition per 128 MB of histories, at most `spark.default.parallelism`
(`tasks_per_stage`), adaptive execution is off, and the driver binds to the
loopback interface unless SPARK_DRIVER_HOST / SPARK_DRIVER_BIND say otherwise (a
cluster on other machines needs to reach it).
Generated code is off and the JVM keeps its full JIT; the driver maps the class archive setup
built (analysis.class_archive; docs/analysis.md, "Speed").
No Python UDFs are used anywhere: executors never need a Python worker, only the JVM.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

DEFAULT_MASTER = "local[2]"
# Analyses are many short queries over small tables: concurrent GC threads would only
# compete with the two task threads for the two cores, so the serial collector. And C2
# compiles a method only after four times HotSpot's default number of calls: an analysis
# touches thousands of interpreted-expression methods a few thousand times each, and
# compiling the lukewarm ones took the cores from the tasks (JIT compile time in an analysis
# of 100 runs halved, its wall time ~1 s shorter; docs/analysis.md, "Speed").
JAVA_OPTS_ENV = "REBALANCE_LAB_SPARK_JAVA_OPTS"
DEFAULT_JAVA_OPTS = " ".join((
    "-XX:+UseSerialGC",
    "-XX:Tier4InvocationThreshold=20000", "-XX:Tier4MinInvocationThreshold=2400",
    "-XX:Tier4CompileThreshold=60000", "-XX:Tier4BackEdgeThreshold=160000"))

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
    SHUFFLE_PARTITIONS: "2",  # an analysis sets its own while it runs (tasks_per_stage)
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # An analysis is ~150 small queries over a few MB: adaptive execution would re-plan after
    # every shuffle (twice the jobs and half again the stages) to optimise data there is none of.
    "spark.sql.adaptive.enabled": "false",
    # Generated code is compiled (Janino) for every new plan shape, and an analysis is ~100
    # distinct plans over a few hundred thousand rows: compiling cost more than the rows did
    # (measured: half of all job time). Interpreted expressions and operators instead.
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # Do not hold a task back waiting for the executor that cached its input (3 s by default):
    # on a standalone cluster that wait, not the work, would set the pace.
    "spark.locality.wait": "0",
    # An analysis reads one history per run, each named by path: above 32 paths Spark would run a
    # job to list them (a second per analysis); the driver lists them itself in a moment.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
    # Parquet summary files and CRCs are noise in a results directory.
    "spark.hadoop.parquet.summary.metadata.level": "NONE",
    "spark.sql.parquet.compression.codec": "zstd",
    # Tungsten's page size follows the heap (16 MB at 2g on two cores), and a broadcast join's hash
    # table takes whole pages however few its rows: an analysis's broadcasts of a hundred rows each
    # filled the old generation (100 runs: two or three full GCs per analysis, one or two with
    # 1 MB pages, and half the live heap; docs/analysis.md, "Speed").
    "spark.buffer.pageSize": "1m",
}


# One task's worth of history (JSON): Spark's default split of file input (spark.sql.files.maxPartitionBytes).
TASK_INPUT_BYTES = 128 * 2**20


def tasks_per_stage(spark, history_bytes: int) -> int:
    """How many tasks each stage of an analysis gets (its shuffle partitions, and its scan of the
    cached events): one per 128 MB of histories, at most `spark.default.parallelism` (2, the
    reference machine's cores, on any master). A dozen steps run at a time
    (analysis.metrics), and that concurrency, not the tasks of one stage, keeps the cores busy:
    a second task for a few MB only costs its scheduling and one more shuffle file
    (docs/analysis.md, "Speed")."""
    return max(1, min(spark.sparkContext.defaultParallelism, -(-history_bytes // TASK_INPUT_BYTES)))


def _log4j_file() -> str:
    path = Path(tempfile.gettempdir()) / "rebalance-lab-spark-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        path.write_text(_LOG4J)
    return str(path)


def jvm_options() -> str:
    """The driver's and executors' JVM options (REBALANCE_LAB_SPARK_JAVA_OPTS replaces the defaults)."""
    return os.environ.get(JAVA_OPTS_ENV, DEFAULT_JAVA_OPTS)


def spark_session(master: str | None = None, app_name: str = "rebalance-lab-analyze",
                  extra_conf: dict[str, str] | None = None, cds_options: str | None = None):
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
    builder = (SparkSession.builder.master(master or DEFAULT_MASTER).appName(app_name)
               .config("spark.driver.host", os.environ.get("SPARK_DRIVER_HOST", "127.0.0.1"))
               .config("spark.driver.bindAddress", os.environ.get("SPARK_DRIVER_BIND", "127.0.0.1"))
               # the archive is a file on this machine: the driver's, never a remote executor's
               .config("spark.driver.extraJavaOptions", f"{java_opts} {cds_options}".strip())
               .config("spark.executor.extraJavaOptions", java_opts))
    for key, value in {**CONF, **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
