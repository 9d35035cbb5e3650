"""Which memories recall even considers: the index ranks a memory by its single nearest
vector, relevance by the blend of what it says and what it is for. A memory whose words and
uses both fit a question, though none of them alone is the nearest, must still be weighed —
not lost behind many memories with one lucky phrase each."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import numpy as np
import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.adapters.opensearch_index import OpenSearchIndex
from chatmemory.domain import fading
from chatmemory.domain.uses import CATEGORY_DESCRIPTIONS, CATEGORY_USES
from chatmemory.ports.embedder import Embedder, Vectors
from chatmemory.ports.stores import Stores
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.relevance import RelevanceModel, RelevanceParams
from chatmemory.services.retrieval import Retriever
from tests.support.fast_moto import quick_transactions
from tests.support.opensearch_fake import FakeCollection

ALICE = "alice"
QUESTION = "what should I bring to the potluck?"
NEEDED = "Bakes sourdough every weekend."
NEEDED_CATEGORY = "hobbies"  # its uses come from this category's table
LUCKY = 60  # more memories with one phrase nearer the question than anything the needed one has
#: the category the lucky ones' words are nearest to, whose uses they borrow after their own
#: (it must not be the needed one's, whose uses fit the question)
LUCKY_ALSO = "diet"


class Directions(Embedder):
    """Unit vectors by hand: the question is one axis; each text sits at a chosen angle."""

    name = "directions"
    dimensions = 8

    def __init__(self) -> None:
        self._needed_uses = set(CATEGORY_USES[NEEDED_CATEGORY])

    def embed(self, texts: Sequence[str]) -> Vectors:
        return np.stack([self._vector(text) for text in texts]).astype(np.float32)

    def _vector(self, text: str) -> Vectors:
        if text == QUESTION:
            return _at(1.0, axis=1)
        if text == NEEDED:
            return _at(0.45, axis=2)
        if text in self._needed_uses:
            return _at(0.55, axis=3)
        if text.startswith("Lucky fact") or text == CATEGORY_DESCRIPTIONS[LUCKY_ALSO]:
            return _at(0.60, axis=4)  # nearer than any vector of the needed memory...
        return _at(0.0, axis=5)  # ...but its uses say nothing about the question


def _at(cosine: float, *, axis: int) -> Vectors:
    """A unit vector whose cosine to the question's axis is `cosine`."""
    vector = np.zeros(Directions.dimensions, dtype=np.float32)
    vector[0] = cosine
    vector[axis] = (1 - cosine**2) ** 0.5
    return vector


@pytest.mark.parametrize("stores", ["sqlite"], indirect=True)
def test_a_memory_whose_words_and_uses_together_fit_best_is_recalled_behind_many_lucky_phrases(
    stores: Stores, clock: ManualClock
) -> None:
    # Given one memory whose words and uses all fit the question moderately, and sixty others
    # that each have one phrase nearer to it, and nothing else that fits
    embedder = Directions()
    index = ExactIndex(stores.recall)
    memories = MemoryService(stores, clock, MemoryIndexer(embedder, index))
    for n in range(LUCKY):
        memories.create(ALICE, NewMemory(text=f"Lucky fact number {n}.", category="work"))
    needed = memories.create(ALICE, NewMemory(text=NEEDED, category=NEEDED_CATEGORY)).memory
    params = RelevanceParams(
        threshold=0.32, gate_floor=None, own_uses_weight=0.9, category_uses_weight=0.7
    )
    retriever = Retriever(stores, embedder, index, clock, RelevanceModel(embedder, params))

    # When the question is asked
    recalled = [item.memory.memory_id for item in retriever.recall(ALICE, QUESTION)]

    # Then the memory that fits it as a whole comes first
    assert recalled[:1] == [needed.memory_id]


SET_ASIDE = 100  # beliefs set aside at the cap, each nearer the question than the needed one


@pytest.mark.parametrize("stores", ["sqlite", "dynamodb"], indirect=True)
def test_a_memory_in_use_is_recalled_behind_a_hundred_the_index_still_holds_but_set_aside(
    stores: Stores, clock: ManualClock
) -> None:
    # Given, on the OpenSearch path, a hundred memories nearer to the question than the
    # one it needs, all set aside at the cap since (the index still holds them)
    embedder = Directions()
    index = OpenSearchIndex(
        client=FakeCollection(refresh_on_write=True).client(),
        index_name="memories",
        dimensions=Directions.dimensions,
        clock=clock,
    )
    index.ensure_index()
    memories = MemoryService(stores, clock, MemoryIndexer(embedder, index))
    with quick_transactions():  # seeding only
        crowd = [
            memories.create(ALICE, NewMemory(text=f"Lucky fact {n}.", category="work")).memory
            for n in range(SET_ASIDE)
        ]
        needed = memories.create(ALICE, NewMemory(text=NEEDED, category=NEEDED_CATEGORY)).memory
        stores.memories.set_fading(ALICE, [fading.set_aside(m, clock.now()) for m in crowd])
    clock.advance(timedelta(hours=1))  # long past the index's refresh lag
    params = RelevanceParams(
        threshold=0.32, gate_floor=None, own_uses_weight=0.9, category_uses_weight=0.7
    )
    retriever = Retriever(stores, embedder, index, clock, RelevanceModel(embedder, params))

    # When the question is asked
    recalled = [item.memory.memory_id for item in retriever.recall(ALICE, QUESTION)]

    # Then the memory in use is recalled, and none of those set aside
    assert recalled == [needed.memory_id]
