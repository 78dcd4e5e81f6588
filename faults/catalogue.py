"""Every fault kind, once. A new kind is a module (its ``FaultSpec`` and ``Fault``, see
faults/base.py) and a line here — or, from outside the tree, an entry point of an installed
distribution in the group ``rebalance_lab.fault_kinds`` (docs/extending.md). The scenario's
``faults:`` entries, ``random_faults.kinds`` and the run's faults all follow from ``KINDS``:
the built-in kinds, then the plugins', loaded the first time any of the names below is read."""

from __future__ import annotations

from faults.add_partitions import AddPartitions
from faults.base import Fault, FaultSpec
from faults.crash import Crash
from faults.create_topic import CreateTopic
from faults.join_storm import JoinStorm
from faults.message import Message
from faults.network import Network
from faults.pause import Pause
from faults.poll_stall import PollStall
from faults.protocol_migration import ProtocolMigration
from faults.rolling_broker_upgrade import RollingBrokerUpgrade
from faults.rolling_client_upgrade import RollingClientUpgrade
from faults.rolling_restart import RollingRestart
from faults.scale import Scale
from faults.zk_session_expiry import ZkSessionExpiry
from oracle import extensions

BUILT_IN: dict[str, type[Fault]] = {
    fault.Spec.kind_name(): fault
    for fault in (
        Pause,
        Crash,
        Network,
        ZkSessionExpiry,
        PollStall,
        RollingRestart,
        ProtocolMigration,
        JoinStorm,
        Scale,
        AddPartitions,
        CreateTopic,
        RollingBrokerUpgrade,
        RollingClientUpgrade,
        Message,
    )
}

KINDS: dict[str, type[Fault]]
SPECS: dict[str, type[FaultSpec]]
TOPIC_KINDS: frozenset[str]  # a shared cluster refuses them
CLUSTER_CHANGING_KINDS: frozenset[str]  # and these: they leave the cluster on another release
DRAWABLE: tuple[str, ...]  # what random_faults may pick


def _not_a_fault_kind(obj: object, plugin: extensions.Plugin) -> str | None:
    if not (isinstance(obj, type) and issubclass(obj, Fault)):
        return f"{obj!r} is not a subclass of faults.base.Fault"
    spec = getattr(obj, "Spec", None)
    if not (isinstance(spec, type) and issubclass(spec, FaultSpec) and "kind" in spec.model_fields):
        return "its Spec is not a faults.base.FaultSpec subclass with a `kind: Literal[...]` field"
    if spec.kind_name() != plugin.name:
        return f"its Spec's kind is {spec.kind_name()!r}, its entry point's name {plugin.name!r}: one name, said twice"
    return None


def _registry() -> dict[str, type[Fault]]:
    """KINDS, and what follows from it, the plugins' kinds loaded the first time it is asked for."""
    if "KINDS" not in globals():
        kinds = {**BUILT_IN, **extensions.load(extensions.FAULT_KINDS, BUILT_IN, _not_a_fault_kind)}
        specs = {kind: fault.Spec for kind, fault in kinds.items()}
        globals().update(
            KINDS=kinds,
            SPECS=specs,
            TOPIC_KINDS=frozenset(kind for kind, spec in specs.items() if spec.names_topics),
            CLUSTER_CHANGING_KINDS=frozenset(kind for kind, spec in specs.items() if spec.changes_cluster),
            DRAWABLE=tuple(kind for kind, spec in specs.items() if spec.drawable),
        )
    return globals()["KINDS"]


def __getattr__(name: str):
    if name not in ("KINDS", "SPECS", "TOPIC_KINDS", "CLUSTER_CHANGING_KINDS", "DRAWABLE"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _registry()
    return globals()[name]


def from_spec(spec: dict) -> Fault:
    """Build a fault from one entry of ``Scenario.schedule()`` (``fault_id``, ``kind``, ``at_s``, ``target``, options)."""
    spec = dict(spec)
    fault_id = spec.pop("fault_id")
    fault = _registry()[spec["kind"]]
    params = {key: value for key, value in spec.items() if key not in ("kind", "at_s", "target", "on")}
    return fault(fault_id=fault_id, spec=fault.Spec.model_validate(spec), params=params)
