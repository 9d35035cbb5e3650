"""Which memory rows show: the row half of a delete, an undo and a purge.

A tombstone (`TombstoneStore`) says a memory was deleted; these writes make the rows say
so too, in the same unit of work (`services/deletions.py` composes them).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from chatmemory.domain.memory import Memory
from chatmemory.domain.tombstone import MemoryTrace


class MemoryVisibility(ABC):
    """Hide rows at once, bring a correction's earlier version back, remove rows for good."""

    @abstractmethod
    def traces(self, user_id: str, memory_ids: Sequence[str] | None = None) -> list[MemoryTrace]:
        """What a delete needs of each row a read may show among these ids (of every such
        row of the user when None), read without the row's words or times: a row that no
        longer reads as a memory still has its trace, so it can still be deleted."""

    @abstractmethod
    def hide_memories(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Hide these rows from every read (the half of a delete that touches rows; the
        tombstone is the other half, in the same unit of work). Missing ids are skipped."""

    @abstractmethod
    def hide_active_memory(self, user_id: str, memory_id: str) -> None:
        """Hide one row that must still be visible and active; ConcurrentChange otherwise
        (when the unit of work commits, on stores that check conditions then)."""

    @abstractmethod
    def reinstate_memory(self, reinstated: Memory, *, superseded_by: str) -> None:
        """Make a superseded row active again (`reinstated` as `reinstated_from` built it),
        only while it is visible and still superseded by `superseded_by`; ConcurrentChange
        otherwise."""

    @abstractmethod
    def purge_memories(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Physically delete these rows (the tombstones stay). Missing ids are ignored."""
