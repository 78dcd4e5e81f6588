"""commit-monotonicity: a partition's committed offset never moves backward.

A regression makes the group re-read records it already committed past —
typically a zombie's late commit overwriting its successor's. Scenarios that
reset offsets on purpose set `allow_reset: true`; regressions are then findings.
"""

from __future__ import annotations

from ..anomalies import Anomaly, CheckResult, members, plural
from ..history import Commit, History, Instant, TopicPartition
from ..offsets import OffsetSet

NAME = "commit-monotonicity"
OPTIONS = {"allow_reset": False}
PREMISE = ("fenced_commits", "so committed offsets can move back")  # a zombie's late commit is accepted


def check(history: History, options: dict) -> CheckResult:
    result = CheckResult()
    highest: dict[TopicPartition, Commit] = {}
    for commit in history.commits:  # in the order the requests were sent
        if not commit.success:
            continue
        top = highest.get(commit.tp)
        if top and commit.offset < top.offset:
            anomaly = _regression(history, top, commit)
            (result.findings if options["allow_reset"] else result.violations).append(anomaly)
        if top is None or commit.offset > top.offset:
            highest[commit.tp] = commit
    result.detail = {"partitions": len(highest), "allow_reset": bool(options["allow_reset"])}
    return result


def _describe(history: History, c: Commit) -> str:
    return f"{c.offset} ({c.slot}, generation {c.generation}, sent {history.clock(c.sent_ms)})"


def _regression(history: History, top: Commit, commit: Commit) -> Anomaly:
    reread = OffsetSet.span(commit.offset, top.offset - 1)
    return Anomaly(
        NAME,
        "offset-regression",
        f"{commit.tp}: committed offset went back from {_describe(history, top)} to {_describe(history, commit)}; "
        f"{plural(len(reread), 'record')} ({reread.render()}) will be read again",
        partition=str(commit.tp),
        offsets=reread.render(),
        count=len(reread),
        members=members(top.slot, commit.slot),
        generation=commit.generation,
        times={"highest_sent": Instant(None, top.sent_ms), "regression_sent": Instant(None, commit.sent_ms)},
    )
