"""The embedded quota counters: one `quota_windows` row per user, quota and minute."""

from __future__ import annotations

from datetime import datetime

from chatmemory.adapters.sqlite.database import Database
from chatmemory.domain.quotas import (
    Quota,
    QuotaDecision,
    Stored,
    allowed,
    refused,
    window_key,
    would_allow,
)
from chatmemory.ports.quotas import QuotaStore

_OF_USER = "WHERE user_id = ? AND quota = ?"


class SqliteQuotaStore(QuotaStore):
    """A take is one `BEGIN IMMEDIATE` write: read the window's count, add to it if the
    limit allows. Writers are serialised, so two takes never both see the last unit."""

    def __init__(self, database: Database) -> None:
        self._db = database

    def take(self, user_id: str, quota: Quota, now: datetime, cost: int = 1) -> QuotaDecision:
        if not quota.enforced:
            return allowed()
        cost = quota.cost_of(cost)
        window = window_key(now)
        key = (user_id, quota.name, window)
        with self._db.write() as conn:
            # Past windows are never read again: the user's own take clears them.
            conn.execute(f"DELETE FROM quota_windows {_OF_USER} AND window_start < ?", key)
            row = conn.execute(
                f"SELECT taken FROM quota_windows {_OF_USER} AND window_start = ?", key
            ).fetchone()
            taken = 0 if row is None else int(row["taken"])
            if not would_allow(taken, cost, quota):
                return refused(now)
            conn.execute(
                "INSERT INTO quota_windows (user_id, quota, window_start, taken) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (user_id, quota, window_start) "
                "DO UPDATE SET taken = taken + excluded.taken",
                (*key, cost),
            )
        return allowed()

    def stored(self, user_id: str) -> Stored:
        conn = self._db.connection()
        rows = conn.execute("SELECT COUNT(*) FROM memories WHERE user_id = ?", (user_id,))
        messages = conn.execute("SELECT COUNT(*) FROM messages WHERE user_id = ?", (user_id,))
        return Stored(memory_rows=int(rows.fetchone()[0]), messages=int(messages.fetchone()[0]))
