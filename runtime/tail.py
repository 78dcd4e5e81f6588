"""Reading a file another process is appending to: the whole lines written since the last read."""

from __future__ import annotations

from pathlib import Path


class FileTail:
    """Each ``new_lines()`` gives the lines completed since the last call; a line still being
    written waits for the next one. A file shorter than what was read is a new file (a broker
    that began its log anew), read from its start; a missing one has no lines yet."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._offset = 0

    def new_lines(self) -> list[bytes]:
        try:
            with self.path.open("rb") as f:
                if f.seek(0, 2) < self._offset:
                    self._offset = 0
                f.seek(self._offset)
                chunk = f.read()
        except OSError:
            return []
        whole = chunk.rfind(b"\n") + 1
        self._offset += whole
        return chunk[:whole].splitlines()
