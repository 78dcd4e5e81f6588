"""matplotlib figures (PNG bytes) from collected metric rows. No Spark in here.

The ownership timeline is the picture of a run: one row per partition, time
across, one bar per ownership session coloured by the member that owned it;
fault windows shaded and labelled, rebalances marked (span from start to end,
a line at the start, the generation written above). Where two members owned a
partition at once (a paused zombie and its successor) the row splits into lanes,
so the overlap is visible rather than painted over.

No label covers another: the fault names over the timeline, the generations under it and the
categories under a bar chart each go to the nearest lane (row of labels) their extent, measured
by the figure's renderer, clears; the margins and the figure's height follow the measured text
(tick labels, legend, title). tests/unit/test_report_figures.py holds them to that with
analysis.text_layout.overlapping_texts on a run crowded on purpose.

At production scale (1,000 members, 2,000 partitions, an epoch per member change) a figure keeps
its size and its reading: past the limits below, the one-per-item parts (a legend entry per
member, a line per partition, a label per rebalance) give way to what they add up to, and the
legend says so.
"""

from __future__ import annotations

import io
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.transforms import Bbox

from .text_layout import lanes

DPI = 96
FAULT_COLOUR = "#d62728"
REBALANCE_COLOUR = "#1f77b4"
PALETTE = plt.get_cmap("tab10").colors + plt.get_cmap("Dark2").colors + plt.get_cmap("Set1").colors

LABEL_PT = 7  # the fault and rebalance labels, the categories under a bar chart
LABEL_GAP_PX = 4  # least room between two labels side by side in one lane
MARGIN_PX = 6  # between the outermost text and the figure's edge
LEGEND_ROWS = 16  # a longer legend takes more columns
TICK_PT = 3.5  # matplotlib's tick length

ROW_IN = 0.42  # a partition's row on the timeline, until there are many
TIMELINE_AXES_MAX_IN = 14.0  # more partitions than fit: thinner rows
PARTITION_TICKS_MAX = 48  # more partitions: every k-th named
MEMBERS_LEGEND_MAX = 24  # more members: their colours stay, the legend gives their count
LABELS_MAX = 48  # more rebalances: the timeline names none, the bar chart every k-th
LAG_LINES_MAX = 24  # more partitions: the total and the partition furthest behind


def _pt(px: float) -> float:
    return px * 72 / DPI


def _figure(width_in: float, axes_height_in: float):
    """A figure whose axes are ``axes_height_in`` tall; _fit sets its margins around its text."""
    fig, ax = plt.subplots(figsize=(width_in, axes_height_in + 1.5), dpi=DPI)
    _set_axes_height(fig, axes_height_in, top_px=0.7 * DPI, bottom_px=0.8 * DPI)
    return fig, ax


def _set_axes_height(fig, axes_height_in: float, top_px: float, bottom_px: float) -> None:
    height = axes_height_in + (top_px + bottom_px) / DPI
    fig.set_size_inches(fig.get_figwidth(), height)
    fig.subplots_adjust(bottom=bottom_px / (height * DPI), top=1 - top_px / (height * DPI))


def _legend(ax, handles=None, fontsize: float = 8, **kw):
    """Outside the axes on the right, in as many columns as keep it to LEGEND_ROWS rows."""
    count = len(handles) if handles is not None else len(ax.get_legend_handles_labels()[0])
    return ax.legend(
        **({"handles": handles} if handles is not None else {}),
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=fontsize,
        frameon=False,
        ncols=max(1, math.ceil(count / LEGEND_ROWS)),
        **kw,
    )


def _text_extent(ax, renderer) -> Bbox:
    """Where the axes and their text reach, in pixels: the frame, tick labels and axis labels,
    title, legend, labels (ax.get_tightbbox's answer, without going over every bar and line)."""
    boxes = [ax.bbox, ax.xaxis.get_tightbbox(renderer), ax.yaxis.get_tightbbox(renderer)]
    boxes += [a.get_window_extent(renderer) for a in (ax.title, ax.get_legend(), *ax.texts) if a is not None]
    return Bbox.union([b for b in boxes if b is not None and b.width and b.height])


def _fit(fig, ax, axes_height_in: float, place: Callable[[], None] = lambda: None) -> None:
    """Margins from the axes' own text, measured by the figure's renderer: first the axes' height
    (at least the legend's), then the left and right margins (tick labels, y label, the legend on
    the right), then ``place`` (labels whose lanes depend on the axes' width), then the top and
    bottom margins (title, labels, tick labels, x label): the figure grows to hold them."""
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend()
    if legend is not None:
        axes_height_in = max(axes_height_in, legend.get_window_extent(renderer).height / DPI)
        _set_axes_height(fig, axes_height_in, top_px=0.7 * DPI, bottom_px=0.8 * DPI)
    tight, frame, width = _text_extent(ax, renderer), ax.bbox, fig.bbox.width
    left = max(frame.x0 - tight.x0, 0) + MARGIN_PX
    right = max(tight.x1 - frame.x1, 0) + MARGIN_PX
    fig.subplots_adjust(left=left / width, right=1 - right / width)
    place()
    tight, frame = _text_extent(ax, renderer), ax.bbox
    top = max(tight.y1 - frame.y1, 0) + MARGIN_PX
    bottom = max(frame.y0 - tight.y0, 0) + MARGIN_PX
    _set_axes_height(fig, axes_height_in, top, bottom)


def _lane_labels(ax, items: list[tuple[float, str, Any]], above: bool, start_pt: float, ha: str = "left") -> float:
    """Labels at data x positions, above the axes (from ``start_pt`` over their top) or below
    them (from ``start_pt`` under their bottom), each in the nearest lane where its extent —
    measured by the figure's renderer — clears every label already there; a label that would
    reach past the axes' side is moved back inside. -> the height of the lanes, in points."""
    if not items:
        return 0.0
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    dx = 2 if ha == "left" else 0
    texts = [
        ax.annotate(
            text,
            xy=(x, 1.0 if above else 0.0),
            xycoords=("data", "axes fraction"),
            xytext=(dx, 0),
            textcoords="offset points",
            fontsize=LABEL_PT,
            color=colour,
            ha=ha,
            va="bottom" if above else "top",
            annotation_clip=False,
        )
        for x, text, colour in items
    ]
    frame = ax.bbox
    extents, shifts = [], []
    for t in texts:
        box = t.get_window_extent(renderer)
        shift = min(frame.x1 - box.x1, 0) or max(frame.x0 - box.x0, 0)  # px: back inside the axes' width
        extents.append((box.x0 + shift, box.x1 + shift))
        shifts.append(shift)
    lane_of = lanes(extents, gap=LABEL_GAP_PX)
    lane_pt = _pt(max(t.get_window_extent(renderer).height for t in texts)) + 1.5
    sign = 1 if above else -1
    for t, lane, shift in zip(texts, lane_of, shifts, strict=True):
        t.xyann = (dx + _pt(shift), sign * (start_pt + lane * lane_pt))
    return (max(lane_of) + 1) * lane_pt


def _png(fig) -> bytes:
    """The figure as laid out by _fit (`bbox_inches="tight"` would draw everything twice)."""
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


def fault_label(f: dict) -> str:
    return f"{f['fault_id']} {f['kind']} {f.get('target') or ''}".strip()


def _union(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Overlapping (start, end) spans as one: shading that does not darken where they overlap."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _mark_faults_and_rebalances(ax, faults: list[dict], rebalances: list[dict]) -> None:
    """Fault windows shaded; the time rebalances took shaded, each rebalance a line at its start
    (dotted: not completed) — unless there are more than LABELS_MAX (a KIP-848 group of 1,000
    members bumps its epoch a thousand times): a line each would paint the axes over."""
    for f in faults:
        ax.axvspan(f["start_s"], f["end_s"], color=FAULT_COLOUR, alpha=0.10, lw=0)
    started = [r for r in rebalances if r.get("start_s") is not None]
    across = ax.get_xaxis_transform()  # x in seconds, y from the axes' bottom (0) to top (1)
    spans = _union((r["start_s"], r["end_s"]) for r in started if r.get("end_s") is not None)
    if spans:
        shapes = [[(start, 0), (start, 1), (end, 1), (end, 0)] for start, end in spans]
        ax.add_collection(
            PolyCollection(shapes, transform=across, facecolors=REBALANCE_COLOUR, alpha=0.18, lw=0), autolim=False
        )
    if len(started) > LABELS_MAX:
        return
    for completed, style in ((True, "-"), (False, ":")):
        xs = [r["start_s"] for r in started if (r["status"] == "completed") == completed]
        if xs:
            ax.vlines(xs, 0, 1, transform=across, colors=REBALANCE_COLOUR, lw=0.8, linestyles=style)


def _label_faults_and_rebalances(ax, faults: list[dict], rebalances: list[dict]) -> tuple[float, float]:
    """Each fault named over the axes, each rebalance's generation under them, in lanes.
    -> (points taken above, points taken below)."""
    above = _lane_labels(ax, [(f["start_s"], fault_label(f), FAULT_COLOUR) for f in faults], True, 2)
    below = _lane_labels(
        ax,
        [(r["start_s"], f"g{r['generation']}", REBALANCE_COLOUR) for r in rebalances if r.get("start_s") is not None],
        False,
        TICK_PT + 1,
    )
    return above, below


def _generations(rebalances: list[dict]) -> str:
    """': g3–g1025', the generations' range (empty when none is known)."""
    known = [r["generation"] for r in rebalances if r.get("generation") is not None]
    return f": g{min(known)}–g{max(known)}" if known else ""


def _every(count: int, most: int) -> int:
    """The step that names at most ``most`` of ``count`` items."""
    return max(1, math.ceil(count / most))


def timeline_figure(run: dict, sessions: list[dict], faults: list[dict], rebalances: list[dict]) -> Figure:
    partitions = sorted({s["partition_label"] for s in sessions}, key=_partition_key)
    end = max(
        [run.get("duration_s") or 0.0]
        + [s["end_s"] or 0.0 for s in sessions]
        + [s["start_s"] for s in sessions]
        + [f["end_s"] for f in faults]
    )
    colours = member_colours(s["member"] for s in sessions)
    axes_height = max(0.8, min(ROW_IN * len(partitions) + 0.2, TIMELINE_AXES_MAX_IN))
    fig, ax = _figure(12, axes_height)
    by_tp: dict[str, list[dict]] = defaultdict(list)
    for s in sessions:
        by_tp[s["partition_label"]].append(s)
    # One collection per look (a second lane is hatched), not an artist per session: 2,000
    # partitions' sessions are tens of thousands of bars.
    bars: dict[bool, tuple[list, list]] = {False: ([], []), True: ([], [])}
    for row, tp in enumerate(partitions):
        for s, lane, lanes_ in _lanes(by_tp[tp], end):
            stop = s["end_s"] if s["end_s"] is not None else end
            h = 0.8 / lanes_
            y0, y1 = row - 0.4 + lane * h, row - 0.4 + lane * h + h * 0.92
            x0, x1 = s["start_s"], s["start_s"] + max(stop - s["start_s"], end / 2000)
            shapes, fill = bars[lane > 0]
            shapes.append([(x0, y0), (x0, y1), (x1, y1), (x1, y0)])
            fill.append(colours[s["member"]])
    for hatched, (shapes, fill) in bars.items():
        if shapes:
            ax.add_collection(
                PolyCollection(shapes, facecolors=fill, edgecolors="none", hatch="///" if hatched else None)
            )
    _mark_faults_and_rebalances(ax, faults, rebalances)
    step = _every(len(partitions), PARTITION_TICKS_MAX)
    ax.set_yticks(range(0, len(partitions), step), partitions[::step])
    ax.set_ylim(len(partitions) - 0.5, -0.5)
    ax.set_xlim(0, end * 1.01 if end > 0 else 1)
    ax.set_xlabel("seconds since run start")
    named = len(colours) <= MEMBERS_LEGEND_MAX
    handles = [Patch(color=c, label=m) for m, c in colours.items()] if named else []
    started = [r for r in rebalances if r.get("start_s") is not None]
    labelled = len(started) <= LABELS_MAX
    handles += [
        Patch(color=FAULT_COLOUR, alpha=0.15, label="fault window"),
        Patch(
            color=REBALANCE_COLOUR,
            alpha=0.3,
            label="rebalance" if labelled else f"rebalance ({len(started):,}{_generations(started)})",
        ),
    ]
    _legend(ax, handles, title=None if named else f"{len(colours):,} members, a colour each")
    ax.grid(axis="x", alpha=0.3)
    title = f"Ownership — {run['run']} ({run['protocol']}, {run['assignor']})"
    ax.set_title(title, fontsize=10)

    def place() -> None:
        above, below = _label_faults_and_rebalances(ax, faults, started if labelled else [])
        ax.set_title(title, fontsize=10, pad=above + 6)
        ax.tick_params(axis="x", pad=below + 2)  # the tick labels under the generations

    _fit(fig, ax, axes_height, place)
    return fig


def ownership_timeline(run: dict, sessions: list[dict], faults: list[dict], rebalances: list[dict]) -> bytes:
    return _png(timeline_figure(run, sessions, faults, rebalances))


def lag_figure(run: dict, lag: list[dict], faults: list[dict], rebalances: list[dict]) -> Figure:
    axes_height = 2.2
    fig, ax = _figure(12, axes_height)
    series: dict[str, list[tuple[float, int]]] = defaultdict(list)
    totals: dict[float, int] = defaultdict(int)
    for r in lag:
        series[r["partition_label"]].append((r["t_s"], r["lag"] or 0))
        totals[r["t_s"]] += r["lag"] or 0
    if len(series) <= LAG_LINES_MAX:
        for tp in sorted(series, key=_partition_key):
            xs, ys = zip(*sorted(series[tp]), strict=False)
            ax.plot(xs, ys, lw=0.8, alpha=0.7, label=tp)
    else:
        furthest: dict[float, int] = defaultdict(int)
        for points in series.values():
            for t, behind in points:
                furthest[t] = max(furthest[t], behind)
        xs, ys = zip(*sorted(furthest.items()), strict=False)
        ax.plot(xs, ys, lw=0.8, color="#ff7f0e", label=f"furthest behind of {len(series):,} partitions")
    if totals:
        xs, ys = zip(*sorted(totals.items()), strict=False)
        ax.plot(xs, ys, lw=1.8, color="black", label="total")
    _mark_faults_and_rebalances(ax, faults, rebalances)  # named on the timeline above it
    ax.set_xlabel("seconds since run start")
    ax.set_ylabel("records behind")
    ax.set_title(f"Consumer lag — {run['run']}", fontsize=10)
    if series:
        _legend(ax, fontsize=7)
    ax.grid(alpha=0.3)
    _fit(fig, ax, axes_height)
    return fig


def lag_over_time(run: dict, lag: list[dict], faults: list[dict], rebalances: list[dict]) -> bytes:
    return _png(lag_figure(run, lag, faults, rebalances))


def _category_labels(ax, texts: list[str]) -> None:
    """Under the ticks 0, 1, …: a label each (every k-th past LABELS_MAX), in lanes where they
    would collide."""
    step = _every(len(texts), LABELS_MAX)
    ax.set_xticks(range(0, len(texts), step))
    ax.tick_params(axis="x", labelbottom=False)
    items = [(i, t, "black") for i, t in enumerate(texts)][::step]
    _lane_labels(ax, items, False, TICK_PT + 2, ha="center")


def rebalances_figure(run: dict, rebalances: list[dict]) -> Figure:
    rows = [r for r in rebalances if r["status"] == "completed"]
    axes_height = 2.1
    fig, ax = _figure(12, axes_height)
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
    ax.set_ylabel("ms")
    ax.set_title(f"Rebalances (completed) — {run['run']}", fontsize=10)
    _legend(ax)
    ax.grid(axis="y", alpha=0.3)
    if rows:
        ax.set_xlim(-0.5, len(rows) - 0.5)
    else:
        ax.set_xticks([])
        ax.text(0.5, 0.5, "no completed rebalance", transform=ax.transAxes, ha="center")
    labels = [f"g{r['generation']}\n{r.get('fault_kind') or ''}".strip() for r in rows]
    _fit(fig, ax, axes_height, lambda: _category_labels(ax, labels))
    return fig


def rebalance_durations(run: dict, rebalances: list[dict]) -> bytes:
    return _png(rebalances_figure(run, rebalances))


def distributions_figure(values: dict[str, list[float]], title: str, unit: str) -> Figure:
    """Box plot (with the points) of one metric per group."""
    groups = [g for g in sorted(values) if values[g]]
    axes_height = 2.5
    fig, ax = _figure(max(6, 1.3 * len(groups) + 2), axes_height)
    if groups:
        ax.boxplot([values[g] for g in groups], positions=range(len(groups)), showfliers=False)
        for i, g in enumerate(groups):
            vs = values[g]
            jitter = [i + 0.12 * math.sin(k * 2.399) for k in range(len(vs))]
            ax.scatter(jitter, vs, s=8, alpha=0.6, color=REBALANCE_COLOUR, zorder=3)
        ax.set_xlim(-0.5, len(groups) - 0.5)
    else:
        ax.set_xticks([])
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center")
    ax.set_ylabel(unit)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    _fit(fig, ax, axes_height, lambda: _category_labels(ax, [f"{g}\n(n={len(values[g])})" for g in groups]))
    return fig


def distributions(values: dict[str, list[float]], title: str, unit: str) -> bytes:
    return _png(distributions_figure(values, title, unit))


def by_protocol_figure(rows: list[dict], x: str, y: str, title: str) -> Figure:
    """One line per protocol of ``y`` against ``x`` over a sweep's points (the mean where points
    share an x); a point without the figure is left out."""
    axes_height = 2.9
    fig, ax = _figure(7.5, axes_height)
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
        _legend(ax)
    _fit(fig, ax, axes_height)
    return fig


def by_protocol(rows: list[dict], x: str, y: str, title: str) -> bytes:
    return _png(by_protocol_figure(rows, x, y, title))


def one_protocol_figure(rows: list[dict], protocol: str, x: str, series: list[tuple[str, str]], title: str) -> Figure:
    """One protocol's figures (``series``: (column, legend label)) against ``x`` over a sweep's
    points, one line each (the mean where points share an x); a point without the figure is left
    out. The x axis is logarithmic when the points span two decades or more (10 → 1,000 members)."""
    axes_height = 2.9
    fig, ax = _figure(7.5, axes_height)
    ours = [r for r in rows if r.get("protocol") == protocol and r.get(x) is not None]
    drawn = 0
    for i, (column, label) in enumerate(series):
        points: dict[float, list[float]] = defaultdict(list)
        for r in ours:
            if r.get(column) is not None:
                points[r[x]].append(r[column])
        if not points:
            continue
        xs = sorted(points)
        ax.plot(
            xs, [sum(points[v]) / len(points[v]) for v in xs], marker="o", label=label, color=PALETTE[i % len(PALETTE)]
        )
        drawn += 1
    xs = [r[x] for r in ours if r[x] > 0]
    if xs and max(xs) >= 100 * min(xs):
        ax.set_xscale("log")
    ax.set_title(title)
    ax.set_xlabel(x)
    ax.set_ylabel("ms")
    ax.grid(alpha=0.3)
    if drawn:
        _legend(ax)
    _fit(fig, ax, axes_height)
    return fig


def one_protocol(rows: list[dict], protocol: str, x: str, series: list[tuple[str, str]], title: str) -> bytes:
    return _png(one_protocol_figure(rows, protocol, x, series, title))
