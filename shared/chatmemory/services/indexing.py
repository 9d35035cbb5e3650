"""Gives each memory its vectors on write, and keeps the vector index in step with the store.

Vectors are computed once per memory and stored with the row (so the index can always be
rebuilt): row 0 embeds what the memory says, row 1 what it is useful for.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

import numpy as np

from chatmemory.domain import rules, vectors
from chatmemory.domain.memory import Memory
from chatmemory.domain.uses import CATEGORY_DESCRIPTIONS, uses_for, uses_text
from chatmemory.ports import Embedder, VectorIndex, Vectors

log = logging.getLogger(__name__)


class MemoryIndexer:
    def __init__(self, embedder: Embedder, index: VectorIndex) -> None:
        self._embedder = embedder
        self._index = index
        self._category_vectors: Vectors | None = None

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    def prepare(self, memory: Memory) -> Memory:
        """The memory with its uses and vectors; unchanged if embedding fails (logged).

        A row written without vectors is embedded later by the read path, so a failing
        embedder never blocks remembering something.
        """
        uses = self.uses_of(memory)
        try:
            texts = [memory.text] + ([uses_text(uses)] if uses else [])
            embedding = vectors.pack_rows(self._embedder.embed(texts))
        except Exception as exc:  # degrade: store the memory, embed it on a later read
            log.warning("embedding failed on write", extra={"error_type": type(exc).__name__})
            return memory
        meta = dict(memory.meta)
        if uses and "uses" not in meta:
            meta["uses"] = list(uses)
        return dataclasses.replace(memory, embedding=embedding, meta=meta)

    def uses_of(self, memory: Memory) -> tuple[str, ...]:
        given = memory.meta.get("uses") if isinstance(memory.meta.get("uses"), list) else ()
        category = memory.category
        if not given and category == rules.DEFAULT_CATEGORY:
            category = self.guess_category(memory.text) or category
        return uses_for(category, given or ())

    def guess_category(self, text: str) -> str | None:
        """The recommended category whose description is nearest, if any is near enough."""
        try:
            names = list(CATEGORY_DESCRIPTIONS)
            if self._category_vectors is None:
                self._category_vectors = self._embedder.embed(
                    [CATEGORY_DESCRIPTIONS[name] for name in names]
                )
            scores = self._category_vectors @ self._embedder.embed([text])[0]
        except Exception as exc:
            log.warning("category guess failed", extra={"error_type": type(exc).__name__})
            return None
        best = int(np.argmax(scores))
        return names[best] if float(scores[best]) >= _CATEGORY_FLOOR else None

    def publish(self, memory: Memory) -> None:
        """Index a stored memory; a failure is logged (the read path merges fresh rows)."""
        if memory.embedding is None:
            return
        try:
            self._index.upsert(memory)
        except Exception as exc:
            log.warning("index upsert failed", extra={"error_type": type(exc).__name__})

    def withdraw(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Drop memories from the index; a failure is logged (the read path filters them)."""
        try:
            self._index.remove(user_id, memory_ids)
        except Exception as exc:
            log.warning("index removal failed", extra={"error_type": type(exc).__name__})


# Below this cosine a description is no better than a guess (MiniLM scale).
_CATEGORY_FLOOR = 0.15
