"""The embedded memory rows."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import zlib
from collections.abc import Iterator, Mapping, Sequence
from datetime import date, datetime
from typing import Any

from chatmemory.adapters.cursors import decode_cursor, encode_cursor
from chatmemory.adapters.sqlite.database import Database, check_owner, marks
from chatmemory.adapters.sqlite.events import insert_events
from chatmemory.adapters.sqlite.rows import (
    MEMORY_COLUMNS,
    MEMORY_PLACEHOLDERS,
    memory_from_row,
    memory_row,
    opt_date,
    opt_time,
)
from chatmemory.domain import fading, rules
from chatmemory.domain.errors import ConcurrentChange, InvalidField, MemoryNotFound
from chatmemory.domain.events import MemoryEvent
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.threads import review_date
from chatmemory.domain.time import to_storage
from chatmemory.domain.tombstone import MemoryTrace
from chatmemory.domain.uses_origin import AWAITING, USES_FROM, row_with_own_uses
from chatmemory.ports.memories import MAX_SCAN_SEGMENTS, MemoryQuery, MemoryStore
from chatmemory.ports.memory_visibility import MemoryVisibility
from chatmemory.ports.pages import MAX_PAGE, Page
from chatmemory.ports.threads import ThreadStore

_UPSERT = (
    f"INSERT INTO memories ({MEMORY_COLUMNS}) VALUES ({MEMORY_PLACEHOLDERS}) "
    "ON CONFLICT (user_id, memory_id) DO UPDATE SET "
    + ", ".join(
        f"{column.strip()} = excluded.{column.strip()}" for column in MEMORY_COLUMNS.split(",")[2:]
    )
)


class SqliteMemoryStore(MemoryStore, MemoryVisibility, ThreadStore):
    """The rows, which of them show, and the thread rows' own reads and manners (one
    class: all work on the same rows)."""

    def __init__(self, database: Database) -> None:
        self._db = database

    def add_memory(self, memory: Memory, events: Sequence[MemoryEvent] = ()) -> bool:
        with self._db.write() as conn:
            if _tombstoned(conn, memory.user_id, memory.memory_id):
                return False
            cursor = conn.execute(
                f"INSERT OR IGNORE INTO memories ({MEMORY_COLUMNS}) VALUES ({MEMORY_PLACEHOLDERS})",
                memory_row(memory),
            )
            if cursor.rowcount == 0:
                return False
            insert_events(conn, events)
        return True

    def put_memory(self, memory: Memory, events: Sequence[MemoryEvent] = ()) -> None:
        with self._db.write() as conn:
            if _tombstoned(conn, memory.user_id, memory.memory_id):
                raise MemoryNotFound(memory.memory_id)
            conn.execute(_UPSERT, memory_row(memory))
            insert_events(conn, events)

    def get_memory(self, user_id: str, memory_id: str) -> Memory | None:
        conn = self._db.connection()
        clause, params = self._db.visible_clause(conn, user_id)
        row = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause} AND memory_id = ?",
            [*params, memory_id],
        ).fetchone()
        return None if row is None else memory_from_row(row)

    def id_in_use(self, user_id: str, memory_id: str) -> bool:
        rules.user_id(user_id)
        row = (
            self._db.connection()
            .execute(
                "SELECT 1 FROM memories WHERE user_id = ? AND memory_id = ?", (user_id, memory_id)
            )
            .fetchone()
        )
        return row is not None

    def get_memories(self, user_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        if not memory_ids:
            return []
        conn = self._db.connection()
        clause, params = self._db.visible_clause(conn, user_id)
        rows = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause} "
            f"AND memory_id IN ({marks(memory_ids)})",
            [*params, *memory_ids],
        ).fetchall()
        found = {row["memory_id"]: memory_from_row(row) for row in rows}
        return [found[memory_id] for memory_id in dict.fromkeys(memory_ids) if memory_id in found]

    def list_memories(
        self,
        user_id: str,
        query: MemoryQuery | None = None,
        *,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Memory]:
        query = query or MemoryQuery()
        rules.int_range("limit", limit, 1, MAX_PAGE)
        conn = self._db.connection()
        clause, params = self._db.visible_clause(conn, user_id)
        if query.status is not None:
            clause += " AND status = ?"
            params.append(query.status.value)
        if query.persona is not None:
            clause += " AND persona = ?"
            params.append(query.persona)
        if query.kind is not None:
            clause += " AND kind = ?"
            params.append(query.kind.value)
        if query.created_after is not None:
            clause += " AND created_at > ?"
            params.append(to_storage(query.created_after))
        if cursor is not None:
            position = decode_cursor(user_id, cursor)
            after_created, after_id = position.get("c"), position.get("i")
            if not isinstance(after_created, str) or not isinstance(after_id, str):
                raise InvalidField("next", "is not a cursor this service issued")
            clause += " AND (created_at < ? OR (created_at = ? AND memory_id < ?))"
            params.extend([after_created, after_created, after_id])
        rows = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause} "
            "ORDER BY created_at DESC, memory_id DESC LIMIT ?",
            [*params, limit + 1],
        ).fetchall()
        items = [memory_from_row(row) for row in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = items[-1]
            next_cursor = encode_cursor(
                user_id, {"c": to_storage(last.created_at), "i": last.memory_id}
            )
        return Page(items=items, next_cursor=next_cursor)

    def supersede_memory(
        self,
        user_id: str,
        old_memory_id: str,
        new_memory: Memory,
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        check_owner(user_id, new_memory.user_id)
        if new_memory.supersedes != old_memory_id:
            raise InvalidField("supersedes", "the new memory must name the row it supersedes")
        with self._db.write() as conn:
            old = self._active(conn, user_id, old_memory_id)
            closed = old.superseded_by(new_memory)
            try:
                conn.execute(
                    f"INSERT INTO memories ({MEMORY_COLUMNS}) VALUES ({MEMORY_PLACEHOLDERS})",
                    memory_row(new_memory),
                )
            except sqlite3.IntegrityError as exc:
                raise ConcurrentChange("the new memory id already exists") from exc
            _update_status(conn, closed)
            insert_events(conn, events)
        return closed

    def close_memory(
        self,
        user_id: str,
        memory_id: str,
        at: datetime,
        closed_by: str | None = None,
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        with self._db.write() as conn:
            closed = self._active(conn, user_id, memory_id).closed(at, closed_by)
            _update_status(conn, closed)
            insert_events(conn, events)
        return closed

    def record_use(
        self,
        user_id: str,
        memory_ids: Sequence[str],
        at: datetime,
        events: Sequence[MemoryEvent] = (),
    ) -> None:
        if not memory_ids:
            return
        with self._db.write() as conn:
            rows = self._visible_rows(conn, user_id, memory_ids)
            stamp = to_storage(at)
            for memory in rows:
                used = fading.reinforced(memory, at) if memory.status is Status.ACTIVE else memory
                conn.execute(
                    "UPDATE memories SET last_used_at = ?, recall_count = recall_count + 1, "
                    "updated_at = MAX(updated_at, ?), stability_days = ?, reinforced_at = ?, "
                    "archived_at = ? WHERE user_id = ? AND memory_id = ?",
                    (stamp, stamp, *_fading_params(used), user_id, memory.memory_id),
                )
            visible = {memory.memory_id for memory in rows}
            insert_events(conn, [e for e in events if e.memory_id in visible])

    def set_fading(
        self, user_id: str, memories: Sequence[Memory], events: Sequence[MemoryEvent] = ()
    ) -> None:
        if not memories:
            return
        with self._db.write() as conn:
            wanted = {memory.memory_id: memory for memory in memories}
            active = {
                memory.memory_id
                for memory in self._visible_rows(conn, user_id, list(wanted))
                if memory.status is Status.ACTIVE
            }
            for memory_id in active:
                conn.execute(
                    "UPDATE memories SET stability_days = ?, reinforced_at = ?, archived_at = ? "
                    "WHERE user_id = ? AND memory_id = ?",
                    (*_fading_params(wanted[memory_id]), user_id, memory_id),
                )
            insert_events(conn, [e for e in events if e.memory_id in active])

    def set_uses(
        self,
        user_id: str,
        memory_id: str,
        *,
        expected: Memory,
        meta: Mapping[str, Any],
        embedding: bytes,
        own: bool = True,
    ) -> bool:
        check_owner(user_id, expected.user_id)
        changed = row_with_own_uses(expected, memory_id, meta, embedding, own=own)
        with self._db.write() as conn:
            clause, params = self._db.visible_clause(conn, user_id)
            row = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause} AND memory_id = ?",
                [*params, memory_id],
            ).fetchone()
            if row is None or not _still_as_read(memory_from_row(row), expected):
                return False
            conn.execute(
                "UPDATE memories SET meta = ?, embedding = ? WHERE user_id = ? AND memory_id = ?",
                (_meta_text(changed.meta), changed.embedding, user_id, memory_id),
            )
        return True

    def memory_owners(self, *, segment: int = 0, segments: int = 1) -> Iterator[str]:
        rules.int_range("segments", segments, 1, MAX_SCAN_SEGMENTS)
        rules.int_range("segment", segment, 0, segments - 1)
        rows = self._db.connection().execute(
            "SELECT DISTINCT user_id FROM memories ORDER BY user_id"
        )
        for (user_id,) in rows.fetchall():
            if segment_of(user_id, segments) == segment:
                yield user_id

    def pending_uses(self, limit: int = 100) -> list[tuple[str, str]]:
        origins = sorted(AWAITING)
        return self._pending(
            f"(json_extract(m.meta, '$.{USES_FROM}') IN ({marks(origins)}) "
            "OR COALESCE(json_array_length(m.meta, '$.uses'), 0) = 0)",
            origins,
            limit,
        )

    def pending_vectors(self, limit: int = 100) -> list[tuple[str, str]]:
        return self._pending("m.embedding IS NULL", (), limit)

    def _pending(
        self, waiting: str, parameters: Sequence[object], limit: int
    ) -> list[tuple[str, str]]:
        """Visible active unexpired rows of every user matching `waiting`, oldest first."""
        rules.int_range("limit", limit, 1, MAX_PAGE)
        rows = (
            self._db.connection()
            .execute(
                "SELECT m.user_id, m.memory_id FROM memories m "
                "LEFT JOIN user_state u ON u.user_id = m.user_id "
                f"WHERE {waiting} "
                "AND m.hidden = 0 AND m.status = 'active' "
                "AND (m.valid_until IS NULL OR m.valid_until > ?) "
                "AND (u.forgotten_before IS NULL OR m.created_at > u.forgotten_before) "
                "ORDER BY m.created_at, m.user_id, m.memory_id LIMIT ?",
                (*parameters, self._db.now(), limit),
            )
            .fetchall()
        )
        return [(row["user_id"], row["memory_id"]) for row in rows]

    def drop_witness(self, witness: str) -> int:
        # As in the persona partition: json_each keeps the list's order, and only rows of
        # other users that name the witness are rewritten (hidden ones too: a row waiting
        # for its purge should not keep the id either).
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE memories SET witnessed = ("
                "  SELECT json_group_array(value) FROM json_each(memories.witnessed)"
                "  WHERE value != ?"
                ") WHERE user_id != ? AND EXISTS ("
                "  SELECT 1 FROM json_each(memories.witnessed) WHERE value = ?"
                ")",
                (witness, witness, witness),
            )
        return cursor.rowcount

    def traces(self, user_id: str, memory_ids: Sequence[str] | None = None) -> list[MemoryTrace]:
        if memory_ids is not None and not memory_ids:
            return []
        conn = self._db.connection()
        # Visibility compares the stored text of the times, so no time is parsed.
        clause, params = self._db.visible_clause(conn, user_id)
        if memory_ids is not None:
            clause += f" AND memory_id IN ({marks(memory_ids)})"
            params.extend(memory_ids)
        rows = conn.execute(
            "SELECT memory_id, persona, kind, status, supersedes, room_id, source_message_id, "
            f"evidence FROM memories WHERE {clause} ORDER BY memory_id",
            params,
        ).fetchall()
        return [_trace_of(user_id, row) for row in rows]

    def hide_memories(self, user_id: str, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        with self._db.write() as conn:
            conn.execute(
                "UPDATE memories SET hidden = 1 "
                f"WHERE user_id = ? AND memory_id IN ({marks(memory_ids)})",
                [user_id, *memory_ids],
            )

    def hide_active_memory(self, user_id: str, memory_id: str) -> None:
        with self._db.write() as conn:
            self._active(conn, user_id, memory_id)
            conn.execute(
                "UPDATE memories SET hidden = 1 WHERE user_id = ? AND memory_id = ?",
                (user_id, memory_id),
            )

    def reinstate_memory(self, reinstated: Memory, *, superseded_by: str) -> None:
        with self._db.write() as conn:
            clause, params = self._db.visible_clause(conn, reinstated.user_id)
            row = conn.execute(
                f"SELECT status, closed_by FROM memories WHERE {clause} AND memory_id = ?",
                [*params, reinstated.memory_id],
            ).fetchone()
            if (
                row is None
                or row["status"] != Status.SUPERSEDED.value
                or row["closed_by"] != superseded_by
            ):
                raise ConcurrentChange("the earlier version changed meanwhile")
            _update_status(conn, reinstated)

    def purge_memories(self, user_id: str, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        with self._db.write() as conn:
            conn.execute(
                f"DELETE FROM memories WHERE user_id = ? AND memory_id IN ({marks(memory_ids)})",
                [user_id, *memory_ids],
            )

    # ---- threads ---------------------------------------------------------------------------

    def list_threads(self, user_id: str, persona: str | None = None) -> list[Memory]:
        conn = self._db.connection()
        clause, params = self._db.visible_clause(conn, user_id)
        clause += " AND kind = ? AND status = ?"
        params += [Kind.THREAD.value, Status.ACTIVE.value]
        if persona is not None:
            clause += " AND persona = ?"
            params.append(persona)
        rows = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause} "
            "ORDER BY created_at DESC, memory_id DESC",
            params,
        ).fetchall()
        return [memory_from_row(row) for row in rows]

    def set_thread_meta(
        self,
        user_id: str,
        memory_id: str,
        meta: Mapping[str, Any],
        at: datetime,
        *,
        expected: Mapping[str, Any],
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        with self._db.write() as conn:
            current = self._active(conn, user_id, memory_id)
            if current.kind is not Kind.THREAD:
                raise ConcurrentChange("only a thread's manners change in place")
            if _meta_text(current.meta) != _meta_text(expected):
                raise ConcurrentChange("the thread's manners changed since they were read")
            changed = dataclasses.replace(
                current, meta=dict(meta), updated_at=max(at, current.updated_at)
            )
            conn.execute(
                "UPDATE memories SET meta = ?, updated_at = ?, thread_review_on = ? "
                "WHERE user_id = ? AND memory_id = ?",
                (
                    _meta_text(changed.meta),
                    to_storage(changed.updated_at),
                    opt_date(review_date(changed)),
                    user_id,
                    memory_id,
                ),
            )
            insert_events(conn, events)
        return changed

    def threads_due(self, on: date, limit: int = 100) -> list[tuple[str, str]]:
        rules.int_range("limit", limit, 1, MAX_PAGE)
        rows = (
            self._db.connection()
            .execute(
                "SELECT m.user_id, m.memory_id FROM memories m "
                "LEFT JOIN user_state u ON u.user_id = m.user_id "
                "WHERE m.thread_review_on IS NOT NULL AND m.thread_review_on <= ? "
                "AND m.hidden = 0 AND m.status = 'active' "
                "AND (m.valid_until IS NULL OR m.valid_until > ?) "
                "AND (u.forgotten_before IS NULL OR m.created_at > u.forgotten_before) "
                "ORDER BY m.thread_review_on, m.user_id, m.memory_id LIMIT ?",
                (on.isoformat(), self._db.now(), limit),
            )
            .fetchall()
        )
        return [(row["user_id"], row["memory_id"]) for row in rows]

    def _active(self, conn: sqlite3.Connection, user_id: str, memory_id: str) -> Memory:
        clause, params = self._db.visible_clause(conn, user_id)
        row = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause} AND memory_id = ?",
            [*params, memory_id],
        ).fetchone()
        if row is None:
            raise MemoryNotFound(memory_id)
        memory = memory_from_row(row)
        if memory.status is not Status.ACTIVE:
            raise ConcurrentChange(f"memory is {memory.status}, not active")
        return memory

    def _visible_rows(
        self, conn: sqlite3.Connection, user_id: str, memory_ids: Sequence[str]
    ) -> list[Memory]:
        clause, params = self._db.visible_clause(conn, user_id)
        return [
            memory_from_row(row)
            for row in conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause} "
                f"AND memory_id IN ({marks(memory_ids)})",
                [*params, *memory_ids],
            )
        ]

    def _visible_ids(
        self, conn: sqlite3.Connection, user_id: str, memory_ids: Sequence[str]
    ) -> set[str]:
        clause, params = self._db.visible_clause(conn, user_id)
        return {
            row["memory_id"]
            for row in conn.execute(
                f"SELECT memory_id FROM memories WHERE {clause} "
                f"AND memory_id IN ({marks(memory_ids)})",
                [*params, *memory_ids],
            )
        }


def _tombstoned(conn: sqlite3.Connection, user_id: str, memory_id: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM tombstones WHERE user_id = ? AND memory_id = ?", (user_id, memory_id)
    ).fetchone()
    return row is not None


def _fading_params(memory: Memory) -> tuple[Any, ...]:
    return memory.stability_days, opt_time(memory.reinforced_at), opt_time(memory.archived_at)


def _update_status(conn: sqlite3.Connection, memory: Memory) -> None:
    params: tuple[Any, ...] = (
        memory.status.value,
        opt_time(memory.valid_to),
        memory.closed_by,
        to_storage(memory.updated_at),
        opt_date(review_date(memory)),  # a thread under review only while it is active
        memory.user_id,
        memory.memory_id,
    )
    conn.execute(
        "UPDATE memories SET status = ?, valid_to = ?, closed_by = ?, updated_at = ?, "
        "thread_review_on = ? WHERE user_id = ? AND memory_id = ?",
        params,
    )


def _still_as_read(current: Memory, expected: Memory) -> bool:
    """Whether the row still says what was read: active, the same words, category and
    meta (a use recorded meanwhile moves only `updated_at` and the fading fields)."""
    return (
        current.status is Status.ACTIVE
        and current.text == expected.text
        and current.category == expected.category
        and _meta_text(current.meta) == _meta_text(expected.meta)
    )


def _meta_text(meta: Mapping[str, Any]) -> str:
    """The stored form of a meta, so two metas compare as the store sees them."""
    return json.dumps(dict(meta), ensure_ascii=False, sort_keys=True)


def segment_of(user_id: str, segments: int) -> int:
    """The part of `memory_owners` a user falls in: a stable hash of the id."""
    return zlib.crc32(user_id.encode("utf-8")) % segments


def _trace_of(user_id: str, row: sqlite3.Row) -> MemoryTrace:
    """A row's trace from its raw columns: evidence that is not a JSON list of ids is
    left out, as is any other field that does not read."""
    try:
        evidence = json.loads(row["evidence"])
    except (TypeError, ValueError):
        evidence = []
    return MemoryTrace.read(
        user_id,
        row["memory_id"],
        persona=row["persona"],
        kind=row["kind"],
        status=row["status"],
        supersedes=row["supersedes"],
        room_id=row["room_id"],
        message_ids=[row["source_message_id"], *(evidence if isinstance(evidence, list) else [])],
    )
