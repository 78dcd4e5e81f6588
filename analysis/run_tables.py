"""One run's tables, worked out by the oracle's own definitions (no Spark here: a Spark task
calls `tables_of` once per run, analysis.job).

Every figure about one run is the oracle's: rebalances, their phases, hand-overs and
explanations (oracle.rebalances, oracle.explain), ownership sessions (oracle.ownership),
duplicates and whether each is explained (oracle.checks.duplicates), acknowledged and
consumed offsets and failed commits (oracle.history), the run's counts
(oracle.verdict.run_stats). What is added here is only what the analysis asks and a
verdict does not:

- a fault's window (its start to its heal, its failure or the end of the run) and the
  first rebalance that started within it (plus `DETECTION_GRACE_MS`): how long the group
  took to notice; a rebalance is attributed to the latest fault started at or before it
  and not over for longer than that grace;
- the observer's lag samples of this run's group, and per run its peak and final lag;
- throughput: produced records per second of workload, deliveries per second of consuming;
- joins: per member incarnation, from its `consumer_started` to its first non-empty
  `partitions_assigned` — how long a joining member took to own its first partition;
- a single member's restart: the first time the harness stopped one member alone and then
  started that member again with nothing else in between (a load profile's `group_resized`,
  e.g. the capacity sweep's restart in its hold phase), and what it cost the group from that
  stop until the group next changed size, read from who owned what, the same way for every
  protocol: the rebalances that started, the partitions that changed owner, and the time
  until the last of them had its owner;
- every time also in seconds since the run started (`*_s`), and each row labelled with the
  run;
- the versions the run really ran, its axes in a cross-run table: `kafka` (run_started.kafka,
  the exact broker release), `client` (run_started.client, the members' client requirement)
  and `client_version` (what the members' consumer_started say they loaded, '+'-joined when
  they differ: a rolling upgrade). A history from before they were recorded has none (null;
  `kafka` then is the scenario's, analysis.runs).

Each table is a list of dicts, typed by `analysis.schema.TABLES`. A
history the oracle cannot read, or one this code fails on, costs that run only: it comes
back as the reason, and the analysis names it among the skipped.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

from oracle import vocabulary as ev
from oracle.checks.duplicates import redeliveries_of
from oracle.explain import explain_rebalances
from oracle.history import History, HistoryError, MemberSlot, load_history
from oracle.ownership import ownership_of
from oracle.rebalances import COMPLETED, handovers, run_rebalances, teardown_from
from oracle.verdict import run_stats

from .schema import typed

DETECTION_GRACE_MS = 30_000.0
NO_FAULT = "none"
Row = dict[str, Any]


class RunRef(NamedTuple):
    """One run directory, as a task is given it (analysis.runs.RunDir.ref)."""

    key: str  # stable across analyses (the cache's key)
    run: str  # its label in this analysis
    path: str


def tables_of(run: RunRef) -> tuple[str, dict[str, list[Row]] | str]:
    """(run key, its tables) — or (run key, why it was not analysed): a history the oracle cannot
    read (the reason names the line), or one this code fails on."""
    try:
        return run.key, _RunTables(run, History(load_history(Path(run.path) / "history.jsonl"))).tables()
    except HistoryError as e:
        return run.key, (
            f"damaged: history.jsonl line {e.line}: {e.reason}" if e.line else f"history.jsonl: {e.reason}"
        )
    except Exception as e:  # one run the code cannot read is skipped and named, not the whole analysis lost
        return run.key, f"not analysed: {type(e).__name__}: {e}"


def _r(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _text(value: Any) -> str | None:
    """A field some writers give as an object (fault params, details): its JSON text."""
    return value if value is None or isinstance(value, str) else json.dumps(value, sort_keys=True)


class _RunTables:
    def __init__(self, run: RunRef, history: History):
        self.run, self.h = run, history
        self.t0 = history.t0
        self.label = {"run_key": run.key, "run": run.run}

    def secs(self, mono_ms: float | None) -> float | None:
        return None if mono_ms is None else round((mono_ms - self.t0) / 1000.0, 6)

    def tables(self) -> dict[str, list[Row]]:
        rebalances = run_rebalances(self.h)
        faults = self.faults(rebalances)
        out = {
            "rebalances": self.rebalances(rebalances, faults),
            "ownership": self.ownership(),
            "faults": faults,
            "lag": self.lag(),
            "commit_failures": [
                {**self.label, "error_code": code, "error": error, "failed": n}
                for (code, error), n in self.h.commit_failures().items()
            ],
            "duplicates": self.duplicates(),
            "records": self.records(),
            "joins": self.joins(),
        }
        out["stop_the_world"] = self.stop_the_world(out["rebalances"])
        out["runs"] = [self.summary(out)]
        return {name: typed(name, rows) for name, rows in out.items()}

    # -- rebalances and faults ---------------------------------------------------------------

    def faults(self, rebalances: list) -> list[Row]:
        """A fault's window: from its start to its heal or failure, else the end of the run (a heal
        without a fault id could be any fault's: it ends none)."""
        h, rows = self.h, []
        marks = h.named(ev.FAULT_STARTED, ev.FAULT_HEALED, ev.FAULT_FAILED)  # in history order
        for i, e in enumerate(marks):
            if e["name"] != ev.FAULT_STARTED:
                continue
            fault_id = e.get("fault_id")
            end = next(
                (
                    x
                    for x in marks[i + 1 :]
                    if x["name"] != ev.FAULT_STARTED and fault_id is not None and x.get("fault_id") == fault_id
                ),
                None,
            )
            start, stop = e["mono_ms"], end["mono_ms"] if end else h.end.mono_ms
            noticed = min(
                (
                    (r.start.mono_ms, r.generation)
                    for r in rebalances
                    if r.start and start <= r.start.mono_ms <= stop + DETECTION_GRACE_MS
                ),
                default=None,
            )
            rows.append(
                {
                    **self.label,
                    "fault_id": fault_id,
                    "kind": e.get("kind"),
                    "target": e.get("target"),
                    "params": _text(e.get("params")),
                    "details": _text(e.get("details")),
                    "start_mono": start,
                    "end_mono": stop,
                    "healed_how": (end.get("how") or "failed") if end else None,
                    "detected_generation": noticed[1] if noticed else None,
                    "detection_ms": _r(noticed[0] - start) if noticed else None,
                    "start_s": self.secs(start),
                    "end_s": self.secs(stop),
                }
            )
        return rows

    def rebalances(self, rebalances: list, faults: list[Row]) -> list[Row]:
        try:
            explained = explain_rebalances(self.h)
        except Exception:  # as in the verdict: an explanation that cannot be worked out costs only itself
            explained = {}
        rows = []
        for r in rebalances:
            d = r.to_dict()
            x = explained.get(r.generation)
            x = x.to_dict() if x else {}
            start = r.start.mono_ms if r.start else None
            # the latest fault started by then and not over for longer than the grace (faults are in
            # history order: of two started at once, the later one)
            fault = max(
                (
                    (f["start_mono"], i, f)
                    for i, f in enumerate(faults)
                    if start is not None and f["start_mono"] <= start <= f["end_mono"] + DETECTION_GRACE_MS
                ),
                default=(None, None, None),
            )[2]
            rows.append(
                {
                    **self.label,
                    **{
                        k: d[k]
                        for k in (
                            "generation",
                            "status",
                            "superseded_by",
                            "members",
                            "leader",
                            "start_ts",
                            "end_ts",
                            "duration_ms",
                            "assigned_ms",
                            "stabilized_ms",
                            "trigger",
                            "coordinator_reason",
                            "detect_ms",
                            "join_ms",
                            "sync_ms",
                            "coordinator_ms",
                            "coordinator_members",
                            "start_vs_coordinator_ms",
                            "stabilized_vs_coordinator_ms",
                            "partitions_moved",
                            "unowned_ms",
                            "max_unowned_ms",
                        )
                    },
                    "start_mono": start,
                    "end_mono": r.end.mono_ms if r.end else None,
                    "fault_id": fault["fault_id"] if fault else None,
                    "fault_kind": fault["kind"] if fault else NO_FAULT,
                    "start_s": self.secs(start),
                    "end_s": self.secs(r.end.mono_ms if r.end else None),
                    "cause": x.get("cause"),
                    "waited_for": x.get("waited_for"),
                    "explanation": x.get("explanation"),
                }
            )
        return rows

    def stop_the_world(self, rebalances: list[Row]) -> list[Row]:
        """Per partition handed out in a generation of the run (not the teardown's): how long it had
        no owner, and who got it."""
        rows, handed = [], handovers(self.h)
        for r in rebalances:
            for tp, h in handed.get(r["generation"], {}).items():
                rows.append(
                    {
                        **self.label,
                        "generation": r["generation"],
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "partition_label": str(tp),
                        "unowned_ms": _r(h.unowned_ms),
                        "member": h.session.slot.member,
                        "status": r["status"],
                        "fault_kind": r["fault_kind"],
                    }
                )
        return rows

    def joins(self) -> list[Row]:
        """Per member incarnation: its consumer_started, its first non-empty partitions_assigned
        (None: it never owned a partition), and the time between."""
        first: dict[MemberSlot, float] = {}
        for e in self.h.named(ev.PARTITIONS_ASSIGNED):
            if e.get("partitions"):
                first.setdefault(MemberSlot.of(e), e["mono_ms"])
        rows = []
        for e in self.h.named(ev.CONSUMER_STARTED):
            if "member" not in e:
                continue
            slot, started = MemberSlot.of(e), e["mono_ms"]
            owned = first.get(slot)
            owned = owned if owned is not None and owned >= started else None
            rows.append(
                {
                    **self.label,
                    "member": slot.member,
                    "inc": slot.incarnation,
                    "slot": str(slot),
                    "host": e.get("host"),
                    "started_mono": started,
                    "first_assigned_mono": owned,
                    "first_partition_ms": _r(owned - started) if owned is not None else None,
                    "started_s": self.secs(started),
                }
            )
        return rows

    def restart(self, rebalances: list[Row]) -> Row:
        """The first single member's restart the harness made (group_resized: one member stopped
        alone, then that member started again alone) and what it cost the group from the stop
        until the group next changed size (else the run's end): the rebalances that started in
        that window, whatever became of them; the partitions that changed owner (by member: a
        member's partitions back to its next incarnation did not move); and the time from the stop
        until the last partition handed out in the window had its owner. Read from ownership, not
        from completed rebalances, so that every protocol is measured alike: a KIP-848 epoch that
        changes a few members' assignments is superseded by the next one, never completed, and a
        static member's return moves nothing. Empty when there was none."""
        resized = self.h.named(ev.GROUP_RESIZED)
        for i, e in enumerate(resized[:-1]):
            stopped, again = e.get("stopped") or [], resized[i + 1]
            if (
                len(stopped) == 1
                and not e.get("started")
                and again.get("started") == stopped
                and not again.get("stopped")
            ):
                stop = e["mono_ms"]
                until = resized[i + 2]["mono_ms"] if i + 2 < len(resized) else teardown_from(self.h)
                moved, last = self.handed_out(stop, until)
                return {
                    "restart_member": stopped[0],
                    "restart_rebalances": sum(
                        r["start_mono"] is not None and stop <= r["start_mono"] < until for r in rebalances
                    ),
                    "restart_rebalance_ms": _r(last - stop) if last is not None else 0.0,
                    "restart_partitions_moved": moved,
                }
        return {}

    def handed_out(self, start: float, until: float) -> tuple[int, float | None]:
        """Of the ownership sessions that began in [start, until): how many began with another
        member than the partition's previous owner, and when the last one began."""
        by_tp = defaultdict(list)
        for s in ownership_of(self.h).sessions:
            by_tp[s.tp].append(s)
        moved, last = 0, None
        for sessions in by_tp.values():
            sessions.sort(key=lambda s: s.start_ms)
            for before, s in zip([None, *sessions], sessions, strict=False):
                if start <= s.start_ms < until:
                    last = s.start_ms if last is None else max(last, s.start_ms)
                    moved += before is not None and before.slot.member != s.slot.member
        return moved, last

    # -- ownership, records, commits, lag ------------------------------------------------------

    def ownership(self) -> list[Row]:
        rows, numbered = [], defaultdict(int)
        for s in sorted(ownership_of(self.h).sessions, key=lambda s: s.start_ms):
            numbered[s.slot, s.tp] += 1
            end = s.end.mono_ms if s.end else None
            rows.append(
                {
                    **self.label,
                    "topic": s.tp.topic,
                    "partition": s.tp.partition,
                    "partition_label": str(s.tp),
                    "member": s.slot.member,
                    "inc": s.slot.incarnation,
                    "slot": str(s.slot),
                    "session_no": numbered[s.slot, s.tp],
                    "generation": s.generation,
                    "member_id": s.member_id,
                    "start_mono": s.start.mono_ms,
                    "end_mono": end,
                    "start_ts": s.start.ts,
                    "end_ts": s.end.ts if s.end else None,
                    "start_s": self.secs(s.start.mono_ms),
                    "end_s": self.secs(end),
                }
            )
        return rows

    def records(self) -> list[Row]:
        h = self.h
        rows = []
        for tp in sorted(set(h.acked) | set(h.consumed)):
            acked, consumed = h.acked.get(tp), h.consumed.get(tp)
            rows.append(
                {
                    **self.label,
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "acked": len(acked) if acked else 0,
                    "consumed": len(consumed) if consumed else 0,
                    "unconsumed": len(acked - consumed) if acked and consumed else len(acked) if acked else 0,
                }
            )
        return rows

    def duplicates(self) -> list[Row]:
        by_tp: dict = defaultdict(lambda: [0, 0])
        for r in redeliveries_of(self.h).redeliveries:
            by_tp[r.tp][0] += r.count
            by_tp[r.tp][1] += r.count if r.explained else 0
        return [
            {
                **self.label,
                "topic": tp.topic,
                "partition": tp.partition,
                "partition_label": str(tp),
                "duplicates": n,
                "explained": x,
                "unexplained": n - x,
            }
            for tp, (n, x) in sorted(by_tp.items())
        ]

    def lag(self) -> list[Row]:
        """The observer's samples of this run's group (a shared observer could describe others)."""
        ours, rows = {id(e) for e in self.h.of_our_group(ev.LAG_SAMPLED)}, []
        for ord_, e in enumerate(self.h.events, 1):  # `ord`: the sample's place in the history
            if id(e) not in ours:
                continue
            for x in e.get("partitions") or ():
                rows.append(
                    {
                        **self.label,
                        "ord": ord_,
                        "mono_ms": e["mono_ms"],
                        "ts": e.get("ts"),
                        "topic": x.get("topic"),
                        "partition": x.get("partition"),
                        "lag": x.get("lag"),
                        "committed": x.get("committed"),
                        "high_watermark": x.get("high_watermark"),
                        "partition_label": f"{x.get('topic')}-{x.get('partition')}",
                        "t_s": self.secs(e["mono_ms"]),
                    }
                )
        return rows

    # -- the run's row -----------------------------------------------------------------------------

    def summary(self, t: dict[str, list[Row]]) -> Row:
        h, run, stats = self.h, self.h.run, run_stats(self.h)
        phase, gave_up = {}, False
        for e in h.named(ev.PHASE):
            phase.setdefault(e.get("phase"), e["mono_ms"])
            gave_up |= e.get("phase") in ("drain", "done") and bool(e.get("reason"))  # not stable, or lag not drained
        workload_start = min((phase[p] for p in ("warmup", "workload") if p in phase), default=self.t0)
        t_end = max((e["mono_ms"] for e in h.events), default=0.0)
        unconsumed = sum(r["unconsumed"] for r in t["records"])
        times = [c.at.mono_ms for c in h.consumptions]
        consume_s = (max(times) - min(times)) / 1000.0 if times else 0.0
        workload_s = (phase.get("recovery", t_end) - workload_start) / 1000.0
        totals: dict[int, int] = {}  # the group's lag per sample
        for x in t["lag"]:
            totals[x["ord"]] = totals.get(x["ord"], 0) + (x["lag"] or 0)
        kinds = sorted({f["kind"] for f in t["faults"] if f["kind"] is not None})
        durations = [r["duration_ms"] for r in t["rebalances"] if r["duration_ms"] is not None]
        return {
            **self.label,
            "path": self.run.path,
            "scenario": run.get("scenario") or "unknown",
            "protocol": run.get("protocol") or "unknown",
            "assignor": run.get("assignor") or "unknown",
            "kafka": _text(run.get("kafka")),
            "client": _text(run.get("client")),
            "client_version": "+".join(
                sorted({str(e["client_version"]) for e in h.named(ev.CONSUMER_STARTED) if e.get("client_version")})
            )
            or None,
            "seed": run.get("seed"),
            "group": run.get("group"),
            "faults": "+".join(kinds) or NO_FAULT,
            "fault_kinds": kinds or [NO_FAULT],
            "outcome": stats["outcome"],
            "done": h.done is not None,
            "events": stats["events"],
            "duration_s": round((t_end - self.t0) / 1000.0, 3),
            "acked": stats["acked"],
            "consumed": stats["consumed"],
            "deliveries": stats["deliveries"],
            "duplicates": sum(r["duplicates"] for r in t["duplicates"]),
            "duplicates_explained": sum(r["explained"] for r in t["duplicates"]),
            "lost_records": unconsumed if h.done is not None else None,
            "unconsumed": unconsumed,
            "rebalances": len(t["rebalances"]),
            "rebalances_completed": sum(r["status"] == COMPLETED for r in t["rebalances"]),
            "teardown_rebalances": stats["teardown_rebalances"],
            "rebalance_total_ms": round(float(sum(durations)), 3),
            "rebalance_max_ms": max(durations, default=None),
            "stw_total_ms": round(float(sum(r["unowned_ms"] for r in t["stop_the_world"])), 3),
            "stw_max_ms": max(
                (r["max_unowned_ms"] for r in t["rebalances"] if r["max_unowned_ms"] is not None), default=None
            ),
            "peak_lag": max(totals.values(), default=None),
            "final_lag": totals[max(totals)] if totals else None,
            # from the workload's end (the producer stopped) until the group was stable and the lag drained;
            # none when the harness gave up waiting for either
            "drain_s": _r((phase["done"] - phase["recovery"]) / 1000.0)
            if "done" in phase and "recovery" in phase and not gave_up
            else None,
            "produce_rps": _r(stats["acked"] / workload_s) if workload_s > 0 else None,
            "consume_rps": _r(stats["deliveries"] / consume_s) if consume_s > 0 else None,
            "commits_ok": stats["commits"]["ok"],
            "commits_failed": sum(stats["commits"]["failed"].values()),
            "faults_injected": len(t["faults"]),
            "faults_detected": sum(f["detected_generation"] is not None for f in t["faults"]),
            **self.restart(t["rebalances"]),
        }
