"""Poll-stall control: how a member takes the harness's commands.

The harness writes a command to the member's control file and sends SIGUSR1; the member
notices between two polls (``command_pending``) and obeys. ``poll-stall`` stops its poll
loop for ``duration_s`` — what a long processing step does — while whatever the driver
runs beside the loop goes on (librdkafka's heartbeat thread, kazoo's session, the v3
coordinator member's heartbeats); ``poll-stall-end`` ends it early (the fault's heal).
Every driver that can stall obeys through ``TakesCommands``; one that cannot says so.
"""

from __future__ import annotations

import json
import signal
import threading
import time

from runtime.child import POLL_STALL, POLL_STALL_END


def read_command(control_file: str | None) -> dict | None:
    """The harness's latest command, or None if there is none to read."""
    try:
        with open(control_file) as f:
            return json.load(f)
    except (OSError, TypeError, ValueError):
        return None


def listen_for_commands(member) -> None:
    """SIGUSR1 marks a command pending; the member's loop looks at it between two polls."""
    signal.signal(signal.SIGUSR1, lambda *_: member.command_pending.set())


class TakesCommands:
    """For a member with ``spec.control_file``, ``events`` and ``command_pending``: obey a poll stall."""

    command_pending: threading.Event

    def _obey(self, stop: threading.Event) -> None:
        self.command_pending.clear()
        command = read_command(self.spec.control_file)
        if not command or command.get("command") != POLL_STALL:
            return
        self.events.poll_stall_started(fault_id=command["fault_id"], duration_s=command["duration_s"])
        deadline = time.monotonic() + command["duration_s"]
        while not stop.is_set() and time.monotonic() < deadline:
            if self.command_pending.wait(min(0.2, max(0.0, deadline - time.monotonic()))):
                self.command_pending.clear()
                if (read_command(self.spec.control_file) or {}).get("command") == POLL_STALL_END:
                    break
        self.events.poll_stall_ended(fault_id=command["fault_id"])
