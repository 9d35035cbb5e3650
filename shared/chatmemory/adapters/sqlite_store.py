"""The embedded Store: one SQLite file (WAL) under the local state folder."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from chatmemory.adapters.cursors import decode_cursor, encode_cursor
from chatmemory.domain import rules
from chatmemory.domain.conversation import Conversation, Message, Role
from chatmemory.domain.errors import (
    ConcurrentChange,
    ConversationNotFound,
    InvalidField,
    MemoryNotFound,
)
from chatmemory.domain.events import Actor, MemoryEvent, Op
from chatmemory.domain.extraction import ExtractionRun, run_from_json, run_to_json
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.notice import Notice
from chatmemory.domain.profile import Profile
from chatmemory.domain.time import from_storage, to_storage
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports import (
    MAX_PAGE,
    Clock,
    MemoryDigest,
    MemoryQuery,
    NewMessage,
    Page,
    Store,
)

_MEMORY_COLUMNS = (
    "user_id, memory_id, persona, subject, witnessed, room_id, kind, category, key, text, "
    "importance, stated_by, status, valid_from, valid_to, closed_by, supersedes, valid_until, "
    "evidence, source_message_id, created_at, updated_at, last_used_at, recall_count, "
    "embedding, meta"
)
_MEMORY_PLACEHOLDERS = ", ".join("?" for _ in _MEMORY_COLUMNS.split(","))


class SqliteStore(Store):
    """Store on a local SQLite file: the laptop default, and the reference for the contract.

    One connection per thread (the dev server is threaded, `chatmemory flush` is another
    process); WAL lets readers proceed while one writer holds the lock.
    """

    def __init__(self, path: str | Path, *, clock: Clock) -> None:
        self._path = Path(path)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._migrate()

    # ---- plumbing -------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self._path, isolation_level=None, check_same_thread=False, timeout=10.0
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=10000")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: everything inside commits together or not at all."""
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _migrate(self) -> None:
        """Apply numbered scripts from sqlite_migrations/ past `PRAGMA user_version`."""
        folder = resources.files("chatmemory.adapters").joinpath("sqlite_migrations")
        scripts = sorted(
            (int(entry.name.split("_", 1)[0]), entry)
            for entry in folder.iterdir()
            if entry.name.endswith(".sql")
        )
        with self._write() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for number, script in scripts:
                if number <= version:
                    continue
                for statement in _statements(script.read_text(encoding="utf-8")):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number:d}")

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    def _now(self) -> str:
        return to_storage(self._clock.now())

    def _forgotten_before(self, conn: sqlite3.Connection, user_id: str) -> str | None:
        row = conn.execute(
            "SELECT forgotten_before FROM user_state WHERE user_id = ?", (user_id,)
        ).fetchone()
        return None if row is None else row["forgotten_before"]

    def _visible_clause(self, conn: sqlite3.Connection, user_id: str) -> tuple[str, list[Any]]:
        """SQL that keeps only rows a read may return (see Store's visibility rules)."""
        clause = "user_id = ? AND hidden = 0 AND (valid_until IS NULL OR valid_until > ?)"
        params: list[Any] = [user_id, self._now()]
        forgotten = self._forgotten_before(conn, user_id)
        if forgotten is not None:
            clause += " AND created_at > ?"
            params.append(forgotten)
        return clause, params

    # ---- memories -------------------------------------------------------------------

    def add_memory(self, memory: Memory, events: Sequence[MemoryEvent] = ()) -> bool:
        with self._write() as conn:
            if self._tombstoned(conn, memory.user_id, memory.memory_id):
                return False
            cursor = conn.execute(
                f"INSERT OR IGNORE INTO memories ({_MEMORY_COLUMNS}) "
                f"VALUES ({_MEMORY_PLACEHOLDERS})",
                _memory_row(memory),
            )
            if cursor.rowcount == 0:
                return False
            _insert_events(conn, events)
        return True

    def put_memory(self, memory: Memory, events: Sequence[MemoryEvent] = ()) -> None:
        with self._write() as conn:
            if self._tombstoned(conn, memory.user_id, memory.memory_id):
                raise MemoryNotFound(memory.memory_id)
            conn.execute(
                f"INSERT INTO memories ({_MEMORY_COLUMNS}) VALUES ({_MEMORY_PLACEHOLDERS}) "
                "ON CONFLICT (user_id, memory_id) DO UPDATE SET "
                + ", ".join(
                    f"{column.strip()} = excluded.{column.strip()}"
                    for column in _MEMORY_COLUMNS.split(",")[2:]
                ),
                _memory_row(memory),
            )
            _insert_events(conn, events)

    @staticmethod
    def _tombstoned(conn: sqlite3.Connection, user_id: str, memory_id: str) -> bool:
        row = conn.execute(
            "SELECT 1 FROM tombstones WHERE user_id = ? AND memory_id = ?", (user_id, memory_id)
        ).fetchone()
        return row is not None

    def get_memory(self, user_id: str, memory_id: str) -> Memory | None:
        conn = self._connection()
        clause, params = self._visible_clause(conn, user_id)
        row = conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE {clause} AND memory_id = ?",
            [*params, memory_id],
        ).fetchone()
        return None if row is None else _memory_from_row(row)

    def get_memories(self, user_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        if not memory_ids:
            return []
        conn = self._connection()
        clause, params = self._visible_clause(conn, user_id)
        marks = ", ".join("?" for _ in memory_ids)
        rows = conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE {clause} AND memory_id IN ({marks})",
            [*params, *memory_ids],
        ).fetchall()
        found = {row["memory_id"]: _memory_from_row(row) for row in rows}
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
        conn = self._connection()
        clause, params = self._visible_clause(conn, user_id)
        if query.status is not None:
            clause += " AND status = ?"
            params.append(query.status.value)
        if query.persona is not None:
            clause += " AND persona = ?"
            params.append(query.persona)
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
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE {clause} "
            "ORDER BY created_at DESC, memory_id DESC LIMIT ?",
            [*params, limit + 1],
        ).fetchall()
        items = [_memory_from_row(row) for row in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = items[-1]
            next_cursor = encode_cursor(
                user_id, {"c": to_storage(last.created_at), "i": last.memory_id}
            )
        return Page(items=items, next_cursor=next_cursor)

    def memory_digests(self, user_id: str, persona: str | None = None) -> list[MemoryDigest]:
        conn = self._connection()
        clause, params = self._visible_clause(conn, user_id)
        clause += " AND status = 'active'"
        if persona is not None:
            clause += " AND persona = ?"
            params.append(persona)
        rows = conn.execute(
            "SELECT memory_id, persona, importance, updated_at || ':' || "
            'COALESCE(length(embedding), 0), instr(meta, \'"uses_from": "category"\') > 0 '
            f"FROM memories WHERE {clause} ORDER BY created_at DESC, memory_id DESC",
            params,
        ).fetchall()
        return [MemoryDigest(row[0], row[1], row[2], row[3], bool(row[4])) for row in rows]

    def memory_embeddings(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        if not memory_ids:
            return {}
        conn = self._connection()
        found: dict[str, bytes] = {}
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):  # SQLite caps bound parameters
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            for memory_id, embedding in conn.execute(
                "SELECT memory_id, embedding FROM memories WHERE user_id = ? "
                f"AND memory_id IN ({marks}) AND embedding IS NOT NULL",
                [user_id, *chunk],
            ):
                found[memory_id] = embedding
        return found

    def supersede_memory(
        self,
        user_id: str,
        old_memory_id: str,
        new_memory: Memory,
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        _check_owner(user_id, new_memory.user_id)
        if new_memory.supersedes != old_memory_id:
            raise InvalidField("supersedes", "the new memory must name the row it supersedes")
        with self._write() as conn:
            old = self._visible_memory(conn, user_id, old_memory_id)
            if old.status is not Status.ACTIVE:
                raise ConcurrentChange(f"memory is {old.status}, not active")
            closed = old.superseded_by(new_memory)
            try:
                conn.execute(
                    f"INSERT INTO memories ({_MEMORY_COLUMNS}) VALUES ({_MEMORY_PLACEHOLDERS})",
                    _memory_row(new_memory),
                )
            except sqlite3.IntegrityError as exc:
                raise ConcurrentChange("the new memory id already exists") from exc
            self._update_status(conn, closed)
            _insert_events(conn, events)
        return closed

    def close_memory(
        self,
        user_id: str,
        memory_id: str,
        at: datetime,
        closed_by: str | None = None,
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        with self._write() as conn:
            old = self._visible_memory(conn, user_id, memory_id)
            if old.status is not Status.ACTIVE:
                raise ConcurrentChange(f"memory is {old.status}, not active")
            closed = old.closed(at, closed_by)
            self._update_status(conn, closed)
            _insert_events(conn, events)
        return closed

    def _visible_memory(self, conn: sqlite3.Connection, user_id: str, memory_id: str) -> Memory:
        clause, params = self._visible_clause(conn, user_id)
        row = conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE {clause} AND memory_id = ?",
            [*params, memory_id],
        ).fetchone()
        if row is None:
            raise MemoryNotFound(memory_id)
        return _memory_from_row(row)

    @staticmethod
    def _update_status(conn: sqlite3.Connection, memory: Memory) -> None:
        conn.execute(
            "UPDATE memories SET status = ?, valid_to = ?, closed_by = ?, updated_at = ? "
            "WHERE user_id = ? AND memory_id = ?",
            (
                memory.status.value,
                _opt_time(memory.valid_to),
                memory.closed_by,
                to_storage(memory.updated_at),
                memory.user_id,
                memory.memory_id,
            ),
        )

    def record_use(
        self,
        user_id: str,
        memory_ids: Sequence[str],
        at: datetime,
        events: Sequence[MemoryEvent] = (),
    ) -> None:
        if not memory_ids:
            return
        with self._write() as conn:
            clause, params = self._visible_clause(conn, user_id)
            marks = ", ".join("?" for _ in memory_ids)
            visible = {
                row["memory_id"]
                for row in conn.execute(
                    f"SELECT memory_id FROM memories WHERE {clause} AND memory_id IN ({marks})",
                    [*params, *memory_ids],
                )
            }
            stamp = to_storage(at)
            for memory_id in visible:
                conn.execute(
                    "UPDATE memories SET last_used_at = ?, recall_count = recall_count + 1, "
                    "updated_at = MAX(updated_at, ?) WHERE user_id = ? AND memory_id = ?",
                    (stamp, stamp, user_id, memory_id),
                )
            _insert_events(conn, [e for e in events if e.memory_id in visible])

    # ---- deletion -------------------------------------------------------------------

    def tombstone_memories(
        self, user_id: str, tombstones: Sequence[Tombstone], events: Sequence[MemoryEvent] = ()
    ) -> None:
        with self._write() as conn:
            for tombstone in tombstones:
                _check_owner(user_id, tombstone.user_id)
                conn.execute(
                    "INSERT OR IGNORE INTO tombstones (user_id, memory_id, deleted_at, actor, "
                    "persona, versions, source_message_ids, conversation_ids, purged_at, "
                    "purge_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    _tombstone_row(tombstone),
                )
                marks = ", ".join("?" for _ in tombstone.versions)
                conn.execute(
                    f"UPDATE memories SET hidden = 1 WHERE user_id = ? AND memory_id IN ({marks})",
                    [user_id, *tombstone.versions],
                )
            _insert_events(conn, events)

    def revert_supersede(
        self, user_id: str, tombstone: Tombstone, events: Sequence[MemoryEvent] = ()
    ) -> Memory:
        _check_owner(user_id, tombstone.user_id)
        if tombstone.versions != (tombstone.memory_id,):
            raise InvalidField("versions", "an undone supersede hides only the newer row")
        with self._write() as conn:
            newer = self._visible_memory(conn, user_id, tombstone.memory_id)
            if newer.supersedes is None:
                raise ConcurrentChange("the memory is not a correction of another")
            try:
                older = self._visible_memory(conn, user_id, newer.supersedes)
            except MemoryNotFound as exc:
                raise ConcurrentChange("the earlier version is gone") from exc
            reinstated = older.reinstated_from(newer, tombstone.deleted_at)
            self._update_status(conn, reinstated)
            conn.execute(
                "INSERT INTO tombstones (user_id, memory_id, deleted_at, actor, persona, "
                "versions, source_message_ids, conversation_ids, purged_at, purge_error) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _tombstone_row(tombstone),
            )
            conn.execute(
                "UPDATE memories SET hidden = 1 WHERE user_id = ? AND memory_id = ?",
                (user_id, newer.memory_id),
            )
            _insert_events(conn, events)
        return reinstated

    def forgotten_before(self, user_id: str) -> datetime | None:
        stored = self._forgotten_before(self._connection(), user_id)
        return None if stored is None else from_storage(stored)

    def forget_everything(self, user_id: str, at: datetime) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO user_state (user_id, forgotten_before) VALUES (?, ?) "
                "ON CONFLICT (user_id) DO UPDATE SET forgotten_before = "
                "MAX(COALESCE(forgotten_before, ''), excluded.forgotten_before)",
                (user_id, to_storage(at)),
            )
            conn.execute("DELETE FROM profiles WHERE user_id = ?", (user_id,))

    def get_tombstone(self, user_id: str, memory_id: str) -> Tombstone | None:
        row = (
            self._connection()
            .execute(
                "SELECT * FROM tombstones WHERE user_id = ? AND memory_id = ?",
                (user_id, memory_id),
            )
            .fetchone()
        )
        return None if row is None else _tombstone_from_row(row)

    def list_tombstones(self, user_id: str, *, unpurged_only: bool = False) -> list[Tombstone]:
        sql = "SELECT * FROM tombstones WHERE user_id = ?"
        if unpurged_only:
            sql += " AND purged_at IS NULL"
        rows = self._connection().execute(sql + " ORDER BY deleted_at, memory_id", (user_id,))
        return [_tombstone_from_row(row) for row in rows]

    def put_tombstone(self, tombstone: Tombstone) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO tombstones (user_id, memory_id, deleted_at, actor, "
                "persona, versions, source_message_ids, conversation_ids, purged_at, "
                "purge_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _tombstone_row(tombstone),
            )

    def purge_memories(self, user_id: str, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        with self._write() as conn:
            marks = ", ".join("?" for _ in memory_ids)
            conn.execute(
                f"DELETE FROM memories WHERE user_id = ? AND memory_id IN ({marks})",
                [user_id, *memory_ids],
            )

    # ---- conversations and messages -----------------------------------------------

    def create_conversation(self, conversation: Conversation) -> None:
        with self._write() as conn:
            self._insert_conversation(conn, conversation)

    @staticmethod
    def _insert_conversation(conn: sqlite3.Connection, conversation: Conversation) -> None:
        try:
            conn.execute(
                "INSERT INTO conversations (user_id, conversation_id, persona, temporary, "
                "expires_at, created_at, updated_at, last_seq, summary, summary_upto_seq, "
                "fold_count, extracted_upto_seq, last_user_message_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation.user_id,
                    conversation.conversation_id,
                    conversation.persona,
                    int(conversation.temporary),
                    _opt_time(conversation.expires_at),
                    to_storage(conversation.created_at),
                    to_storage(conversation.updated_at),
                    conversation.last_seq,
                    conversation.summary,
                    conversation.summary_upto_seq,
                    conversation.fold_count,
                    conversation.extracted_upto_seq,
                    _opt_time(conversation.last_user_message_at),
                ),
            )
        except sqlite3.IntegrityError as exc:
            raise ConcurrentChange("conversation id already exists") from exc

    def get_conversation(self, user_id: str, conversation_id: str) -> Conversation | None:
        row = (
            self._connection()
            .execute(
                "SELECT * FROM conversations WHERE user_id = ? AND conversation_id = ? "
                "AND (expires_at IS NULL OR expires_at > ?)",
                (user_id, conversation_id, self._now()),
            )
            .fetchone()
        )
        return None if row is None else _conversation_from_row(row)

    def list_conversations(self, user_id: str) -> list[Conversation]:
        rows = self._connection().execute(
            "SELECT * FROM conversations WHERE user_id = ? "
            "AND (expires_at IS NULL OR expires_at > ?) "
            "ORDER BY updated_at DESC, conversation_id DESC",
            (user_id, self._now()),
        )
        return [_conversation_from_row(row) for row in rows]

    def append_messages(
        self,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        at: datetime,
        *,
        create: Conversation | None = None,
    ) -> list[Message]:
        with self._write() as conn:
            if create is not None:
                _check_owner(user_id, create.user_id)
                if create.conversation_id != conversation_id:
                    raise InvalidField("conversation_id", "does not match the new conversation")
                self._insert_conversation(conn, create)
            row = conn.execute(
                "SELECT last_seq, expires_at FROM conversations WHERE user_id = ? "
                "AND conversation_id = ? AND (expires_at IS NULL OR expires_at > ?)",
                (user_id, conversation_id, self._now()),
            ).fetchone()
            if row is None:
                raise ConversationNotFound(conversation_id)
            expires_at = row["expires_at"]
            stored: list[Message] = []
            for offset, new in enumerate(messages, start=1):
                message = Message(
                    user_id=user_id,
                    conversation_id=conversation_id,
                    seq=row["last_seq"] + offset,
                    role=new.role,
                    content=new.content,
                    tokens=new.tokens,
                    created_at=at,
                    expires_at=None if expires_at is None else from_storage(expires_at),
                    memories_used=new.memories_used,
                )
                conn.execute(
                    "INSERT INTO messages (user_id, conversation_id, seq, role, content, "
                    "tokens, created_at, expires_at, memories_used) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        user_id,
                        conversation_id,
                        message.seq,
                        message.role.value,
                        message.content,
                        message.tokens,
                        to_storage(at),
                        expires_at,
                        json.dumps(list(message.memories_used)),
                    ),
                )
                stored.append(message)
            if not stored:
                return stored
            stamp = to_storage(at)
            said = any(message.role is Role.USER for message in stored)
            conn.execute(
                "UPDATE conversations SET last_seq = ?, updated_at = MAX(updated_at, ?), "
                "last_user_message_at = CASE WHEN ? THEN ? ELSE last_user_message_at END "
                "WHERE user_id = ? AND conversation_id = ?",
                (stored[-1].seq, stamp, said, stamp, user_id, conversation_id),
            )
        return stored

    def list_messages(
        self,
        user_id: str,
        conversation_id: str,
        *,
        after_seq: int = 0,
        upto_seq: int | None = None,
        last: int | None = None,
    ) -> list[Message]:
        if self.get_conversation(user_id, conversation_id) is None:
            return []
        sql = (
            "SELECT * FROM messages WHERE user_id = ? AND conversation_id = ? AND seq > ? "
            "AND (expires_at IS NULL OR expires_at > ?)"
        )
        params: list[Any] = [user_id, conversation_id, after_seq, self._now()]
        if upto_seq is not None:
            sql += " AND seq <= ?"
            params.append(upto_seq)
        if last is not None:
            rules.int_range("last", last, 0)
            sql += " ORDER BY seq DESC LIMIT ?"
            params.append(last)
        else:
            sql += " ORDER BY seq"
        messages = [_message_from_row(row) for row in self._connection().execute(sql, params)]
        return sorted(messages, key=lambda message: message.seq)

    def update_summary(
        self,
        user_id: str,
        conversation_id: str,
        *,
        summary: str,
        upto_seq: int,
        expected_upto_seq: int,
        fold_count: int,
        at: datetime,
        expected_fold_count: int | None = None,
    ) -> bool:
        rules.text("summary", summary, rules.SUMMARY_MAX_CHARS, allow_empty=True)
        rules.int_range("upto_seq", upto_seq, 0)
        rules.int_range("fold_count", fold_count, 0)
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE conversations SET summary = ?, summary_upto_seq = ?, fold_count = ?, "
                "updated_at = MAX(updated_at, ?) WHERE user_id = ? AND conversation_id = ? "
                "AND summary_upto_seq = ? AND last_seq >= ? "
                "AND (? IS NULL OR fold_count = ?) "
                "AND (expires_at IS NULL OR expires_at > ?)",
                (
                    summary,
                    upto_seq,
                    fold_count,
                    to_storage(at),
                    user_id,
                    conversation_id,
                    expected_upto_seq,
                    upto_seq,
                    expected_fold_count,
                    expected_fold_count,
                    self._now(),
                ),
            )
            return cursor.rowcount == 1

    def advance_extraction(
        self, user_id: str, conversation_id: str, *, upto_seq: int, expected_upto_seq: int
    ) -> bool:
        rules.int_range("upto_seq", upto_seq, 0)
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE conversations SET extracted_upto_seq = ? WHERE user_id = ? "
                "AND conversation_id = ? AND extracted_upto_seq = ? AND last_seq >= ?",
                (upto_seq, user_id, conversation_id, expected_upto_seq, upto_seq),
            )
            return cursor.rowcount == 1

    def pending_extractions(
        self, *, said_before: datetime, limit: int = 100
    ) -> list[tuple[str, str]]:
        rows = self._connection().execute(
            "SELECT user_id, conversation_id FROM conversations "
            "WHERE temporary = 0 AND extracted_upto_seq < last_seq "
            "AND last_user_message_at IS NOT NULL AND last_user_message_at < ? "
            "AND (expires_at IS NULL OR expires_at > ?) "
            "ORDER BY last_user_message_at LIMIT ?",
            (to_storage(said_before), self._now(), limit),
        )
        return [(row["user_id"], row["conversation_id"]) for row in rows]

    def pending_purges(self, *, deleted_before: datetime, limit: int = 100) -> list[str]:
        rows = self._connection().execute(
            "SELECT user_id, MIN(deleted_at) AS oldest FROM tombstones "
            "WHERE purged_at IS NULL AND deleted_at < ? "
            "GROUP BY user_id ORDER BY oldest, user_id LIMIT ?",
            (to_storage(deleted_before), limit),
        )
        return [row["user_id"] for row in rows]

    # ---- the write pipeline's runs ------------------------------------------------------

    def put_extraction_run(self, run: ExtractionRun, *, only_if_new: bool = False) -> bool:
        verb = "INSERT OR IGNORE" if only_if_new else "INSERT OR REPLACE"
        with self._write() as conn:
            cursor = conn.execute(
                f"{verb} INTO extraction_runs (user_id, run_id, conversation_id, "
                "expires_at, body) VALUES (?, ?, ?, ?, ?)",
                (
                    run.user_id,
                    run.run_id,
                    run.conversation_id,
                    to_storage(run.expires_at),
                    json.dumps(run_to_json(run), ensure_ascii=False),
                ),
            )
            return cursor.rowcount == 1

    def get_extraction_run(self, user_id: str, run_id: str) -> ExtractionRun | None:
        row = (
            self._connection()
            .execute(
                "SELECT body FROM extraction_runs WHERE user_id = ? AND run_id = ? "
                "AND expires_at > ?",
                (user_id, run_id, self._now()),
            )
            .fetchone()
        )
        return None if row is None else run_from_json(json.loads(row["body"]))

    def delete_extraction_runs(self, user_id: str, conversation_id: str) -> None:
        with self._write() as conn:
            conn.execute(
                "DELETE FROM extraction_runs WHERE user_id = ? AND conversation_id = ?",
                (user_id, conversation_id),
            )

    # ---- profile, settings ----------------------------------------------------------

    def get_profile(self, user_id: str, persona: str = rules.DEFAULT_PERSONA) -> Profile | None:
        row = (
            self._connection()
            .execute("SELECT * FROM profiles WHERE user_id = ? AND persona = ?", (user_id, persona))
            .fetchone()
        )
        if row is None:
            return None
        return Profile(
            user_id=row["user_id"],
            persona=row["persona"],
            text=row["text"],
            token_count=row["token_count"],
            built_from=tuple(json.loads(row["built_from"])),
            rebuilt_at=from_storage(row["rebuilt_at"]),
        )

    def put_profile(self, profile: Profile) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO profiles (user_id, persona, text, token_count, "
                "built_from, rebuilt_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    profile.user_id,
                    profile.persona,
                    profile.text,
                    profile.token_count,
                    json.dumps(list(profile.built_from)),
                    to_storage(profile.rebuilt_at),
                ),
            )

    def delete_profiles(self, user_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM profiles WHERE user_id = ?", (user_id,))

    def get_settings(self, user_id: str) -> MemorySettings:
        row = (
            self._connection()
            .execute("SELECT * FROM settings WHERE user_id = ?", (user_id,))
            .fetchone()
        )
        if row is None:
            return MemorySettings(user_id=user_id)
        return MemorySettings(
            user_id=row["user_id"],
            enabled=bool(row["enabled"]),
            note=row["note"],
            muted_personas=frozenset(json.loads(row["muted_personas"])),
            updated_at=_opt_parse(row["updated_at"]),
        )

    def put_settings(self, settings: MemorySettings) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO settings (user_id, enabled, note, muted_personas, "
                "updated_at) VALUES (?, ?, ?, ?, ?)",
                (
                    settings.user_id,
                    int(settings.enabled),
                    settings.note,
                    json.dumps(sorted(settings.muted_personas)),
                    _opt_time(settings.updated_at),
                ),
            )

    # ---- events and notices ---------------------------------------------------------

    def add_events(self, events: Sequence[MemoryEvent]) -> None:
        with self._write() as conn:
            _insert_events(conn, events)

    def list_events(self, user_id: str, memory_id: str) -> list[MemoryEvent]:
        rows = self._connection().execute(
            "SELECT * FROM memory_events WHERE user_id = ? AND memory_id = ? ORDER BY at, event_id",
            (user_id, memory_id),
        )
        return [
            MemoryEvent(
                user_id=row["user_id"],
                memory_id=row["memory_id"],
                event_id=row["event_id"],
                op=Op(row["op"]),
                actor=Actor(row["actor"]),
                at=from_storage(row["at"]),
                related_id=row["related_id"],
            )
            for row in rows
        ]

    def add_notice(self, notice: Notice) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO notices (user_id, notice_id, text, memory_ids, "
                "created_at, persona, conversation_id, undone_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    notice.user_id,
                    notice.notice_id,
                    notice.text,
                    json.dumps(list(notice.memory_ids)),
                    to_storage(notice.created_at),
                    notice.persona,
                    notice.conversation_id,
                    _opt_time(notice.undone_at),
                ),
            )

    def get_notice(self, user_id: str, notice_id: str) -> Notice | None:
        row = (
            self._connection()
            .execute(
                "SELECT * FROM notices WHERE user_id = ? AND notice_id = ?", (user_id, notice_id)
            )
            .fetchone()
        )
        return None if row is None else _notice_from_row(row)

    def list_notices(
        self, user_id: str, *, include_undone: bool = False, limit: int = 50
    ) -> list[Notice]:
        rules.int_range("limit", limit, 1, MAX_PAGE)
        sql = "SELECT * FROM notices WHERE user_id = ?"
        if not include_undone:
            sql += " AND undone_at IS NULL"
        rows = self._connection().execute(
            sql + " ORDER BY created_at DESC, notice_id DESC LIMIT ?", (user_id, limit)
        )
        return [_notice_from_row(row) for row in rows]

    def notices_about(self, user_id: str, memory_ids: Sequence[str]) -> list[Notice]:
        wanted = set(memory_ids)
        if not wanted:
            return []
        rows = self._connection().execute(
            "SELECT * FROM notices WHERE user_id = ? ORDER BY created_at DESC, notice_id DESC",
            (user_id,),
        )
        notices = (_notice_from_row(row) for row in rows)
        return [notice for notice in notices if wanted.intersection(notice.memory_ids)]

    def mark_notice_undone(self, user_id: str, notice_id: str, at: datetime) -> bool:
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE notices SET undone_at = ? WHERE user_id = ? AND notice_id = ? "
                "AND undone_at IS NULL",
                (to_storage(at), user_id, notice_id),
            )
            return cursor.rowcount == 1

    def delete_notices(self, user_id: str, notice_ids: Sequence[str]) -> None:
        if not notice_ids:
            return
        with self._write() as conn:
            marks = ", ".join("?" for _ in notice_ids)
            conn.execute(
                f"DELETE FROM notices WHERE user_id = ? AND notice_id IN ({marks})",
                [user_id, *notice_ids],
            )


# ---- row mapping --------------------------------------------------------------------


def _statements(script: str) -> Iterator[str]:
    """Split a migration script into statements (comments and blank lines dropped)."""
    buffer = ""
    for line in script.splitlines():
        if line.strip().startswith("--") or not line.strip():
            continue
        buffer += line + "\n"
        if sqlite3.complete_statement(buffer):
            yield buffer.strip()
            buffer = ""
    if buffer.strip():
        yield buffer.strip()


def _check_owner(user_id: str, owner: str) -> None:
    if user_id != owner:
        raise InvalidField("user_id", "a row may only be written under its own user")


def _opt_time(value: datetime | None) -> str | None:
    return None if value is None else to_storage(value)


def _opt_parse(value: str | None) -> datetime | None:
    return None if value is None else from_storage(value)


def _memory_row(memory: Memory) -> tuple[Any, ...]:
    return (
        memory.user_id,
        memory.memory_id,
        memory.persona,
        memory.subject,
        json.dumps(list(memory.witnessed)),
        memory.room_id,
        memory.kind.value,
        memory.category,
        memory.key,
        memory.text,
        memory.importance,
        memory.stated_by.value,
        memory.status.value,
        _opt_time(memory.valid_from),
        _opt_time(memory.valid_to),
        memory.closed_by,
        memory.supersedes,
        _opt_time(memory.valid_until),
        json.dumps(list(memory.evidence)),
        memory.source_message_id,
        to_storage(memory.created_at),
        to_storage(memory.updated_at),
        _opt_time(memory.last_used_at),
        memory.recall_count,
        memory.embedding,
        json.dumps(dict(memory.meta), ensure_ascii=False, sort_keys=True),
    )


def _memory_from_row(row: sqlite3.Row) -> Memory:
    return Memory(
        user_id=row["user_id"],
        memory_id=row["memory_id"],
        persona=row["persona"],
        subject=row["subject"],
        witnessed=tuple(json.loads(row["witnessed"])),
        room_id=row["room_id"],
        kind=Kind(row["kind"]),
        category=row["category"],
        key=row["key"],
        text=row["text"],
        importance=row["importance"],
        stated_by=StatedBy(row["stated_by"]),
        status=Status(row["status"]),
        valid_from=_opt_parse(row["valid_from"]),
        valid_to=_opt_parse(row["valid_to"]),
        closed_by=row["closed_by"],
        supersedes=row["supersedes"],
        valid_until=_opt_parse(row["valid_until"]),
        evidence=tuple(json.loads(row["evidence"])),
        source_message_id=row["source_message_id"],
        created_at=from_storage(row["created_at"]),
        updated_at=from_storage(row["updated_at"]),
        last_used_at=_opt_parse(row["last_used_at"]),
        recall_count=row["recall_count"],
        embedding=row["embedding"],
        meta=json.loads(row["meta"]),
    )


def _tombstone_row(tombstone: Tombstone) -> tuple[Any, ...]:
    return (
        tombstone.user_id,
        tombstone.memory_id,
        to_storage(tombstone.deleted_at),
        tombstone.actor.value,
        tombstone.persona,
        json.dumps(list(tombstone.versions)),
        json.dumps(list(tombstone.source_message_ids)),
        json.dumps(list(tombstone.conversation_ids)),
        _opt_time(tombstone.purged_at),
        tombstone.purge_error,
    )


def _tombstone_from_row(row: sqlite3.Row) -> Tombstone:
    return Tombstone(
        user_id=row["user_id"],
        memory_id=row["memory_id"],
        deleted_at=from_storage(row["deleted_at"]),
        actor=Actor(row["actor"]),
        persona=row["persona"],
        versions=tuple(json.loads(row["versions"])),
        source_message_ids=tuple(json.loads(row["source_message_ids"])),
        conversation_ids=tuple(json.loads(row["conversation_ids"])),
        purged_at=_opt_parse(row["purged_at"]),
        purge_error=row["purge_error"],
    )


def _conversation_from_row(row: sqlite3.Row) -> Conversation:
    return Conversation(
        user_id=row["user_id"],
        conversation_id=row["conversation_id"],
        persona=row["persona"],
        temporary=bool(row["temporary"]),
        expires_at=_opt_parse(row["expires_at"]),
        created_at=from_storage(row["created_at"]),
        updated_at=from_storage(row["updated_at"]),
        last_seq=row["last_seq"],
        summary=row["summary"],
        summary_upto_seq=row["summary_upto_seq"],
        fold_count=row["fold_count"],
        extracted_upto_seq=row["extracted_upto_seq"],
        last_user_message_at=_opt_parse(row["last_user_message_at"]),
    )


def _message_from_row(row: sqlite3.Row) -> Message:
    return Message(
        user_id=row["user_id"],
        conversation_id=row["conversation_id"],
        seq=row["seq"],
        role=Role(row["role"]),
        content=row["content"],
        tokens=row["tokens"],
        created_at=from_storage(row["created_at"]),
        expires_at=_opt_parse(row["expires_at"]),
        memories_used=tuple(json.loads(row["memories_used"])),
    )


def _notice_from_row(row: sqlite3.Row) -> Notice:
    return Notice(
        user_id=row["user_id"],
        notice_id=row["notice_id"],
        text=row["text"],
        memory_ids=tuple(json.loads(row["memory_ids"])),
        created_at=from_storage(row["created_at"]),
        persona=row["persona"],
        conversation_id=row["conversation_id"],
        undone_at=_opt_parse(row["undone_at"]),
    )


def _insert_events(conn: sqlite3.Connection, events: Sequence[MemoryEvent]) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO memory_events (user_id, event_id, memory_id, op, actor, at, "
        "related_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                event.user_id,
                event.event_id,
                event.memory_id,
                event.op.value,
                event.actor.value,
                to_storage(event.at),
                event.related_id,
            )
            for event in events
        ],
    )
