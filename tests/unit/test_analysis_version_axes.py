"""The versions a run ran as columns of the analysis's cross-run tables (without Spark): `kafka`
from run_started.kafka, `client` from run_started.client, `client_version` from what the
members' consumer_started say they loaded; a history from before they were recorded has
none (null), its `kafka` then the scenario's."""

from __future__ import annotations

from analysis.aggregate import metric_rows
from analysis.run_tables import tables_of
from analysis.runs import find_runs
from analysis.schema import GROUP, TABLES
from analysis.synthetic import SynthSpec, write_run


def _analysed(tmp_path, **spec) -> dict:
    d = write_run(tmp_path / f"run-{len(list(tmp_path.iterdir()))}", SynthSpec(seed=1, fault="pause", **spec))
    [run], skipped = find_runs([str(d)])
    assert not skipped
    _, tables = tables_of(run.ref)
    return run.own(tables)


def test_the_versions_a_run_ran_are_columns_of_its_row_and_of_every_figure(tmp_path):
    tables = _analysed(
        tmp_path, kafka="3.9", kafka_release="3.9.2", client="confluent-kafka==2.3.0", client_version="2.3.0"
    )
    [row] = tables["runs"]
    assert (row["kafka"], row["client"], row["client_version"]) == ("3.9.2", "confluent-kafka==2.3.0", "2.3.0")
    metrics = metric_rows(tables)
    assert metrics and {(m["kafka"], m["client"]) for m in metrics} == {("3.9.2", "confluent-kafka==2.3.0")}
    assert {"kafka", "client"} <= set(GROUP) and "client string" in TABLES["metrics"]


def test_a_history_from_before_versions_were_recorded_has_none(tmp_path):
    [row] = _analysed(tmp_path, kafka="4.1", protocol="consumer")["runs"]
    # the release is the scenario's (the line it asked for); the client, and what was loaded, unknown
    assert (row["kafka"], row["client"], row["client_version"]) == ("4.1", None, None)
    (tmp_path / "run-0" / "scenario.yaml").unlink()
    [run], _ = find_runs([str(tmp_path / "run-0")])
    assert run.own(tables_of(run.ref)[1])["runs"][0]["kafka"] is None


def test_members_on_different_client_versions_are_named_together(tmp_path):
    d = write_run(tmp_path / "mixed", SynthSpec(seed=2, fault="crash", client_version="2.10.1"))
    lines = (d / "history.jsonl").read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if '"consumer_started"' in line)
    lines[first] = lines[first].replace('"client_version": "2.10.1"', '"client_version": "2.16.1"')
    (d / "history.jsonl").write_text("\n".join(lines) + "\n")
    [run], _ = find_runs([str(d)])
    assert run.own(tables_of(run.ref)[1])["runs"][0]["client_version"] == "2.10.1+2.16.1"
