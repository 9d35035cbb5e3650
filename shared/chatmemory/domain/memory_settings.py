"""The user's switches: memory on or off, the note every persona reads, muted personas."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.time import require_utc


@dataclass(frozen=True, slots=True, kw_only=True)
class MemorySettings:
    """`enabled: False` stops reads and writes at once; stored memories stay until deleted."""

    user_id: str
    enabled: bool = True
    note: str = ""
    muted_personas: frozenset[str] = frozenset()
    updated_at: datetime | None = None

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        if not isinstance(self.enabled, bool):
            raise InvalidField("enabled", "must be true or false")
        rules.text("note", self.note, rules.NOTE_MAX, allow_empty=True)
        muted = frozenset(rules.persona(p, "muted_personas") for p in self.muted_personas)
        object.__setattr__(self, "muted_personas", muted)
        if self.updated_at is not None:
            object.__setattr__(self, "updated_at", require_utc("updated_at", self.updated_at))

    def allows(self, persona: str) -> bool:
        """May this persona read and write memories about the user right now?"""
        return self.enabled and persona not in self.muted_personas
