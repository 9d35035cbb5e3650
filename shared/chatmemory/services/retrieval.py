"""Per-turn recall: the few memories that matter for this message, and nothing else.

index → candidates (plus the store's fresh writes the index may not show yet) → the
store's visible rows only (tombstones, expiry and history are filtered in code, never
trusted to the index) → score → top 5 above a per-embedder threshold.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import numpy as np

from chatmemory.domain import vectors
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.ranking import TURN_LIMIT, Scored, select_for_turn
from chatmemory.ports import Clock, Embedder, MemoryQuery, Store, VectorIndex, Vectors
from chatmemory.services.relevance import RelevanceModel

log = logging.getLogger(__name__)

_CANDIDATES = 20
# A write may take this much longer than the index's refresh interval to be searchable.
_FRESH_MARGIN = timedelta(seconds=30)


@dataclass(frozen=True, slots=True)
class Recalled:
    memory: Memory
    score: float


class Retriever:
    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        index: VectorIndex,
        clock: Clock,
        relevance: RelevanceModel,
        *,
        limit: int = TURN_LIMIT,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._index = index
        self._clock = clock
        self._relevance = relevance
        self._limit = limit

    @property
    def relevance(self) -> RelevanceModel:
        return self._relevance

    def recall(self, user_id: str, message: str, *, persona: str | None = None) -> list[Recalled]:
        """Up to five of the user's active memories worth putting in front of this message."""
        scored, rows = self.candidates(user_id, message, persona=persona)
        chosen = select_for_turn(
            [Scored(memory_id, score) for memory_id, score in scored.items()],
            threshold=self._relevance.threshold,
            limit=self._limit,
        )
        by_id = {memory.memory_id: memory for memory in rows}
        return [Recalled(by_id[c.memory_id], c.score) for c in chosen]

    def candidates(
        self, user_id: str, message: str, *, persona: str | None = None
    ) -> tuple[dict[str, float], list[Memory]]:
        """Every candidate's relevance before the cut, with the visible rows it came from.

        The benchmark draws its recall/injection curve from this; `recall` cuts it.
        """
        query = self._embedder.embed([message])[0]
        hits = {
            hit.memory_id: hit.score
            for hit in self._index.search(user_id, query, k=_CANDIDATES, persona=persona)
        }
        for memory_id, score in self._fresh_hits(user_id, query, persona).items():
            hits[memory_id] = max(score, hits.get(memory_id, -1.0))
        if not hits:
            return {}, []
        # The store has the last word: only rows it still shows may enter a prompt.
        rows = [
            memory
            for memory in self._store.get_memories(user_id, list(hits))
            if memory.status is Status.ACTIVE and not memory.is_expired(self._clock.now())
        ]
        scored = self._relevance.score(message, query, [(m, hits[m.memory_id]) for m in rows])
        return scored, rows

    def _fresh_hits(self, user_id: str, query: Vectors, persona: str | None) -> dict[str, float]:
        """Memories written too recently for a lagging index, scored in-process."""
        lag = self._index.refresh_lag_seconds
        if lag <= 0:
            return {}
        since = self._clock.now() - timedelta(seconds=lag) - _FRESH_MARGIN
        fresh = self._store.list_memories(
            user_id,
            MemoryQuery(status=Status.ACTIVE, persona=persona, created_after=since),
            limit=100,
        ).items
        return {
            memory.memory_id: best_row_score(memory.embedding, query)
            for memory in fresh
            if memory.embedding
        }


def best_row_score(embedding: bytes, query: Vectors) -> float:
    """The cosine of the best of a memory's vectors against the query."""
    rows = vectors.unpack_rows(embedding)
    norms = np.linalg.norm(rows, axis=1)
    scores = (rows @ query.reshape(-1)) / np.where(norms > 0, norms, 1.0)
    return float(np.max(scores))


def recall_safely(
    retriever: Retriever, user_id: str, message: str, *, persona: str | None
) -> tuple[list[Recalled], bool]:
    """Recall, or nothing if any memory component fails: a turn never breaks on memory.

    Returns (memories, degraded).
    """
    try:
        return retriever.recall(user_id, message, persona=persona), False
    except Exception as exc:
        log.warning(
            "recall failed; answering without memories", extra={"error_type": type(exc).__name__}
        )
        return [], True


def memory_ids(recalled: Sequence[Recalled]) -> list[str]:
    return [item.memory.memory_id for item in recalled]
