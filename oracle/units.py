"""How a figure is written for people: the one place every report (the console's tables,
summary.md, the suite's index.html, the analysis pages) takes its durations and numbers from.
In the oracle, the lowest layer, so that each of them can import it.

    format_ms(812.4)      '812 ms'     whole milliseconds below 10 s
    format_ms(9999.4)     '9999 ms'
    format_ms(12345.6)    '12.35 s'    seconds with two decimals below 100 s
    format_ms(123456.0)   '123.5 s'    and one from there on
    format_offset_s(3.2)  '3.20'       a moment of a run, seconds since its start (a figure's x axis)
    format_number(199.87) '200'        anything else: three significant figures, whole from 100 on
"""

from __future__ import annotations

MISSING = "—"  # no value: the field was not measured (a rebalance not completed, a verdict not written)

MS_BELOW_S = 10.0  # below this many seconds a duration is whole milliseconds
TWO_DECIMALS_BELOW_S = 100.0  # then seconds with two decimals, and one from here on


def format_ms(ms: float | None) -> str:
    """A duration given in milliseconds."""
    if ms is None:
        return MISSING
    if abs(round(ms)) < MS_BELOW_S * 1000:
        return f"{round(ms):.0f} ms"
    s = ms / 1000
    return f"{s:.2f} s" if abs(round(s, 2)) < TWO_DECIMALS_BELOW_S else f"{s:.1f} s"


def format_s(seconds: float | None) -> str:
    """A duration given in seconds (format_ms's rule)."""
    return MISSING if seconds is None else format_ms(seconds * 1000)


def format_offset_s(seconds: float | None) -> str:
    """A moment of a run in seconds since its start, to the hundredth (the timeline's x axis)."""
    return MISSING if seconds is None else f"{seconds:.2f}"


def format_number(value: float | None) -> str:
    """A count or a rate: an integer as it is (a seed, an offset: no separators); a float to three
    significant figures below 100 (no trailing zeros) and whole from there on."""
    if value is None:
        return MISSING
    if isinstance(value, int) or value != value or abs(value) == float("inf"):  # NaN, inf: as Python says
        return str(value)
    if abs(value) >= 100 or round(value) == value:
        return str(round(value))
    return f"{value:.3g}"
