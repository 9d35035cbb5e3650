"""The embedded deletion bookkeeping: tombstones and the forget watermark."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from chatmemory.adapters.sqlite.database import Database, check_owner
from chatmemory.adapters.sqlite.rows import TOMBSTONE_COLUMNS, tombstone_from_row, tombstone_row
from chatmemory.domain.errors import ConcurrentChange
from chatmemory.domain.time import from_storage, to_storage
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.deletions import TombstoneStore

_VALUES = "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


class SqliteTombstoneStore(TombstoneStore):
    def __init__(self, database: Database) -> None:
        self._db = database

    def add_tombstones(
        self, user_id: str, tombstones: Sequence[Tombstone], *, first_only: bool = True
    ) -> None:
        with self._db.write() as conn:
            for tombstone in tombstones:
                check_owner(user_id, tombstone.user_id)
                cursor = conn.execute(
                    f"INSERT OR IGNORE INTO tombstones ({TOMBSTONE_COLUMNS}) {_VALUES}",
                    tombstone_row(tombstone),
                )
                if cursor.rowcount == 0 and not first_only:
                    raise ConcurrentChange("the memory was deleted meanwhile")

    def get_tombstone(self, user_id: str, memory_id: str) -> Tombstone | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT * FROM tombstones WHERE user_id = ? AND memory_id = ?",
                (user_id, memory_id),
            )
            .fetchone()
        )
        return None if row is None else tombstone_from_row(row)

    def list_tombstones(self, user_id: str, *, unpurged_only: bool = False) -> list[Tombstone]:
        sql = "SELECT * FROM tombstones WHERE user_id = ?"
        if unpurged_only:
            sql += " AND purged_at IS NULL"
        rows = self._db.connection().execute(sql + " ORDER BY deleted_at, memory_id", (user_id,))
        return [tombstone_from_row(row) for row in rows]

    def put_tombstone(self, tombstone: Tombstone) -> None:
        with self._db.write() as conn:
            conn.execute(
                f"INSERT OR REPLACE INTO tombstones ({TOMBSTONE_COLUMNS}) {_VALUES}",
                tombstone_row(tombstone),
            )

    def raise_forget_watermark(self, user_id: str, at: datetime) -> bool:
        stamp = to_storage(at)
        with self._db.write() as conn:
            current = self._db.forgotten_before(conn, user_id)
            if current is not None and current >= stamp:
                return False
            conn.execute(
                "INSERT INTO user_state (user_id, forgotten_before) VALUES (?, ?) "
                "ON CONFLICT (user_id) DO UPDATE SET forgotten_before = excluded.forgotten_before",
                (user_id, stamp),
            )
        return True

    def forgotten_before(self, user_id: str) -> datetime | None:
        stored = self._db.forgotten_before(self._db.connection(), user_id)
        return None if stored is None else from_storage(stored)

    def pending_purges(self, *, deleted_before: datetime, limit: int = 100) -> list[str]:
        rows = self._db.connection().execute(
            "SELECT user_id, MIN(deleted_at) AS oldest FROM tombstones "
            "WHERE purged_at IS NULL AND deleted_at < ? "
            "GROUP BY user_id ORDER BY oldest, user_id LIMIT ?",
            (to_storage(deleted_before), limit),
        )
        return [row["user_id"] for row in rows]
