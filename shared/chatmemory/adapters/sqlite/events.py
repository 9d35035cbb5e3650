"""The embedded audit log of memory events."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from chatmemory.adapters.sqlite.database import Database
from chatmemory.domain.events import Actor, MemoryEvent, Op
from chatmemory.domain.memory import Kind
from chatmemory.domain.time import from_storage, to_storage
from chatmemory.ports.events import EventLog


def insert_events(conn: sqlite3.Connection, events: Sequence[MemoryEvent]) -> None:
    """Within the caller's write, so a memory change and its events land together."""
    conn.executemany(
        "INSERT OR IGNORE INTO memory_events (user_id, event_id, memory_id, op, actor, at, "
        "related_id, persona, kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                event.user_id,
                event.event_id,
                event.memory_id,
                event.op.value,
                event.actor.value,
                to_storage(event.at),
                event.related_id,
                event.persona,
                None if event.kind is None else event.kind.value,
            )
            for event in events
        ],
    )


class SqliteEventLog(EventLog):
    def __init__(self, database: Database) -> None:
        self._db = database

    def add_events(self, events: Sequence[MemoryEvent]) -> None:
        with self._db.write() as conn:
            insert_events(conn, events)

    def list_events(self, user_id: str, memory_id: str) -> list[MemoryEvent]:
        rows = self._db.connection().execute(
            "SELECT * FROM memory_events WHERE user_id = ? AND memory_id = ? ORDER BY at, event_id",
            (user_id, memory_id),
        )
        return [event_from_row(row) for row in rows]


def event_from_row(row: sqlite3.Row) -> MemoryEvent:
    """An audit event as `insert_events` stored it."""
    return MemoryEvent(
        user_id=row["user_id"],
        memory_id=row["memory_id"],
        event_id=row["event_id"],
        op=Op(row["op"]),
        actor=Actor(row["actor"]),
        at=from_storage(row["at"], "at"),
        related_id=row["related_id"],
        persona=row["persona"],
        kind=None if row["kind"] is None else Kind(row["kind"]),
    )
