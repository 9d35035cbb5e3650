"""Memory events: the audit trail behind a memory's history (ids and times, never text)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.memory import Kind
from chatmemory.domain.time import bounded


class Op(StrEnum):
    ADD = "add"
    UPDATE = "update"
    CLOSE = "close"
    DELETE = "delete"
    USE = "use"
    PURGE = "purge"
    RESTORE = "restore"  # believed again: the change that replaced it was undone
    # A thread's manners (seed 004), changed in place; its beats are versions (update).
    ASKED = "asked"  # a persona raised it and the person took it up (or had not replied)
    DEFLECTED = "deflected"  # a persona raised it and the person steered away
    DORMANT = "dormant"  # gone quiet, crowded out, or deflected twice: never raised
    REOPENED = "reopened"  # the person brought a dormant thread back
    RESOLVED = "resolved"  # the story concluded; a plain fact carries it now


class Actor(StrEnum):
    USER = "user"
    EXTRACTOR = "extractor"
    MODEL = "model"
    SYSTEM = "system"


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEvent:
    """Something that happened to a memory. `related_id` links an update to its other half.

    `persona` and `kind` say whose memory and what sort it was, so the change feed built
    from this log never reads a memory row (which holds the words) to describe a change;
    None on events written before they were recorded.
    """

    user_id: str
    memory_id: str
    event_id: str
    op: Op
    actor: Actor
    at: datetime
    related_id: str | None = None
    persona: str | None = None
    kind: Kind | None = None

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        rules.opaque_id("memory_id", self.memory_id)
        rules.opaque_id("event_id", self.event_id)
        try:
            object.__setattr__(self, "op", Op(self.op))
            object.__setattr__(self, "actor", Actor(self.actor))
        except ValueError as exc:
            raise InvalidField("op", "unknown op or actor") from exc
        object.__setattr__(self, "at", bounded("at", self.at))
        if self.related_id is not None:
            rules.opaque_id("related_id", self.related_id)
        if self.persona is not None:
            rules.persona(self.persona)
        if self.kind is not None:
            try:
                object.__setattr__(self, "kind", Kind(self.kind))
            except ValueError as exc:
                raise InvalidField("kind", "unknown kind") from exc
