"""Problems as tests compare them when the line a key was written on is not their point:
``faults[1].at_s (line 14)`` -> ``faults[1].at_s`` (tests/unit/test_input_edges.py holds the lines)."""

from __future__ import annotations

import re

_LINE = re.compile(r" \(line \d+\)")


def unlined(said):
    """A message, or a list of (key, reason) problems, without the ``(line N)`` after each key."""
    if isinstance(said, str):
        return _LINE.sub("", said)
    return [(_LINE.sub("", key), reason) for key, reason in said]
