"""The SQLite file's health: one row written and committed, as every write would be."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from chatmemory.adapters.sqlite.database import Database
from chatmemory.ports.store_probe import StoreProbe, StoreUnavailable


class SqliteStoreProbe(StoreProbe):
    """Writes the one row of `store_probe` (the time of this check) in its own transaction.

    Only a committed write meets what breaks writes: a full disk, a read-only file or
    folder, a file that cannot be opened. It costs one page in the WAL, as a health
    check is asked for now and then.
    """

    def __init__(self, database: Callable[[], Database]) -> None:
        self._database = database  # opened on first use: a file that cannot be is a finding

    def check(self) -> None:
        try:
            database = self._database()
            with database.write() as conn:
                conn.execute(
                    "INSERT INTO store_probe (id, checked_at) VALUES (1, ?) "
                    "ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at",
                    (database.now(),),
                )
        except (sqlite3.Error, OSError) as exc:  # OSError: its folder cannot be made
            raise StoreUnavailable(getattr(exc, "sqlite_errorname", type(exc).__name__)) from exc
