"""A persona's own rows that are no one user's: the world facts it learned in rooms and
its own notes with no counterpart (seed 000 §1: `subject` "world", or "self" with no
`counterpart`).

Everything about a user stays in that user's partition: rows about them, and a persona's
promises and open loops whose counterpart they are (so a user's delete-all reaches
those). What lives here is kept in one partition per persona. Its rows name the users
who were present when they formed (`witnessed`); `drop_witness` is how a user's
"forget everything" takes them out of those lists. `Memory.user_id` of a row here is
the persona's slug: the partition it lives in, not a user. As in the memory port, a row
past its `valid_until` reads as absent (DynamoDB's TTL deletes lazily).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

from chatmemory.domain.memory import Memory, Status


class PersonaMemoryStore(ABC):
    """Rows held by a persona alone; each write atomic on its own."""

    @abstractmethod
    def add_persona_memory(self, memory: Memory) -> bool:
        """Insert a new row (subject "world", or "self" with no counterpart, and
        `user_id == persona`); False (and nothing written) if the id exists.
        InvalidField for a row that belongs in a user's partition."""

    @abstractmethod
    def list_persona_memories(
        self, persona: str, status: Status | None = Status.ACTIVE
    ) -> list[Memory]:
        """Every row of the persona with this status (None: all), newest first. A persona
        holds hundreds of these, not millions (seed 000 §6): no paging."""

    @abstractmethod
    def supersede_persona_memory(self, persona: str, old_memory_id: str, new: Memory) -> Memory:
        """Close `old_memory_id` as superseded by `new` and write `new`, atomically; the
        old row as stored. MemoryNotFound if absent, ConcurrentChange if it is no longer
        active or the new id exists — in every failure nothing is written."""

    @abstractmethod
    def close_persona_memory(
        self, persona: str, memory_id: str, at: datetime, closed_by: str | None = None
    ) -> Memory:
        """Mark an active row closed; the closed row. MemoryNotFound if absent,
        ConcurrentChange if it is not active."""

    @abstractmethod
    def record_persona_use(self, persona: str, memory_ids: Sequence[str], at: datetime) -> None:
        """Loading reinforces (`last_used_at=at`, `recall_count += 1`); unknown ids are
        skipped."""

    @abstractmethod
    def drop_witness(self, user_id: str) -> int:
        """Take this user out of the `witnessed` list of every persona's row they were
        present for, whatever its status; how many rows changed. Nothing else of a row
        changes (not its `updated_at`: what it says did not). Idempotent: a second call
        changes none."""
