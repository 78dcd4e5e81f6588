"""The smoke scenario on each client release, one run at a time: the issue's client matrix, with figures.

    python3 benchmarks/client_versions.py [--kafka 3.9] [--runs-dir runs/client-versions]
        [confluent-kafka==2.2.0 confluent-kafka==2.6.1 …]

For each release: its environment's first install (``setup --client``; 0 s when installed already),
then ``python3 -m harness run`` of scenarios/smoke.yaml with ``workload.client`` set to it, then what
the run's history says the members really loaded (``consumer_started.client_version``) and the verdict.
A table at the end; the exit code is 1 if any run did not pass or loaded another version than asked.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
RELEASES = ["confluent-kafka==2.2.0", "confluent-kafka==2.6.1", "confluent-kafka==2.10.1", "confluent-kafka==2.16.1"]


def history_says(run_dir: Path) -> tuple[str, set[str]]:
    """(run_started.client, every consumer_started.client_version) of a run's history."""
    client, loaded = "?", set()
    for line in (run_dir / "history.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("name") == "run_started":
            client = event.get("client")
        elif event.get("name") == "consumer_started":
            loaded.add(str(event.get("client_version")))
    return client, loaded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="*", default=RELEASES)
    parser.add_argument("--kafka", default="3.9")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/client-versions"))
    args = parser.parse_args()
    smoke = yaml.safe_load((ROOT / "scenarios" / "smoke.yaml").read_text())
    rows, ok = [], True
    with tempfile.TemporaryDirectory(prefix="rl-clients-") as tmp:
        for release in args.releases:
            started = time.monotonic()
            setup = subprocess.run([sys.executable, "-m", "harness", "setup", "--client", release], cwd=ROOT)
            install_s = time.monotonic() - started
            version = release.split("==")[1]
            scenario = Path(tmp, f"smoke-{version}.yaml")
            data = {**smoke, "name": f"smoke-client-{version}"}
            data["cluster"] = {**smoke["cluster"], "kafka": args.kafka}
            data["workload"] = {**smoke["workload"], "client": release}
            scenario.write_text(yaml.safe_dump(data, sort_keys=False))
            before = set(args.runs_dir.glob("*")) if args.runs_dir.exists() else set()
            started = time.monotonic()
            code = subprocess.run(
                [sys.executable, "-m", "harness", "run", str(scenario), "--runs-dir", str(args.runs_dir)], cwd=ROOT
            ).returncode
            run_s = time.monotonic() - started
            new = sorted(set(args.runs_dir.glob("*")) - before)
            client, loaded = history_says(new[-1]) if new else ("?", set())
            good = setup.returncode == 0 and code == 0 and client == release
            ok &= good
            rows.append((release, f"{install_s:.1f}", f"{run_s:.1f}", client, ",".join(sorted(loaded)), code))
    print(f"\n{'client':<26} {'install s':>9} {'run s':>7}  run_started.client        loaded (librdkafka)  exit")
    for release, install_s, run_s, client, loaded, code in rows:
        print(f"{release:<26} {install_s:>9} {run_s:>7}  {client:<25} {loaded:<20} {code}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
