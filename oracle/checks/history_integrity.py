"""history-integrity: what the history itself promised and did not keep, set aside.

Always judged, first, and never a finding about the cluster: it names the events that
break a promise whose treatment is to set them aside (oracle/integrity.py), which every
other check then judges without. Promises whose treatment is to refuse the history never
reach a check (the loader raises `BrokenHistory`). Its detail is the loader's report:
torn, recovered and duplicate lines, a missing run_finished, fields this oracle does not
know — counted, shown, and none of them a violation.
"""

from __future__ import annotations

from collections import defaultdict

from ..anomalies import Anomaly, CheckResult, plural
from ..history import History
from ..offsets import OffsetSet

NAME = "history-integrity"
OPTIONS: dict = {}


def check(history: History, options: dict) -> CheckResult:
    result = CheckResult(detail=history.loaded.to_dict() if history.loaded.events >= 0 else {})
    consumed: dict = defaultdict(list)
    for c in history.never_produced:
        consumed[c.slot, c.tp].append(c)
    for (slot, tp), cs in consumed.items():
        offsets = OffsetSet((c.lo, c.hi) for c in cs)
        result.violations.append(
            Anomaly(
                NAME,
                "never-produced",
                f"{slot} consumed {tp} offsets {offsets.render()} ({plural(len(offsets), 'record')}, first at "
                f"{history.clock(cs[0].at.mono_ms)}), past the last offset known to exist "
                f"({_end(history, tp)}): records never produced, set aside; the other checks judged the history "
                "without them",
                partition=str(tp),
                offsets=offsets.render(),
                count=len(offsets),
                members=(str(slot),),
                generation=cs[0].generation,
                times={"first": cs[0].at, "last": cs[-1].at},
            )
        )
    for c in history.never_produced_commits:
        result.violations.append(
            Anomaly(
                NAME,
                "commit-past-produced",
                f"{c.slot} committed {c.tp} offset {c.offset} at {history.clock(c.at.mono_ms)}, past the last offset "
                f"known to exist ({_end(history, c.tp)}): set aside; the other checks judged the history without it",
                partition=str(c.tp),
                offsets=str(c.offset),
                members=(str(c.slot),),
                generation=c.generation,
                times={"answered": c.at},
            )
        )
    return result


def _end(history: History, tp) -> str:
    acked = history.acked.get(tp)
    said = [f"acknowledged up to {acked.max}"] if acked else []
    end = history.produced_end.get(tp)
    if end is not None and (not acked or end > acked.max + 1):
        said.append(f"high watermark {end}")
    return ", ".join(said) or "none"
