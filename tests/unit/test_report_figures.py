"""The report pages' figures: no label covers another or runs off the figure, judged from the
figure's own renderer and the extents of its text artists (analysis/text_layout.py), on a run
crowded on purpose (analysis.synthetic.crowded_page: long names, faults and rebalances close
together) drawn at the size the page shows it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from analysis import plots
from analysis.report import run_report
from analysis.synthetic import crowded_page
from analysis.text_layout import describe, lanes, overlapping_texts, texts_outside


@contextmanager
def figures_saved() -> Iterator[list[Figure]]:
    """Every figure savefig is given meanwhile, laid out as it was written to the PNG."""
    figures: list[Figure] = []
    savefig = Figure.savefig

    def keep(fig, *args, **kwargs):
        figures.append(fig)
        return savefig(fig, *args, **kwargs)

    Figure.savefig = keep
    try:
        yield figures
    finally:
        Figure.savefig = savefig


@pytest.fixture(scope="module")
def saved_figures(tmp_path_factory) -> dict[str, Figure]:
    """Every figure as the pages save it (a run's page and the analysis's distributions)."""
    with figures_saved() as figures:
        run, tables = crowded_page()
        run_report(tmp_path_factory.mktemp("page"), run, tables)
        groups = {f"a-fault-kind-with-a-long-name-{i}": [float(i), 2.0 * i, 3.0] for i in range(6)}
        plots.distributions(groups, "Rebalance duration per fault kind", "ms")
        sweep = [{"protocol": p, "members": m, "rebalance_p95_ms": m * 100.0} for p in ("a", "b") for m in (1, 2)]
        plots.by_protocol(sweep, "members", "rebalance_p95_ms", "Rebalance time (p95) vs group size")
        from analysis.capacity import PROTOCOL_SERIES

        grown = [{"protocol": "a", "members": m, **{c: m * 1.5 for c, _ in PROTOCOL_SERIES}} for m in (10, 100, 1000)]
        plots.one_protocol(grown, "a", "members", list(PROTOCOL_SERIES), "a: how its figures grow with the group")
    names = ("timeline", "lag", "rebalances", "distributions", "by protocol", "one protocol")
    assert len(figures) == len(names)
    yield dict(zip(names, figures, strict=True))
    for fig in figures:
        plt.close(fig)


@pytest.mark.parametrize("name", ["timeline", "lag", "rebalances", "distributions", "by protocol", "one protocol"])
def test_no_text_of_a_crowded_figure_overlaps_another_or_leaves_the_figure(saved_figures, name):
    fig = saved_figures[name]
    overlaps = overlapping_texts(fig)
    assert not overlaps, f"{name}: {len(overlaps)} overlapping: " + "; ".join(map(describe, overlaps[:5]))
    outside = texts_outside(fig)
    assert not outside, f"{name}: cut off at the edge: {describe(outside[:5])}"


def test_every_fault_and_rebalance_is_named_on_the_timeline(saved_figures):
    _, tables = crowded_page()
    texts = {t.get_text() for t in saved_figures["timeline"].findobj(matplotlib.text.Text)}
    assert {plots.fault_label(f) for f in tables["faults"]} <= texts
    assert {f"g{r['generation']}" for r in tables["rebalances"]} <= texts


def test_the_check_finds_labels_on_top_of_each_other_and_past_the_edge():
    fig, ax = plt.subplots(figsize=(5, 3), dpi=96)
    ax.text(0.5, 0.5, "one label", transform=ax.transAxes)
    ax.text(0.52, 0.5, "another label", transform=ax.transAxes)
    ax.text(0.1, 0.1, "on its own", transform=ax.transAxes)
    ax.text(0.98, 0.9, "reaching past the right edge", transform=fig.transFigure)
    try:
        assert [describe(pair) for pair in overlapping_texts(fig)] == ["'one label' and 'another label'"]
        assert [t.get_text() for t in texts_outside(fig)] == ["reaching past the right edge"]
    finally:
        plt.close(fig)


def test_the_check_reads_only_the_tick_labels_drawn():
    """A tick outside the view keeps its label artist, undrawn: it covers nothing."""
    fig, ax = plt.subplots(figsize=(4, 2), dpi=96)
    ax.set_xticks([0, 5, 10, 1000], ["0", "5", "10", "far away"])
    ax.set_xlim(0, 10)
    ax.text(1000, 0, "far away")  # where the undrawn tick label would be, clipped off
    try:
        assert overlapping_texts(fig) == []
    finally:
        plt.close(fig)


@pytest.mark.parametrize(
    "extents, expected",
    [
        ([], []),
        ([(0, 10), (20, 30)], [0, 0]),  # side by side
        ([(0, 10), (5, 15), (14, 20)], [0, 1, 0]),  # the third fits back in the first lane
        ([(0, 10), (11, 20)], [0, 1]),  # 1 px apart: closer than the gap of 4
        ([(20, 30), (0, 25), (0, 5)], [1, 0, 1]),  # taken from the left, answered in the order given
    ],
)
def test_labels_go_to_the_lowest_lane_they_clear(extents, expected):
    assert lanes(extents, gap=4) == expected


def test_a_production_size_run_draws_what_its_members_partitions_and_rebalances_add_up_to(tmp_path):
    """1,000 members, 2,000 partitions, 1,023 epochs: a figure of the page's size, text clear of
    text, no legend entry per member and no label per rebalance (their count said instead)."""
    with figures_saved() as figures:
        run, tables = crowded_page(faults=3, rebalances=1023, partitions=2000, members=1000, span_s=40)
        run_report(tmp_path, run, tables)
    try:
        timeline = figures[0]
        assert timeline.get_size_inches()[1] < plots.TIMELINE_AXES_MAX_IN + 3
        texts = [t.get_text() for t in timeline.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text()]
        assert "1,000 members, a colour each" in texts and "rebalance (1,023: g1–g1023)" in texts
        assert not {f"g{g}" for g in range(1, 1024)} & set(texts)
        assert not [t for t in texts if t.startswith("consumer-with-a-rather-long-name")]  # no member named
        lag_texts = {t.get_text() for t in figures[1].findobj(matplotlib.text.Text)}
        assert "furthest behind of 2,000 partitions" in lag_texts
        for fig in figures:
            assert not overlapping_texts(fig) and not texts_outside(fig)
    finally:
        for fig in figures:
            plt.close(fig)
