"""Tombstones: a delete is effective at once, and the purge can find every copy from here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from chatmemory.domain import rules
from chatmemory.domain.events import Actor
from chatmemory.domain.memory import Kind
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
