"""Every fault kind, by the name scenarios use (``kind:``)."""

from __future__ import annotations

from faults.base import Fault
from faults.churn import AddPartitions, CreateTopic, JoinStorm, RollingRestart, Scale
from faults.member import PollStall
from faults.network import Network
from faults.process import Crash, Pause
from faults.zookeeper import ZkSessionExpiry

KINDS: dict[str, type[Fault]] = {cls.kind: cls for cls in (
    Pause, Crash, Network, ZkSessionExpiry, PollStall, RollingRestart, JoinStorm, Scale, AddPartitions, CreateTopic)}


def from_spec(spec: dict) -> Fault:
    """Build a fault from one entry of ``Scenario.schedule()`` (``fault_id``, ``kind``, ``at_s``, ``target``, options)."""
    spec = dict(spec)
    cls = KINDS[spec.pop("kind")]
    return cls(fault_id=spec.pop("fault_id"), at_s=float(spec.pop("at_s")), target=spec.pop("target", None), params=spec)
