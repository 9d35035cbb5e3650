"""Tombstones: a delete is effective at once, and the purge can find every copy from here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.events import Actor
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.time import require_utc


@dataclass(frozen=True, slots=True, kw_only=True)
class Tombstone:
    """Ids and times only, never text: it outlives the row it stands for.

    - `versions`: every row of the belief that carries its words (older versions too);
    - `source_message_ids` / `conversation_ids`: where summaries may have folded it in;
    - `persona`: whose profile may have been built from it;
    - `kind`: what sort of memory it was (the purge's change event tells it); None on
      tombstones from before it was kept.
    """

    user_id: str
    memory_id: str
    deleted_at: datetime
    actor: Actor = Actor.USER
    persona: str = rules.DEFAULT_PERSONA
    kind: Kind | None = None
    versions: tuple[str, ...] = ()
    source_message_ids: tuple[str, ...] = ()
    conversation_ids: tuple[str, ...] = ()
    purged_at: datetime | None = None
    purge_error: str | None = None

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        rules.opaque_id("memory_id", self.memory_id)
        object.__setattr__(self, "deleted_at", require_utc("deleted_at", self.deleted_at))
        object.__setattr__(self, "actor", Actor(self.actor))
        rules.persona(self.persona)
        if self.kind is not None:
            object.__setattr__(self, "kind", Kind(self.kind))
        versions = self.versions or (self.memory_id,)
        object.__setattr__(self, "versions", rules.id_tuple("versions", versions))
        object.__setattr__(
            self,
            "source_message_ids",
            rules.id_tuple("source_message_ids", self.source_message_ids),
        )
        object.__setattr__(
            self, "conversation_ids", rules.id_tuple("conversation_ids", self.conversation_ids)
        )
        if self.purged_at is not None:
            object.__setattr__(self, "purged_at", require_utc("purged_at", self.purged_at))
        if self.purge_error is not None:
            rules.text("purge_error", self.purge_error, 300)

    @property
    def is_purged(self) -> bool:
        return self.purged_at is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryTrace:
    """What a delete needs of one stored row: its ids and places, never its words or its
    times. A delete reads this instead of the row, so a row that no longer reads as a
    memory (written by an older rule, or damaged on disk) is deleted and forgotten like
    any other; a field of it that does not read is left out, never in the way.

    - `persona`: whose profile to rebuild (the default persona when it does not read);
    - `kind`, `status`: for the delete's event, and whether the row was history;
    - `supersedes`: the older version a delete takes with it;
    - `room_id`, `message_ids` (its source message and evidence): where the purge looks
      for copies.
    """

    user_id: str
    memory_id: str
    persona: str = rules.DEFAULT_PERSONA
    kind: Kind | None = None
    status: Status | None = None
    supersedes: str | None = None
    room_id: str | None = None
    message_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        rules.opaque_id("memory_id", self.memory_id)

    @classmethod
    def of(cls, memory: Memory) -> MemoryTrace:
        """The trace of a row that reads."""
        message_ids = (memory.source_message_id, *memory.evidence)
        return cls(
            user_id=memory.user_id,
            memory_id=memory.memory_id,
            persona=memory.persona,
            kind=memory.kind,
            status=memory.status,
            supersedes=memory.supersedes,
            room_id=memory.room_id,
            message_ids=tuple(dict.fromkeys(m for m in message_ids if m)),
        )

    @classmethod
    def read(
        cls,
        user_id: str,
        memory_id: str,
        *,
        persona: object,
        kind: object,
        status: object,
        supersedes: object,
        room_id: object,
        message_ids: object,
    ) -> MemoryTrace:
        """The trace of a stored row from its raw fields, each kept only if it reads."""
        given = message_ids if isinstance(message_ids, list | tuple) else ()
        readable = (_readable(lambda v: rules.opaque_id("evidence", v, 160), m) for m in given)
        return cls(
            user_id=user_id,
            memory_id=memory_id,
            persona=_readable(rules.persona, persona) or rules.DEFAULT_PERSONA,
            kind=_readable(Kind, kind),
            status=_readable(Status, status),
            supersedes=_readable(lambda v: rules.opaque_id("supersedes", v), supersedes),
            room_id=_readable(lambda v: rules.opaque_id("room_id", v), room_id),
            message_ids=tuple(dict.fromkeys(m for m in readable if m)),
        )


_T = TypeVar("_T")


def _readable(check: Callable[[str], _T], value: object) -> _T | None:
    """`check(value)` when the value is a string it accepts, else None."""
    if not isinstance(value, str):
        return None
    try:
        return check(value)
    except (InvalidField, ValueError):
        return None
