"""What personas remember about you, grouped by persona (seed 000 §5 "the page").

For each persona that holds rows about the user: those rows (the ones still believed,
and on request the closed and superseded ones with their arc, "2026-07 → 2026-11"), and
its meter — how full the block is that this persona would build for the user alone in a
private chat (the world facts it holds included). The meter goes through the same
audience rule and block builder as a real room, so a muted persona or memory switched off
shows nothing of the user's in it, as a room would load it; reading the page loads
nothing into any mind, so no row is touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from chatmemory.domain import rules
from chatmemory.domain.audience import visible_memories
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.persona_block import PersonaBlock, build_persona_block
from chatmemory.domain.rooms import Room, RoomKind
from chatmemory.domain.time import to_month
from chatmemory.ports.clock import Clock
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores

# The private chat the meter imagines: never stored, never opened.
_IMAGINED_ROOM: Final = "persona_view"


@dataclass(frozen=True, slots=True)
class PersonaRow:
    """One line of the page: the row, and its arc once it stopped being believed."""

    memory: Memory
    arc: str | None  # "2026-07 → 2026-11" for a closed or superseded row; None while active


@dataclass(frozen=True, slots=True)
class PersonaMemories:
    """One persona's part of the page: its rows about the user, newest first, and its meter."""

    persona: str
    rows: tuple[PersonaRow, ...]
    chars_current: int
    chars_limit: int

    @property
    def meter(self) -> str:
        return f"{self.chars_current} / {self.chars_limit}"


def arc(memory: Memory) -> str | None:
    """When a history row was believed, at month precision: from when it became true (or
    was written) to when it stopped. None for a row still believed."""
    if memory.status is Status.ACTIVE or memory.valid_to is None:
        return None
    began = memory.valid_from or memory.created_at
    return f"{to_month(began)} → {to_month(memory.valid_to)}"


class PersonaView:
    """The user's memories grouped by the persona that holds them, with each one's meter."""

    def __init__(self, stores: Stores, clock: Clock) -> None:
        self._stores = stores
        self._clock = clock

    def by_persona(
        self, user_id: str, *, status: Status | None = Status.ACTIVE, persona: str | None = None
    ) -> list[PersonaMemories]:
        """Every persona holding rows of `status` (None: every status) about the user,
        by persona name; only `persona`'s group when one is named."""
        rules.user_id(user_id)
        if persona is not None:
            rules.persona(persona)
        listed = list(
            self._stores.memories.iter_memories(
                user_id, MemoryQuery(status=status, persona=persona)
            )
        )
        by_persona: dict[str, list[Memory]] = {}
        for memory in listed:
            by_persona.setdefault(memory.persona, []).append(memory)
        settings = self._stores.user_state.get_settings(user_id)
        now = self._clock.now()
        groups = []
        for name in sorted(by_persona):
            rows = by_persona[name]
            believed = (
                [m for m in rows if m.status is Status.ACTIVE]
                if status in (None, Status.ACTIVE)
                else list(
                    self._stores.memories.iter_memories(
                        user_id, MemoryQuery(status=Status.ACTIVE, persona=name)
                    )
                )
            )
            # The block holds the world facts the persona learned too: the meter counts them.
            world = [
                m
                for m in self._stores.persona_memories.list_persona_memories(name)
                if m.subject == "world"
            ]
            block = self.private_block(name, user_id, [*believed, *world], settings, now)
            groups.append(
                PersonaMemories(
                    persona=name,
                    rows=tuple(PersonaRow(m, arc(m)) for m in rows),
                    chars_current=block.chars_current,
                    chars_limit=block.chars_limit,
                )
            )
        return groups

    @staticmethod
    def private_block(
        persona: str,
        user_id: str,
        rows: Sequence[Memory],
        settings: MemorySettings,
        now: datetime,
    ) -> PersonaBlock:
        """The block `persona` would build for this user alone in a private chat, from
        these rows, through the audience rule; built, never stored, nothing touched."""
        room = Room(
            room_id=_IMAGINED_ROOM,
            kind=RoomKind.PRIVATE,
            created_at=now,
            personas=frozenset({persona}),
            members=frozenset({user_id}),
        )
        present = frozenset({user_id})
        visible = visible_memories(persona, present, room, rows, {user_id: settings})
        allowed = settings.allows(persona) and bool(settings.note)
        notes = {user_id: settings.note} if allowed else {}
        return build_persona_block(persona, present, visible, notes=notes, now=now)
