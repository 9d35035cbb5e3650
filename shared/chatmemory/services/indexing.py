"""Gives each memory its vectors on write, and keeps the vector index in step with the store.

Vectors are computed once per memory and stored with the row (so the index can always be
rebuilt): row 0 embeds what the memory says (8-bit codes), the next rows one use each
(4-bit codes) — up to seven, as many as fit the row's vector budget. A correction's row 1
embeds the words of the version it replaced instead, while that version is kept
(domain/reach.py), and its uses follow.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence

import numpy as np

from chatmemory.domain import reach, rules, vectors
from chatmemory.domain.memory import Memory
from chatmemory.domain.uses import (
    CATEGORY_DESCRIPTIONS,
    CATEGORY_USES,
    MAX_USES,
    recommended_category,
    uses_for,
)
from chatmemory.ports.embedder import Embedder, Vectors
from chatmemory.ports.memories import MemoryStore
from chatmemory.ports.vector_index import VectorIndex
from chatmemory.services.relevance import USES_FROM_CATEGORY

log = logging.getLogger(__name__)


class MemoryIndexer:
    """Takes its embedder and index as they are or as providers, called on first use, so a
    service built with an indexer never loads a model until a write needs vectors."""

    def __init__(
        self,
        embedder: Embedder | Callable[[], Embedder],
        index: VectorIndex | Callable[[], VectorIndex],
    ) -> None:
        self._embedder_of = embedder if callable(embedder) else lambda: embedder
        self._index_of = index if callable(index) else lambda: index
        self._category_vectors: tuple[Vectors, dict[str, Vectors]] | None = None

    @property
    def embedder(self) -> Embedder:
        return self._embedder_of()

    @property
    def _index(self) -> VectorIndex:
        return self._index_of()

    def prepare(self, memory: Memory, *, replaced: Memory | None = None) -> Memory:
        """The memory with its uses and vectors; as it was if embedding fails (logged).
        Given the version it replaced, still kept as history, that version's words are
        embedded too, in place of the last use (domain/reach.py).

        A row written without vectors is stored all the same and embedded by the uses job
        (`services/uses.py`, queued by the write or by the daily sweep) or the re-index
        (`services/reindex.py`; a room's rows by the read path), so a failing embedder
        never blocks remembering something.
        """
        kept = reach.words_to_keep(memory, replaced) if self.max_uses else None
        meta = {key: value for key, value in memory.meta.items() if key != reach.REACH}
        try:
            said = self.embedder.embed([memory.text])
            uses, borrowed = self.uses_of(memory, said[0])
            others = [*([kept] if kept else []), *uses][: self.max_uses]
            rows = np.vstack([said, self.embedder.embed(others)]) if others else said
            embedding = vectors.pack_rows(rows, compact_after=1)
        except Exception as exc:  # degrade: store the memory, embed it on a later read
            log.warning("embedding failed on write", extra={"error_type": type(exc).__name__})
            return memory
        if kept:
            meta[reach.REACH] = reach.REPLACED
        # borrowed uses are chosen again on every embedding: list what the vectors hold
        if uses and (borrowed or "uses" not in meta):
            meta["uses"] = list(uses)
        if borrowed:
            meta["uses_from"] = USES_FROM_CATEGORY
        return dataclasses.replace(memory, embedding=embedding, meta=meta)

    @property
    def max_uses(self) -> int:
        """How many use vectors fit beside the text's within the row's vector budget."""
        dimensions = self.embedder.dimensions
        room = _VECTOR_BUDGET_BYTES - vectors.packed_size(dimensions)
        fitting = room // vectors.packed_size(dimensions, bits=4)
        return max(0, min(MAX_USES, fitting))

    def uses_of(self, memory: Memory, said: Vectors) -> tuple[tuple[str, ...], bool]:
        """The memory's uses, and whether they were borrowed.

        A memory without uses of its own borrows its category's, then, up to the row's
        budget, those of the other category its words are nearest to: one category's
        requests are a coarse guess at what a fact is for ("Is lactose intolerant." filed
        under health is also asked about by "what should I cook?"), two cover more of it.
        `said` is the vector of the memory's words.
        """
        given = memory.meta.get("uses")
        own = tuple(str(use) for use in given) if isinstance(given, list) else ()
        if own and memory.meta.get("uses_from") != USES_FROM_CATEGORY:
            return uses_for(memory.category, own), False
        nearest = self.nearest_categories(said)
        first = self.category_for_uses(memory, nearest)
        uses = list(uses_for(first))
        second = next((name for name in nearest if name != first), None)
        if uses and second is not None:
            uses += [use for use in CATEGORY_USES[second] if use not in uses]
        return tuple(uses[:MAX_USES]), bool(uses)

    def category_for_uses(self, memory: Memory, nearest: Sequence[str] = ()) -> str:
        """The recommended category whose uses a memory without its own borrows first.

        The API takes any category name: one it does not recommend ("food", "pet_care",
        "career") borrows from the recommended one it stands for, and one that says nothing
        ("general", "misc") from the category its words are nearest to (`nearest`, best
        first), so a typed memory is never left with no uses at all.
        """
        category = memory.category
        if category in CATEGORY_USES:
            return category
        named = None if category == rules.DEFAULT_CATEGORY else recommended_category(category)
        return named or next(iter(nearest), None) or category

    def nearest_categories(self, said: Vectors) -> list[str]:
        """The recommended categories, nearest to these words' vector first: by the
        description of each and by how well its uses fit them. Empty if the embedder fails."""
        try:
            descriptions, uses = self._category_vectors_of()
        except Exception as exc:
            log.warning("category guess failed", extra={"error_type": type(exc).__name__})
            return []
        scores = {
            name: float(descriptions[i] @ said) + float((uses[name] @ said).mean())
            for i, name in enumerate(CATEGORY_DESCRIPTIONS)
        }
        return sorted(scores, key=lambda name: -scores[name])

    def warm_up(self) -> None:
        """Embed the categories' descriptions and uses now (80 short texts, once per
        process), so the first memory typed after a start does not wait for them."""
        self._category_vectors_of()

    def _category_vectors_of(self) -> tuple[Vectors, dict[str, Vectors]]:
        if self._category_vectors is None:
            names = list(CATEGORY_DESCRIPTIONS)
            descriptions = self.embedder.embed([CATEGORY_DESCRIPTIONS[name] for name in names])
            phrases = [use for name in names for use in CATEGORY_USES[name]]
            embedded = self.embedder.embed(phrases)  # one batch, not one per category
            uses, start = {}, 0
            for name in names:
                end = start + len(CATEGORY_USES[name])
                uses[name] = embedded[start:end]
                start = end
            self._category_vectors = (descriptions, uses)
        return self._category_vectors

    def replaced_of(self, memories: MemoryStore, memory: Memory) -> Memory | None:
        """The version `memory` replaced, while it is still kept to be reached through it:
        what a re-embedding passes to `prepare`."""
        if memory.supersedes is None:
            return None
        return memories.get_memory(memory.user_id, memory.supersedes)

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


# Vectors per row: keys, ids, timestamps, the text and its uses' words take ~900 bytes of
# a DynamoDB item, so ~1.8 KB of vectors keeps a row near 2.7 KB (bench/storage.py). With
# MiniLM that is the text plus seven uses at 4 bits (from two at 8 bits: test Recall@5
# +0.05 on bench/data with the same uses); Titan at 1024 dimensions fits one use, at 512
# four.
_VECTOR_BUDGET_BYTES = 1800
