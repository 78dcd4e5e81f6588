"""The terminal the commands write to: a rich Console that fits the terminal (or, piped, COLUMNS) and
pads no line, and tables whose columns fit it (the harness's commands and `analyze` share them)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

PIPED_WIDTH = 120  # the width of tables when stdout is not a terminal and COLUMNS is not set


def without_line_end_padding(segments: Iterable[Segment]) -> Iterator[Segment]:
    """The segments, less the spaces that end a line (a table's or a title's padding): piped output
    is read by grep and diff, and a CI log is not a terminal to fill."""
    pending: list[Segment] = []  # spaces (and controls) that end the line so far
    for segment in segments:
        text, style, control = segment
        if control:
            pending.append(segment)
            continue
        for i, part in enumerate(text.split("\n")):
            if i:
                pending = []
                yield Segment("\n")
            if not part:
                continue
            kept = part.rstrip(" ")
            if not kept:
                pending.append(Segment(part, style))
                continue
            yield from pending
            yield Segment(kept, style)
            pending = [Segment(part[len(kept) :], style)] if len(kept) < len(part) else []
    yield from pending


class LabConsole(Console):
    """A console without timestamps nor source locations (print, never log); on a terminal, the
    terminal's width; piped, COLUMNS (else PIPED_WIDTH) and no line padded with spaces. ``to_stderr``:
    its lines go to stderr (stdout carries a JSON document)."""

    to_stderr = False

    @property
    def file(self):
        return sys.stderr if self.to_stderr else super().file

    @file.setter
    def file(self, value) -> None:
        Console.file.fset(self, value)

    def fit(self) -> None:
        """The width for this invocation: the terminal's, or COLUMNS / PIPED_WIDTH when piped."""
        columns = os.environ.get("COLUMNS", "")
        piped = int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH
        self._width = None if self.is_terminal else piped
        # Piped, a message stays one line however long (a path, a replay command): grep finds it
        # whole; tables still fit the width.
        self.soft_wrap = not self.is_terminal

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(buffer if self.is_terminal else without_line_end_padding(buffer))


@dataclass(frozen=True)
class Column:
    """A column of a table that fits its console.

    ``wrap``: text that may fold onto more lines, never narrower than ``width``; else one line (a figure,
    an id, a status), as wide as its widest value. ``drop``: 0, always shown; else the column goes when
    the table does not fit, the highest ``drop`` first (a figure the summary or --json still has)."""

    header: str
    wrap: bool = False
    width: int = 12
    drop: int = 0
    justify: str = "left"


def _cell_width(cell: str) -> int:
    return max((Text.from_markup(line).cell_len for line in cell.split("\n")), default=0)


def fitted_table(title: str | None, columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> Table:
    """A rich Table of ``rows`` (markup strings, a cell per column) in ``width`` columns: the columns
    that do not fit dropped (``Column.drop``), the one-line ones at their widest value, the rest folded."""

    def natural(i: int) -> int:
        c = columns[i]
        return c.width if c.wrap else max([len(c.header), *(_cell_width(r[i]) for r in rows)])

    shown = list(range(len(columns)))
    for i in sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: -columns[i].drop):
        if sum(natural(j) for j in shown) + 3 * len(shown) + 1 <= width:
            break
        shown.remove(i)
    # The folded columns share what the others leave, each at least its width, the rest by how much
    # each would take: set here, as rich's own collapse may leave a table wider than the console.
    folded = [i for i in shown if columns[i].wrap]
    room = width - sum(natural(i) for i in shown if not columns[i].wrap) - 3 * len(shown) - 1
    whole = {i: max([len(columns[i].header), *(_cell_width(r[i]) for r in rows)]) for i in folded}
    fixed: dict[int, int | None] = dict.fromkeys(folded)
    if folded and sum(whole.values()) > room:
        base = {i: min(columns[i].width, whole[i]) for i in folded}
        extra, want = max(room - sum(base.values()), 0), {i: whole[i] - base[i] for i in folded}
        share = {i: extra * want[i] // (sum(want.values()) or 1) for i in folded}
        fixed = {i: base[i] + share[i] for i in folded}
    table = Table(title=title, title_justify="left")
    for i in shown:
        c = columns[i]
        table.add_column(
            c.header,
            justify=c.justify,
            no_wrap=not c.wrap,
            overflow="fold" if c.wrap else "ellipsis",
            width=fixed.get(i),
        )
    for r in rows:
        table.add_row(*(r[i] for i in shown))
    return table
