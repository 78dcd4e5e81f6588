"""The coordinator's wire protocol: one JSON object per line over TCP (docs/coordinator.md).

Shared by the server and the members' client, so both ends agree on framing and
error codes. The codes are Kafka's, so histories read the same whichever
coordinator a member talked to.
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass
from typing import Any

NONE = 0
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
INVALID_REQUEST = 42

ERROR_NAMES = {
    NONE: "NONE",
    COORDINATOR_NOT_AVAILABLE: "COORDINATOR_NOT_AVAILABLE",
    NOT_COORDINATOR: "NOT_COORDINATOR",
    ILLEGAL_GENERATION: "ILLEGAL_GENERATION",
    UNKNOWN_MEMBER_ID: "UNKNOWN_MEMBER_ID",
    REBALANCE_IN_PROGRESS: "REBALANCE_IN_PROGRESS",
    INVALID_REQUEST: "INVALID_REQUEST",
}

APIS = frozenset(
    {
        "FindCoordinator",
        "JoinGroup",
        "SyncGroup",
        "Heartbeat",
        "LeaveGroup",
        "OffsetCommit",
        "OffsetFetch",
        "DescribeGroup",
    }
)
MAX_LINE_BYTES = 1 << 20


class CoordinatorError(Exception):
    """A response with an error code: the request was refused for a reason Kafka has a name for."""

    def __init__(self, code: int, message: str = ""):
        self.code = code
        self.name = ERROR_NAMES.get(code, f"ERROR_{code}")
        super().__init__(f"{self.name}{': ' + message if message else ''}")


def error(code: int, message: str = "") -> dict:
    return {"error_code": code, "error": ERROR_NAMES.get(code, str(code)), **({"message": message} if message else {})}


def encode(message: dict) -> bytes:
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


@dataclass(frozen=True)
class Address:
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Address:
        host, _, port = text.rpartition(":")
        return cls(host, int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class Connection:
    """One TCP connection to one coordinator instance; requests are answered in order.

    Thread-safe: a request holds the connection until its answer arrives. Any socket
    trouble closes the connection and raises ``ConnectionError`` (the caller picks
    the next coordinator; a half-read answer must never be taken for the next one).
    """

    def __init__(self, address: Address, connect_timeout_s: float = 2.0):
        self.address = address
        self.connect_timeout_s = connect_timeout_s
        self._sock: socket.socket | None = None
        self._reader = None
        self._correlation = 0
        self._lock = threading.Lock()

    def request(self, api: str, timeout_s: float, **fields: Any) -> dict:
        """The response's fields; a non-zero error code raises ``CoordinatorError``."""
        response = self.call(api, timeout_s, **fields)
        if response.get("error_code", NONE) != NONE:
            raise CoordinatorError(response["error_code"], response.get("message", ""))
        return response

    def call(self, api: str, timeout_s: float, **fields: Any) -> dict:
        with self._lock:
            try:
                if self._sock is None:
                    self._open()
                self._correlation += 1
                self._sock.settimeout(timeout_s)
                self._sock.sendall(encode({"api": api, "correlation_id": self._correlation, **fields}))
                line = self._reader.readline(MAX_LINE_BYTES)
                if not line:
                    raise ConnectionError(f"{self.address} closed the connection")
                response = json.loads(line)
                if response.get("correlation_id") != self._correlation:
                    raise ConnectionError(f"{self.address} answered out of order")
                return response
            except (OSError, ValueError) as e:
                self._close()
                raise ConnectionError(f"{api} to {self.address}: {e}") from e

    def _open(self) -> None:
        self._sock = socket.create_connection((self.address.host, self.address.port), self.connect_timeout_s)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._reader = self._sock.makefile("rb")

    def _close(self) -> None:
        if self._sock is not None:
            try:
                self._reader.close()
                self._sock.close()
            except OSError:
                pass
        self._sock = self._reader = None

    def close(self) -> None:
        with self._lock:
            self._close()
