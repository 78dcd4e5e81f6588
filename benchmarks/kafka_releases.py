"""The Kafka release matrix: the smoke scenario on every release the acceptance names, one run at
a time, each on a fresh Kafka install (timed) unless --keep-installs, with its wall time.

    python3 benchmarks/kafka_releases.py [--runs-dir runs/kafka-releases] [--keep-installs]
                                         [--only 3.3.2,4.4.0]

Rows: 3.3.2, 3.7.2, 3.9.2 (ZooKeeper mode), 3.3.2 KRaft (the KRaft floor), 4.0.2 and 4.4.0
(KRaft), the consumer protocol on 4.4.0. Prints one line per row and a JSON summary; exits 1
if any run did not pass. A row's install time is the Maven resolution of that release into the
lab's components (jars already in ~/.m2 are not downloaded again: a first install on a fresh
machine takes longer).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from harness.components import install, versions
from harness.paths import components_dir

REPO = Path(__file__).resolve().parents[1]
# (label, release, metadata, protocol)
ROWS = [
    ("3.3.2", "3.3.2", None, None),
    ("3.7.2", "3.7.2", None, None),
    ("3.9.2", "3.9.2", None, None),
    ("3.3.2-kraft", "3.3.2", "kraft", None),
    ("4.0.2", "4.0.2", None, None),
    ("4.4.0", "4.4.0", None, None),
    ("4.4.0-consumer", "4.4.0", None, "consumer"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", default="runs/kafka-releases")
    parser.add_argument("--keep-installs", action="store_true", help="do not reinstall (no install time)")
    parser.add_argument("--only", default="", help="comma-separated row labels")
    args = parser.parse_args()
    rows = [r for r in ROWS if not args.only or r[0] in args.only.split(",")]
    results, reinstalled = [], set()
    with tempfile.TemporaryDirectory(prefix="rl-releases-") as tmp:
        for label, release, metadata, protocol in rows:
            install_s = None
            if not args.keep_installs and release not in reinstalled:
                shutil.rmtree(components_dir() / f"kafka-{release}", ignore_errors=True)
                t0 = time.monotonic()
                install.install_kafka(release, lambda m: print(f"  {m}", flush=True))
                install_s = round(time.monotonic() - t0, 1)
                reinstalled.add(release)
            scenario = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
            scenario["name"] = f"smoke-{label}"
            scenario["cluster"]["kafka"] = release
            if metadata:
                scenario["cluster"]["metadata"] = metadata
            if protocol:
                scenario["workload"]["protocol"] = protocol
                scenario["workload"].pop("assignor", None)
            path = Path(tmp) / f"{label}.yaml"
            path.write_text(yaml.safe_dump(scenario, sort_keys=False))
            t0 = time.monotonic()
            proc = subprocess.run(
                [sys.executable, "-m", "harness", "run", str(path), "--runs-dir", args.runs_dir],
                cwd=REPO,
                capture_output=True,
                text=True,
            )
            wall = round(time.monotonic() - t0, 1)
            row = {"row": label, "kafka": versions.kafka_release(release).version, "exit": proc.returncode}
            results.append({**row, "install_s": install_s, "run_wall_s": wall})
            print(f"{label:<16} exit {proc.returncode}  install {install_s} s  run {wall} s", flush=True)
    print(json.dumps(results, indent=2))
    return 0 if all(r["exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
