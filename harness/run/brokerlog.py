"""The brokers' own account of every rebalance, read from their logs.

Kafka's GroupCoordinator logs each state change of a group at INFO. Those lines
become ``coordinator_*`` history events: a clock independent of the clients that
the oracle can hold its own measurements against. The phrases are matched
without their prefix, which differs between the Scala coordinator (3.9,
"[GroupCoordinator 1]: …") and the Java one (4.x, "[GroupCoordinator id=1 …] …").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from oracle import vocabulary as ev
from runtime.tail import FileTail

# "[2026-11-21T19:42:28.038+0000] INFO message (logger)" — see cluster/config.LOG_PATTERN
_LINE = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4})\] (?P<level>\w+) (?P<msg>.*)$")

_PATTERNS = [
    (
        ev.COORDINATOR_PREPARING_REBALANCE,
        re.compile(
            r"Preparing to rebalance group (?P<group>\S+) in state \w+ with old generation (?P<old_generation>-?\d+)"
            # The reason runs to the ")" that closes it, before the logger name; it may hold
            # parentheses itself (4.x: "explicit `LeaveGroup` request for (m1, m2) members.").
            r".*?\(reason: (?P<reason>.*?)\)\.?(?: \([\w.$]+\))?$"
        ),
    ),
    (
        ev.COORDINATOR_STABILIZED,
        re.compile(r"Stabilized group (?P<group>\S+) generation (?P<generation>\d+) .*?with (?P<members>\d+) members"),
    ),
    (
        ev.COORDINATOR_ASSIGNMENT_RECEIVED,
        re.compile(
            r"Assignment received from leader (?P<leader_id>\S+) for group (?P<group>\S+) for generation (?P<generation>\d+)"
        ),
    ),
    (
        ev.COORDINATOR_MEMBER_REMOVED,
        re.compile(
            r"Member (?:MemberMetadata\(memberId=)?(?P<member_id>[^,\s)]+).*? (?:in group (?P<group>\S+) )?has failed"
        ),
    ),
    (
        ev.COORDINATOR_MEMBER_REMOVED,
        re.compile(
            r"Member (?:MemberMetadata\(memberId=)?(?P<member_id>[^,\s)]+).*? has left group (?P<group>\S+) through explicit"
        ),
    ),
    # 4.x: "[Group G] Member M has left group through explicit `LeaveGroup` request; …",
    # also "Dynamic Member M" and "Static Member M with instance id I".
    (
        ev.COORDINATOR_MEMBER_REMOVED,
        re.compile(
            r"\[Group (?P<group>\S+?)\] (?:Dynamic |Static )?Member (?P<member_id>\S+)(?: with instance id \S+)? "
            r"has left group through explicit"
        ),
    ),
    (ev.COORDINATOR_GROUP_EMPTY, re.compile(r"Group (?P<group>\S+) with generation (?P<generation>\d+) is now empty")),
    # KIP-848 groups (4.x, group.protocol=consumer): no join/sync phases. The group epoch is
    # bumped (the rebalance begins) and the broker computes the target assignment; members
    # then reconcile towards it on their own heartbeats.
    (
        ev.COORDINATOR_PREPARING_REBALANCE,
        re.compile(r"\[GroupId (?P<group>\S+?)\] Bumped group epoch to (?P<generation>\d+)"),
    ),
    (
        ev.COORDINATOR_TARGET_ASSIGNMENT,
        re.compile(
            r"\[GroupId (?P<group>\S+?)\] Computed a new target assignment for epoch (?P<generation>\d+) "
            r"with '(?P<assignor>[^']+)' assignor"
        ),
    ),
    (
        ev.COORDINATOR_MEMBER_JOINED,
        re.compile(r"\[GroupId (?P<group>\S+?)\] Member (?P<member_id>\S+) joins the consumer group"),
    ),
    (
        ev.COORDINATOR_MEMBER_REMOVED,
        re.compile(
            r"\[GroupId (?P<group>\S+?)\] Member (?P<member_id>\S+) fenced from the group because (?P<cause>[^.]*)"
        ),
    ),
    (
        ev.COORDINATOR_MEMBER_REMOVED,
        re.compile(r"\[GroupId (?P<group>\S+?)\] Member (?P<member_id>\S+) left the consumer group"),
    ),
]

_INTS = {"old_generation", "generation", "members"}


def parse_line(line: str) -> tuple[float, str, dict] | None:
    """(wall-clock ms, event name, fields) for a GroupCoordinator line, else None."""
    m = _LINE.match(line)
    if not m or "roup" not in m["msg"]:
        return None
    for name, pattern in _PATTERNS:
        if hit := pattern.search(m["msg"]):
            fields = {k: (int(v) if k in _INTS else v) for k, v in hit.groupdict().items() if v is not None}
            if name == ev.COORDINATOR_PREPARING_REBALANCE and "generation" in fields:  # KIP-848 epoch bump
                fields = {
                    "group": fields["group"],
                    "old_generation": fields["generation"] - 1,
                    "reason": "group epoch bumped",
                }
            elif name == ev.COORDINATOR_PREPARING_REBALANCE:
                fields["reason"] = fields["reason"].split("; client reason: ")[0]
            if name == ev.COORDINATOR_MEMBER_REMOVED:
                fields["reason"] = "left" if ("through explicit" in m["msg"] or " left the" in m["msg"]) else "failed"
                if "cause" in fields:
                    fields["detail"] = fields.pop("cause")
            ts = datetime.strptime(m["ts"], "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000.0
            return ts, name, fields
    return None


# What a run needs of its group's coordinator, by the group protocol its members speak: the
# event those lines give, and the lines in words. Without them the rebalances have no broker
# clock and assignment-validity no member count: the run cannot be judged (INCOMPLETE).
NEEDED = {
    "classic": (ev.COORDINATOR_STABILIZED, "the GroupCoordinator's `Stabilized group G generation N` lines"),
    "consumer": (
        ev.COORDINATOR_TARGET_ASSIGNMENT,
        "the group coordinator's `[GroupId G] Computed a new target assignment for epoch N` lines",
    ),
}


def missing_lines(group_protocol: str, group: str, seen: set[str]) -> str | None:
    """What a run of `group_protocol` needed from the brokers' logs and did not get (in words);
    None when it got it (or needs nothing from them)."""
    needed = NEEDED.get(group_protocol)
    if needed is None or needed[0] in seen:
        return None
    return f"{needed[1]} of group {group}"


def coordinator_events(log: Path, broker: str, group: str | None = None) -> Iterator[tuple[float, str, dict]]:
    """Coordinator events of one broker log, optionally for one group only."""
    yield from CoordinatorLog(log, broker, group).new_events()


class CoordinatorLog:
    """One broker's GroupCoordinator lines, read as the broker writes them: each call gives
    the events of the lines completed since the last (a restarted broker that began the file
    anew is read from its start)."""

    def __init__(self, log: Path, broker: str, group: str | None = None):
        self.tail, self.broker, self.group = FileTail(log), broker, group
        self.seen: set[str] = set()  # the event names its lines gave
        # Some of its lines naming the group that gave no event: shown when lines it needs are missing.
        self.unrecognised: list[str] = []

    def new_events(self) -> Iterator[tuple[float, str, dict]]:
        for raw in self.tail.new_lines():
            line = raw.decode(errors="replace")
            parsed = parse_line(line)
            if parsed and (self.group is None or parsed[2].get("group") in (self.group, None)):
                ts, name, fields = parsed
                self.seen.add(name)
                yield ts, name, {"broker": self.broker, **fields}
            elif not parsed and self.group and self.group in line and len(self.unrecognised) < 5:
                self.unrecognised.append(line.rstrip())
