"""The room: where personas and humans meet, and the switches that govern its memory."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.time import require_utc


class RoomKind(StrEnum):
    """A private chat (one human with personas) or a group."""

    PRIVATE = "private"
    GROUP = "group"


@dataclass(frozen=True, slots=True, kw_only=True)
class Room:
    """A room as the memory rules see it.

    `incognito` rooms neither read nor write memories; `fiction` means a game or a
    role-play is running, so nothing said there is extracted as real life (seed 000 §2.1).
    `members` are the user ids of the humans in the room.
    """

    room_id: str
    kind: RoomKind
    created_at: datetime
    incognito: bool = False
    fiction: bool = False
    personas: frozenset[str] = frozenset()
    members: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        rules.opaque_id("room_id", self.room_id)
        try:
            object.__setattr__(self, "kind", RoomKind(str(self.kind)))
        except ValueError as exc:
            raise InvalidField("kind", "must be one of: private, group") from exc
        object.__setattr__(self, "created_at", require_utc("created_at", self.created_at))
        for name in ("incognito", "fiction"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidField(name, "must be true or false")
        personas = frozenset(rules.persona(p, "personas") for p in self.personas)
        object.__setattr__(self, "personas", personas)
        members = frozenset(rules.user_id(m, "members") for m in self.members)
        object.__setattr__(self, "members", members)

    @property
    def is_private_chat(self) -> bool:
        """One human alone with the personas: the only room v1 loads personal memories in."""
        return self.kind is RoomKind.PRIVATE and len(self.members) == 1
