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
        conn = self._db.connection()
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
        # The detector runs outside the write lock (a millisecond or so a message); the
        # batch's writes and its place then land in one short transaction, each text only
        # if it is still as read.
        rewrites = [_masked(conn, row) for row in conversations]
        done = len(conversations) < batch
        cursor = (
            [conversations[-1]["user_id"], conversations[-1]["conversation_id"]]
            if conversations
            else after
        )
        rewritten = 0
        with self._db.write() as writing:
            for messages, summary in rewrites:
                rewritten += sum(
                    writing.execute(
                        "UPDATE messages SET content = ? WHERE user_id = ? "
                        "AND conversation_id = ? AND seq = ? AND content = ?",
                        change,
                    ).rowcount
                    for change in messages
                )
                if summary is not None:
                    rewritten += writing.execute(
                        "UPDATE conversations SET summary = ? WHERE user_id = ? "
                        "AND conversation_id = ? AND summary = ?",
                        summary,
                    ).rowcount
            writing.execute(
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


_Change = tuple[str, str, str, int, str]
_SummaryChange = tuple[str, str, str, str]


def _masked(
    conn: sqlite3.Connection, conversation: sqlite3.Row
) -> tuple[list[_Change], _SummaryChange | None]:
    """One conversation's masked texts, as updates guarded on the text read: (content,
    user, conversation, seq, old content) per message, and the summary's, if it changes."""
    user_id, conversation_id = conversation["user_id"], conversation["conversation_id"]
    stored = [
        message_from_row(row)
        for row in conn.execute(
            "SELECT * FROM messages WHERE user_id = ? AND conversation_id = ? ORDER BY seq",
            (user_id, conversation_id),
        )
    ]
    was = {message.seq: message.content for message in stored}
    masked = masked_transcript(stored, conversation["summary"])
    messages = [
        (content, user_id, conversation_id, seq, was[seq])
        for seq, content in masked.messages.items()
    ]
    summary = (
        None
        if masked.summary is None
        else (masked.summary, user_id, conversation_id, conversation["summary"])
    )
    return messages, summary
