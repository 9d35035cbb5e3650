"""The embedded rooms: the room, its transcript, each persona's block and cursor."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import date, datetime

from chatmemory.adapters.sqlite.database import Database, seq_window
from chatmemory.adapters.sqlite.rows import (
    ROOM_BLOCK_COLUMNS,
    ROOM_COLUMNS,
    opt_time,
    room_block_from_row,
    room_block_row,
    room_from_row,
    room_members,
    room_message_from_row,
    room_message_row,
    room_row,
)
from chatmemory.domain import rules
from chatmemory.domain.errors import ConcurrentChange, RoomNotFound
from chatmemory.domain.persona_block import PersonaBlock
from chatmemory.domain.rooms import FORGOTTEN_LINE, NewRoomMessage, Room, RoomMessage
from chatmemory.domain.time import to_storage
from chatmemory.ports.rooms import RoomStore

_ROOM_PLACEHOLDERS = ", ".join("?" for _ in ROOM_COLUMNS.split(","))


class SqliteRoomStore(RoomStore):
    """Rooms on the shared database; each write one `BEGIN IMMEDIATE` transaction, so the
    room read inside it is the room written."""

    def __init__(self, database: Database) -> None:
        self._db = database

    def create_room(self, room: Room) -> None:
        try:
            with self._db.write() as conn:
                conn.execute(
                    f"INSERT INTO rooms ({ROOM_COLUMNS}) VALUES ({_ROOM_PLACEHOLDERS})",
                    room_row(room),
                )
        except sqlite3.IntegrityError as exc:
            raise ConcurrentChange("room id already exists") from exc

    def get_room(self, room_id: str) -> Room | None:
        return _get(self._db.connection(), room_id)

    def change_members(
        self, room_id: str, *, join: Sequence[str] = (), leave: Sequence[str] = ()
    ) -> Room:
        with self._db.write() as conn:
            room = _existing(conn, room_id)
            changed = room.with_members(join=join, leave=leave)
            if changed is not room:
                conn.execute(
                    "UPDATE rooms SET members = ?, version = ? WHERE room_id = ?",
                    (room_members(changed), changed.version, room_id),
                )
        return changed

    def append_room_messages(
        self, room_id: str, messages: Sequence[NewRoomMessage], at: datetime
    ) -> list[RoomMessage]:
        with self._db.write() as conn:
            room = _existing(conn, room_id)
            stored = room.numbered(messages, at)
            conn.executemany(
                "INSERT INTO room_messages (room_id, seq, speaker, text, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [room_message_row(message) for message in stored],
            )
            moved = room.appended(stored, at)
            conn.execute(
                "UPDATE rooms SET last_seq = ?, last_message_at = ? WHERE room_id = ?",
                (moved.last_seq, opt_time(moved.last_message_at), room_id),
            )
        return stored

    def list_room_messages(
        self,
        room_id: str,
        *,
        after_seq: int = 0,
        upto_seq: int | None = None,
        last: int | None = None,
    ) -> list[RoomMessage]:
        window, params = seq_window(after_seq, upto_seq, last)
        sql = f"SELECT * FROM room_messages WHERE room_id = ?{window}"
        rows = self._db.connection().execute(sql, [room_id, *params])
        return sorted((room_message_from_row(row) for row in rows), key=lambda m: m.seq)

    def forget_speaker(self, user_id: str) -> int:
        rules.user_id(user_id)
        with self._db.write() as conn:
            # Lines already replaced are left alone, so a second call changes none.
            changed = conn.execute(
                "UPDATE room_messages SET text = ? WHERE speaker = ? AND text <> ?",
                (FORGOTTEN_LINE, f"u:{user_id}", FORGOTTEN_LINE),
            )
        return changed.rowcount

    def mark_threads_asked(self, room_id: str, on: date) -> None:
        with self._db.write() as conn:
            _existing(conn, room_id)
            conn.execute(
                "UPDATE rooms SET threads_asked_on = ? WHERE room_id = ? "
                "AND (threads_asked_on IS NULL OR threads_asked_on < ?)",
                (on.isoformat(), room_id, on.isoformat()),
            )

    def put_block(self, room_id: str, version: int, block: PersonaBlock, at: datetime) -> None:
        rules.opaque_id("room_id", room_id)
        rules.persona(block.persona)
        rules.int_range("version", version, 0)
        with self._db.write() as conn:
            # A block built for older members never replaces one built for newer.
            conn.execute(
                f"INSERT INTO room_blocks ({ROOM_BLOCK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (room_id, persona) DO UPDATE SET version = excluded.version, "
                "text = excluded.text, memory_ids = excluded.memory_ids, "
                "chars_current = excluded.chars_current, chars_limit = excluded.chars_limit, "
                "built_at = excluded.built_at WHERE excluded.version >= room_blocks.version",
                room_block_row(room_id, version, block, at),
            )

    def get_block(self, room_id: str, persona: str, version: int) -> PersonaBlock | None:
        row = (
            self._db.connection()
            .execute(
                "SELECT * FROM room_blocks WHERE room_id = ? AND persona = ? AND version = ?",
                (room_id, persona, version),
            )
            .fetchone()
        )
        return None if row is None else room_block_from_row(row)

    def extraction_cursor(self, room_id: str, persona: str) -> int:
        return _cursor(self._db.connection(), room_id, persona)

    def advance_room_extraction(
        self, room_id: str, persona: str, *, upto_seq: int, expected_upto_seq: int
    ) -> bool:
        rules.persona(persona)
        rules.int_range("upto_seq", upto_seq, 0)
        with self._db.write() as conn:
            room = _get(conn, room_id)
            if room is None or upto_seq > room.last_seq:
                return False
            if _cursor(conn, room_id, persona) != expected_upto_seq:
                return False
            conn.execute(
                "INSERT OR REPLACE INTO room_cursors (room_id, persona, upto_seq) VALUES (?, ?, ?)",
                (room_id, persona, upto_seq),
            )
        return True

    def quiet_rooms(self, said_before: datetime, limit: int = 100) -> list[str]:
        rules.int_range("limit", limit, 1)
        # A persona with no cursor row has read nothing (cursor 0).
        rows = self._db.connection().execute(
            "SELECT room_id FROM rooms WHERE last_message_at IS NOT NULL "
            "AND last_message_at <= ? AND EXISTS ("
            "  SELECT 1 FROM json_each(rooms.personas) AS seated"
            "  LEFT JOIN room_cursors ON room_cursors.room_id = rooms.room_id"
            "  AND room_cursors.persona = seated.value"
            "  WHERE COALESCE(room_cursors.upto_seq, 0) < rooms.last_seq"
            ") ORDER BY last_message_at, room_id LIMIT ?",
            (to_storage(said_before), limit),
        )
        return [row["room_id"] for row in rows]


def _get(conn: sqlite3.Connection, room_id: str) -> Room | None:
    row = conn.execute("SELECT * FROM rooms WHERE room_id = ?", (room_id,)).fetchone()
    return None if row is None else room_from_row(row)


def _existing(conn: sqlite3.Connection, room_id: str) -> Room:
    room = _get(conn, room_id)
    if room is None:
        raise RoomNotFound(room_id)
    return room


def _cursor(conn: sqlite3.Connection, room_id: str, persona: str) -> int:
    row = conn.execute(
        "SELECT upto_seq FROM room_cursors WHERE room_id = ? AND persona = ?",
        (room_id, persona),
    ).fetchone()
    return 0 if row is None else int(row["upto_seq"])
