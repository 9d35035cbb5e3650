"""The embedded persona partition: a persona's own rows, in a table keyed by persona."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from chatmemory.adapters.sqlite.database import Database, marks
from chatmemory.adapters.sqlite.rows import (
    MEMORY_COLUMNS,
    MEMORY_PLACEHOLDERS,
    memory_from_row,
    memory_row,
    opt_time,
)
from chatmemory.domain.errors import ConcurrentChange, InvalidField, MemoryNotFound
from chatmemory.domain.memory import Memory, Status, check_persona_row
from chatmemory.domain.time import to_storage
from chatmemory.ports.persona_memories import PersonaMemoryStore

# Rows past their shelf life read as absent, as memory rows do (DynamoDB's TTL removes them).
_LIVE = "persona = ? AND (valid_until IS NULL OR valid_until > ?)"


class SqlitePersonaMemoryStore(PersonaMemoryStore):
    """`persona_memories` rows; `user_id` is the persona's slug, checked by the table too."""

    def __init__(self, database: Database) -> None:
        self._db = database

    def add_persona_memory(self, memory: Memory) -> bool:
        check_persona_row(memory)
        with self._db.write() as conn:
            cursor = conn.execute(
                f"INSERT OR IGNORE INTO persona_memories ({MEMORY_COLUMNS}) "
                f"VALUES ({MEMORY_PLACEHOLDERS})",
                memory_row(memory),
            )
        return cursor.rowcount == 1

    def list_persona_memories(
        self, persona: str, status: Status | None = Status.ACTIVE
    ) -> list[Memory]:
        clause, params = _LIVE, [persona, self._db.now()]
        if status is not None:
            clause += " AND status = ?"
            params.append(status.value)
        rows = self._db.connection().execute(
            f"SELECT {MEMORY_COLUMNS} FROM persona_memories WHERE {clause} "
            "ORDER BY created_at DESC, memory_id DESC",
            params,
        )
        return [memory_from_row(row) for row in rows]

    def supersede_persona_memory(self, persona: str, old_memory_id: str, new: Memory) -> Memory:
        check_persona_row(new, persona)
        if new.supersedes != old_memory_id:
            raise InvalidField("supersedes", "the new memory must name the row it supersedes")
        with self._db.write() as conn:
            closed = _active(conn, self._db.now(), persona, old_memory_id).superseded_by(new)
            try:
                conn.execute(
                    f"INSERT INTO persona_memories ({MEMORY_COLUMNS}) "
                    f"VALUES ({MEMORY_PLACEHOLDERS})",
                    memory_row(new),
                )
            except sqlite3.IntegrityError as exc:
                raise ConcurrentChange("the new memory id already exists") from exc
            _update_status(conn, closed)
        return closed

    def close_persona_memory(
        self, persona: str, memory_id: str, at: datetime, closed_by: str | None = None
    ) -> Memory:
        with self._db.write() as conn:
            closed = _active(conn, self._db.now(), persona, memory_id).closed(at, closed_by)
            _update_status(conn, closed)
        return closed

    def record_persona_use(self, persona: str, memory_ids: Sequence[str], at: datetime) -> None:
        if not memory_ids:
            return
        stamp = to_storage(at)
        with self._db.write() as conn:
            conn.execute(
                "UPDATE persona_memories SET last_used_at = ?, recall_count = recall_count + 1, "
                "updated_at = MAX(updated_at, ?) "
                f"WHERE persona = ? AND memory_id IN ({marks(memory_ids)})",
                [stamp, stamp, persona, *dict.fromkeys(memory_ids)],
            )

    def drop_witness(self, user_id: str) -> int:
        # json_each keeps the list's order; only rows that name the user are rewritten.
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE persona_memories SET witnessed = ("
                "  SELECT json_group_array(value) FROM json_each(persona_memories.witnessed)"
                "  WHERE value != ?"
                ") WHERE EXISTS ("
                "  SELECT 1 FROM json_each(persona_memories.witnessed) WHERE value = ?"
                ")",
                (user_id, user_id),
            )
        return cursor.rowcount


def _active(conn: sqlite3.Connection, now: str, persona: str, memory_id: str) -> Memory:
    row = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM persona_memories WHERE {_LIVE} AND memory_id = ?",
        (persona, now, memory_id),
    ).fetchone()
    if row is None:
        raise MemoryNotFound(memory_id)
    memory = memory_from_row(row)
    if memory.status is not Status.ACTIVE:
        raise ConcurrentChange(f"memory is {memory.status}, not active")
    return memory


def _update_status(conn: sqlite3.Connection, memory: Memory) -> None:
    conn.execute(
        "UPDATE persona_memories SET status = ?, valid_to = ?, closed_by = ?, updated_at = ? "
        "WHERE persona = ? AND memory_id = ?",
        (
            memory.status.value,
            opt_time(memory.valid_to),
            memory.closed_by,
            to_storage(memory.updated_at),
            memory.persona,
            memory.memory_id,
        ),
    )
