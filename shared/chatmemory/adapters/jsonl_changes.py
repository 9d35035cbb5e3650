"""The local change feed: one JSON object per line, appended to `changes.jsonl` in the
state folder (read it with `tail -f`, `jq`, or a few lines of Python).

Append-only: a line, once written, is never rewritten. The relay advances its cursor only
after a batch is on disk, so a process stopped in between publishes that batch again: the
file skips every id it already holds in its last lines, so no change is written twice.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from chatmemory.domain.change_events import ChangeEvent
from chatmemory.ports.change_feed import ChangeFeed, ChangeFeedUnavailable

if sys.platform != "win32":  # POSIX: a lock other processes see too
    import fcntl

CHANGES_FILE = "changes.jsonl"
#: how far back a publish looks for ids it already wrote (a line is ~300 bytes)
DEDUPE_BYTES = 256 * 1024


class JsonLinesChangeFeed(ChangeFeed):
    """Appends each change as one line, flushed to disk before `publish` returns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def publish(self, changes: Sequence[ChangeEvent]) -> None:
        if not changes:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Owner-only, like the rest of the state folder's secrets: lines name users.
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            with self._lock, os.fdopen(descriptor, "r+b") as handle:
                if sys.platform != "win32":
                    fcntl.flock(handle, fcntl.LOCK_EX)
                _drop_torn_line(handle)
                written = _ids_near_the_end(handle)
                lines = [
                    json.dumps(change.as_record(), separators=(",", ":")) + "\n"
                    for change in changes
                    if change.id not in written
                ]
                handle.write("".join(lines).encode())
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise ChangeFeedUnavailable(
                f"{len(changes)} change(s) not written: {type(exc).__name__}"
            ) from None


def _drop_torn_line(handle: BinaryIO) -> None:
    """A line cut short (the process stopped mid-write) is removed: it was never published,
    and its event is published again whole."""
    size = handle.seek(0, os.SEEK_END)
    if size == 0:
        return
    handle.seek(size - 1)
    if handle.read(1) == b"\n":
        return
    end = size
    while end > 0:  # back to the newline that ends the last whole line, if any
        start = max(0, end - DEDUPE_BYTES)
        handle.seek(start)
        cut = handle.read(end - start).rfind(b"\n")
        if cut >= 0:
            handle.truncate(start + cut + 1)
            return
        end = start
    handle.truncate(0)


def _ids_near_the_end(handle: BinaryIO) -> set[str]:
    """The ids of the whole lines in the file's last `DEDUPE_BYTES`."""
    size = handle.seek(0, os.SEEK_END)
    start = max(0, size - DEDUPE_BYTES)
    handle.seek(start)
    lines = handle.read().split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first may be the end of a line that began earlier
    ids: set[str] = set()
    for line in lines:
        if not line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            ids.add(record["id"])
    return ids
