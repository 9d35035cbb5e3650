"""The exact index: scores a user's memories in-process with one matrix product.

It reads the store directly, so it never lags: a memory saved on this turn is found on
the next, and a deleted one is never found. The local default, and the fallback on AWS.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from chatmemory.domain import rules, vectors
from chatmemory.domain.memory import Memory
from chatmemory.ports import MemoryDigest, Store, VectorHit, VectorIndex, Vectors

_CACHE_ENTRIES = 20_000  # decoded vectors of ~40 users at the 500-memory cap


class ExactIndex(VectorIndex):
    refresh_lag_seconds = 0.0

    def __init__(self, store: Store) -> None:
        self._store = store
        self._decoded: OrderedDict[str, tuple[bytes, Vectors]] = OrderedDict()
        self._lock = threading.Lock()

    def upsert(self, memory: Memory) -> None:
        """Nothing to do: the rows in the store are the index."""

    def remove(self, user_id: str, memory_ids: Sequence[str]) -> None:
        with self._lock:
            for memory_id in memory_ids:
                self._decoded.pop(memory_id, None)

    def search(
        self, user_id: str, query: Vectors, *, k: int, persona: str | None = None
    ) -> list[VectorHit]:
        rules.user_id(user_id)
        digests = [d for d in self._store.memory_digests(user_id, persona) if d.embedding]
        return self.rank(digests, query, k=k)

    def rank(self, digests: Sequence[MemoryDigest], query: Vectors, *, k: int) -> list[VectorHit]:
        """Best-of-rows cosine for each digest, top k, best first."""
        if not digests or k <= 0:
            return []
        blocks = [self._rows(digest) for digest in digests]
        counts = np.fromiter((len(block) for block in blocks), dtype=np.intp, count=len(blocks))
        matrix = np.concatenate(blocks)
        if matrix.shape[1] != query.shape[-1]:
            raise ValueError("the query and the stored vectors come from different embedders")
        row_scores = matrix @ query.reshape(-1)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        best = np.maximum.reduceat(row_scores, starts)
        top = min(k, len(digests))
        chosen = np.argpartition(-best, top - 1)[:top]
        chosen = chosen[np.argsort(-best[chosen], kind="stable")]
        return [VectorHit(digests[i].memory_id, float(best[i])) for i in chosen]

    def _rows(self, digest: MemoryDigest) -> Vectors:
        assert digest.embedding is not None
        with self._lock:
            cached = self._decoded.get(digest.memory_id)
            if cached is not None and cached[0] == digest.embedding:
                self._decoded.move_to_end(digest.memory_id)
                return cached[1]
        rows = vectors.unpack_rows(digest.embedding)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        rows = (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        with self._lock:
            self._decoded[digest.memory_id] = (digest.embedding, rows)
            if len(self._decoded) > _CACHE_ENTRIES:
                self._decoded.popitem(last=False)
        return rows
