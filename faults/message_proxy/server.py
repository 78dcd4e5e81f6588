"""The message proxy: a Kafka-protocol-aware TCP proxy in front of each member's Toxiproxy lane.

One asyncio loop serves every lane (a listener per member and broker, harness/cluster/
network.py); each client connection gets one upstream connection. Requests are always
forwarded at once; the proxy keeps each connection's outstanding requests, in order, by
correlation id, API key and version, and the decision a rule made on each. Responses come
back in request order (Kafka's promise per connection), so the oldest outstanding request
is the one answered. What a rule does to an answer, on that connection:

- ``delay``: the answer, and every answer after it, released ``delay_ms`` after it came;
- ``withhold``: the answer dropped, every later one held, the connection closed
  ``close_after_ms`` after the request was sent (the client's own request timeout);
- ``cut-after-request``: the connection closed as the answer comes (the broker processed it);
- ``error``: the answer decoded, its error codes replaced, re-encoded at the same version.

It also lowers, in ApiVersions answers, the highest version of each API a fault may name
to the highest kio has a schema for, so that every request it may have to read and every
answer it may have to rewrite is one it can. Plaintext only: a TLS or SASL lane carries
nothing it could read.

The control API (client.py) is HTTP with JSON on 127.0.0.1, served by a thread; every
change is made on the loop's thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from faults.message_proxy import frames
from faults.message_proxy.apis import APIS
from faults.message_proxy.rules import Rule, RuleError
from oracle import vocabulary as ev
from runtime.history import HistoryWriter

log = logging.getLogger("message-proxy")

SOURCE = "message-proxy"
HIGH_WATER = 1 << 20  # bytes a writer may buffer before the pump waits for the socket
CLOSE = object()  # a release queue's item: close the connection then


def _host_port(address: str) -> tuple[str, int]:
    host, port = address.rsplit(":", 1)
    return host, int(port)


@dataclass
class Lane:
    name: str
    listen: str
    upstream: str
    member: str
    broker: str
    server: asyncio.AbstractServer | None = None
    connections: int = 0
    requests: int = 0
    responses: int = 0


@dataclass
class Outstanding:
    correlation_id: int
    api_key: int
    version: int
    sent_mono: float
    rule: Rule | None = None


@dataclass
class Connection:
    """One client connection and its upstream: the answers' release queue keeps their order."""

    proxy: MessageProxy
    lane: Lane
    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter
    outstanding: deque[Outstanding] = field(default_factory=deque)
    held_until: float = 0.0  # monotonic seconds: answers before then wait, in order
    queue: deque[tuple[float, Any]] = field(default_factory=deque)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    closed: bool = False

    async def requests(self, reader: asyncio.StreamReader) -> None:
        """Client -> broker: every request forwarded at once; a rule decides on it as it passes."""
        rules = self.proxy.rules
        while True:
            head = await reader.readexactly(4)
            frame = await reader.readexactly(int.from_bytes(head, "big", signed=True))
            api_key, version, correlation_id = frames.request_start(frame)
            rule = None
            if rules:
                rule = next((r for r in rules.values() if r.takes(self.lane.member, api_key, frame)), None)
            self.outstanding.append(Outstanding(correlation_id, api_key, version, time.monotonic(), rule))
            self.lane.requests += 1
            self.upstream.write(head)
            self.upstream.write(frame)
            if self.upstream.transport.get_write_buffer_size() > HIGH_WATER:
                await self.upstream.drain()

    async def responses(self, reader: asyncio.StreamReader) -> None:
        """Broker -> client: each answer matched to its request, acted on if a rule took it."""
        while True:
            head = await reader.readexactly(4)
            frame = await reader.readexactly(int.from_bytes(head, "big", signed=True))
            correlation_id = frames.response_correlation(frame)
            request = self._answered(correlation_id)
            self.lane.responses += 1
            if request is not None and request.api_key == frames.API_VERSIONS_KEY:
                frame = self.proxy.capped(frame, request.version)
                head = len(frame).to_bytes(4, "big", signed=True)
            if request is not None and request.rule is not None:
                self._act(request, frame)
                continue
            self._release(time.monotonic(), head + frame if head is not None else frames.sized(frame))

    def _answered(self, correlation_id: int) -> Outstanding | None:
        while self.outstanding:
            request = self.outstanding.popleft()
            if request.correlation_id == correlation_id:
                return request
        return None  # not a request this proxy saw: passed on as it is

    def _act(self, request: Outstanding, frame: bytes) -> None:
        """What the rule does to this answer; its event is written before the client can see the
        answer, so that what the member does next never stands in the history before its cause."""
        rule, now = request.rule, time.monotonic()
        if rule.action == "delay":
            self.proxy.record(rule, self.lane, request, {"delay_ms": rule.delay_ms})
            self._release(now + rule.delay_ms / 1000, frames.sized(frame), hold=True)
        elif rule.action == "withhold":
            self.proxy.record(rule, self.lane, request, {"close_after_ms": rule.close_after_ms})
            self._release(max(request.sent_mono + rule.close_after_ms / 1000, now), CLOSE, hold=True)
        elif rule.action == "cut-after-request":
            self.proxy.record(rule, self.lane, request, {})
            self._release(now, CLOSE, hold=True)
        else:
            try:
                rewritten, replaced = frames.rewrite_error(frame, rule.api, request.version, rule.error)
            except Exception as e:  # it cannot be what the fault asked: the answer goes as it was, and the log says why
                log.error("%s: could not rewrite %s v%d: %s", rule.fault_id, rule.api.name, request.version, e)
                self._release(now, frames.sized(frame))
                return
            self.proxy.record(rule, self.lane, request, {"error": rule.error, "replaced_error": replaced})
            self._release(now, frames.sized(rewritten))

    def _release(self, at: float, item: Any, hold: bool = False) -> None:
        """Write ``item`` (a sized frame, or CLOSE) at ``at``, after every earlier one."""
        at = max(at, self.held_until)
        if hold:
            self.held_until = at
        if not self.queue and at <= time.monotonic() and item is not CLOSE:
            self.client.write(item)  # the hot path: nothing held
            return
        self.queue.append((at, item))
        self.wake.set()

    async def releases(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            while self.queue:
                at, item = self.queue[0]
                wait = at - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                self.queue.popleft()
                if item is CLOSE:
                    self.close()
                    return
                self.client.write(item)
            if self.client.transport.get_write_buffer_size() > HIGH_WATER:
                await self.client.drain()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.client.close()
            self.upstream.close()


class MessageProxy:
    def __init__(self, history: str | None):
        self.lanes: dict[str, Lane] = {}
        self.rules: dict[str, Rule] = {}
        self.capped_apis: dict[str, dict[str, int]] = {}  # API -> {broker's highest, the cap}
        self.acted = 0
        self.history = HistoryWriter(history, SOURCE) if history else None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._highest = {api.key: api.versions[-1] for api in APIS.values()}

    # --- lanes --------------------------------------------------------------------------

    async def add_lane(self, lane: Lane) -> None:
        if lane.name in self.lanes:
            raise RuleError(f"lane {lane.name} exists")
        host, port = _host_port(lane.listen)
        if host != "127.0.0.1":
            raise RuleError(f"lane {lane.name}: the proxy listens on 127.0.0.1 only, not {host}")
        lane.server = await asyncio.start_server(lambda r, w: self._serve(lane, r, w), host, port, reuse_address=True)
        self.lanes[lane.name] = lane

    async def _serve(self, lane: Lane, client_reader, client_writer) -> None:
        lane.connections += 1
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*_host_port(lane.upstream))
        except OSError as e:  # Toxiproxy refusing (a network fault): the client sees a refusal too
            log.info("%s: upstream %s: %s", lane.name, lane.upstream, e)
            client_writer.close()
            return
        for w in (client_writer, upstream_writer):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c = Connection(self, lane, client_writer, upstream_writer)
        tasks = [
            asyncio.ensure_future(c.requests(client_reader)),
            asyncio.ensure_future(c.responses(upstream_reader)),
            asyncio.ensure_future(c.releases()),
        ]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            for t in tasks:  # a pump ends on a closed side (IncompleteReadError) or on CLOSE: both are normal
                if t.done() and not t.cancelled() and t.exception() is not None:
                    e = t.exception()
                    if not isinstance(e, (asyncio.IncompleteReadError, ConnectionError)):
                        log.error("%s: %r", lane.name, e)
            c.close()

    # --- rules and what they did ----------------------------------------------------------

    def add_rule(self, rule: Rule) -> None:
        self.rules[rule.fault_id] = rule

    def remove_rule(self, fault_id: str) -> bool:
        return self.rules.pop(fault_id, None) is not None

    def reset(self) -> list[str]:
        """Every rule dropped; the faults they were."""
        removed = sorted(self.rules)
        self.rules.clear()
        return removed

    def record(self, rule: Rule, lane: Lane, request: Outstanding, fields: dict) -> None:
        self.acted += 1
        if self.history:
            self.history.emit(
                ev.MESSAGE_FAULTED,
                fault_id=rule.fault_id,
                member=lane.member,
                broker=lane.broker,
                api=rule.api.name,
                api_version=request.version,
                correlation_id=request.correlation_id,
                action=rule.action,
                **fields,
            )

    def capped(self, frame: bytes, version: int) -> bytes:
        try:
            frame, lowered = frames.cap_api_versions(frame, version, self._highest)
        except Exception as e:  # an ApiVersions answer kio cannot read (an error at v0): as it is
            log.info("ApiVersions v%d answer passed as it is: %s", version, e)
            return frame
        for key, (broker, cap) in lowered.items():
            name = next(a.name for a in APIS.values() if a.key == key)
            if name not in self.capped_apis:
                log.info("%s: the broker speaks up to v%d, kio v%d: capped", name, broker, cap)
            self.capped_apis[name] = {"broker": broker, "capped": cap}
        return frame

    def stats(self) -> dict:
        return {
            "lanes": {
                n: {"connections": la.connections, "requests": la.requests, "responses": la.responses}
                for n, la in self.lanes.items()
            },
            "rules": {f: {"api": r.api.name, "action": r.action, "taken": r.taken} for f, r in self.rules.items()},
            "acted": self.acted,
            "capped_apis": self.capped_apis,
        }


# --- the control API -----------------------------------------------------------------------


class _Control(BaseHTTPRequestHandler):
    proxy: MessageProxy

    def log_message(self, *args) -> None:  # its log is the proxy's own
        pass

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def _answer(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _on_loop(self, fn, *args):
        """Run ``fn`` on the loop's thread (a coroutine function or a plain one) and return its result."""

        async def call():
            result = fn(*args)
            return await result if asyncio.iscoroutine(result) else result

        return asyncio.run_coroutine_threadsafe(call(), self.proxy.loop).result(timeout=10)

    def _route(self, method: str) -> None:
        parts = [p for p in self.path.split("/") if p]
        try:
            if method == "GET" and parts == ["health"]:
                return self._answer(200, {"lanes": len(self.proxy.lanes)})
            if method == "GET" and parts == ["stats"]:
                return self._answer(200, self._on_loop(self.proxy.stats))
            if method == "GET" and parts == ["rules"]:
                return self._answer(200, self._on_loop(lambda: sorted(self.proxy.rules)))
            if method == "PUT" and len(parts) == 2 and parts[0] == "lanes":
                b = self._body()
                lane = Lane(parts[1], b["listen"], b["upstream"], b["member"], b["broker"])
                self._on_loop(self.proxy.add_lane, lane)
                return self._answer(200, {"lane": lane.name})
            if method == "PUT" and len(parts) == 2 and parts[0] == "rules":
                rule = Rule.of({**self._body(), "fault_id": parts[1]})
                self._on_loop(self.proxy.add_rule, rule)
                return self._answer(200, {"rule": rule.fault_id})
            if method == "DELETE" and len(parts) == 2 and parts[0] == "rules":
                return self._answer(200, {"removed": self._on_loop(self.proxy.remove_rule, parts[1])})
            if method == "DELETE" and parts == ["rules"]:
                return self._answer(200, {"removed": self._on_loop(self.proxy.reset)})
            return self._answer(404, {"error": f"no {method} {self.path}"})
        except (RuleError, KeyError, ValueError) as e:
            return self._answer(400, {"error": str(e)})
        except OSError as e:  # a lane's port taken
            return self._answer(409, {"error": str(e)})

    def do_GET(self) -> None:
        self._route("GET")

    def do_PUT(self) -> None:
        self._route("PUT")

    def do_DELETE(self) -> None:
        self._route("DELETE")


def serve(control_port: int, history: str | None) -> None:
    """Run until killed: the loop on this thread, the control API on another."""
    proxy = MessageProxy(history)
    proxy.loop = asyncio.new_event_loop()
    handler = type("Control", (_Control,), {"proxy": proxy})
    control = ThreadingHTTPServer(("127.0.0.1", control_port), handler)
    control.daemon_threads = True
    threading.Thread(target=control.serve_forever, name="control", daemon=True).start()
    log.info("control API on 127.0.0.1:%d", control_port)
    proxy.loop.run_forever()
