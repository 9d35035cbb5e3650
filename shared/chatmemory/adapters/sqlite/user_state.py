"""The embedded settings and profiles."""

from __future__ import annotations

import json

from chatmemory.adapters.sqlite.database import Database
from chatmemory.adapters.sqlite.rows import opt_parse, opt_time
from chatmemory.domain import rules
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.profile import Profile
from chatmemory.domain.time import from_storage, to_storage
from chatmemory.ports.user_state import UserStateStore


class SqliteUserStateStore(UserStateStore):
    def __init__(self, database: Database) -> None:
        self._db = database

    def get_profile(self, user_id: str, persona: str = rules.DEFAULT_PERSONA) -> Profile | None:
        row = (
            self._db.connection()
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
            review_at=from_storage(row["review_at"]) if row["review_at"] else None,
            built_by=row["built_by"],
        )

    def put_profile(self, profile: Profile) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO profiles (user_id, persona, text, token_count, "
                "built_from, rebuilt_at, review_at, built_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    profile.user_id,
                    profile.persona,
                    profile.text,
                    profile.token_count,
                    json.dumps(list(profile.built_from)),
                    to_storage(profile.rebuilt_at),
                    to_storage(profile.review_at) if profile.review_at else None,
                    profile.built_by,
                ),
            )

    def delete_profiles(self, user_id: str) -> None:
        with self._db.write() as conn:
            conn.execute("DELETE FROM profiles WHERE user_id = ?", (user_id,))

    def get_settings(self, user_id: str) -> MemorySettings:
        row = (
            self._db.connection()
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
            timezone=row["timezone"],
            updated_at=opt_parse(row["updated_at"]),
        )

    def put_settings(self, settings: MemorySettings) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO settings (user_id, enabled, note, muted_personas, "
                "timezone, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    settings.user_id,
                    int(settings.enabled),
                    settings.note,
                    json.dumps(sorted(settings.muted_personas)),
                    settings.timezone,
                    opt_time(settings.updated_at),
                ),
            )
