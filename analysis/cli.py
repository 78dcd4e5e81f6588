"""`rebalance-lab analyze`: the click command (registered by harness/cli/__init__.py).

    rebalance-lab analyze runs/* [--out analysis-out] [--master local[2] | spark://127.0.0.1:7077]

Also runnable on its own: `python3 -m analysis RUNS… [--out DIR] [--master URL]`.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runtime.console import Column, LabConsole, fitted_table
from runtime.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_RUN_ERROR, LabError
from runtime.output_dirs import SafePath, make_dirs, refuse_output_dir

from .pages import EVERY_RUN_PAGE_UP_TO, RUN_REPORTS

console = LabConsole(highlight=False)  # the terminal's width; piped, COLUMNS (else 120), no line padded
console.fit()
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def _num(v, digits: int = 0) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


# The figures a narrow terminal leaves out first (the csv/ and parquet/ tables have them all).
_FIGURES = [
    ("runs", "runs", 0, 1),
    ("rebalances", "rebal.", 0, 0),
    ("rebalance_ms.count", "done", 0, 9),
    ("rebalance_ms.p50", "p50 ms", 0, 6),
    ("rebalance_ms.p95", "p95 ms", 0, 0),
    ("rebalance_ms.p99", "p99 ms", 0, 8),
    ("rebalance_ms.max", "max ms", 0, 0),
    ("unowned_ms.p95", "STW p95", 0, 7),
    ("unowned_ms.max", "STW max", 0, 0),
    ("fault_to_detection_ms.p50", "detect p50", 0, 5),
    ("duplicates.sum", "dups", 0, 3),
    ("lost_records.sum", "lost", 0, 0),
    ("peak_lag.max", "peak lag", 0, 4),
]


_FOLDED_KEYS = ("client", "scenario", "faults")
_KEY_WIDTH = 12  # a folded key's column


def comparison_table(by_group: list[dict], width: int | None = None) -> Table:
    """The group keys (the short ones — a protocol's name, a release — read whole and grepped for,
    never folded; a client requirement or a scenario's name may fold), then the figures that fit
    ``width`` (the console's). A key every row has the same value of goes to the title when the
    table would not fit with it."""
    from .report import GROUP_COLUMNS, comparison_rows

    width = width or console.width
    rows = comparison_rows(by_group)

    def need(key: str) -> int:
        return _KEY_WIDTH if key in _FOLDED_KEYS else max([len(key), *(len(str(r[key])) for r in rows)])

    keys = list(GROUP_COLUMNS)
    kept = [title for _, title, _, drop in _FIGURES if not drop]
    constant = [k for k in keys if rows and len({str(r[k]) for r in rows}) == 1]
    while constant and sum(map(need, keys)) + sum(map(len, kept)) + 3 * (len(keys) + len(kept)) + 1 > width:
        keys.remove(constant.pop())  # from the last key (the scenario) back
    title = f"Rebalances across runs (per {' / '.join(GROUP_COLUMNS)})"
    if moved := [k for k in GROUP_COLUMNS if k not in keys]:
        title += "; every row's " + ", ".join(f"{k} {rows[0][k]}" for k in moved)
    columns = [Column(c, wrap=c in _FOLDED_KEYS, width=_KEY_WIDTH) for c in keys]
    columns += [Column(title_, justify="right", drop=drop) for _, title_, _, drop in _FIGURES]
    cells = [[escape(str(row[c])) for c in keys] + [_num(row.get(k), d) for k, _, d, _ in _FIGURES] for row in rows]
    table = fitted_table(escape(title), columns, cells, width)
    table.header_style = "bold"
    return table


def _cause(e: Exception) -> str:
    """What went wrong, in one line: for a JVM error its root cause ("java.io.IOException: Mkdirs
    failed to create …"), not py4j's "An error occurred while calling o360.parquet"."""
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            while java.getCause() is not None:
                java = java.getCause()
            return str(java.toString()).strip().splitlines()[0]
        except Exception:  # the gateway is gone: py4j's own words below
            pass
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


@click.command("analyze")
@click.argument("runs", nargs=-1, required=True)
@click.option(
    "--out",
    "out",
    type=SafePath(file_okay=False, path_type=Path),
    default=Path("analysis-out"),
    show_default=True,
    help="Where the Parquet, CSV, PNG and HTML go.",
)
@click.option(
    "--master", default=None, metavar="URL", help="Spark master: local[2] (the default), local[*], spark://host:7077, …"
)
@click.option(
    "--cache",
    "cache_dir",
    type=SafePath(file_okay=False, path_type=Path),
    default=None,
    help="Where each run's tables are kept between analyses. Default: OUT/cache.",
)
@click.option(
    "--run-reports",
    type=click.Choice(RUN_REPORTS),
    default="auto",
    show_default=True,
    help=f"Which runs get an HTML page: auto = all up to {EVERY_RUN_PAGE_UP_TO} runs, above that the "
    "runs that show a problem (not completed, lost records, unexplained duplicates).",
)
def analyze(runs: tuple[str, ...], out: Path, master: str | None, cache_dir: Path | None, run_reports: str) -> None:
    """Analyse run directories (or globs of them) with Spark: per-run metrics, cross-run comparison
    (Parquet + CSV), plots and HTML reports. A damaged or unfinished run directory is reported and skipped.

    Exit code 0 when the analysis was written (skipped directories are listed), 2 when no
    directory given could be analysed, 3 when Spark failed, 130 when interrupted.
    """
    from .job import NoRuns
    from .job import analyze as run_analysis
    from .runs import find_runs
    from .session import spark_session

    try:  # before Spark starts: nothing to analyse, or nowhere to write it, costs no JVM
        refuse_output_dir(out, "--out")
        if cache_dir is not None:
            refuse_output_dir(cache_dir, "--cache")
        found = find_runs(list(runs))
        if not found[0]:
            raise NoRuns(found[1])
        make_dirs(out, "--out")  # there is something to write: /proc or a read-only mount answers now
        if cache_dir is not None:
            make_dirs(cache_dir, "--cache")
    except LabError as e:
        err_console.print(f"[red]error:[/] {escape(str(e))}")
        sys.exit(e.exit_code)
    if (out / "__init__.py").exists():  # `analyze runs/* --out analysis` in the project's own checkout
        err_console.print(
            f"[red]error:[/] --out {out}: a Python package ({out / '__init__.py'}), not a place for "
            "an analysis: choose another --out"
        )
        sys.exit(EXIT_BAD_INPUT)
    logging.getLogger("py4j").setLevel(logging.CRITICAL)  # a cancelled job's gateway chatter: not the user's news
    interrupted = threading.Event()
    try:
        with console.status("starting Spark …") as status:
            spark = spark_session(master)
            spark_handler = signal.getsignal(signal.SIGINT)  # PySpark's: cancels the running jobs

            def on_interrupt(signum, frame):
                interrupted.set()
                if callable(spark_handler):
                    spark_handler(signum, frame)
                raise KeyboardInterrupt

            signal.signal(signal.SIGINT, on_interrupt)
            result = run_analysis(
                list(runs),
                out,
                master,
                spark=spark,
                cache_dir=cache_dir,
                run_reports=run_reports,
                progress=lambda msg: status.update(msg),
                found=found,
            )
    except KeyboardInterrupt:
        interrupted.set()
    except LabError as e:
        err_console.print(f"[red]error:[/] {e}")
        sys.exit(e.exit_code)
    except Exception as e:  # Spark / Java failures: one message, not a JVM stack
        if not interrupted.is_set():  # else: a job cancelled by the interrupt
            err_console.print(f"[red]error:[/] analysis failed: {_cause(e)}")
            sys.exit(EXIT_RUN_ERROR)
    if interrupted.is_set():
        err_console.print(f"[yellow]interrupted[/] (an analysis in {out} is finished only if summary.json is there)")
        sys.exit(EXIT_INTERRUPTED)
    for s in result.skipped:
        err_console.print(f"[yellow]skipped[/] {s.path}: {s.reason}")
    console.print(comparison_table(result.by_group))
    console.print(
        f"{len(result.runs)} runs analysed ({len(result.parsed)} read, {len(result.cached)} from the "
        f"cache), {len(result.skipped)} skipped; " + ", ".join(f"{k} {v:.1f} s" for k, v in result.timings.items())
    )
    console.print(f"tables: {result.out / 'parquet'} and {result.out / 'csv'}")
    console.print(f"report: {result.report}")
