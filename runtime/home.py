"""Where this user's lab state lives: the component cache, the process registry, the
analysis JVM's class archive. Every package finds it here (``REBALANCE_LAB_HOME``)."""

import os
from pathlib import Path


def lab_home() -> Path:
    return Path(os.environ.get("REBALANCE_LAB_HOME", Path.home() / ".cache" / "rebalance-lab"))
