"""Every fault kind, once. A new kind is a module (its ``FaultSpec`` and ``Fault``, see
faults/base.py) and a line here; the scenario's ``faults:`` entries, ``random_faults.kinds``
and the run's faults all follow from this list."""

from __future__ import annotations

from faults.add_partitions import AddPartitions
from faults.base import Fault, FaultSpec
from faults.crash import Crash
from faults.create_topic import CreateTopic
from faults.join_storm import JoinStorm
from faults.network import Network
from faults.pause import Pause
from faults.poll_stall import PollStall
from faults.rolling_restart import RollingRestart
from faults.scale import Scale
from faults.zk_session_expiry import ZkSessionExpiry

KINDS: dict[str, type[Fault]] = {fault.Spec.kind_name(): fault for fault in (
    Pause,
    Crash,
    Network,
    ZkSessionExpiry,
    PollStall,
    RollingRestart,
    JoinStorm,
    Scale,
    AddPartitions,
    CreateTopic,
)}
SPECS: dict[str, type[FaultSpec]] = {kind: fault.Spec for kind, fault in KINDS.items()}
TOPIC_KINDS = frozenset(kind for kind, spec in SPECS.items() if spec.names_topics)  # a shared cluster refuses them
DRAWABLE = tuple(kind for kind, spec in SPECS.items() if spec.drawable)  # what random_faults may pick


def from_spec(spec: dict) -> Fault:
    """Build a fault from one entry of ``Scenario.schedule()`` (``fault_id``, ``kind``, ``at_s``, ``target``, options)."""
    spec = dict(spec)
    fault_id = spec.pop("fault_id")
    fault = KINDS[spec["kind"]]
    params = {key: value for key, value in spec.items() if key not in ("kind", "at_s", "target", "on")}
    return fault(fault_id=fault_id, spec=fault.Spec.model_validate(spec), params=params)
