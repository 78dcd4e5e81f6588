"""The analysis's cache of each run's tables (analysis.cache) and the CLI's refusals, without
Spark: a kept file is used only if it is what the code would compute now, and anything else
is a miss, never a lost analysis."""

from __future__ import annotations

import json

import orjson
import pytest
from click.testing import CliRunner

from analysis.cache import TableCache
from analysis.cli import analyze
from analysis.run_tables import tables_of
from analysis.runs import HISTORY, VERDICT, find_runs
from oracle import check_history
from runtime.errors import EXIT_BAD_INPUT
from tests.unit.conftest import HistoryBuilder


@pytest.fixture
def run(tmp_path):
    b = HistoryBuilder(topics={"events": 2})
    b.consumer("consumer-1").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0, 1]}, at=10)
    b.at(5000).done()
    events = b.build()
    d = tmp_path / "runs" / "a-run"
    d.mkdir(parents=True)
    (d / HISTORY).write_text("".join(json.dumps(e) + "\n" for e in events))
    (d / VERDICT).write_text(json.dumps(check_history(events).to_dict(), default=str))
    [found], _ = find_runs([str(d)])
    return found


def test_kept_tables_come_back_labelled_for_this_analysis(tmp_path, run):
    _, tables = tables_of(run.ref)
    cache = TableCache(tmp_path / "cache")
    cache.put(run, tables)
    again = cache.get(run)
    assert again == run.own(tables)
    assert again["runs"][0]["path"] == str(run.path) and again["rebalances"][0]["run"] == run.run


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t["runs"][0].update(events="lots"),
        lambda t: t["runs"][0].update(fault_kinds="network"),
        lambda t: t["rebalances"][0].update(unowned_ms=[1, 2]),
        lambda t: t.update(runs=[]),
        lambda t: t.pop("lag"),
        lambda t: t.update(ownership={"not": "rows"}),
    ],
)
def test_a_hand_edited_cache_file_is_a_miss(tmp_path, run, edit):
    _, tables = tables_of(run.ref)
    cache = TableCache(tmp_path / "cache")
    cache.put(run, tables)
    path = tmp_path / "cache" / f"{run.key}.json"
    kept = orjson.loads(path.read_bytes())
    edit(kept["tables"])
    path.write_bytes(orjson.dumps(kept))
    assert cache.get(run) is None


def test_a_cache_that_cannot_be_written_loses_nothing(tmp_path, run):
    (tmp_path / "cache").write_text("a file where the directory should be")
    _, tables = tables_of(run.ref)
    TableCache(tmp_path / "cache").put(run, tables)  # no exception: a cache is only a cache


def test_an_out_directory_that_is_a_python_package_is_refused_before_spark_starts(tmp_path, run):
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "__init__.py").write_text("")
    out = CliRunner().invoke(analyze, [str(run.path), "--out", str(tmp_path / "analysis")])
    assert out.exit_code == EXIT_BAD_INPUT and "a Python package" in out.output, out.output
    assert sorted(p.name for p in (tmp_path / "analysis").iterdir()) == ["__init__.py"]
