"""Deletion bookkeeping: tombstones, the "forget everything" watermark, pending purges.

A tombstone outlives the rows it hid: it keeps a deleted id from ever being written
again and tells the purge what to remove. It holds ids and times, never words.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

from chatmemory.domain.tombstone import Tombstone


class TombstoneStore(ABC):
    """Tombstones and the forget watermark of one user at a time (the sweep aside)."""

    @abstractmethod
    def add_tombstones(
        self, user_id: str, tombstones: Sequence[Tombstone], *, first_only: bool = True
    ) -> None:
        """Write tombstones. `first_only`: tombstoning an id twice keeps the first one;
        otherwise an existing tombstone is a ConcurrentChange. Rows are hidden by
        `MemoryVisibility.hide_memories` in the same unit of work."""

    @abstractmethod
    def get_tombstone(self, user_id: str, memory_id: str) -> Tombstone | None: ...

    @abstractmethod
    def list_tombstones(self, user_id: str, *, unpurged_only: bool = False) -> list[Tombstone]:
        """The user's tombstones, oldest deletion first."""

    @abstractmethod
    def put_tombstone(self, tombstone: Tombstone) -> None:
        """Replace a tombstone (the purge records `purged_at` or its last error here)."""

    @abstractmethod
    def raise_forget_watermark(self, user_id: str, at: datetime) -> bool:
        """Hide every memory created up to `at`. The watermark never moves back: False
        (nothing written) if a later one is already in place."""

    @abstractmethod
    def forgotten_before(self, user_id: str) -> datetime | None:
        """When the user last asked to forget everything (the watermark), or None."""

    @abstractmethod
    def pending_purges(self, *, deleted_before: datetime, limit: int = 100) -> list[str]:
        """Users with tombstones deleted before `deleted_before` whose purge has not
        finished, oldest deletion first.

        A read across users, for the daily sweep and `chatmemory flush` only.
        """
