"""The HTML pages as a browser shows them: a run's page and a suite's index.html, screenshotted
in headless Chromium at 1400 and 800 pixels wide, and their layout checked in the browser.

    python3 benchmarks/report_screenshots.py [--run RUN_DIR] [--suite SUITE_DIR] [--page FILE.html]...
                                             [--widths 1400,800] [--out DIR] [--chromium /usr/bin/chromium]

--run: the run's page drawn from its history.jsonl (analysis.run_tables and analysis.report, as
`rebalance-lab analyze` draws it, without Spark); without it, a run crowded on purpose
(analysis.synthetic.crowded_page: long names, 14 faults and 18 rebalances within 12 s).
--suite: index.html drawn again from SUITE_DIR/suite.json; without it, a made-up suite with
long variant names and violations. --page: any other page as it is (an analysis's report.html).

Per page and width it prints the page's size, each figure's shown/drawn width, and what the
browser's layout says: text boxes that overlap (every text line's client rectangle against
every other's), boxes whose content spills out without a scroll bar, and whether the page itself
scrolls sideways (it must not: a wide table scrolls in its own box). For the pages it draws, the
figures' own text is checked too (analysis.text_layout.overlapping_texts: the labels inside the
PNGs). Exit 1 if anything overlaps or spills. Screenshots (full page) go to --out.

Chromium is Debian's (`apt-get install chromium`), driven over the DevTools protocol on a pipe
(--remote-debugging-pipe): nothing listens on a port, nothing is downloaded. Not part of the CI
suite (CI has no Chromium); tests/unit/test_report_figures.py is.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from matplotlib.figure import Figure  # noqa: E402

CHROMIUM_FLAGS = [  # what headless Chromium needs on a machine with a closed network, as root
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]

# In the page: every text line's rectangle (a Range over each text node: one rect per line box),
# the pairs of them from different nodes that overlap, the elements whose content spills out of
# them with nothing to scroll it, and the images' shown and natural widths.
CHECK_JS = r"""
(() => {
  const rects = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node, n = 0;
  while ((node = walker.nextNode())) {
    if (!node.textContent.trim()) continue;
    const el = node.parentElement, style = getComputedStyle(el);
    if (style.visibility === "hidden" || style.display === "none") continue;
    if (el.closest("details:not([open])") && !el.closest("summary")) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      if (r.width < 1 || r.height < 1) continue;
      rects.push({node: n, text: node.textContent.trim().slice(0, 60), x0: r.left + scrollX, x1: r.right + scrollX,
                  y0: r.top + scrollY, y1: r.bottom + scrollY, clip: el.closest(".scroll") !== null});
    }
    n += 1;
  }
  rects.sort((a, b) => a.y0 - b.y0);
  const overlaps = [];
  for (let i = 0; i < rects.length; i++) {
    for (let j = i + 1; j < rects.length && rects[j].y0 < rects[i].y1 - 1; j++) {
      const a = rects[i], b = rects[j];
      if (a.node === b.node) continue;
      if (Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0) > 1 && Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > 1)
        overlaps.push([a.text, b.text]);
    }
  }
  const spills = [], scrollers = [];
  for (const el of document.body.querySelectorAll("*")) {
    const style = getComputedStyle(el);
    if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0) {
      if (["auto", "scroll"].includes(style.overflowX)) scrollers.push(el.tagName.toLowerCase() + "." + el.className);
      else if (!el.closest(".scroll") || el.classList.contains("scroll"))
        spills.push(el.tagName.toLowerCase() + ": " + (el.textContent || "").trim().slice(0, 60));
    }
  }
  const images = [...document.images].map(i => [Math.round(i.getBoundingClientRect().width), i.naturalWidth]);
  return {
    width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight,
    viewport: innerWidth, sideways: document.documentElement.scrollWidth > innerWidth,
    texts: rects.length, overlaps: overlaps.slice(0, 20), overlap_count: overlaps.length,
    spills: spills.slice(0, 20), scrollers, images,
  };
})()
"""


class Chromium:
    """One headless Chromium, spoken to over the DevTools protocol on fds 3 and 4."""

    def __init__(self, binary: str):
        self.profile = tempfile.mkdtemp(prefix="report-shots-profile-")
        # the protocol's pipe is the child's fd 3 (commands in) and fd 4 (answers out): put there by a
        # few lines of Python that then become Chromium (a shell's `3<&N` takes no N above 9)
        fds = []
        for fd in (*os.pipe(), *os.pipe()):
            fds.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10))  # clear of 3 and 4
            os.close(fd)
        to_child_r, self.to_child, self.from_child, from_child_w = fds
        place = "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); os.execv(sys.argv[3], sys.argv[3:])"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", place, str(to_child_r), str(from_child_w), binary, *CHROMIUM_FLAGS,
             f"--user-data-dir={self.profile}", "about:blank"],
            pass_fds=(to_child_r, from_child_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_child_r)
        os.close(from_child_w)
        self.buffer, self.next_id, self.events = b"", 0, []

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_child, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method: str, timeout_s: float = 30) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read())
        raise TimeoutError(method)

    def _read(self) -> dict:
        while b"\0" not in self.buffer:
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # our own child, by its pid
            self.proc.wait()
        for fd in (self.to_child, self.from_child):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def look(self, page: Path, width: int, screenshot: Path) -> dict:
        """The page at ``width`` CSS pixels: its layout check, and a full-page screenshot."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}
        self.send("Emulation.setDeviceMetricsOverride", metrics, session)
        self.send("Page.enable", {}, session)
        self.send("Page.navigate", {"url": page.resolve().as_uri()}, session)
        self.wait_for("Page.loadEventFired")
        found = self.send("Runtime.evaluate", {"expression": CHECK_JS, "returnByValue": True}, session)["result"]
        found = found["value"]
        self.send("Emulation.setDeviceMetricsOverride", {**metrics, "height": found["height"]}, session)
        shot = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        self.send("Target.closeTarget", {"targetId": target})
        return found


def draw_run_page(out: Path, run_dir: Path | None) -> tuple[Path, list[Figure]]:
    """A run's page as `analyze` draws it (no Spark), and the figures it saved."""
    from analysis.report import run_report
    from analysis.run_tables import RunRef, tables_of
    from analysis.synthetic import crowded_page

    if run_dir is None:
        run, tables = crowded_page()
    else:
        _, tables = tables_of(RunRef(run_dir.name, run_dir.name, str(run_dir)))
        if isinstance(tables, str):
            sys.exit(f"{run_dir}: {tables}")
        run = tables["runs"][0]
    figures: list[Figure] = []
    savefig = Figure.savefig
    Figure.savefig = lambda fig, *a, **k: (figures.append(fig), savefig(fig, *a, **k))[1]
    try:
        page = run_report(out / "pages" / "run", run, tables)
    finally:
        Figure.savefig = savefig
    return page, figures


def made_up_suite() -> dict:
    long = "a-scenario-with-a-rather-long-name"
    variants = []
    for i, (state, protocol) in enumerate(
        [
            ("passed", "classic-eager"),
            ("failed", "classic-cooperative"),
            ("broken", "consumer"),
            ("skipped", "zk-eager"),
        ]
    ):
        variants.append(
            {
                "id": f"{long}[{protocol}, kafka 4.4.0, client confluent-kafka==2.16.1, seed {i + 1}]",
                "scenario": long,
                "state": state,
                "seconds": 42.123456 * (i + 1),
                "figures": {
                    "rebalances": 3 + i,
                    "rebalance_p95_ms": 812.3456 * (i + 1),
                    "rebalance_max_ms": 12345.678 * (i + 1),
                    "stop_the_world_max_ms": 4321.0987,
                    "duplicates": 12,
                    "violations": 2 if state == "failed" else 0,
                },
                "violations": [
                    {
                        "check": "no-loss",
                        "kind": "lost-records",
                        "message": f"events-{p}: offsets 120..131 "
                        "acknowledged by the broker, never consumed by any member of the group " + "x" * 60,
                    }
                    for p in range(2 if state == "failed" else 0)
                ],  # fmt: skip
                "reason": {"broken": "cluster never became ready", "skipped": "not run: --fail-fast"}.get(state, ""),
                "expected": None,
                "run_dir": None,
            }
        )
    return {
        "suite": "release-with-a-long-name",
        "description": "Every protocol against the release's brokers and clients " * 3,
        "state": "completed",
        "started": "2026-11-28T17:00:00Z",
        "exit_code": 1,
        "variants": variants,
    }


def draw_suite_page(out: Path, suite_dir: Path | None) -> Path:
    from harness.reports.suite import INDEX_HTML, html_page

    suite = json.loads((suite_dir / "suite.json").read_text()) if suite_dir else made_up_suite()
    directory = out / "pages" / "suite"  # never in the suite's own directory: its index.html stays as it is
    directory.mkdir(parents=True, exist_ok=True)
    page = directory / INDEX_HTML
    page.write_text(html_page(suite, directory))
    return page


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, help="a run directory (default: a crowded generated run)")
    parser.add_argument("--suite", type=Path, help="a suite's output directory (default: a made-up suite)")
    parser.add_argument("--page", type=Path, action="append", default=[], help="another page, as it is")
    parser.add_argument("--widths", default="1400,800")
    parser.add_argument("--out", type=Path, default=Path("report-screenshots"))
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    if not Path(args.chromium).exists():
        print(f"no Chromium at {args.chromium}: apt-get install chromium", file=sys.stderr)
        return 2
    from analysis.text_layout import describe, overlapping_texts, texts_outside

    args.out.mkdir(parents=True, exist_ok=True)
    bad = 0
    run_page, figures = draw_run_page(args.out, args.run)
    for i, fig in enumerate(figures):
        overlaps, outside = overlapping_texts(fig), texts_outside(fig)
        w, h = fig.get_size_inches() * fig.dpi
        print(
            f"figure {i + 1} of the run page: {w:.0f}x{h:.0f} px, {len(overlaps)} text overlaps, {len(outside)} cut off"
        )
        for pair in overlaps[:5]:
            print(f"  overlap: {describe(pair)}")
        bad += len(overlaps) + len(outside)
    pages = {"run": run_page, "suite": draw_suite_page(args.out, args.suite)}
    pages.update({f"page{i}-{p.parent.name}-{p.stem}": p for i, p in enumerate(args.page, 1)})
    browser = Chromium(args.chromium)
    try:
        for name, page in pages.items():
            for width in map(int, args.widths.split(",")):
                shot = args.out / f"{name.replace('/', '_')}-{width}.png"
                t = time.monotonic()
                found = browser.look(page, width, shot)
                scale = ", ".join(f"{shown}/{natural}" for shown, natural in found["images"]) or "none"
                print(
                    f"{name} at {width} px: page {found['width']}x{found['height']}"
                    f"{' (scrolls sideways)' if found['sideways'] else ''}, {found['texts']} text boxes, "
                    f"{found['overlap_count']} overlapping, {len(found['spills'])} spilling, "
                    f"{len(found['scrollers'])} scrolling boxes; figures shown/drawn px: {scale}; "
                    f"{shot} ({time.monotonic() - t:.1f} s)"
                )
                for a, b in found["overlaps"][:5]:
                    print(f"  overlap: {a!r} and {b!r}")
                for s in found["spills"][:5]:
                    print(f"  spills: {s}")
                bad += found["overlap_count"] + len(found["spills"]) + found["sideways"]
    finally:
        browser.close()
    print(f"{'OK' if not bad else 'PROBLEMS'}: {bad} overlapping, spilling or cut-off")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
