"""The Spark analysis on histories written without a cluster: one story with answers worked
out by hand, synthetic runs of every protocol and fault kind (where the oracle is the
reference), and run directories that are damaged, half-written or missing.

One analysis (one Spark job) covers the whole module: the JVM's per-query overhead,
not the data, is what costs time here.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from analysis import class_archive
from analysis.cache import TableCache
from analysis.job import analyze
from analysis.pages import EVERY_RUN_PAGE_UP_TO, shows_problem
from analysis.runs import HISTORY, VERDICT, find_runs
from analysis.session import CONF, SHUFFLE_PARTITIONS
from analysis.synthetic import PROTOCOLS, SynthSpec, write_run
from harness.cli import main as lab
from oracle import check_history, load_history
from oracle.history import History
from oracle.ownership import ownership_of
from oracle.rebalances import rebalances_of
from runtime.errors import EXIT_BAD_INPUT
from tests.analysis.oracle_compare import differences, oracle_figures, spark_figures
from tests.unit.conftest import HistoryBuilder

SYNTHETIC = [(p, f) for p in PROTOCOLS for f in ("pause", "crash", "poll-stall", "network")] + [("consumer", "none")]
# Stories the fault matrix does not tell: members stopped one at a time after `phase: done`
# (the harness's teardown rebalances), and a member processing a partition it does not own —
# one that never owned it, and a former owner well after its session ended.
TEARDOWN = {
    "teardown-eager": SynthSpec(41, "classic-eager", "pause", duration_s=25, staggered_stop=True),
    "teardown-cooperative": SynthSpec(42, "classic-cooperative", "crash", duration_s=25, staggered_stop=True),
    "teardown-kip848": SynthSpec(43, "consumer", "none", duration_s=25, staggered_stop=True),
}
STRAY = {
    "stray-never-owner": SynthSpec(44, "classic-eager", "none", duration_s=25, stray_at_s=10),
    "stray-former-owner": SynthSpec(
        45, "classic-eager", "pause", duration_s=25, fault_at_s=3, fault_duration_s=7, stray_at_s=15
    ),
}
STORIES = {**TEARDOWN, **STRAY}


def crash_story() -> list[dict]:
    """Two members, two partitions. consumer-2 crashes (SIGKILL, no LeaveGroup) with offsets
    30..49 of events-1 processed but not committed; consumer-1 revokes, rejoins alone and takes
    events-1 over from the committed offset 30. Five records acknowledged at the end are never
    consumed."""
    b = HistoryBuilder(topics={"events": 2})
    c1, c2 = b.consumer("consumer-1").start(), b.consumer("consumer-2").start()
    b.phase("workload")
    b.rebalance(1, {"consumer-1": [0], "consumer-2": [1]}, at=10)  # joined at 20, assigned at 25
    b.at(100).acked(0, 0, 99).acked(1, 0, 99)
    c1.at(200).consumed(0, 0, 99).committed(0, 100)
    c2.at(200).consumed(1, 0, 49).committed(1, 30)
    b.at(1000).fault("crash", "consumer-2")
    c2.exited(returncode=-9)  # at 1000.001: its ownership of events-1 ends here
    b.rebalance(2, {"consumer-1": [0, 1]}, at=11000)  # revoke at 11000, assigned at 11015.001
    c1.at(11100).consumed(1, 30, 99).committed(1, 100)
    c1.at(11200).committed(0, 100, success=False, error="ILLEGAL_GENERATION")
    b.at(12000).acked(0, 100, 104)
    b.phase("recovery").phase("drain")
    b.at(20000).done()
    return b.build()


# Worked out from the story (the same-instant events of the builder are 1 µs apart):
CRASH_STORY = {
    "rebalances": [  # generation, status, start, duration, trigger
        (1, "completed", 10.0, 15.003, "group_join_sent by consumer-1"),
        (2, "completed", 11000.0, 15.001, "partitions_revoked by consumer-1"),
    ],
    # events-0: revoked at 11000, back 15.001 ms later; events-1: nobody from the crash to the reassignment
    "unowned_ms": {"events-0": 15.001, "events-1": 10015.0},
    "duplicates": {"count": 20, "explained": 20, "unexplained": 0},  # 30..49, above the committed 30
    "lost": 5,  # events-0 100..104
    "commits_failed": {"ILLEGAL_GENERATION": 1},
    "fault_to_detection_ms": 10000.0,  # crash at 1000, consumer-1 revokes at 11000
}


def _write_story(directory: Path, events: list[dict]) -> Path:
    directory.mkdir(parents=True)
    (directory / HISTORY).write_text("".join(json.dumps(e) + "\n" for e in events))
    (directory / VERDICT).write_text(json.dumps(check_history(events).to_dict(), default=str))
    return directory


def _damaged(root: Path, template: Path) -> dict[str, str]:
    """Broken copies of a good run directory -> the reason analyze must give for each."""
    lines = (template / HISTORY).read_text().splitlines(keepends=True)

    def copy(name: str, history: str | None, verdict: bool = True) -> Path:
        d = root / name
        d.mkdir()
        if history is not None:
            (d / HISTORY).write_text(history)
        if verdict:
            (d / VERDICT).write_text((template / VERDICT).read_text())
        return d

    copy("torn-middle", "".join(lines[:40]) + lines[40][:25] + "\n" + "".join(lines[41:]))
    copy("half-written", "".join(lines[:200]), verdict=False)  # the harness died before the verdict
    copy("no-history", None)
    copy("empty-history", "")
    return {
        "torn-middle": "damaged: history.jsonl line 41: not a JSON event",
        "half-written": "no verdict.json",
        "no-history": "no history.jsonl",
        "empty-history": "history.jsonl is empty",
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("histories")
    _write_story(root / "crash-story", crash_story())
    for seed, (protocol, fault) in enumerate(SYNTHETIC, 1):
        write_run(root / f"synth-{protocol}-{fault}", SynthSpec(seed, protocol, fault, duration_s=25))
    for name, spec in STORIES.items():
        write_run(root / name, replace(spec, scenario=name))
    # a writer killed mid-line: the last line is torn, which the oracle forgives as well
    torn = write_run(root / "torn-tail", SynthSpec(99, "classic-eager", "pause", duration_s=25))
    text = (torn / HISTORY).read_text()
    (torn / HISTORY).write_text(text[: len(text) - 1 - len(text.splitlines()[-1]) // 2])
    return root


@pytest.fixture(scope="module")
def damaged(tmp_path_factory, runs) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("damaged")
    return root, _damaged(root, runs / "synth-classic-eager-pause")


@pytest.fixture(scope="module")
def result(spark, runs, damaged, tmp_path_factory):
    out = tmp_path_factory.mktemp("analysis")
    return analyze([str(runs / "*"), str(damaged[0] / "*"), str(runs / "no-such-run")], out, spark=spark)


def test_crash_story_has_the_answers_worked_out_by_hand_in_the_oracle_and_in_spark(result, runs):
    oracle = oracle_figures(runs / "crash-story")
    ours = spark_figures(result.tables, "crash-story")
    for figures in (oracle, ours):
        assert [(r["generation"], r["status"], r["duration_ms"], r["trigger"]) for r in figures["rebalances"]] == [
            (g, s, d, t) for g, s, _, d, t in CRASH_STORY["rebalances"]
        ]
        assert figures["rebalances"][1]["unowned_ms"] == CRASH_STORY["unowned_ms"]
        for key in ("duplicates", "lost", "commits_failed"):
            assert figures[key] == CRASH_STORY[key], key
    starts = [
        r["start_s"] * 1000
        for r in sorted(
            (r for r in result.tables["rebalances"] if r["run"] == "crash-story"), key=lambda r: r["generation"]
        )
    ]
    assert starts == pytest.approx([s for _, _, s, _, _ in CRASH_STORY["rebalances"]])
    [fault] = [f for f in result.tables["faults"] if f["run"] == "crash-story"]
    assert (fault["kind"], fault["detection_ms"], fault["detected_generation"]) == (
        "crash",
        CRASH_STORY["fault_to_detection_ms"],
        2,
    )


@pytest.mark.parametrize("run", ["torn-tail"] + [f"synth-{p}-{f}" for p, f in SYNTHETIC] + list(STORIES))
def test_spark_figures_equal_the_oracles(result, runs, run):
    assert differences(result.tables, run, runs / run) == []


@pytest.mark.parametrize("run", list(TEARDOWN))
def test_teardown_rebalances_are_in_no_table_or_statistic(result, runs, run):
    """Members leaving after `phase: done` make the rest rebalance: the oracle marks those
    rebalances teardown and Spark counts them, in no table but the run's count."""
    every = rebalances_of(History(load_history(runs / run)))
    teardown = {r.generation for r in every if r.teardown}
    assert teardown and len(teardown) < len(every)
    assert any(r.unowned_ms for r in every if r.teardown)  # partitions moved: stop-the-world rows to leave out
    [row] = [r for r in result.runs if r["run"] == run]
    assert row["teardown_rebalances"] == len(teardown)
    for table in ("rebalances", "stop_the_world"):
        assert not {r["generation"] for r in result.tables[table] if r["run"] == run} & teardown, table
    completed = sum(r.status == "completed" and not r.teardown for r in every)
    assert row["rebalances_completed"] == completed
    assert sum(1 for r in result.tables["metrics"] if r["run"] == run and r["metric"] == "rebalance_ms") == completed


def test_a_member_processing_a_partition_it_does_not_own_explains_no_duplicate(result, runs):
    """Each side of the re-delivery belongs to a session only if one covers it: the stray member's
    records (already processed by the owner, or processed by the owner afterwards) are unexplained."""
    for run in STRAY:
        history = History(load_history(runs / run))
        stray = [
            r for r in check_history(history).duplicates.redeliveries if "did not own the partition then" in r.reason
        ]
        assert {r.reason.split(" by ")[0] for r in stray} == {"processed again", "first processed"}, run
        assert not any(r.explained for r in stray)
        again = next(r.second for r in stray if r.reason.startswith("processed again"))
        ended = ownership_of(history).owned_before(again.slot, again.tp, again.at.mono_ms)
        if run == "stray-former-owner":  # no "latest earlier" session to lend it: it ended seconds before
            assert ended and again.at.mono_ms - ended.end_ms > 1000
        else:
            assert ended is None
        [row] = [r for r in result.runs if r["run"] == run]
        assert row["duplicates"] - row["duplicates_explained"] == sum(r.count for r in stray) > 0


def test_synthetic_runs_have_something_to_compare(result):
    """Guard against a vacuous comparison: the synthetic runs rebalance, re-deliver and reject commits."""
    by_run = {r["run"]: r for r in result.runs}
    assert all(by_run[f"synth-{p}-{f}"]["rebalances_completed"] >= 2 for p, f in SYNTHETIC if f != "none")
    assert sum(r["duplicates"] for r in result.runs) > 0
    assert sum(r["commits_failed"] for r in result.runs) > 0


def test_damaged_half_written_and_missing_run_directories_are_named_and_skipped(result, damaged):
    root, reasons = damaged
    skipped = {Path(s.path).name: s.reason for s in result.skipped}
    for name, reason in reasons.items():
        assert reason in skipped.pop(name), (name, skipped)
    assert skipped == {"no-such-run": "no such run directory"}
    analysed = {r["run"] for r in result.runs}
    assert analysed.isdisjoint(reasons) and len(analysed) == len(SYNTHETIC) + len(STORIES) + 2
    assert "torn-middle" in (result.out / "report.html").read_text()  # the page lists what it skipped


def test_tables_are_written_as_parquet_and_csv_and_reports_are_self_contained(spark, result):
    for table in (
        "runs",
        "rebalances",
        "stop_the_world",
        "ownership",
        "faults",
        "lag",
        "commit_failures",
        "duplicates",
        "records",
        "metrics",
        "by_group",
        "by_dimension",
    ):
        assert spark.read.parquet(str(result.out / "parquet" / table)).count() > 0, table
        assert (result.out / "csv" / f"{table}.csv").read_text().count("\n") > 1, table
    dims = {(r["dimension"], r["group"]) for r in result.by_dimension if r["metric"] == "rebalance_ms"}
    assert {("protocol", p) for p in PROTOCOLS} | {("fault_kind", f) for f in ("pause", "crash", "network")} <= dims
    stats = next(
        r
        for r in result.by_dimension
        if (r["dimension"], r["group"], r["metric"]) == ("protocol", "classic-eager", "rebalance_ms")
    )
    assert 0 < stats["p50"] <= stats["p95"] <= stats["p99"] <= stats["max"] and stats["count"] >= 8
    for page in [result.report, *result.run_reports.values()]:
        html = page.read_text()
        assert "data:image/png;base64," in html
        assert not re.search(r"""<(img|script|link)[^>]+(src|href)=['"](?!data:)""", html), page
    # more runs than get a page each: the pages are those of the runs that show a problem
    assert len(result.runs) > EVERY_RUN_PAGE_UP_TO
    assert set(result.run_reports) == {r["run"] for r in result.runs if shows_problem(r)} != set()
    assert f"Pages drawn for {len(result.run_reports)} of the {len(result.runs)} runs" in result.report.read_text()


def test_an_analysis_is_a_handful_of_spark_jobs_in_a_session_of_its_own(spark, runs, tmp_path):
    """One job reads every history (a few runs a task), then two summaries and a write per table:
    not a job per step of a derivation, whose fixed cost used to be most of an analysis."""
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup())
    result = analyze([str(runs / "synth-*")], tmp_path / "out", spark=spark, run_reports="none")
    jobs = [tracker.getJobInfo(j) for j in set(tracker.getJobIdsForGroup()) - before]
    tasks = sorted(sum(tracker.getStageInfo(s).numTasks for s in job.stageIds) for job in jobs)
    assert len(result.runs) == len(SYNTHETIC) and len(jobs) <= 20, len(jobs)
    assert tasks[-1] >= 2 * spark.sparkContext.defaultParallelism  # the histories: several tasks, both cores
    assert spark.conf.get(SHUFFLE_PARTITIONS) == CONF[SHUFFLE_PARTITIONS]  # the analysis had its own session


def test_a_second_analysis_reads_the_cache_and_a_changed_history_is_read_again(spark, runs, tmp_path):
    found, _ = find_runs([str(runs / "synth-consumer-*")])
    first = analyze([str(runs / "synth-consumer-*")], tmp_path / "out", spark=spark, run_reports="none")
    assert sorted(first.parsed) == sorted(r.run for r in found) and first.cached == []
    again = analyze([str(runs / "synth-consumer-*")], tmp_path / "out", spark=spark, run_reports="none")
    assert again.parsed == [] and sorted(again.cached) == sorted(r.run for r in found)
    assert again.tables == first.tables
    cache = TableCache(tmp_path / "out" / "cache")
    assert all(cache.get(r) is not None for r in found)
    changed = found[0].history
    changed.write_text(changed.read_text())  # another mtime: the cache cannot know it is the same history
    third = analyze([str(runs / "synth-consumer-*")], tmp_path / "out", spark=spark, run_reports="none")
    assert third.parsed == [found[0].run] and third.tables == first.tables


def test_an_analysis_of_other_runs_into_the_same_out_leaves_no_page_of_the_earlier_ones(spark, runs, tmp_path):
    first_run, second_run = sorted(runs.glob("synth-consumer-*"))[:2]
    first = analyze([str(first_run)], tmp_path / "out", spark=spark, run_reports="all")
    second = analyze([str(second_run)], tmp_path / "out", spark=spark, run_reports="all")
    assert set(first.run_reports) == {first_run.name} and set(second.run_reports) == {second_run.name}
    assert [p.name for p in (tmp_path / "out" / "runs").iterdir()] == [second_run.name]


def test_percentiles_are_by_nearest_rank_a_time_some_rebalance_took(spark):
    from analysis.aggregate import nearest_rank

    df = spark.createDataFrame([(v,) for v in (120.0, 150.0, 180.0, 200.0, 2400.0)], "duration_ms double")
    [row] = df.agg(
        nearest_rank("duration_ms", 0.5).alias("p50"), nearest_rank("duration_ms", 0.95).alias("p95")
    ).collect()
    assert (row.p50, row.p95) == (180.0, 2400.0)  # interpolated, p95 would be 1,960: no rebalance took that


def test_a_capacity_point_the_analysis_could_not_read_has_no_figures_and_is_named(spark, runs, damaged, tmp_path):
    from analysis.capacity import capacity_report

    root, _ = damaged
    read = sorted(runs.glob("synth-classic-eager-*"))[0]
    points = [
        {"run": p.name, "run_dir": str(p), "protocol": "classic-eager", "members": 3, "partitions": 6, "rate": 200.0}
        for p in (read, root / "half-written")
    ]
    result = capacity_report(points, tmp_path / "out", spark=spark, title="t")
    by_run = {r["run"]: r for r in result.rows}
    assert by_run[read.name]["rebalances"] > 0 and by_run[read.name]["rebalance_p95_ms"] is not None
    assert by_run["half-written"]["rebalances"] is None and by_run["half-written"]["max_lag"] is None  # not 0
    page = result.report.read_text()
    assert "Points without figures" in page and f"{root / 'half-written'}</td>" in page and "no verdict.json" in page


def test_nothing_to_analyse_is_bad_input_naming_each_directory(damaged):
    root, _ = damaged
    out = CliRunner().invoke(
        lab, ["analyze", str(root / "half-written"), str(root / "no-history"), str(root / "nowhere")]
    )
    assert out.exit_code == EXIT_BAD_INPUT, out.output
    for name in ("half-written: half-written: no verdict.json", "no-history: no history.jsonl", "nowhere: no such"):
        assert name in out.output
    assert "Traceback" not in out.output


def test_the_session_maps_the_class_archive_setup_built(spark):
    # `rebalance-lab setup` builds it (the README's test command runs setup); a JVM that rejected it
    # would still have the flag, and says nothing (-Xlog:cds=off): what it mapped is the proof
    path = class_archive.archive_path()
    assert path.exists(), f"no class archive at {path}: `rebalance-lab setup` builds it"
    jvm = spark.sparkContext._jvm
    assert str(path) in Path(f"/proc/{jvm.java.lang.ProcessHandle.current().pid()}/maps").read_text()


def test_one_protocol_side_by_side_across_releases_and_clients(spark, tmp_path):
    """`kafka` and `client` are groups and dimensions: the same generation on two releases (and
    two clients) is two rows of by_group, each release and client a group of by_dimension."""
    versions = [("3.9.2", "confluent-kafka==2.10.1", "2.10.1"), ("4.4.0", "confluent-kafka==2.16.1", "2.12.1")]
    for i, (release, client, loaded) in enumerate(versions):
        spec = SynthSpec(60 + i, "classic-cooperative", "pause", kafka_release=release, client=client)
        write_run(tmp_path / "runs" / f"v{i}", replace(spec, client_version=loaded))
    result = analyze([str(tmp_path / "runs")], tmp_path / "out", spark=spark, run_reports="none")
    rows = {(r["kafka"], r["client"]) for r in result.by_group if r["metric"] == "rebalance_ms"}
    assert rows == {(k, c) for k, c, _ in versions}
    dims = {(r["dimension"], r["group"]) for r in result.by_dimension if r["metric"] == "rebalance_ms"}
    assert {("kafka", k) for k, _, _ in versions} | {("client", c) for _, c, _ in versions} <= dims
    assert sorted(r["client_version"] for r in result.runs) == ["2.10.1", "2.12.1"]
    header = (result.out / "csv" / "by_group.csv").read_text().splitlines()[0]
    assert header.startswith("protocol,assignor,kafka,client,faults,scenario,metric")
