"""Re-index: every memory in use gets vectors of the embedder in use, and the vector index
a copy of each (`chatmemory reindex` locally, the ReindexFunction on AWS).

Why it is needed: a row whose embedder failed when it was written has no vectors (the
uses job and the daily sweep heal those one by one: services/uses.py), and a row written
before the embedder changed (another model, Titan's `VectorDimensions`) has
vectors of another size; recall can compare neither with a question, so neither is ever
recalled. And the vector index is one per embedder size and encoding: after a change
the new one starts empty. A run re-embeds the first two from the words and uses the row
already has (each written back only if the row is still as read: a correction or delete
meanwhile wins) and, with `republish`, sends every memory in use to the index.

Running it again changes nothing a first run did; a row it could not embed keeps what it
had and is tried again next time. Ids and counts only in its logs, never memory text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from chatmemory.domain import vectors
from chatmemory.domain.memory import Memory
from chatmemory.ports.stores import Stores
from chatmemory.services.indexing import MemoryIndexer


@dataclass(frozen=True, slots=True)
class Reindexed:
    """What a run did: users gone through, rows given new vectors, rows sent to the index,
    rows whose embedding failed (kept as they were) and rows changed while read."""

    users: int = 0
    embedded: int = 0
    published: int = 0
    unembedded: int = 0
    changed: int = 0

    def __add__(self, other: Reindexed) -> Reindexed:
        return Reindexed(
            *(
                getattr(self, field.name) + getattr(other, field.name)
                for field in dataclasses.fields(self)
            )
        )


def needs_vectors(memory: Memory, dimensions: int) -> bool:
    """Whether recall could not compare this row with a question embedded now."""
    return memory.embedding is None or vectors.dimensions(memory.embedding) != dimensions


class Reindexer:
    def __init__(self, stores: Stores, indexer: MemoryIndexer) -> None:
        self._stores = stores
        self._indexer = indexer

    def run(
        self,
        user_ids: Iterable[str] | None = None,
        *,
        republish: bool = False,
        reembed: bool = False,
    ) -> Reindexed:
        """Every named user (every user with a memory, if none are named)."""
        users = self._stores.memories.memory_owners() if user_ids is None else user_ids
        total = Reindexed()
        for user_id in users:
            total += self.reindex_user(user_id, republish=republish, reembed=reembed)
        return total

    def reindex_user(
        self, user_id: str, *, republish: bool = False, reembed: bool = False
    ) -> Reindexed:
        """One user's memories in use: vectors where recall cannot read theirs (every
        row's, with `reembed`: another model of the same size left vectors no size check
        can tell apart), and (with `republish`) every one of them sent to the index."""
        dimensions = self._indexer.embedder.dimensions
        embedded = published = unembedded = changed = 0
        for memory in self._stores.memories.iter_memories(user_id):
            current = memory
            if reembed or needs_vectors(memory, dimensions):
                written = self._embedded(memory)
                if written is None:
                    unembedded += 1
                    continue
                if written is memory:
                    changed += 1
                    continue
                current, embedded = written, embedded + 1
            elif not republish:
                continue
            self._indexer.publish(current)
            published += 1
        return Reindexed(1, embedded, published, unembedded, changed)

    def _embedded(self, memory: Memory) -> Memory | None:
        """The row with new vectors, written back; None if the embedder failed (logged by
        the indexer), the row itself if it changed since it was read."""
        prepared = self._indexer.prepare(
            dataclasses.replace(memory, embedding=None),
            replaced=self._indexer.replaced_of(self._stores.memories, memory),
        )
        if prepared.embedding is None:
            return None
        written = self._stores.memories.set_uses(
            memory.user_id,
            memory.memory_id,
            expected=memory,
            meta=prepared.meta,
            embedding=prepared.embedding,
            own=False,
        )
        return prepared if written else memory
