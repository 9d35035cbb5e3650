"""A room's persona blocks (seed 000 §3): built at open, rebuilt on a join or a leave,
never per turn.

Every turn of a room sends each persona the block stored for the room's current members,
byte for byte, so the cached prompt prefix survives; a memory written during a live room
lands at the next open, join or leave. What a block may hold is decided by the audience
rule (`domain/audience.py`) alone, before any model call. The rows it reads are only
those of the humans present who let this persona remember them — nothing of an absent
user, of a user with memory off, or of one who muted the persona, is even read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from chatmemory.domain.audience import V1_GROUPS_LOAD_WORLD_ONLY, visible_memories
from chatmemory.domain.errors import InvalidField, RoomNotFound
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.persona_block import PersonaBlock, build_persona_block
from chatmemory.domain.rooms import Room
from chatmemory.ports.clock import Clock
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores


class RoomBlocks:
    """Opens rooms, follows who is in them, and serves each persona its stable block."""

    def __init__(self, stores: Stores, clock: Clock) -> None:
        self._stores = stores
        self._clock = clock

    def open(self, room: Room) -> Room:
        """Create the room and build every seated persona's block for who is there."""
        self._stores.rooms.create_room(room)
        self._rebuild(room)
        return room

    def join(self, room_id: str, user_ids: Sequence[str]) -> Room:
        """These humans joined: every persona's block is rebuilt for the new audience."""
        return self._change(room_id, join=user_ids)

    def leave(self, room_id: str, user_ids: Sequence[str]) -> Room:
        """These humans left: nothing about them stays in any block of the room."""
        return self._change(room_id, leave=user_ids)

    def block(self, room_id: str, persona: str) -> PersonaBlock:
        """The persona's block for the room's current members: the same bytes every turn."""
        room = self._room(room_id)
        if persona not in room.personas:
            raise InvalidField("persona", "is not in this room")
        stored = self._stores.rooms.get_block(room_id, persona, room.version)
        # None only when a build was lost (a crash between a join and its rebuild).
        return stored if stored is not None else self._build(room, persona)

    def _change(self, room_id: str, *, join: Sequence[str] = (), leave: Sequence[str] = ()) -> Room:
        before = self._room(room_id)
        after = self._stores.rooms.change_members(room_id, join=join, leave=leave)
        if after.version != before.version:
            self._rebuild(after)
        return after

    def _room(self, room_id: str) -> Room:
        room = self._stores.rooms.get_room(room_id)
        if room is None:
            raise RoomNotFound(room_id)
        return room

    def _rebuild(self, room: Room) -> None:
        for persona in sorted(room.personas):
            self._build(room, persona)

    def _build(self, room: Room, persona: str) -> PersonaBlock:
        now = self._clock.now()
        present = room.members
        settings = {user: self._stores.user_state.get_settings(user) for user in present}
        rows = [] if room.incognito else self._rows_of_those_who_allow(persona, settings)
        visible = visible_memories(persona, present, room, rows, settings)
        personal = not room.incognito and (room.is_private_chat or not V1_GROUPS_LOAD_WORLD_ONLY)
        notes = {
            user: s.note
            for user, s in settings.items()
            if personal and s.allows(persona) and s.note
        }
        block = build_persona_block(persona, present, visible, notes=notes, now=now)
        self._stores.rooms.put_block(room.room_id, room.version, block, now)
        self._touch(block, [v.memory for v in visible], now)
        return block

    def _rows_of_those_who_allow(
        self, persona: str, settings: dict[str, MemorySettings]
    ) -> list[Memory]:
        """The persona's active rows in the partitions of the present humans who allow it."""
        query = MemoryQuery(status=Status.ACTIVE, persona=persona)
        rows: list[Memory] = []
        for user in sorted(settings):
            if settings[user].allows(persona):
                rows.extend(self._stores.memories.iter_memories(user, query))
        return rows

    def _touch(self, block: PersonaBlock, candidates: Sequence[Memory], now: datetime) -> None:
        """Loading a memory reinforces it (`last_used_at`, `recall_count`), in its owner's
        partition."""
        loaded = set(block.memory_ids)
        by_owner: dict[str, list[str]] = {}
        for memory in candidates:
            if memory.memory_id in loaded:
                by_owner.setdefault(memory.user_id, []).append(memory.memory_id)
        for owner, memory_ids in sorted(by_owner.items()):
            self._stores.memories.record_use(owner, memory_ids, now)
