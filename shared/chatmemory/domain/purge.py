"""What a purge run covers: ids and a time, never text (it is a workflow's input)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chatmemory.domain import rules
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.time import from_storage, require_utc, to_storage
from chatmemory.domain.tombstone import Tombstone

#: the most memory ids one purge request names; "forget everything" names none
MAX_NAMED = 100


@dataclass(frozen=True, slots=True)
class PurgeRequest:
    """The user's unpurged deletions up to `as_of` — only those of `memory_ids`, if any.

    A time rather than a list keeps "forget everything" small at any size, and leaves a
    deletion made while this purge runs to the purge that deletion starts.
    """

    user_id: str
    as_of: datetime
    memory_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        rules.user_id(self.user_id)
        object.__setattr__(self, "as_of", require_utc("as_of", self.as_of))
        ids = rules.id_tuple("memory_ids", self.memory_ids, MAX_NAMED)
        object.__setattr__(self, "memory_ids", ids)

    def to_payload(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "as_of": to_storage(self.as_of),
            "memory_ids": list(self.memory_ids),
        }

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> PurgeRequest:
        as_of = payload.get("as_of")
        if not isinstance(as_of, str):
            raise InvalidField("as_of", "is required")
        return cls(
            user_id=payload.get("user_id", ""),
            as_of=from_storage(as_of),
            memory_ids=tuple(payload.get("memory_ids") or ()),
        )

    def covers(self, tombstone: Tombstone) -> bool:
        if tombstone.deleted_at > self.as_of:
            return False
        return not self.memory_ids or tombstone.memory_id in self.memory_ids
