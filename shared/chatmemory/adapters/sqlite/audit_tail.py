"""The embedded audit log read in write order (its `seq`), and the relay's cursor."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from chatmemory.adapters.sqlite.database import Database
from chatmemory.adapters.sqlite.events import event_from_row
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.events import MemoryEvent
from chatmemory.ports.audit_tail import AuditTail, SetAside, TailPage

if sys.platform != "win32":  # POSIX: a lock other processes see too
    import fcntl

CURSOR = "changes"


class SqliteAuditTail(AuditTail):
    """`memory_events` by `seq`, the cursor in `event_cursors`, and a lock file beside
    the database that one relay at a time holds."""

    def __init__(self, database: Database) -> None:
        self._db = database
        self._lock_path = Path(f"{database.path}.changes.lock")
        self._in_process = threading.Lock()

    def position(self) -> int:
        row = (
            self._db.connection()
            .execute("SELECT position FROM event_cursors WHERE name = ?", (CURSOR,))
            .fetchone()
        )
        return 0 if row is None else int(row["position"])

    def read_after(self, position: int, limit: int) -> TailPage:
        rows = (
            self._db.connection()
            .execute(
                "SELECT * FROM memory_events WHERE seq > ? ORDER BY seq LIMIT ?",
                (position, limit),
            )
            .fetchall()
        )
        last = rows[-1]["seq"] if rows else position
        events: list[MemoryEvent] = []
        set_aside: list[SetAside] = []
        for row in rows:
            try:
                events.append(event_from_row(row))
            except InvalidField as unreadable:
                set_aside.append(SetAside(int(row["seq"]), _reason(unreadable)))
            except (KeyError, TypeError, ValueError) as unreadable:
                set_aside.append(SetAside(int(row["seq"]), type(unreadable).__name__))
        return TailPage(tuple(events), int(last), tuple(set_aside))

    def advance(self, position: int) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO event_cursors (name, position) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET position = MAX(position, excluded.position)",
                (CURSOR, position),
            )

    def claimed(self) -> AbstractContextManager[bool]:
        return self._claim()

    @contextmanager
    def _claim(self) -> Iterator[bool]:
        if not self._in_process.acquire(blocking=False):
            yield False
            return
        try:
            if sys.platform == "win32":  # pragma: no cover - one process at a time there
                yield True
                return
            with self._lock_path.open("a") as handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    yield False
                    return
                try:
                    yield True
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)
        finally:
            self._in_process.release()


def _reason(unreadable: InvalidField) -> str:
    """The field and the rule it broke (rules never quote the value)."""
    return f"{unreadable.field}: {unreadable.reason}"
