"""Text in the report's figures: labels placed so that none covers another, and the check that
none does, both from the figure's own renderer and the extents of its text artists.

    lanes([(0, 80), (50, 120), (130, 200)], gap=4)   ->  [0, 1, 0]
    overlapping_texts(fig)                            ->  [(text, text), ...]  (none: [])
    texts_outside(fig)                                ->  [text, ...]          cut off at the figure's edge
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

TOLERANCE_PX = 0.5  # extents that touch, or overlap by less than this, do not overlap


def lanes(extents: Sequence[tuple[float, float]], gap: float = 0.0) -> list[int]:
    """Each horizontal extent's lane (0, 1, …): the lowest one whose labels so far all end at
    least ``gap`` before it begins. Extents taken from the left; the answer in the order given."""
    ends: list[float] = []  # the right edge of each lane's last label
    out = [0] * len(extents)
    for i in sorted(range(len(extents)), key=lambda i: extents[i][0]):
        start, end = extents[i]
        lane = next((n for n, e in enumerate(ends) if e + gap <= start), len(ends))
        if lane == len(ends):
            ends.append(end)
        else:
            ends[lane] = end
        out[i] = lane
    return out


def _drawn_tick_labels(fig: Figure) -> tuple[set[int], set[int]]:
    """(ids of the tick labels drawn, ids of every tick label): a tick outside its axis's view
    limits keeps its label artist, but nothing of it is drawn."""
    drawn, every = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            eps = 1e-9 * max(high - low, 1e-300)
            for ticks in (
                axis.get_major_ticks(len(axis.get_majorticklocs())),
                axis.get_minor_ticks(len(axis.get_minorticklocs())),
            ):
                for tick in ticks:
                    labels = (tick.label1, tick.label2)
                    every.update(map(id, labels))
                    if low - eps <= tick.get_loc() <= high + eps:
                        drawn.update(map(id, labels))
    return drawn, every


def drawn_texts(fig: Figure) -> list[tuple[Text, Bbox]]:
    """Every text artist the figure draws, with its extent in pixels: titles, axis and tick
    labels, legends, annotations. The figure is drawn first (tick labels get their places then)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    drawn, every = _drawn_tick_labels(fig)
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip() or t.get_alpha() == 0:
            continue
        if id(t) in every and id(t) not in drawn:
            continue
        if t.axes is not None and not t.axes.get_visible():
            continue
        out.append((t, t.get_window_extent(renderer)))
    return out


def _overlap(a: Bbox, b: Bbox, tolerance: float) -> bool:
    return min(a.x1, b.x1) - max(a.x0, b.x0) > tolerance and min(a.y1, b.y1) - max(a.y0, b.y0) > tolerance


def overlapping_texts(fig: Figure, tolerance: float = TOLERANCE_PX) -> list[tuple[Text, Text]]:
    """Every pair of drawn text artists whose extents overlap (by more than ``tolerance`` pixels
    both ways)."""
    texts = drawn_texts(fig)
    return [
        (a, b) for i, (a, box_a) in enumerate(texts) for b, box_b in texts[i + 1 :] if _overlap(box_a, box_b, tolerance)
    ]


def texts_outside(fig: Figure, tolerance: float = TOLERANCE_PX) -> list[Text]:
    """The drawn text artists that reach past the figure's edge (cut off in its PNG)."""
    edge = fig.bbox
    return [
        t
        for t, box in drawn_texts(fig)
        if box.x0 < edge.x0 - tolerance
        or box.y0 < edge.y0 - tolerance
        or box.x1 > edge.x1 + tolerance
        or box.y1 > edge.y1 + tolerance
    ]


def describe(texts: Sequence[Text]) -> str:
    """'"f1 pause consumer-2" and "g3"' — for an assertion's message."""
    return " and ".join(repr(t.get_text()) for t in texts)
