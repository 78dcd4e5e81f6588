"""Loggers that keep a client's expected complaints off the terminal.

Connections dropping and sessions expiring are what chaos runs are made of; the
clients report each at WARNING. Whatever matters goes into the history instead.
"""

from __future__ import annotations

import logging


def quiet_logger(name: str) -> logging.Logger:
    """A logger that writes nowhere and does not pass records up to the root logger."""
    log = logging.getLogger(name)
    log.propagate = False
    log.addHandler(logging.NullHandler())
    return log


# For librdkafka's admin clients (and the harness's own kazoo checks) while brokers start or crash.
QUIET_CLIENT_LOG = quiet_logger("rebalance_lab.admin")
