"""fenced-commits: only the current owner's commits may succeed.

The coordinator fences commits by generation (ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID, STALE_MEMBER_EPOCH).
A commit is judged at the instant its request left (`started_mono_ms`): if the
member did not own the partition then, or another member had already taken it
over, an accepted commit means fencing failed. Which commits after its own revoke
are still a member's is `Ownership.commit_session`'s to say. Rejected commits are the
fence working and are only counted. A "takeover" by an assignment of an older
generation than the commit's is no takeover: a paused member can read, when it
resumes, the SyncGroup answer it was sent before the group moved on without it.
"""

from __future__ import annotations

from bisect import bisect_right

from ..anomalies import Anomaly, CheckResult, members
from ..history import Commit, History, Instant
from ..ownership import Session, ownership_of

NAME = "fenced-commits"
OPTIONS: dict = {}
PREMISE = ("fenced_commits", "")  # oracle/protocols.py: a generation without fencing accepts such commits


def check(history: History, options: dict) -> CheckResult:
    ownership = ownership_of(history)
    result = CheckResult()
    starts = {tp: [s.start_ms for s in ownership.of_partition(tp)] for tp in ownership.partitions()}
    for commit in history.commits:
        if not commit.success:
            continue
        session = ownership.commit_session(commit)
        if session is None:
            result.violations.append(
                _anomaly(history, commit, "commit-without-ownership", f"but did not own {commit.tp} then")
            )
            continue
        # Sessions of others that began after this one and by the time the commit left.
        begun = starts.get(commit.tp, [])
        window = range(bisect_right(begun, session.start_ms), bisect_right(begun, commit.sent_ms))
        if not window:  # nobody took the partition over meanwhile: almost every commit of a run
            continue
        sessions = ownership.of_partition(commit.tp)
        usurper = next(
            (
                sessions[i]
                for i in window
                if sessions[i].slot != commit.slot and not _older(sessions[i].generation, commit.generation)
            ),
            None,
        )
        if usurper:
            result.violations.append(
                _anomaly(
                    history,
                    commit,
                    "commit-after-handover",
                    f"but {usurper.describe(history)} had taken {commit.tp} over at {history.clock(usurper.start_ms)}",
                    usurper,
                )
            )
    ok, failed = history.commit_outcomes()
    result.detail = {"commits_ok": ok, "commits_failed": failed}
    return result


def _older(generation: int | None, than: int | None) -> bool:
    return generation is not None and than is not None and generation < than


def _anomaly(history: History, commit: Commit, kind: str, why: str, usurper: Session | None = None) -> Anomaly:
    generation = f"generation {commit.generation}" if commit.generation is not None else "no generation"
    return Anomaly(
        NAME,
        kind,
        f"{commit.slot} committed {commit.tp} offset {commit.offset} successfully ({generation}, trigger "
        f"{commit.trigger}, sent {history.clock(commit.sent_ms)}) {why}: the coordinator should have fenced it",
        partition=str(commit.tp),
        offsets=str(commit.offset),
        members=members(commit.slot, usurper and usurper.slot),
        generation=commit.generation,
        times={"sent": Instant(None, commit.sent_ms), "answered": commit.at}
        | ({"taken_over": usurper.start} if usurper else {}),
    )
