"""The embedded conversations and messages."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from chatmemory.adapters.sqlite.database import Database, check_owner, seq_window
from chatmemory.adapters.sqlite.rows import (
    CONVERSATION_COLUMNS,
    OBSERVED_TURN_COLUMNS,
    conversation_from_row,
    conversation_row,
    message_from_row,
    observed_turn_from_row,
    observed_turn_row,
    opt_parse,
    opt_time,
)
from chatmemory.domain import rules
from chatmemory.domain.conversation import Conversation, Message, NewMessage
from chatmemory.domain.errors import ConcurrentChange, ConversationNotFound, InvalidField
from chatmemory.domain.observed_turn import ObservedTurn
from chatmemory.domain.time import to_storage
from chatmemory.ports.conversations import ConversationStore

_VISIBLE = "user_id = ? AND conversation_id = ? AND (expires_at IS NULL OR expires_at > ?)"


class SqliteConversationStore(ConversationStore):
    def __init__(self, database: Database) -> None:
        self._db = database

    def create_conversation(self, conversation: Conversation) -> None:
        with self._db.write() as conn:
            _insert_conversation(conn, conversation)

    def get_conversation(self, user_id: str, conversation_id: str) -> Conversation | None:
        return self._get(self._db.connection(), user_id, conversation_id)

    def _get(
        self, conn: sqlite3.Connection, user_id: str, conversation_id: str
    ) -> Conversation | None:
        row = conn.execute(
            f"SELECT * FROM conversations WHERE {_VISIBLE}",
            (user_id, conversation_id, self._db.now()),
        ).fetchone()
        return None if row is None else conversation_from_row(row)

    def list_conversations(self, user_id: str) -> list[Conversation]:
        rows = self._db.connection().execute(
            "SELECT * FROM conversations WHERE user_id = ? "
            "AND (expires_at IS NULL OR expires_at > ?) "
            "ORDER BY updated_at DESC, conversation_id DESC",
            (user_id, self._db.now()),
        )
        return [conversation_from_row(row) for row in rows]

    def last_seen(self, user_id: str, persona: str) -> datetime | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT MAX(updated_at) FROM conversations WHERE user_id = ? AND persona = ? "
                "AND temporary = 0 AND last_seq > 0 AND (expires_at IS NULL OR expires_at > ?)",
                (user_id, persona, self._db.now()),
            )
            .fetchone()
        )
        return opt_parse(row[0])

    def append_messages(
        self,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        at: datetime,
        *,
        create: Conversation | None = None,
    ) -> list[Message]:
        with self._db.write() as conn:
            return self._append(conn, user_id, conversation_id, messages, at, create=create)

    def append_observed(
        self,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        at: datetime,
        *,
        turn_id: str,
        fingerprint: str,
        create: Conversation | None = None,
    ) -> tuple[ObservedTurn, bool]:
        with self._db.write() as conn:
            row = conn.execute(
                "SELECT * FROM observed_turns WHERE user_id = ? AND turn_id = ?",
                (user_id, turn_id),
            ).fetchone()
            if row is not None:
                recorded = observed_turn_from_row(row)
                if not recorded.is_expired(self._db.clock.now()):
                    return recorded, False
                # Its conversation expired with it: the id is free again.
                conn.execute(
                    "DELETE FROM observed_turns WHERE user_id = ? AND turn_id = ?",
                    (user_id, turn_id),
                )
            stored = self._append(conn, user_id, conversation_id, messages, at, create=create)
            if not stored:
                raise InvalidField("messages", "an observed turn stores at least one message")
            turn = ObservedTurn(
                user_id=user_id,
                turn_id=turn_id,
                conversation_id=conversation_id,
                first_seq=stored[0].seq,
                count=len(stored),
                fingerprint=fingerprint,
                observed_at=at,
                expires_at=stored[0].expires_at,
            )
            conn.execute(
                f"INSERT INTO observed_turns ({OBSERVED_TURN_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                observed_turn_row(turn),
            )
        return turn, True

    def _append(
        self,
        conn: sqlite3.Connection,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        at: datetime,
        *,
        create: Conversation | None,
    ) -> list[Message]:
        if create is not None:
            check_owner(user_id, create.user_id)
            if create.conversation_id != conversation_id:
                raise InvalidField("conversation_id", "does not match the new conversation")
            _insert_conversation(conn, create)
        # Under BEGIN IMMEDIATE no other writer runs, so the row read is the row written.
        conversation = self._get(conn, user_id, conversation_id)
        if conversation is None:
            raise ConversationNotFound(conversation_id)
        stored = conversation.numbered(messages, at)
        conn.executemany(
            "INSERT INTO messages (user_id, conversation_id, seq, role, content, "
            "tokens, created_at, expires_at, memories_used) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    m.user_id,
                    m.conversation_id,
                    m.seq,
                    m.role.value,
                    m.content,
                    m.tokens,
                    to_storage(m.created_at),
                    opt_time(m.expires_at),
                    json.dumps(list(m.memories_used)),
                )
                for m in stored
            ],
        )
        if stored:
            moved = conversation.appended(stored, at)
            conn.execute(
                "UPDATE conversations SET last_seq = ?, updated_at = ?, "
                "last_user_message_at = ? WHERE user_id = ? AND conversation_id = ?",
                (
                    moved.last_seq,
                    to_storage(moved.updated_at),
                    opt_time(moved.last_user_message_at),
                    user_id,
                    conversation_id,
                ),
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
        window, params = seq_window(after_seq, upto_seq, last)
        sql = (
            "SELECT * FROM messages WHERE user_id = ? AND conversation_id = ? "
            f"AND (expires_at IS NULL OR expires_at > ?){window}"
        )
        params = [user_id, conversation_id, self._db.now(), *params]
        messages = [message_from_row(row) for row in self._db.connection().execute(sql, params)]
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
        with self._db.write() as conn:
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
                    self._db.now(),
                ),
            )
            return cursor.rowcount == 1

    def advance_extraction(
        self, user_id: str, conversation_id: str, *, upto_seq: int, expected_upto_seq: int
    ) -> bool:
        rules.int_range("upto_seq", upto_seq, 0)
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE conversations SET extracted_upto_seq = ? WHERE user_id = ? "
                "AND conversation_id = ? AND extracted_upto_seq = ? AND last_seq >= ?",
                (upto_seq, user_id, conversation_id, expected_upto_seq, upto_seq),
            )
            return cursor.rowcount == 1

    def pending_extractions(
        self, *, said_before: datetime, limit: int = 100
    ) -> list[tuple[str, str]]:
        # `Conversation.awaiting_extraction`, as SQL so the sweep reads only those rows.
        rows = self._db.connection().execute(
            "SELECT user_id, conversation_id FROM conversations "
            "WHERE temporary = 0 AND extracted_upto_seq < last_seq "
            "AND last_user_message_at IS NOT NULL AND last_user_message_at < ? "
            "AND (expires_at IS NULL OR expires_at > ?) "
            "ORDER BY last_user_message_at LIMIT ?",
            (to_storage(said_before), self._db.now(), limit),
        )
        return [(row["user_id"], row["conversation_id"]) for row in rows]


def _insert_conversation(conn: sqlite3.Connection, conversation: Conversation) -> None:
    try:
        conn.execute(
            f"INSERT INTO conversations ({CONVERSATION_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            conversation_row(conversation),
        )
    except sqlite3.IntegrityError as exc:
        raise ConcurrentChange("conversation id already exists") from exc
