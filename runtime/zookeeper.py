"""What the ZooKeeper clients of a run share: the project's coordinator, the zk-eager
members, the observer and the harness's cluster management (harness/cluster/zookeeper.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from runtime.logs import quiet_logger

# kazoo reports every dropped connection and expiry at WARNING; here they are the point.
QUIET_ZK_LOG = quiet_logger("rebalance_lab.zookeeper")


def session_hex(session_id: int) -> str:
    """A session id as ZooKeeper's MBeans and logs print it (Java's Long.toHexString:
    unsigned, lower case, no padding)."""
    return f"0x{session_id & 0xFFFF_FFFF_FFFF_FFFF:x}"


def publish_session(client_id: tuple[int, bytes], path: str | Path, **context) -> None:
    """Publish a live session's id and password (a kazoo ``client_id``) in ``path``, for a
    zk-session-expiry fault to expire it on the server as a client
    (``harness.cluster.zookeeper.expire_session_as_client``). Replaced atomically: the
    fault never reads half a file."""
    session_id, password = client_id
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"session_id": session_hex(session_id), "password": password.hex(), **context}))
    os.replace(tmp, path)
