"""The analysis's tables: their columns, in order, with Spark types (explicit schemas: no inference).

Per run (analysis.run_tables computes them): runs, rebalances, stop_the_world, ownership,
faults, lag, commit_failures, duplicates, records, joins; and metrics, the long table of every
figure (analysis.aggregate), which by_group and by_dimension summarise (their schemas are
Spark's: they are computed there). docs/analysis.md says what each column means.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

TABLES = {
    "runs": "run_key string, run string, path string, scenario string, protocol string, assignor string, "
    "kafka string, client string, client_version string, seed bigint, group string, faults string, fault_kinds array<string>, outcome string, "
    "done boolean, events bigint, duration_s double, acked bigint, consumed bigint, deliveries bigint, "
    "duplicates bigint, duplicates_explained bigint, lost_records bigint, unconsumed bigint, "
    "rebalances bigint, rebalances_completed bigint, teardown_rebalances bigint, rebalance_total_ms double, "
    "rebalance_max_ms double, stw_total_ms double, stw_max_ms double, peak_lag bigint, final_lag bigint, "
    "drain_s double, produce_rps double, consume_rps double, commits_ok bigint, commits_failed bigint, "
    "faults_injected bigint, faults_detected bigint, restart_member string, restart_rebalances bigint, "
    "restart_rebalance_ms double, restart_partitions_moved bigint",
    "rebalances": "run_key string, generation bigint, status string, superseded_by bigint, members array<string>, "
    "leader string, start_mono double, start_ts double, end_mono double, end_ts double, "
    "duration_ms double, assigned_ms double, stabilized_ms double, trigger string, "
    "coordinator_reason string, detect_ms double, join_ms double, sync_ms double, coordinator_ms double, "
    "coordinator_members bigint, start_vs_coordinator_ms double, stabilized_vs_coordinator_ms double, "
    "partitions_moved bigint, unowned_ms map<string,double>, max_unowned_ms double, fault_id string, "
    "fault_kind string, run string, start_s double, end_s double, cause string, waited_for string, "
    "explanation string",
    "stop_the_world": "run_key string, generation bigint, topic string, partition bigint, partition_label string, "
    "unowned_ms double, member string, status string, fault_kind string, run string",
    "ownership": "run_key string, topic string, partition bigint, partition_label string, member string, inc bigint, "
    "slot string, session_no bigint, generation bigint, member_id string, start_mono double, "
    "end_mono double, start_ts double, end_ts double, run string, start_s double, end_s double",
    "faults": "run_key string, fault_id string, kind string, target string, params string, details string, "
    "start_mono double, end_mono double, healed_how string, detected_generation bigint, "
    "detection_ms double, run string, start_s double, end_s double",
    "lag": "run_key string, ord bigint, mono_ms double, ts double, topic string, partition bigint, lag bigint, "
    "committed bigint, high_watermark bigint, partition_label string, run string, t_s double",
    "commit_failures": "run_key string, error_code string, error string, failed bigint, run string",
    "duplicates": "run_key string, topic string, partition bigint, partition_label string, duplicates bigint, "
    "explained bigint, unexplained bigint, run string",
    "records": "run_key string, topic string, partition bigint, acked bigint, consumed bigint, unconsumed bigint, "
    "run string",
    "joins": "run_key string, member string, inc bigint, slot string, host string, started_mono double, "
    "first_assigned_mono double, first_partition_ms double, started_s double, run string",
}
PER_RUN = tuple(TABLES)
# what by_group summarises per (analysis.aggregate), as its table, the report and the CSV order it
GROUP = ("protocol", "assignor", "kafka", "client", "faults", "scenario")
# the long table (analysis.aggregate.metric_rows): one row per figure
TABLES["metrics"] = (
    "run_key string, run string, protocol string, assignor string, kafka string, client string, scenario string, "
    "faults string, fault_kinds array<string>, metric string, value double"
)


def columns(table: str) -> list[tuple[str, str]]:
    """(name, type) of each column, in order."""
    out = []
    for col in TABLES[table].split(", "):
        name, kind = col.split(" ", 1)
        out.append((name, kind))
    return out


def _check(ok: bool, value: Any, kind: str) -> Any:
    if not ok:
        raise TypeError(f"{value!r} is not a {kind}")
    return value


def _as(kind: str) -> Callable[[Any], Any]:
    """A converter to the column's type: None stays None; a value that is not of the type raises."""
    if kind == "double":
        return lambda v: (
            None if v is None else float(_check(isinstance(v, (int, float)) and not isinstance(v, bool), v, kind))
        )
    if kind == "bigint":
        return lambda v: None if v is None else int(_check(isinstance(v, int), v, kind))
    if kind == "boolean":
        return lambda v: None if v is None else _check(isinstance(v, bool), v, kind)
    if kind == "array<string>":
        return lambda v: (
            None if v is None else _check(isinstance(v, list) and all(isinstance(x, str) for x in v), v, kind)
        )
    if kind == "map<string,double>":
        return lambda v: (
            None
            if v is None
            else {
                k: float(_check(isinstance(x, (int, float)), x, "double"))
                for k, x in _check(isinstance(v, dict), v, kind).items()
            }
        )
    return lambda v: v if v is None or isinstance(v, str) else str(v)


def typed(table: str, rows: list[dict]) -> list[dict]:
    """The rows with exactly the table's columns, each value of its column's type (a JSON history
    says `1000` for a time the table keeps as a double): the CSV, the pages and Parquet agree.
    TypeError for a value that is not of its column's type."""
    convert = [(name, _as(kind)) for name, kind in columns(table)]
    return [{name: f(r.get(name)) for name, f in convert} for r in rows]


def as_tuples(table: str, rows: list[dict]) -> list[tuple]:
    """Typed rows (`typed`) as tuples in column order, for Spark."""
    names = [name for name, _ in columns(table)]
    return [tuple(r[n] for n in names) for r in rows]
