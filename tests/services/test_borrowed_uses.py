"""The uses a typed memory borrows: its category's first, then the nearest other
category's, from vectors of the categories embedded once per process — at start-up, so the
first memory typed after it waits for nothing but its own words."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.hashing_embedder import HashingEmbedder
from chatmemory.domain import vectors
from chatmemory.domain.uses import CATEGORY_USES, MAX_USES
from chatmemory.ports.embedder import Vectors
from chatmemory.ports.stores import Stores
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory

ALICE = "alice"


class Counting(HashingEmbedder):
    """Counts the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += list(texts)
        return super().embed(texts)


def test_after_the_warm_up_a_typed_memory_embeds_only_its_own_words_and_uses(
    stores: Stores, clock: ManualClock
) -> None:
    # Given an indexer warmed up as a starting server warms it
    embedder = Counting()
    indexer = MemoryIndexer(embedder, ExactIndex(stores.recall))
    indexer.warm_up()
    warmed = len(embedder.texts)
    memories = MemoryService(stores, clock, indexer)

    # When the first memory is typed, under a category and under none
    typed = memories.create(ALICE, NewMemory(text="Is lactose intolerant.", category="diet"))
    plain = memories.create(ALICE, NewMemory(text="Keeps two guinea pigs."))

    # Then the categories were embedded once, before; each memory embedded its words (once
    # to find its nearest categories, once with its uses) and no category text again
    assert warmed == len(set(embedder.texts[:warmed])) >= len(CATEGORY_USES)
    later = embedder.texts[warmed:]
    assert not set(later) - {
        "Is lactose intolerant.",
        "Keeps two guinea pigs.",
        *typed.memory.meta["uses"],
        *plain.memory.meta["uses"],
    }
    # and each borrowed its first category's uses, then another's, up to the row's budget
    uses = typed.memory.meta["uses"]
    assert uses[: len(CATEGORY_USES["diet"])] == list(CATEGORY_USES["diet"])
    assert len(CATEGORY_USES["diet"]) < len(uses) <= MAX_USES
    assert 0 < len(plain.memory.meta["uses"]) <= MAX_USES


def test_uses_borrowed_again_replace_the_ones_the_row_listed(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row stored with borrowed uses a release before, as the re-index reads it
    indexer = MemoryIndexer(HashingEmbedder(), ExactIndex(stores.recall))
    memories = MemoryService(stores, clock, indexer)
    typed = memories.create(ALICE, NewMemory(text="Is lactose intolerant.", category="diet"))
    earlier = dataclasses.replace(
        typed.memory,
        embedding=None,
        meta={"uses": list(CATEGORY_USES["diet"]), "uses_from": "category"},
    )

    # When it is embedded again
    again = indexer.prepare(earlier)

    # Then the uses it lists are the ones its vectors now hold
    assert again.meta["uses"] == typed.memory.meta["uses"]
    assert again.embedding is not None
    assert len(vectors.unpack_rows(again.embedding)) == 1 + len(again.meta["uses"])
