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

import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from chatmemory.domain import vectors
from chatmemory.domain.audience import V1_GROUPS_LOAD_WORLD_ONLY, Visible, visible_memories
from chatmemory.domain.errors import InvalidField, RoomNotFound
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.persona_block import PersonaBlock, build_persona_block, note_line
from chatmemory.domain.rooms import Room
from chatmemory.domain.sensitive import is_sensitive
from chatmemory.domain.threads import cue_thread, return_cue, room_may_ask, shown_threads
from chatmemory.ports.clock import Clock
from chatmemory.ports.embedder import Embedder
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores

log = logging.getLogger(__name__)


class RoomBlocks:
    """Opens rooms, follows who is in them, and serves each persona its stable block."""

    def __init__(
        self,
        stores: Stores,
        clock: Clock,
        embedder: Embedder | Callable[[], Embedder] | None = None,
    ) -> None:
        """With an embedder, a rebuild ranks by relevance to the room's opener too (its
        first line); without one, or before anything was said, relevance is 0."""
        self._stores = stores
        self._clock = clock
        self._embedder = embedder

    def open(self, room: Room) -> Room:
        """Create the room and build every seated persona's block for who is there; in a
        private chat, a persona that knows the person from before greets them as such."""
        self._stores.rooms.create_room(room)
        self._rebuild(room, reunion=True)
        return room

    def resume(self, room_id: str, last_seen: datetime) -> None:
        """The room speaks again after a quiet spell (its writes ran meanwhile): every
        block is rebuilt, as at an open, with `last_seen` the room's last line before."""
        self._rebuild(self._room(room_id), reunion=True, last_seen=last_seen)

    def join(self, room_id: str, user_ids: Sequence[str]) -> Room:
        """These humans joined: every persona's block is rebuilt for the new audience."""
        return self._change(room_id, join=user_ids)

    def leave(self, room_id: str, user_ids: Sequence[str]) -> Room:
        """These humans left: nothing about them stays in any block of the room."""
        return self._change(room_id, leave=user_ids)

    def block(self, room_id: str, persona: str) -> PersonaBlock:
        """The persona's block for the room's current members: the same bytes every turn."""
        return self.block_in(self._room(room_id), persona)

    def block_in(self, room: Room, persona: str) -> PersonaBlock:
        """`block`, for a room the caller has just read (a turn reads it once)."""
        room_id = room.room_id
        if persona not in room.personas:
            raise InvalidField("persona", "is not in this room")
        stored = self._stores.rooms.get_block(room_id, persona, room.version)
        # None only when a build was lost (a crash between a join and its rebuild).
        if stored is not None and self._still_true(room, stored):
            return stored
        return self._build(room, persona)[0]

    def _still_true(self, room: Room, block: PersonaBlock) -> bool:
        """May this stored block still be sent? Not once a memory in it was deleted (or
        "forget everything" came), nor once someone present switched memory off or muted
        the persona: those hold at once, not at the next open. Anything else — a memory
        written meanwhile, a note edited — waits for the next open, join or leave, so the
        bytes stay the same turn after turn."""
        persona = block.persona
        settings = {user: self._stores.user_state.get_settings(user) for user in room.members}
        withdrawn_notes = [
            note_line(s.note) for s in settings.values() if s.note and not s.allows(persona)
        ]
        if any(line in block.text for line in withdrawn_notes):
            return False
        loaded = set(block.memory_ids)
        if not loaded:
            return True
        found: set[str] = set()
        for user in sorted(u for u, s in settings.items() if s.allows(persona)):
            found |= self._stores.memories.visible_ids(user, sorted(loaded - found))
        if loaded - found:
            found |= {
                m.memory_id
                for m in self._stores.persona_memories.list_persona_memories(persona)
                if m.memory_id in loaded
            }
        return found == loaded

    def _change(self, room_id: str, *, join: Sequence[str] = (), leave: Sequence[str] = ()) -> Room:
        before = self._room(room_id)
        after = self._stores.rooms.change_members(room_id, join=join, leave=leave)
        if after.version != before.version:
            self._rebuild(after)  # the session goes on: no reunion
        return after

    def _room(self, room_id: str) -> Room:
        room = self._stores.rooms.get_room(room_id)
        if room is None:
            raise RoomNotFound(room_id)
        return room

    def _rebuild(
        self, room: Room, *, reunion: bool = False, last_seen: datetime | None = None
    ) -> None:
        """Every persona's block. The first persona (by name) whose block opens with a
        question takes the room's one ask; the others' ripe threads wait (law 8)."""
        may_ask = room_may_ask(room.threads_asked_on, self._clock.now().date())
        for persona in sorted(room.personas):
            _, asked = self._build(
                room, persona, reunion=reunion, last_seen=last_seen, may_ask=may_ask
            )
            may_ask = may_ask and not asked

    def _build(
        self,
        room: Room,
        persona: str,
        *,
        reunion: bool = False,
        last_seen: datetime | None = None,
        may_ask: bool | None = None,
    ) -> tuple[PersonaBlock, bool]:
        """The persona's block, stored; and whether its cue opens with a question."""
        now = self._clock.now()
        if may_ask is None:
            may_ask = room_may_ask(room.threads_asked_on, now.date())
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
        relevance = self._relevance(room, [v.memory for v in visible])
        cue, asks = (
            self._cue(visible, now, last_seen, may_ask=may_ask) if reunion else (None, False)
        )
        block = build_persona_block(
            persona,
            present,
            visible,
            notes=notes,
            now=now,
            relevance=relevance,
            asked_here_today=not may_ask,
            cue=cue,
        )
        self._stores.rooms.put_block(room.room_id, room.version, block, now)
        self._touch(block, [v.memory for v in visible], now)
        return block, asks

    def _cue(
        self,
        visible: Sequence[Visible],
        now: datetime,
        last_seen: datetime | None,
        *,
        may_ask: bool,
    ) -> tuple[str | None, bool]:
        """The return greeting for a private chat (seed 004 ③): after three quiet days, a
        reunion; a question only for the ripe thread, by its anchors, if this persona may
        ask. Without `last_seen` (a new room), the last time these memories were loaded
        is when the persona last met the person; a persona holding nothing about them is
        meeting them for the first time, and gets no cue."""
        about_people = [v.memory for v in visible if v.memory.subject.startswith("u:")]
        if not about_people:
            return None, False
        if last_seen is None:
            last_seen = max(m.last_used_at or m.created_at for m in about_people)
        # The cue is in the block: a sensitive story is never asked about unprompted.
        threads = [m for m in about_people if m.kind is Kind.THREAD and not is_sensitive(m)]
        ripe = cue_thread(shown_threads(threads, now.date())) if may_ask else None
        cue = return_cue(last_seen, now, ripe.memory.text if ripe else None)
        return cue, cue is not None and ripe is not None

    def _relevance(self, room: Room, rows: Sequence[Memory]) -> dict[str, float] | None:
        """Cosine of each row to the room's opener (seed 000 §3: relevance to the opener or
        topic, else 0). A failure only loses the relevance term, never the block."""
        if self._embedder is None or not rows or room.last_seq == 0:
            return None
        opener = self._stores.rooms.list_room_messages(room.room_id, upto_seq=1)
        if not opener:
            return None
        try:
            if not isinstance(self._embedder, Embedder):
                self._embedder = self._embedder()
            said = self._embedder.embed([opener[0].text])[0]
            fresh = [m for m in rows if m.embedding is None]
            embedded = dict(
                zip(
                    (m.memory_id for m in fresh),
                    self._embedder.embed([m.text for m in fresh]) if fresh else [],
                    strict=True,
                )
            )
            scores = {
                memory.memory_id: vectors.cosine(
                    said,
                    vectors.said_vector(memory.embedding)
                    if memory.embedding is not None
                    else embedded[memory.memory_id],
                )
                for memory in rows
            }
        except Exception as exc:
            log.warning("block relevance unavailable", extra={"error_type": type(exc).__name__})
            return None
        return scores

    def _rows_of_those_who_allow(
        self, persona: str, settings: dict[str, MemorySettings]
    ) -> list[Memory]:
        """The persona's active rows in the partitions of the present humans who allow it,
        and the world facts it holds in its own."""
        query = MemoryQuery(status=Status.ACTIVE, persona=persona)
        rows: list[Memory] = []
        for user in sorted(settings):
            if settings[user].allows(persona):
                rows.extend(self._stores.memories.iter_memories(user, query))
        rows.extend(
            memory
            for memory in self._stores.persona_memories.list_persona_memories(persona)
            if memory.subject == "world"
        )
        return rows

    def _touch(self, block: PersonaBlock, candidates: Sequence[Memory], now: datetime) -> None:
        """Loading a memory reinforces it (`last_used_at`, `recall_count`), in its owner's
        partition: a user's, or the persona's own for a world fact."""
        loaded = set(block.memory_ids)
        by_owner: dict[str, list[str]] = {}
        world: list[str] = []
        for memory in candidates:
            if memory.memory_id not in loaded:
                continue
            if memory.subject == "world":
                world.append(memory.memory_id)
            else:
                by_owner.setdefault(memory.user_id, []).append(memory.memory_id)
        for owner, memory_ids in sorted(by_owner.items()):
            self._stores.memories.record_use(owner, memory_ids, now)
        if world:
            self._stores.persona_memories.record_persona_use(block.persona, world, now)
