"""Which client lane each member rides (workload.lanes).

A lane is what lets a fault cut exactly some members off: a listener ``LANE<k>`` on every broker
and a Toxiproxy proxy per broker (harness/cluster/network.py), so every connection a member makes
passes proxies no other lane uses. That costs per lane, not per member: each listener runs its
own acceptor and network threads on every broker, Toxiproxy a proxy per broker.

- ``per-member`` (the default): member ``consumer-k`` rides lane k, a lane of its own; a run has
  one lane per member slot, at most ``MAX_OWN_LANES``.
- ``on-demand``: a member a fault names as its target (written, or drawn by random_faults with the
  run's seed) rides a lane of its own; every other member rides a crowd lane shared with up to
  ``CROWD_LANE_MEMBERS`` members, by member number (consumer-1..100 the first, 101..200 the next).
  Faults on the group as a whole still reach every lane (a broker's ``clients`` link cuts them
  all). What a crowd member cannot be is a fault's target by name: its lane-mates would share
  the cut, so ``message`` faults — whose proxy tells a lane's member by its lane — need
  ``per-member`` lanes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

LANES = ("per-member", "on-demand")
Lanes = Literal[LANES]  # type: ignore[valid-type]
# Each lane is a listener on every broker: Kafka gives a listener its own acceptor and
# num.network.threads (3) threads, so 128 lanes are ~500 threads on each broker, and Toxiproxy
# 128 proxies per broker; a run that needs more lanes than this shares them (on-demand).
MAX_OWN_LANES = 128
# Members on one crowd lane: 100 connections per proxy and listener are nothing to either.
CROWD_LANE_MEMBERS = 100


def member_number(member: str) -> int:
    return int(re.fullmatch(r"consumer-(\d+)", member)[1])


@dataclass(frozen=True)
class LanePlan:
    """The lanes of one run: how many, and which each member rides."""

    own: tuple[str, ...]  # members with a lane of their own: lanes 1..len(own), in this order
    crowd: int  # crowd lanes after them (0: every member has its own)

    def __post_init__(self):
        object.__setattr__(self, "_own_lane", {m: k for k, m in enumerate(self.own, 1)})

    @property
    def lanes(self) -> int:
        return len(self.own) + self.crowd

    def lane_of(self, member: str) -> int:
        if member in self._own_lane:
            return self._own_lane[member]
        return len(self.own) + 1 + (member_number(member) - 1) // CROWD_LANE_MEMBERS

    def has_own_lane(self, member: str) -> bool:
        return member in self._own_lane

    @classmethod
    def per_member(cls, slots: list[str]) -> LanePlan:
        return cls(tuple(slots), 0)

    @classmethod
    def on_demand(cls, slots: list[str], targets: set[str]) -> LanePlan:
        own = tuple(m for m in slots if m in targets)
        return cls(own, math.ceil(len(slots) / CROWD_LANE_MEMBERS))
