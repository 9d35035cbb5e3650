"""Nearest-neighbour search over one user's memory vectors."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from chatmemory.domain.memory import Memory
from chatmemory.ports.embedder import Vectors
from chatmemory.ports.recall_source import MemoryDigest


@dataclass(frozen=True, slots=True)
class VectorHit:
    memory_id: str
    score: float  # cosine similarity, best of the memory's vectors
    said: float | None = None  # cosine to what the memory says (row 0), if known
    useful: float | None = None  # best cosine to what it is useful for (rows 1+), if any
    uses: tuple[float, ...] = ()  # the cosine of every use row the index saw, best first
    # Known to an index that reads the store itself (so its hits are visible rows):
    importance: int | None = None
    borrowed_uses: bool | None = None


class VectorIndex(ABC):
    """Finds a user's memories nearest to a query vector.

    Every search is scoped to one user: there is no way to search without a user id.
    An index may lag the store (`refresh_lag`); the read path merges fresh writes from
    the store and drops anything the store no longer shows, so the index is never the
    only source of truth.
    """

    #: how long after a write the index may still not return it
    refresh_lag_seconds: float = 0.0

    @abstractmethod
    def upsert(self, memory: Memory) -> None:
        """Index (or re-index) an active memory's vectors; rows without vectors are skipped."""

    @abstractmethod
    def remove(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Drop these memories from the index. Unknown ids are ignored."""

    @abstractmethod
    def search(
        self,
        user_id: str,
        query: Vectors,
        *,
        k: int,
        persona: str | None = None,
        visible: Sequence[MemoryDigest] | None = None,
    ) -> list[VectorHit]:
        """Up to k of this user's active, unexpired memories, best first (one hit per memory).

        `query` is one L2-normalised vector. Raises InvalidField("user_id") without a user.
        `visible`: the store's digests of this user's memories in use (for `persona`), when
        the caller read them this turn; an index that reads them itself takes these instead
        of reading them again. The answer is the same either way.
        """
