"""The embedded rhythm store: one `user_rhythm` row per user, its state as JSON."""

from __future__ import annotations

import dataclasses
import json

from chatmemory.adapters.sqlite.database import Database
from chatmemory.domain.errors import ConcurrentChange
from chatmemory.domain.rhythm import Rhythm, as_record, from_record
from chatmemory.ports.rhythm import RhythmStore


class SqliteRhythmStore(RhythmStore):
    def __init__(self, database: Database) -> None:
        self._db = database

    def get_rhythm(self, user_id: str) -> Rhythm | None:
        row = (
            self._db.connection()
            .execute("SELECT version, state FROM user_rhythm WHERE user_id = ?", (user_id,))
            .fetchone()
        )
        return None if row is None else from_record(json.loads(row["state"]), row["version"])

    def put_rhythm(self, user_id: str, rhythm: Rhythm) -> Rhythm:
        stored = dataclasses.replace(rhythm, version=rhythm.version + 1)
        with self._db.write() as conn:
            row = conn.execute(
                "SELECT version FROM user_rhythm WHERE user_id = ?", (user_id,)
            ).fetchone()
            if (0 if row is None else row["version"]) != rhythm.version:
                raise ConcurrentChange("the rhythm changed while it was being sampled")
            conn.execute(
                "INSERT OR REPLACE INTO user_rhythm (user_id, version, state, updated_at) "
                "VALUES (?, ?, ?, ?)",
                (
                    user_id,
                    stored.version,
                    json.dumps(as_record(stored), sort_keys=True, separators=(",", ":")),
                    self._db.now(),
                ),
            )
        return stored

    def delete_rhythm(self, user_id: str) -> None:
        with self._db.write() as conn:
            conn.execute("DELETE FROM user_rhythm WHERE user_id = ?", (user_id,))
