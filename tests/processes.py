"""Processes a test starts, stopped with it (tests/unit/test_message_proxy.py)."""

from __future__ import annotations

import subprocess


class Processes:
    """Every process a test starts, each registered the instant it is started: leaving the ``with``
    block, whatever ended it (a failed assert, a timeout's exception, Ctrl-C), stops them all."""

    def __init__(self):
        self.started: list[subprocess.Popen] = []

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def popen(self, argv: list[str], **kw) -> subprocess.Popen:
        proc = subprocess.Popen(argv, **kw)
        self.started.append(proc)
        return proc
