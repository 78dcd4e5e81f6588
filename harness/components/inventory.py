"""The versions of the harness and of what it runs: `rebalance-lab --version` (what is pinned) and
run.json's ``harness_version`` and ``components`` (what one run used)."""

from __future__ import annotations

import functools
import json
import platform
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

from harness.components import versions
from harness.components.install import PYTHON_PINS

DISTRIBUTION = "rebalance-lab"


def harness_version() -> str:
    """pyproject.toml's version, as the installed distribution gives it."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # a source tree on PYTHONPATH, never installed
        return "unknown"


@functools.cache
def java_version() -> str | None:
    """`java -version`'s version ("17.0.13"), None without a java on PATH."""
    java = shutil.which("java")
    if not java:
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "([^"]+)"', out)
    return m.group(1) if m else None


def librdkafka_version() -> str | None:
    try:
        import confluent_kafka
    except ImportError:
        return None
    return confluent_kafka.libversion()[0]


def version_lines() -> list[str]:
    """`rebalance-lab --version`: the harness, then each pinned component, one per line."""
    java = java_version()
    return [
        f"rebalance-lab {harness_version()}",
        f"kafka {versions.kafka_release(versions.DEFAULT_KAFKA).version} (default; supported {versions.supported_range()})",
        f"confluent-kafka {PYTHON_PINS.get('confluent-kafka', 'unknown')}",
        f"librdkafka {librdkafka_version() or 'not installed'}",
        f"toxiproxy {versions.TOXIPROXY_VERSION}",
        f"kio {PYTHON_PINS.get('kio', 'unknown')} (the message proxy's Kafka message schemas)",
        f"java {versions.JAVA_MIN_MAJOR}+ required" + (f" (found {java})" if java else " (none on PATH)"),
        f"python {platform.python_version()}",
    ]


def _jar_version(lib: Path, artifact: str) -> str | None:
    """The version of `artifact`'s jar in a classpath directory (zookeeper-3.8.4.jar → 3.8.4)."""
    for jar in sorted(lib.glob(f"{artifact}-*.jar")):
        if m := re.fullmatch(re.escape(artifact) + r"-(\d[\w.]*)\.jar", jar.name):
            return m.group(1)
    return None


def loaded_clients(history: Path) -> dict[str, str]:
    """The client libraries the members really loaded, {library: version} ('+'-joined versions
    when they differ), from the history's consumer_started events."""
    loaded: dict[str, set[str]] = {}
    try:
        with open(history, encoding="utf-8", errors="replace") as f:
            for line in f:
                if '"consumer_started"' not in line or '"client_version"' not in line:
                    continue
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("name") == "consumer_started" and e.get("client_version"):
                    loaded.setdefault(str(e.get("client_library") or "client"), set()).add(str(e["client_version"]))
    except OSError:
        return {}
    return {library: "+".join(sorted(v)) for library, v in sorted(loaded.items())}


def run_components(
    *,
    kafka: str | None,
    metadata_mode: str | None,
    client: str | None,
    toxiproxy: bool,
    history: Path | None,
    message_proxy: bool = False,
) -> dict[str, str | None]:
    """run.json's ``components``: every component's version this run used (None: not known, as
    the Kafka release of someone else's cluster)."""
    from harness.components.install import kafka_dist

    components: dict[str, str | None] = {"kafka": kafka}
    if kafka and metadata_mode == "zookeeper":
        try:
            components["zookeeper"] = _jar_version(kafka_dist(kafka).lib_dir, "zookeeper")
        except Exception:  # not installed here (a compose cluster's images): not known
            components["zookeeper"] = None
    components["client"] = client  # the requirement the members ran (None: a driver on the harness's own)
    components.update(loaded_clients(history) if history else {})
    if toxiproxy:
        components["toxiproxy"] = versions.TOXIPROXY_VERSION
    if message_proxy:  # its Kafka message schemas
        components["kio"] = PYTHON_PINS.get("kio")
    components["java"] = java_version()
    components["python"] = platform.python_version()
    return components
