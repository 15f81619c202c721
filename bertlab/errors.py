"""The error a user can act on: its message says what went wrong and what to do.

The command line prints an ActionableError in one line, without a traceback; any other
RuntimeError is a fault in bertlab and keeps its traceback. Catch the class, never the wording.
"""

from __future__ import annotations


class ActionableError(RuntimeError):
    """A failure the user can fix from the message alone (a missing model, a device, a setting)."""
