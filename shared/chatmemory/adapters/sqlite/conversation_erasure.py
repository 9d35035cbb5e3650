"""The embedded conversations removed for good, and their stored messages masked.

A delete here is one transaction: the conversation's row, messages and observed-turn
records go together, so nothing is ever left hidden for a purge to finish.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from chatmemory.adapters.sqlite.database import Database
from chatmemory.adapters.sqlite.rows import message_from_row
from chatmemory.domain import rules
from chatmemory.domain.conversation import masked_transcript
from chatmemory.ports.conversation_erasure import ConversationErasure, MaskingProgress

#: the `data_migrations` row of the stored-message masking
MASK_MESSAGES = "mask_messages"


class SqliteConversationErasure(ConversationErasure):
    def __init__(self, database: Database) -> None:
        self._db = database

    def hide_conversations(
        self, user_id: str, conversation_ids: Sequence[str] | None = None
    ) -> list[str]:
        with self._db.write() as conn:
            if conversation_ids is None:
                rows = conn.execute(
                    "SELECT conversation_id FROM conversations WHERE user_id = ?", (user_id,)
                )
                hidden = [row["conversation_id"] for row in rows]
            else:
                hidden = [
                    conversation_id
                    for conversation_id in dict.fromkeys(conversation_ids)
                    if _visible(conn, user_id, conversation_id, self._db.now())
                ]
            for conversation_id in hidden:
                _remove(conn, user_id, conversation_id, row=True)
        return hidden

    def purge_conversation(self, user_id: str, conversation_id: str) -> None:
        with self._db.write() as conn:
            kept = conn.execute(
                "SELECT 1 FROM conversations WHERE user_id = ? AND conversation_id = ?",
                (user_id, conversation_id),
            ).fetchone()
            if kept is None:  # hidden here means removed: only strays could be left
                _remove(conn, user_id, conversation_id, row=False)

    def hidden_conversations(self, *, limit: int = 100) -> list[tuple[str, str]]:
        rules.int_range("limit", limit, 1)
        return []  # a delete removes everything in the write that hides it

    def mask_stored_messages(self, *, batch: int = 50) -> MaskingProgress:
        rules.int_range("batch", batch, 1)
        with self._db.write() as conn:
            record = conn.execute(
                "SELECT cursor, done_at FROM data_migrations WHERE name = ?", (MASK_MESSAGES,)
            ).fetchone()
            if record is not None and record["done_at"] is not None:
                return MaskingProgress(conversations=0, rewritten=0, done=True)
            after = json.loads(record["cursor"]) if record and record["cursor"] else ["", ""]
            conversations = conn.execute(
                "SELECT user_id, conversation_id, summary FROM conversations "
                "WHERE (user_id, conversation_id) > (?, ?) "
                "ORDER BY user_id, conversation_id LIMIT ?",
                (after[0], after[1], batch),
            ).fetchall()
            rewritten = sum(_mask(conn, row) for row in conversations)
            done = len(conversations) < batch
            cursor = (
                [conversations[-1]["user_id"], conversations[-1]["conversation_id"]]
                if conversations
                else after
            )
            conn.execute(
                "INSERT OR REPLACE INTO data_migrations (name, cursor, done_at) VALUES (?, ?, ?)",
                (MASK_MESSAGES, json.dumps(cursor), self._db.now() if done else None),
            )
        return MaskingProgress(conversations=len(conversations), rewritten=rewritten, done=done)


def _visible(conn: sqlite3.Connection, user_id: str, conversation_id: str, now: str) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM conversations WHERE user_id = ? AND conversation_id = ? "
            "AND (expires_at IS NULL OR expires_at > ?)",
            (user_id, conversation_id, now),
        ).fetchone()
        is not None
    )


def _remove(conn: sqlite3.Connection, user_id: str, conversation_id: str, *, row: bool) -> None:
    tables = ("messages", "observed_turns", *(("conversations",) if row else ()))
    for table in tables:
        conn.execute(
            f"DELETE FROM {table} WHERE user_id = ? AND conversation_id = ?",  # our own table names
            (user_id, conversation_id),
        )


def _mask(conn: sqlite3.Connection, conversation: sqlite3.Row) -> int:
    """Mask one conversation's stored words in place; how many texts changed."""
    user_id, conversation_id = conversation["user_id"], conversation["conversation_id"]
    messages = [
        message_from_row(row)
        for row in conn.execute(
            "SELECT * FROM messages WHERE user_id = ? AND conversation_id = ? ORDER BY seq",
            (user_id, conversation_id),
        )
    ]
    masked = masked_transcript(messages, conversation["summary"])
    conn.executemany(
        "UPDATE messages SET content = ? WHERE user_id = ? AND conversation_id = ? AND seq = ?",
        [(content, user_id, conversation_id, seq) for seq, content in masked.messages.items()],
    )
    if masked.summary is not None:
        conn.execute(
            "UPDATE conversations SET summary = ? WHERE user_id = ? AND conversation_id = ?",
            (masked.summary, user_id, conversation_id),
        )
    return len(masked.messages) + (masked.summary is not None)
