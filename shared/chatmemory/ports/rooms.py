"""Rooms: where personas and humans meet — the room, its transcript, each persona's
block and each persona's extraction cursor.

A room is not one user's: it lives in its own partition, and every call names it.
Who may call for which room is the HTTP edge's business (the app credential).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import date, datetime

from chatmemory.domain.persona_block import PersonaBlock
from chatmemory.domain.rooms import NewRoomMessage, Room, RoomMessage


class RoomStore(ABC):
    """Rooms and what belongs to them; each write atomic on its own."""

    @abstractmethod
    def create_room(self, room: Room) -> None:
        """Store a new room; ConcurrentChange if the id exists."""

    @abstractmethod
    def get_room(self, room_id: str) -> Room | None: ...

    @abstractmethod
    def change_members(
        self, room_id: str, *, join: Sequence[str] = (), leave: Sequence[str] = ()
    ) -> Room:
        """Apply `Room.with_members` atomically (its `version` moves only when the members
        did); the room as stored. RoomNotFound if there is no such room."""

    @abstractmethod
    def append_room_messages(
        self, room_id: str, messages: Sequence[NewRoomMessage], at: datetime
    ) -> list[RoomMessage]:
        """Store these messages with the room's next sequence numbers, together with the
        room's `last_seq` and `last_message_at`, atomically. RoomNotFound if absent."""

    @abstractmethod
    def list_room_messages(
        self,
        room_id: str,
        *,
        after_seq: int = 0,
        upto_seq: int | None = None,
        last: int | None = None,
    ) -> list[RoomMessage]:
        """Messages with after_seq < seq <= upto_seq, ascending; `last=n` keeps the n most
        recent of that range. Empty for a room that does not exist."""

    @abstractmethod
    def forget_speaker(self, user_id: str) -> int:
        """Replace the text of every room line this user said (speaker `u:<user_id>`), in
        every room, with `FORGOTTEN_LINE`, keeping seq, speaker and time so the
        transcript's numbering and cursors stay whole; how many lines changed. Idempotent.

        For "forget everything": the user's words leave every transcript they were said in.
        """

    @abstractmethod
    def mark_threads_asked(self, room_id: str, on: date) -> None:
        """Stamp the room's `threads_asked_on` with `on` unless it already holds that day or
        a later one (one stamp for every persona here: seed 004 law 8). RoomNotFound if
        there is no such room."""

    @abstractmethod
    def put_block(self, room_id: str, version: int, block: PersonaBlock, at: datetime) -> None:
        """Keep the persona's block as built for the room's members at `version`
        (replacing any older one), so every turn until the next join or leave sends the
        same bytes."""

    @abstractmethod
    def get_block(self, room_id: str, persona: str, version: int) -> PersonaBlock | None:
        """The persona's block if it was built for `version`; None if none was, or it was
        built for other members (it must be rebuilt, never served stale)."""

    @abstractmethod
    def extraction_cursor(self, room_id: str, persona: str) -> int:
        """The last seq this persona's write pipeline has read in the room (0 if none)."""

    @abstractmethod
    def advance_room_extraction(
        self, room_id: str, persona: str, *, upto_seq: int, expected_upto_seq: int
    ) -> bool:
        """Move the persona's cursor, only from where the caller read it and never past
        the room's last message; True if moved."""

    @abstractmethod
    def quiet_rooms(self, said_before: datetime, limit: int = 100) -> list[str]:
        """The rooms whose last message was said at or before `said_before` and that some
        seated persona has not read to its last message (its extraction cursor <
        `last_seq`); oldest last message first, at most `limit`.

        The one read across rooms — for the daily sweep, never on the request path.
        """
