"""The message proxy's control API, for the harness (its lanes) and the message fault (its rules)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

TIMEOUT_S = 10.0


class MessageProxyError(Exception):
    """The control API did not answer, or refused what it was asked (with its reason)."""


class MessageProxyClient:
    def __init__(self, api_url: str):
        self.api = api_url.rstrip("/")

    def _call(self, method: str, path: str, body: dict | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.api}{path}", data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                reason = json.loads(e.read()).get("error")
            except Exception:
                reason = e.reason
            raise MessageProxyError(f"the message proxy refused {method} {path}: {reason}") from None
        except (urllib.error.URLError, OSError) as e:
            raise MessageProxyError(f"the message proxy at {self.api} did not answer: {e}") from None

    def health(self) -> dict:
        return self._call("GET", "/health")

    def add_lane(self, name: str, listen: str, upstream: str, member: str, broker: str) -> None:
        self._call(
            "PUT", f"/lanes/{name}", {"listen": listen, "upstream": upstream, "member": member, "broker": broker}
        )

    def add_rule(self, rule: dict) -> None:
        self._call("PUT", f"/rules/{rule['fault_id']}", rule)

    def remove_rule(self, fault_id: str) -> bool:
        return self._call("DELETE", f"/rules/{fault_id}")["removed"]

    def rules(self) -> list[str]:
        """The faults whose rules it holds."""
        return self._call("GET", "/rules")

    def reset(self) -> None:
        self._call("DELETE", "/rules")

    def stats(self) -> dict:
        return self._call("GET", "/stats")
