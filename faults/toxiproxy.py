"""A Toxiproxy client with timeouts and explicit errors.

toxiproxy-python keeps the server address in class state and makes its HTTP
calls without timeouts, so a wedged server would hang a run forever. This thin
client talks to one server (an instance, not class state), bounds every call,
and reuses toxiproxy-python's error mapping (ProxyExists / NotFound /
InvalidToxic) so API errors read the same. What the network faults do with it is
faults/network.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

import requests
from toxiproxy.api import validate_response

TIMEOUT_S = 5.0


class ToxiproxyError(Exception):
    pass


@dataclass(frozen=True)
class Proxy:
    name: str
    listen: str
    upstream: str
    enabled: bool
    toxics: tuple[str, ...]


class ToxiproxyClient:
    def __init__(self, api_url: str, timeout_s: float = TIMEOUT_S):
        self.api_url = api_url.rstrip("/")
        self.timeout_s = timeout_s
        self.session = requests.Session()

    def _call(self, method: str, path: str, **kwargs):
        try:
            response = self.session.request(method, self.api_url + path, timeout=self.timeout_s, **kwargs)
        except requests.RequestException as e:
            raise ToxiproxyError(f"Toxiproxy API {method} {path} failed: {e}") from None
        try:
            validate_response(response)  # raises ProxyExists / NotFound / InvalidToxic
        except Exception as e:
            raise ToxiproxyError(
                f"Toxiproxy API {method} {path}: {type(e).__name__}: {response.text.strip()}"
            ) from None
        if response.status_code >= 400:
            raise ToxiproxyError(f"Toxiproxy API {method} {path}: HTTP {response.status_code}: {response.text.strip()}")
        return response.json() if response.content else None

    # --- proxies --------------------------------------------------------------------------

    def create(self, name: str, listen: str, upstream: str) -> None:
        self._call("POST", "/proxies", json={"name": name, "listen": listen, "upstream": upstream, "enabled": True})

    def proxies(self) -> list[Proxy]:
        return [
            Proxy(p["name"], p["listen"], p["upstream"], p["enabled"], tuple(t["name"] for t in p["toxics"]))
            for p in (self._call("GET", "/proxies") or {}).values()
        ]

    def set_enabled(self, name: str, enabled: bool) -> None:
        self._call("POST", f"/proxies/{name}", json={"enabled": enabled})

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._call("POST", "/reset")

    # --- toxics ---------------------------------------------------------------------------

    def add_toxic(self, proxy: str, name: str, kind: str, stream: str, **attributes) -> None:
        self._call(
            "POST",
            f"/proxies/{proxy}/toxics",
            json={"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes},
        )

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")
