"""Leader election among coordinator instances, with a kazoo Lock.

The recipe alone is not enough: a Lock goes on believing it is held after the
session behind it expired (kazoo reports LOST, the lock node is gone, another
instance holds the lock, and ``is_acquired`` still says True). So leadership here
is the lock *and* the session: it ends the moment kazoo reports SUSPENDED or LOST,
and — because a paused process learns of either only after it resumes — also
once ZooKeeper has not answered this instance for longer than a lease well inside
the session timeout. Then the instance lets the lock go and contends again.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import CancelledError, KazooException

LEASE_FRACTION = 0.5  # of the session timeout: no ZooKeeper answer for this long and we stop leading
PING_FRACTION = 0.1  # how often the lease is renewed, as a fraction of the session timeout


class Leadership:
    def __init__(
        self,
        zk: KazooClient,
        path: str,
        identity: dict,
        session_timeout_s: float,
        on_elected: Callable[[], None],
        on_resigned: Callable[[str], None],
    ):
        self.zk = zk
        self.path = path
        self.identity = identity
        self.lease_s = session_timeout_s * LEASE_FRACTION
        self.ping_s = session_timeout_s * PING_FRACTION
        self.on_elected = on_elected
        self.on_resigned = on_resigned
        self._leading = False
        self._resign = threading.Event()
        self._last_answer = 0.0  # monotonic: ZooKeeper last answered this instance
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._contending = None  # the Lock being acquired or held
        zk.add_listener(self._on_state)

    # --------------------------------------------------------------- who leads

    def leading(self) -> bool:
        """Leader now: holds the lock, connected, and heard from ZooKeeper within the lease."""
        if self._leading and time.monotonic() - self._last_answer > self.lease_s:
            self.step_down(f"lease expired: no answer from ZooKeeper for {self.lease_s:.1f} s")
        return self._leading

    def leader(self) -> dict | None:
        """The identity of the lock's holder, read from ZooKeeper."""
        contenders = self.zk.Lock(self.path).contenders()
        return json.loads(contenders[0]) if contenders else None

    # --------------------------------------------------------------- the contest

    def run(self) -> None:
        while not self._stop.is_set():
            if self.zk.state != KazooState.CONNECTED:
                self._stop.wait(0.1)
                continue
            # One node, kept in line until it is our turn: a timed acquire would delete it on
            # every timeout and queue again at the back, behind instances that came later.
            lock = self._contending = self.zk.Lock(self.path, json.dumps(self.identity, sort_keys=True))
            try:
                if not lock.acquire():  # blocks; stop() cancels it
                    continue
            except (KazooException, CancelledError):
                self._stop.wait(0.2)
                continue
            if self._stop.is_set():
                self._release(lock)
                break
            self._resign.clear()
            self._last_answer = time.monotonic()
            with self._lock:
                self._leading = True
            try:
                self.on_elected()
            except Exception as e:  # could not take over (ZooKeeper went away meanwhile)
                self.step_down(f"taking over failed: {type(e).__name__}: {e}")
            while self._leading and not self._stop.is_set() and not self._resign.wait(self.ping_s):
                self._renew_lease()
            self._release(lock)

    def _renew_lease(self) -> None:
        try:
            if self.zk.exists(self.path) is not None:
                self._last_answer = time.monotonic()
        except KazooException:
            pass  # the listener or the lease takes it from here

    def _on_state(self, state: str) -> None:
        """kazoo's connection thread: block on nothing."""
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self.step_down(f"ZooKeeper session {state}")

    def step_down(self, reason: str) -> None:
        with self._lock:
            if not self._leading:
                return
            self._leading = False
        self._resign.set()
        self.on_resigned(reason)

    def _release(self, lock) -> None:
        """Let go of the lock node if it still exists (after LOST it is already gone)."""

        def release():
            try:
                lock.release()
            except KazooException:
                pass

        threading.Thread(target=release, daemon=True).start()  # may wait for a reconnect; never block the contest

    def stop(self) -> None:
        self._stop.set()
        if self._contending is not None:
            self._contending.cancel()  # a pending acquire() returns
        self.step_down("shutting down")
