"""The zk-eager member's settings: the Kafka 0.8 high-level consumer's rebalance settings
(``workload.zk_eager`` in a scenario), validated by the scenario and by the member, and the
driver's part of the member's spec (``ZkEagerMemberSettings``).

Kept apart from ``workloads.zk_eager`` so that reading a scenario loads no client library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class ZkEagerSettings(BaseModel):
    """The Kafka 0.8 high-level consumer's rebalance settings (seed 000)."""

    # As strict as every scenario entry (faults.base.Strict), which a driver does not import.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    rebalance_max_retries: Annotated[int, Field(ge=1, le=100)] = 4
    rebalance_backoff_ms: Annotated[int, Field(ge=0, le=600_000)] = 2000
    zookeeper_session_timeout_ms: Annotated[int, Field(ge=1000, le=600_000)] = 6000


@dataclass(frozen=True)
class ZkEagerMemberSettings:
    """What only the zk-eager driver reads (``MemberSpec.settings``)."""

    zookeeper_connect: str  # this member's lane to ZooKeeper
    session_file: str  # where it publishes its ZooKeeper session, for a fault to expire it
    rebalance: dict = field(default_factory=dict)  # a ZkEagerSettings (workload.zk_eager), validated by the member
