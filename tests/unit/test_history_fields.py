"""Which fields exist (oracle/fields.py): the table, docs/history.md's tables and the oracle's
schema name the same fields; recorded runs and the synthetic generators write no other."""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from analysis.synthetic import FAULTS, PROTOCOLS, SynthSpec, synthetic_history
from oracle import vocabulary
from oracle.events import ENVELOPE as READ_ENVELOPE
from oracle.events import EVENTS
from oracle.fields import ENVELOPE, FIELDS, unknown_fields

REPO = Path(__file__).resolve().parents[2]
FIXTURES = sorted((REPO / "tests" / "fixtures" / "histories").glob("*.jsonl.gz"))
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*")


def top_level_fields(cell: str) -> list[str]:
    """The field names of a table cell: its backticked names outside parentheses. What a field
    means, and the values it takes, are said inside parentheses (or in words)."""
    names, depth = [], 0
    for i, part in enumerate(cell.split("`")):
        if i % 2:  # inside backticks: a name, a value, a snippet
            if depth == 0 and _IDENTIFIER.fullmatch(part):
                names.append(part)
        else:
            depth += part.count("(") - part.count(")")
    return names


def documented_fields() -> tuple[set[str], dict[str, set[str]]]:
    """docs/history.md's fields: the table headed `field` (those of any event), and per event the
    fields of every table row headed `name` that names it (an event may have rows in several)."""
    envelope, fields, table = set(), defaultdict(set), None
    for line in (REPO / "docs" / "history.md").read_text().splitlines():
        if not line.startswith("|"):
            table = None
            continue
        cells = [c.strip() for c in line.split("|")[1:-1]]
        if cells[0] in ("name", "field"):
            table = cells[0]
        elif table is None or set(cells[0]) <= set("-: "):
            continue
        elif table == "field":
            envelope.update(re.findall(r"`([a-z_]+)`", cells[0]))
        else:
            for name in re.findall(r"`([a-z_]+)`", cells[0]):
                fields[name].update(top_level_fields(cells[1]))
    return envelope, fields


def test_the_cell_parser_takes_names_not_values():
    assert top_level_fields("`outcome` (`completed` or `error`), `error` (optional: what (if) went wrong)") == [
        "outcome",
        "error",
    ]
    assert top_level_fields("`ranges`: list of `{topic, partition}`; `e2e_ms`") == ["ranges", "e2e_ms"]


def test_the_table_covers_every_event_and_keeps_the_envelope_apart():
    assert set(FIELDS) == vocabulary.EVENT_NAMES
    assert all(not (fields & ENVELOPE) for fields in FIELDS.values()), "an envelope field listed under an event"


def test_the_doc_and_the_table_name_the_same_fields():
    envelope, documented = documented_fields()
    assert envelope == ENVELOPE, (
        f"in the module only: {sorted(ENVELOPE - envelope)}; in the doc only: {sorted(envelope - ENVELOPE)}"
    )
    assert set(documented) == vocabulary.EVENT_NAMES
    differ = {
        name: (sorted(FIELDS[name] - (documented[name] - ENVELOPE)), sorted(documented[name] - ENVELOPE - FIELDS[name]))
        for name in FIELDS
        if documented[name] - ENVELOPE != FIELDS[name]
    }
    assert not differ, f"event: (in the module only, in the doc only): {differ}"


def test_the_oracle_reads_only_fields_the_format_names():
    assert {f.key for f in READ_ENVELOPE} <= ENVELOPE
    for name, (fields, required, _check) in EVENTS.items():
        assert {f.key for f in fields} | set(required) <= FIELDS[name] | ENVELOPE, name


def test_unknown_fields_names_what_the_format_does_not():
    base = {
        "name": "records_consumed",
        "ts": 1.0,
        "mono_ms": 1.0,
        "source": "consumer-1",
        "seq": 1,
        "member": "consumer-1",
        "incarnation": 1,
        "member_id": None,
        "generation": None,
        "ranges": [],
        "e2e_ms": [],
    }
    assert unknown_fields(base) == ()
    assert unknown_fields({**base, "zz": 1, "offsets": [], "driver": "java", "clock": "client", "aa": 2}) == (
        "zz",
        "offsets",
        "aa",
    )  # in the line's order; offsets are another event's
    assert unknown_fields({**base, "name": "coordinator_elected", "ranges": []}) == ("ranges", "e2e_ms")
    assert unknown_fields({**base, "name": "some_other_tools_event", "zz": 1}) == ()  # another matter
    for not_an_event in ({"zz": 1}, {"name": ["x"], "zz": 1}, {"name": None}, [], "x", None, 3):
        assert unknown_fields(not_an_event) == ()


def _unknown(events) -> tuple[int, Counter]:
    count, unknown = 0, Counter()
    for event in events:
        count += 1
        unknown.update((event["name"], key) for key in unknown_fields(event))
    return count, unknown


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name.split(".")[0])
def test_recorded_runs_write_no_field_the_format_does_not_name(fixture):
    lines = gzip.decompress(fixture.read_bytes()).decode().splitlines()
    count, unknown = _unknown(map(json.loads, lines))
    assert count > 100
    assert not unknown, dict(unknown)


def test_the_synthetic_histories_write_none_either(tmp_path, monkeypatch):
    specs = [
        SynthSpec(seed=1, protocol=protocol, fault=fault) for protocol, fault in itertools.product(PROTOCOLS, FAULTS)
    ]
    specs += [SynthSpec(seed=2, protocol=protocol, staggered_stop=True, stray_at_s=12.0) for protocol in PROTOCOLS]
    specs.append(  # every opt-in field and event
        SynthSpec(
            seed=3,
            metadata="kraft",
            racks=True,
            upgrade_to="4.4.0",
            log_unrecognised=True,
            client_version="2.2.0",
            close_hang=True,
        )
    )
    events = itertools.chain.from_iterable(map(synthetic_history, specs))
    count, unknown = _unknown(events)
    assert count > 10_000
    assert not unknown, dict(unknown)

    spec = importlib.util.spec_from_file_location("oracle_speed", REPO / "benchmarks" / "oracle_speed.py")
    oracle_speed = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, oracle_speed)  # its dataclasses look their module up
    spec.loader.exec_module(oracle_speed)
    oracle_speed.write_history(tmp_path / "history.jsonl", 150_000)  # two faults: a pause and a crash
    with (tmp_path / "history.jsonl").open() as f:
        count, unknown = _unknown(map(json.loads, f))
    assert count > 10_000
    assert not unknown, dict(unknown)
