"""The per-run HTML pages of an analysis: which runs get one, and drawing them in worker
processes while Spark goes on. No Spark in here (the CLI reads RUN_REPORTS without it)."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# Which runs get a page. A page is three matplotlib figures, ~0.2 s of CPU: nothing next to
# one run, but most of the time of a 1,000-run sweep, whose reader starts from the cross-run
# page and opens the runs that went wrong. So "auto" draws every run's page up to
# EVERY_RUN_PAGE_UP_TO runs, and above that only the pages of runs that show a problem.
RUN_REPORTS = ("auto", "all", "problems", "none")
EVERY_RUN_PAGE_UP_TO = 20

# What a run's page is made of, in `<out>/runs/<run>/` (analysis.report.run_report writes them).
PAGE = "report.html"
PAGE_PLOTS = ("timeline.png", "lag.png", "rebalances.png")


def shows_problem(run: dict, failed: frozenset[str] = frozenset()) -> bool:
    """A run worth opening: its verdict failed (``failed``: their run keys), or, from the
    history's own figures, it did not complete, lost acknowledged records, or delivered a
    record twice where no rebalance explains it."""
    unexplained = (run.get("duplicates") or 0) - (run.get("duplicates_explained") or 0)
    return (
        run.get("run_key") in failed
        or run.get("outcome") != "completed"
        or (run.get("lost_records") or 0) > 0
        or unexplained > 0
    )


def runs_with_pages(runs: list[dict], run_reports: str, failed: frozenset[str] = frozenset()) -> list[dict]:
    if run_reports not in RUN_REPORTS:
        raise ValueError(f"run_reports: {run_reports!r} is not one of {', '.join(RUN_REPORTS)}")
    if run_reports == "auto":
        run_reports = "all" if len(runs) <= EVERY_RUN_PAGE_UP_TO else "problems"
    return {"all": runs, "problems": [r for r in runs if shows_problem(r, failed)], "none": []}[run_reports]


# Per-run pages take ~0.2 s each to draw; below this many runs, starting interpreters for
# them costs more than it saves.
PAGE_WORKERS_FROM_RUNS = 8


def remove_old_pages(out: Path) -> None:
    """The run pages an earlier analysis drew in `out`: an analysis of other runs must not leave
    theirs behind beside its own. Only a page's own files go, and their directory once empty:
    a `runs/` of real run directories under --out keeps everything else."""
    for directory in (out / "runs").glob("*/"):
        removed = False
        for name in (PAGE, *PAGE_PLOTS):
            if (directory / name).is_file():
                (directory / name).unlink()
                removed = True
        if removed:  # never an empty directory we did not empty: a run's, just made, waits for its files
            try:
                directory.rmdir()
            except OSError:  # not empty: it holds something else too
                pass


class RunPages:
    """Per-run pages, drawn by worker processes while Spark goes on with the cross-run part
    (matplotlib is single-threaded; the pages are independent). The workers are spawned,
    so a script calling `analyze` needs the usual `if __name__ == "__main__":` guard."""

    def __init__(self, out: Path, workers: int):
        self.out, self.workers, self.futures, self.pool = out, workers, [], None

    def submit(self, runs: list[dict], per_run: dict[str, dict[str, list[dict]]]) -> None:
        if self.workers > 1 and len(runs) >= PAGE_WORKERS_FROM_RUNS:
            import multiprocessing

            self.pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        for r in runs:
            job = (str(self.out / "runs" / r["run"]), r, dict(per_run.get(r["run"], {})), "../../report.html")
            self.futures.append(self.pool.submit(render_run, job) if self.pool else job)

    def results(self) -> dict[str, Path]:
        pages = {}
        try:
            for f in self.futures:
                run, path = f.result() if self.pool else render_run(f)
                pages[run] = Path(path)
        finally:
            self.close()
        return pages

    def close(self) -> None:
        if self.pool:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None


def render_run(args: tuple) -> tuple[str, str]:
    from .report import run_report

    directory, run, data, index_href = args
    return run["run"], str(run_report(Path(directory), run, data, index_href))
