"""The embedded notices."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from chatmemory.adapters.sqlite.database import Database, marks
from chatmemory.adapters.sqlite.rows import notice_from_row, opt_time
from chatmemory.domain import rules
from chatmemory.domain.notice import Notice
from chatmemory.domain.time import to_storage
from chatmemory.ports.notices import NoticeStore
from chatmemory.ports.pages import MAX_PAGE


class SqliteNoticeStore(NoticeStore):
    def __init__(self, database: Database) -> None:
        self._db = database

    def add_notice(self, notice: Notice) -> None:
        with self._db.write() as conn:
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
                    opt_time(notice.undone_at),
                ),
            )

    def get_notice(self, user_id: str, notice_id: str) -> Notice | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT * FROM notices WHERE user_id = ? AND notice_id = ?", (user_id, notice_id)
            )
            .fetchone()
        )
        return None if row is None else notice_from_row(row)

    def list_notices(
        self, user_id: str, *, include_undone: bool = False, limit: int = 50
    ) -> list[Notice]:
        rules.int_range("limit", limit, 1, MAX_PAGE)
        sql = "SELECT * FROM notices WHERE user_id = ?"
        if not include_undone:
            sql += " AND undone_at IS NULL"
        rows = self._db.connection().execute(
            sql + " ORDER BY created_at DESC, notice_id DESC LIMIT ?", (user_id, limit)
        )
        return [notice_from_row(row) for row in rows]

    def notices_about(self, user_id: str, memory_ids: Sequence[str]) -> list[Notice]:
        wanted = set(memory_ids)
        if not wanted:
            return []
        rows = self._db.connection().execute(
            "SELECT * FROM notices WHERE user_id = ? ORDER BY created_at DESC, notice_id DESC",
            (user_id,),
        )
        notices = (notice_from_row(row) for row in rows)
        return [notice for notice in notices if wanted.intersection(notice.memory_ids)]

    def mark_notice_undone(self, user_id: str, notice_id: str, at: datetime) -> bool:
        with self._db.write() as conn:
            cursor = conn.execute(
                "UPDATE notices SET undone_at = ? WHERE user_id = ? AND notice_id = ? "
                "AND undone_at IS NULL",
                (to_storage(at), user_id, notice_id),
            )
            return cursor.rowcount == 1

    def delete_notices(self, user_id: str, notice_ids: Sequence[str]) -> None:
        if not notice_ids:
            return
        with self._db.write() as conn:
            conn.execute(
                f"DELETE FROM notices WHERE user_id = ? AND notice_id IN ({marks(notice_ids)})",
                [user_id, *notice_ids],
            )
