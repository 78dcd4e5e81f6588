"""Seeded random fault schedules: which fault, which target, when, for how long.

A pure function of the scenario's ``random_faults`` block and its seed, so the
same seed gives the same schedule byte for byte — on any machine, any Python
(``random.Random`` with an integer seed is specified to be stable). Faults on
different processes may overlap; one process gets one fault at a time, the scenario's
written faults counted (a pause of a process that is down tests nothing). The run heals whatever is still active before
recovery. Each kind draws its own options (``FaultSpec.draw``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from faults.base import Drawing, FaultSpec
from faults.catalogue import SPECS

MEMBER = re.compile(r"consumer-\d+")  # a member's name: its slot
RECOVERY_MARGIN_S = 5.0  # after a fault on a process, leave it alone this long before the next
RESOLUTION_S = 0.001  # drawn times and lengths are rounded to the millisecond (schedules stay readable)


def draw(
    spec: dict,
    *,
    seed: int,
    duration_s: float,
    consumers: list[str],
    zookeeper: bool = True,
    brokers: int = 3,
    written: Sequence[FaultSpec] = (),
    kafka_apis: Sequence[str] = (),
    static_membership: bool = False,
    member_epochs: bool = False,
) -> list[dict]:
    """The drawn faults; ``written``: the scenario's own timed faults, whose targets are busy
    as theirs are (a scenario without written faults draws what it always drew); ``kafka_apis``:
    what the members send the brokers (their generation's), which message faults act on;
    ``static_membership``, ``member_epochs``: their generation's, which errors they may be answered."""
    rng = random.Random(seed)
    targets = spec.get("targets") or consumers
    drawing = Drawing(
        members=[t for t in targets if MEMBER.fullmatch(t)],
        zookeeper=zookeeper,
        brokers=brokers,
        kafka_apis=tuple(kafka_apis),
        directions=tuple(spec.get("directions") or ("both",)),
        static_membership=static_membership,
        member_epochs=member_epochs,
    )
    start = spec["start_s"]
    end = spec["end_s"] if spec.get("end_s") is not None else duration_s - 5
    shortest, longest = spec["duration_s"]
    faults = []
    busy: dict[str, list[tuple[float, float]]] = {}  # one fault at a time per target
    for f in written:
        if getattr(f, "target", None) and f.on is None:
            busy.setdefault(f.target, []).append((f.at_s, f.at_s + f.holds_target_s + RECOVERY_MARGIN_S))
    for _ in range(spec["count"]):
        kind = rng.choice(spec["kinds"])
        at_s = round(rng.uniform(start, end), 3)
        length = round(rng.uniform(shortest, longest), 3)
        window = (at_s, at_s + length + RECOVERY_MARGIN_S)
        pool = [
            t
            for t in targets
            if SPECS[kind].drawable_for(t, drawing)
            and not any(a < window[1] and window[0] < b for a, b in busy.get(t, ()))
        ]
        if not pool:
            continue  # every candidate is already faulted then: overlapping faults, but not on one process
        target = rng.choice(pool)
        busy.setdefault(target, []).append(window)
        faults.append({"kind": kind, "target": target, "at_s": at_s, **SPECS[kind].draw(rng, target, length, drawing)})
    return faults
