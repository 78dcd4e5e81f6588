"""The history format's vocabulary: one list of event names, the same in the module every
writer and reader imports, in the oracle's schema and in docs/history.md; and its version."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from oracle import load_history, vocabulary
from oracle.events import EVENTS
from oracle.history import HistoryError

REPO = Path(__file__).resolve().parents[2]
FIXTURES = sorted((REPO / "tests" / "fixtures" / "histories").glob("*.jsonl.gz"))


def documented_events() -> set[str]:
    """The event names docs/history.md lists: the first column of each table headed `name`."""
    names, in_events_table = set(), False
    for line in (REPO / "docs" / "history.md").read_text().splitlines():
        if not line.startswith("|"):
            in_events_table = False
            continue
        first = line.split("|")[1].strip()
        if first == "name":
            in_events_table = True
        elif in_events_table and not set(first) <= set("-: "):
            names.update(re.findall(r"`([a-z_]+)`", first))
    return names


def test_the_vocabulary_the_schema_and_the_doc_name_the_same_events():
    documented = documented_events()
    assert len(documented) > 50, "docs/history.md's event tables were not found"
    assert documented == vocabulary.EVENT_NAMES, (
        f"in the module only: {sorted(vocabulary.EVENT_NAMES - documented)}; "
        f"in the doc only: {sorted(documented - vocabulary.EVENT_NAMES)}"
    )
    assert set(EVENTS) == vocabulary.EVENT_NAMES


def test_each_constant_is_spelt_as_its_name():
    constants = {k: v for k, v in vars(vocabulary).items() if k.isupper() and type(v) is str}
    assert all(value == key.lower() for key, value in constants.items())
    groups = (
        vocabulary.HARNESS_EVENTS,
        vocabulary.OBSERVER_EVENTS,
        vocabulary.PRODUCER_EVENTS,
        vocabulary.CONSUMER_EVENTS,
        vocabulary.FAULT_EVENTS,
        vocabulary.MESSAGE_PROXY_EVENTS,
        vocabulary.COORDINATOR_EVENTS,
    )
    assert sum(map(len, groups)) == len(vocabulary.EVENT_NAMES), "an event is listed under two writers"


def write(path: Path, *events: dict) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def run_started(**fields) -> dict:
    return {"name": "run_started", "ts": 1.0, "mono_ms": 1.0, "source": "harness", "seq": 1, "group": "g", **fields}


CONSUMED = {
    "name": "records_consumed",
    "ts": 2.0,
    "mono_ms": 2.0,
    "source": "consumer-1",
    "seq": 1,
    "member": "consumer-1",
    "ranges": [{"topic": "t", "partition": 0, "min_offset": 0, "max_offset": 4, "count": 5}],
}


@pytest.mark.parametrize("version", [None, 1, "absent"])
def test_a_history_without_a_version_or_of_this_one_is_read(tmp_path, version):
    fields = {} if version == "absent" else {"format_version": version}
    events = load_history(write(tmp_path / "history.jsonl", run_started(**fields), CONSUMED))
    assert [e["name"] for e in events] == ["run_started", "records_consumed"]


def test_a_history_from_a_newer_writer_is_refused_on_its_first_line(tmp_path):
    newer = vocabulary.FORMAT_VERSION + 1
    # A newer format may have changed fields too: the version is what is reported.
    path = write(tmp_path / "history.jsonl", run_started(format_version=newer, seed="changed"), CONSUMED)
    with pytest.raises(HistoryError) as e:
        load_history(path)
    assert (e.value.path, e.value.line) == (str(path), 1)
    assert e.value.reason == (
        f"written by a newer rebalance-lab: format version {newer}, this reader knows up to {vocabulary.FORMAT_VERSION}"
    )


@pytest.mark.parametrize(
    "version, expected", [(0, "a format version ≥ 1, or null, got 0"), ("2", 'a format version ≥ 1, or null, got "2"')]
)
def test_a_version_that_is_no_version_is_refused(tmp_path, version, expected):
    with pytest.raises(HistoryError, match=re.escape(f"run_started.format_version: expected {expected}")):
        load_history(write(tmp_path / "history.jsonl", run_started(format_version=version), CONSUMED))


def test_check_on_a_newer_history_exits_2_with_one_message(tmp_path):
    (tmp_path / "run").mkdir()
    write(tmp_path / "run" / "history.jsonl", run_started(format_version=vocabulary.FORMAT_VERSION + 1), CONSUMED)
    env = {**os.environ, "REBALANCE_LAB_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli", "check", "run"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "run/history.jsonl:1: written by a newer rebalance-lab: format version" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


# The fixtures recorded before run_started carried its format's version (tests/fixtures/histories/README.md).
UNVERSIONED = [p for p in FIXTURES if p.name.split(".")[0] != "protocol-migration"]


@pytest.mark.parametrize("fixture", UNVERSIONED, ids=lambda p: p.name.split(".")[0])
def test_histories_written_before_the_version_are_version_1(fixture, tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_bytes(gzip.decompress(fixture.read_bytes()))
    started = next(e for e in load_history(path) if e["name"] == "run_started")
    assert "format_version" not in started
