"""Re-index on both stores: a memory stored while the embedder failed, or with another
embedder's vectors, is recalled again afterwards; a new, empty index is filled; a
correction made meanwhile wins; a second run changes nothing."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.adapters.opensearch_index import OpenSearchIndex
from chatmemory.domain import vectors
from chatmemory.domain.memory import Memory
from chatmemory.ports.embedder import Embedder, Vectors
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.recall import RecallRequest, RecallService
from chatmemory.services.reindex import Reindexed, Reindexer
from chatmemory.services.relevance import RelevanceModel, params_for
from tests.support.opensearch_fake import FakeCollection

ALICE, BOB = "alice", "bob"
SALMON = "Cooks salmon dinner every Friday."


class DownEmbedder(Embedder):
    """An embedder that is unreachable (a throttled Bedrock, say)."""

    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.name = f"hashing-{dimensions}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise ConnectionError("embedder unreachable")


class SaltedEmbedder(HashingEmbedder):
    """Another model of the same size: the same words land anywhere else."""

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows = [
            np.random.default_rng(zlib.crc32(text.encode())).standard_normal(self.dimensions)
            for text in texts
        ]
        return np.asarray([row / np.linalg.norm(row) for row in rows], dtype=np.float32)


def recalled(stores: Stores, clock: ManualClock, user: str, query: str) -> list[str]:
    embedder = HashingEmbedder()
    relevance = RelevanceModel(embedder, params_for(embedder.name))
    service = RecallService(stores, embedder, clock, relevance, floor=0.3, related_floor=0.05)
    return [hit.memory.text for hit in service.recall(RecallRequest(user, query)).hits]


def remember(
    stores: Stores, clock: ManualClock, embedder: Embedder, user: str, text: str
) -> Memory:
    indexer = MemoryIndexer(embedder, ExactIndex(stores.recall))
    return MemoryService(stores, clock, indexer).create(user, NewMemory(text=text)).memory


def reindexer(stores: Stores, index: Any = None) -> Reindexer:
    return Reindexer(stores, MemoryIndexer(HashingEmbedder(), index or ExactIndex(stores.recall)))


def test_a_memory_stored_while_the_embedder_was_down_is_recalled_after_a_reindex(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a memory saved while the embedder failed: kept, but never recalled
    remember(stores, clock, DownEmbedder(), ALICE, SALMON)
    assert recalled(stores, clock, ALICE, "salmon dinner friday") == []

    # When the re-index runs
    done = reindexer(stores).run()

    # Then it is recalled like any other, and a second run has nothing to do
    assert recalled(stores, clock, ALICE, "salmon dinner friday") == [SALMON]
    assert (done.users, done.embedded, done.unembedded) == (1, 1, 0)
    assert reindexer(stores).run() == Reindexed(users=1)


def test_vectors_of_another_embedder_size_are_made_again(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a memory embedded at another size (the embedder changed since)
    old = remember(stores, clock, HashingEmbedder(dimensions=256), ALICE, SALMON)
    assert old.embedding is not None and vectors.dimensions(old.embedding) == 256

    # When the re-index runs with today's embedder
    reindexer(stores).run([ALICE])

    # Then its vectors are today's size and it is recalled; its words unchanged, its uses
    # still borrowed (typed with no category, today's model chose where from), and the
    # uses it lists are the ones its vectors hold
    (now,) = stores.memories.iter_memories(ALICE)
    assert now.embedding is not None and vectors.dimensions(now.embedding) == 384
    assert now.text == old.text
    assert now.meta["uses_from"] == old.meta["uses_from"] == "category"
    assert len(vectors.unpack_rows(now.embedding)) == 1 + len(now.meta["uses"])
    assert recalled(stores, clock, ALICE, "salmon dinner friday") == [SALMON]


def test_reembed_replaces_vectors_another_model_of_the_same_size_made(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a memory embedded by another 384-dimension model (no size check can tell)
    other = remember(stores, clock, SaltedEmbedder(), ALICE, SALMON)
    assert reindexer(stores).run().embedded == 0
    assert recalled(stores, clock, ALICE, "salmon dinner friday") == []

    # When every memory is embedded again
    done = reindexer(stores).run(reembed=True)

    # Then it has today's model's vectors and is recalled
    (now,) = stores.memories.iter_memories(ALICE)
    assert done.embedded == 1 and now.embedding != other.embedding
    assert recalled(stores, clock, ALICE, "salmon dinner friday") == [SALMON]


def test_recall_goes_on_while_some_memories_wait_for_vectors_of_the_new_size(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a memory from before the embedder changed size, and one from after
    remember(stores, clock, HashingEmbedder(dimensions=256), ALICE, SALMON)
    bees = remember(stores, clock, HashingEmbedder(), ALICE, "Keeps bees on the roof of the house.")

    # Then the index a turn searches answers with the one it can compare, not an error
    query = HashingEmbedder().embed(["bees on the roof"])[0]
    assert [hit.memory_id for hit in ExactIndex(stores.recall).search(ALICE, query, k=5)] == [
        bees.memory_id
    ]

    # When she asks about either before the re-index: the new one is recalled, the old
    # one waits (the turn does not fail)
    assert recalled(stores, clock, ALICE, "bees on the roof") == [
        "Keeps bees on the roof of the house."
    ]
    assert SALMON not in recalled(stores, clock, ALICE, "salmon dinner friday")

    # And after it, both are
    reindexer(stores).run()
    assert recalled(stores, clock, ALICE, "salmon dinner friday")[:1] == [SALMON]


def test_a_new_index_is_filled_with_every_memory_in_use_and_nothing_else(
    stores: Stores, clock: ManualClock
) -> None:
    # Given memories of two users, one of them deleted, and a new, empty index
    remember(stores, clock, HashingEmbedder(), ALICE, SALMON)
    gone = remember(stores, clock, HashingEmbedder(), ALICE, "Has a tortoise named Sheldon.")
    remember(stores, clock, HashingEmbedder(), BOB, "Keeps bees on the roof.")
    indexer = MemoryIndexer(HashingEmbedder(), ExactIndex(stores.recall))
    MemoryService(stores, clock, indexer).delete(ALICE, gone.memory_id)
    index = OpenSearchIndex(
        client=FakeCollection(refresh_on_write=True).client(),
        index_name="memories-new",
        dimensions=384,
        clock=clock,
    )
    index.ensure_index()
    query = HashingEmbedder().embed(["salmon dinner"])[0]
    assert index.search(ALICE, query, k=5) == []

    # When the re-index republishes
    done = reindexer(stores, index).run(republish=True)

    # Then the index holds each user's memories in use, and never the deleted one
    assert done.published == 2 and done.users == 2
    hits = {hit.memory_id for hit in index.search(ALICE, query, k=5)}
    assert gone.memory_id not in hits and len(hits) == 1
    assert len(index.search(BOB, HashingEmbedder().embed(["bees"])[0], k=5)) == 1


def test_a_correction_made_while_the_reindex_read_the_row_wins(
    stores: Stores, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a memory without vectors, corrected after the re-index read it
    stale = remember(stores, clock, DownEmbedder(), ALICE, SALMON)
    service = MemoryService(
        stores, clock, MemoryIndexer(HashingEmbedder(), ExactIndex(stores.recall))
    )
    corrected = service.correct(ALICE, stale.memory_id, text="Cooks salmon dinner every Sunday.")

    def as_read(user_id: str, query: MemoryQuery | None = None) -> Iterator[Memory]:
        yield stale

    monkeypatch.setattr(stores.memories, "iter_memories", as_read)

    # When the re-index writes what it made from the old words
    done = reindexer(stores).reindex_user(ALICE)

    # Then nothing was written over the correction
    assert (done.embedded, done.changed) == (0, 1)
    monkeypatch.undo()
    assert [m.text for m in stores.memories.iter_memories(ALICE)] == [corrected.text]


def test_every_owner_is_listed_once_and_segments_split_them(
    stores: Stores, clock: ManualClock
) -> None:
    users = [f"user-{n:02d}" for n in range(12)]
    for user in users:
        remember(stores, clock, HashingEmbedder(), user, SALMON)
        remember(stores, clock, HashingEmbedder(), user, "Keeps bees on the roof.")

    assert sorted(stores.memories.memory_owners()) == users
    parts = [sorted(stores.memories.memory_owners(segment=s, segments=3)) for s in range(3)]
    assert sorted(user for part in parts for user in part) == users
