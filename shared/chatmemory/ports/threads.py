"""Thread rows (seed 004): a user's threads read on every turn, their manners changed in
place, and the nightly review's listing.

A thread is a memory row of kind `thread`, so every rule of `MemoryStore` holds for it
(visibility, tombstones, versions); these are the reads and the one write threads need
beyond it, each cheap enough for the per-turn path or the nightly job.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from chatmemory.domain.events import MemoryEvent
from chatmemory.domain.memory import Memory


class ThreadStore(ABC):
    """A user's thread rows, their manners, and which live threads have gone quiet."""

    @abstractmethod
    def list_threads(self, user_id: str, persona: str | None = None) -> list[Memory]:
        """The user's visible active rows of kind `thread` (every thread status: live,
        dormant, resolved), of this persona if given; newest first. It never reads the
        user's other rows: the read path calls it on every turn."""

    @abstractmethod
    def set_thread_meta(
        self,
        user_id: str,
        memory_id: str,
        meta: Mapping[str, Any],
        at: datetime,
        *,
        expected: Mapping[str, Any],
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        """Replace the `meta` of an active thread row, only while its meta still equals
        `expected` (what the caller read), with `updated_at = max(at, updated_at)`; the
        events land in the same atomic write. Returns the row as stored.

        MemoryNotFound if the row is not visible; ConcurrentChange if it is not an active
        thread or its meta moved on since it was read — nothing is written then.
        """

    @abstractmethod
    def threads_due(self, on: date, limit: int = 100) -> list[tuple[str, str]]:
        """(user id, memory id) of live thread rows whose review date
        (`domain.threads.review_date`) is on or before `on`, oldest first, at most `limit`.

        The one read across users for threads — for the nightly review, never on the
        request path. A row listed may have moved on since (the review re-reads it).
        """
