"""matplotlib figures (PNG bytes) from collected metric rows. No Spark in here.

The ownership timeline is the picture of a run: one row per partition, time
across, one bar per ownership session coloured by the member that owned it;
fault windows shaded and labelled, rebalances marked (span from start to end,
a line at the start, the generation written above). Where two members owned a
partition at once (a paused zombie and its successor) the row splits into lanes,
so the overlap is visible rather than painted over.
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

DPI = 96
FAULT_COLOUR = "#d62728"
REBALANCE_COLOUR = "#1f77b4"
PALETTE = plt.get_cmap("tab10").colors + plt.get_cmap("Dark2").colors + plt.get_cmap("Set1").colors


def _png(fig, right: float = 0.84) -> bytes:
    """Fixed margins (legend outside on the right): `bbox_inches="tight"` would draw everything twice."""
    fig.subplots_adjust(left=0.09, right=right, top=0.86, bottom=0.17)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    return buf.getvalue()


def member_colours(members: Iterable[str]) -> dict[str, Any]:
    return {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(sorted(set(members)))}


def _partition_key(label: str) -> tuple:
    topic, _, p = label.rpartition("-")
    return (topic, int(p)) if p.isdigit() else (label, 0)


def _lanes(sessions: list[dict], end: float) -> list[tuple[dict, int, int]]:
    """(session, lane, lanes in its partition): overlapping sessions go to separate lanes."""
    out = []
    lane_ends: list[float] = []
    placed = []
    for s in sorted(sessions, key=lambda s: s["start_s"]):
        stop = s["end_s"] if s["end_s"] is not None else end
        lane = next((i for i, e in enumerate(lane_ends) if e <= s["start_s"]), None)
        if lane is None:
            lane_ends.append(stop)
            lane = len(lane_ends) - 1
        else:
            lane_ends[lane] = stop
        placed.append((s, lane))
    for s, lane in placed:
        out.append((s, lane, len(lane_ends)))
    return out


def _mark_faults_and_rebalances(
    ax, faults: list[dict], rebalances: list[dict], label_y: float | None = None, annotate: bool = True
) -> None:
    for f in faults:
        ax.axvspan(f["start_s"], f["end_s"], color=FAULT_COLOUR, alpha=0.10, lw=0)
        if annotate:
            ax.annotate(
                f"{f['fault_id']} {f['kind']} {f.get('target') or ''}".strip(),
                xy=(f["start_s"], 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(2, 2),
                textcoords="offset points",
                fontsize=7,
                color=FAULT_COLOUR,
                va="bottom",
                rotation=0,
                clip_on=False,
            )
    for r in rebalances:
        if r.get("start_s") is None:
            continue
        if r.get("end_s") is not None:
            ax.axvspan(r["start_s"], r["end_s"], color=REBALANCE_COLOUR, alpha=0.18, lw=0)
        ax.axvline(r["start_s"], color=REBALANCE_COLOUR, lw=0.8, ls="-" if r["status"] == "completed" else ":")
        if annotate:
            ax.annotate(
                f"g{r['generation']}",
                xy=(r["start_s"], 0.0),
                xycoords=("data", "axes fraction"),
                xytext=(1, -11),
                textcoords="offset points",
                fontsize=7,
                color=REBALANCE_COLOUR,
            )


def ownership_timeline(run: dict, sessions: list[dict], faults: list[dict], rebalances: list[dict]) -> bytes:
    partitions = sorted({s["partition_label"] for s in sessions}, key=_partition_key)
    end = max(
        [run.get("duration_s") or 0.0]
        + [s["end_s"] or 0.0 for s in sessions]
        + [s["start_s"] for s in sessions]
        + [f["end_s"] for f in faults]
    )
    colours = member_colours(s["member"] for s in sessions)
    height = max(2.2, 0.42 * len(partitions) + 1.4)
    fig, ax = plt.subplots(figsize=(12, height))
    by_tp: dict[str, list[dict]] = defaultdict(list)
    for s in sessions:
        by_tp[s["partition_label"]].append(s)
    for row, tp in enumerate(partitions):
        for s, lane, lanes in _lanes(by_tp[tp], end):
            stop = s["end_s"] if s["end_s"] is not None else end
            h = 0.8 / lanes
            y = row - 0.4 + lane * h
            ax.broken_barh(
                [(s["start_s"], max(stop - s["start_s"], end / 2000))],
                (y, h * 0.92),
                facecolors=colours[s["member"]],
                edgecolors="none",
                hatch="///" if lane else None,
            )
    _mark_faults_and_rebalances(ax, faults, rebalances)
    ax.set_yticks(range(len(partitions)), partitions)
    ax.set_ylim(len(partitions) - 0.5, -0.5)
    ax.set_xlim(0, end * 1.01 if end > 0 else 1)
    ax.set_xlabel("seconds since run start")
    ax.set_title(f"Ownership — {run['run']} ({run['protocol']}, {run['assignor']})", fontsize=10, pad=14)
    handles = [Patch(color=c, label=m) for m, c in colours.items()]
    handles += [
        Patch(color=FAULT_COLOUR, alpha=0.15, label="fault window"),
        Patch(color=REBALANCE_COLOUR, alpha=0.3, label="rebalance"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def lag_over_time(run: dict, lag: list[dict], faults: list[dict], rebalances: list[dict]) -> bytes:
    fig, ax = plt.subplots(figsize=(12, 3.2))
    series: dict[str, list[tuple[float, int]]] = defaultdict(list)
    totals: dict[float, int] = defaultdict(int)
    for r in lag:
        series[r["partition_label"]].append((r["t_s"], r["lag"] or 0))
        totals[r["t_s"]] += r["lag"] or 0
    for tp in sorted(series, key=_partition_key):
        xs, ys = zip(*sorted(series[tp]), strict=False)
        ax.plot(xs, ys, lw=0.8, alpha=0.7, label=tp)
    if totals:
        xs, ys = zip(*sorted(totals.items()), strict=False)
        ax.plot(xs, ys, lw=1.8, color="black", label="total")
    _mark_faults_and_rebalances(ax, faults, rebalances, annotate=False)
    ax.set_xlabel("seconds since run start")
    ax.set_ylabel("records behind")
    ax.set_title(f"Consumer lag — {run['run']}", fontsize=10)
    if series:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    ax.grid(alpha=0.3)
    return _png(fig)


def rebalance_durations(run: dict, rebalances: list[dict]) -> bytes:
    rows = [r for r in rebalances if r["status"] == "completed"]
    fig, ax = plt.subplots(figsize=(12, 3.0))
    parts = (
        ("duration_ms", "total", "#333333"),
        ("detect_ms", "detect", "#ff7f0e"),
        ("join_ms", "join", "#2ca02c"),
        ("sync_ms", "sync", "#9467bd"),
        ("max_unowned_ms", "max stop-the-world", "#d62728"),
    )
    width = 0.8 / len(parts)
    for i, (key, label, colour) in enumerate(parts):
        xs = [j + (i - len(parts) / 2 + 0.5) * width for j in range(len(rows))]
        ax.bar(xs, [r.get(key) or 0 for r in rows], width=width, color=colour, label=label)
    ax.set_xticks(range(len(rows)), [f"g{r['generation']}\n{r.get('fault_kind') or ''}" for r in rows], fontsize=8)
    ax.set_ylabel("ms")
    ax.set_title(f"Rebalances (completed) — {run['run']}", fontsize=10)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    if not rows:
        ax.text(0.5, 0.5, "no completed rebalance", transform=ax.transAxes, ha="center")
    return _png(fig)


def distributions(values: dict[str, list[float]], title: str, unit: str) -> bytes:
    """Box plot (with the points) of one metric per group."""
    groups = [g for g in sorted(values) if values[g]]
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(groups) + 2), 3.6))
    if groups:
        ax.boxplot([values[g] for g in groups], showfliers=False)
        for i, g in enumerate(groups, 1):
            vs = values[g]
            jitter = [i + 0.12 * math.sin(k * 2.399) for k in range(len(vs))]
            ax.scatter(jitter, vs, s=8, alpha=0.6, color=REBALANCE_COLOUR, zorder=3)
        ax.set_xticks(range(1, len(groups) + 1), [f"{g}\n(n={len(values[g])})" for g in groups], fontsize=8)
    else:
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center")
    ax.set_ylabel(unit)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig, right=0.97)


def by_protocol(rows: list[dict], x: str, y: str, title: str) -> bytes:
    """One line per protocol of ``y`` against ``x`` over a sweep's points (the mean where points
    share an x); a point without the figure is left out."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    lines: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get(x) is not None and r.get(y) is not None:
            lines[r["protocol"]][r[x]].append(r[y])
    for i, (protocol, points) in enumerate(sorted(lines.items())):
        xs = sorted(points)
        ax.plot(
            xs,
            [sum(points[v]) / len(points[v]) for v in xs],
            marker="o",
            label=protocol,
            color=PALETTE[i % len(PALETTE)],
        )
    ax.set_title(title)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(alpha=0.3)
    if lines:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return _png(fig, right=0.78)
