"""Stopping a run cleanly: SIGTERM (a scheduler pre-empting the job) and SIGINT (Ctrl-C) become a
flag the loop reads at the end of a step, so that it saves a checkpoint before it leaves."""

from __future__ import annotations

import signal
import threading
from typing import Any


class StopSignals:
    """While active, SIGTERM and SIGINT only set a flag; the loop saves a checkpoint and returns
    at the end of the current step. A second Ctrl-C interrupts at once."""

    def __init__(self):
        self.received: str | None = None
        self._old: dict[int, Any] = {}

    def _handler(self, signum, frame):
        name = signal.Signals(signum).name
        if self.received == "SIGINT" and name == "SIGINT":
            raise KeyboardInterrupt
        self.received = name

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGTERM, signal.SIGINT):
                self._old[s] = signal.signal(s, self._handler)
        return self

    def __exit__(self, *exc):
        for s, h in self._old.items():
            signal.signal(s, h)
        return False
