"""Which other memories join the best one in a turn's prompt: those that clear the
companion bar *and* come near enough to the best match. A fact as good as the best one is
likely the second fact the question needs; a much weaker one beside a strong match is a
guess that only takes room in the prompt."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.adapters.exact_index import ExactIndex
from chatmemory.ports.embedder import Embedder, Vectors
from chatmemory.ports.stores import Stores
from chatmemory.services.indexing import MemoryIndexer
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.relevance import RelevanceModel, RelevanceParams
from chatmemory.services.retrieval import Retriever

ALICE = "alice"
QUESTION = "what should I cook for dinner on Saturday?"


class Angles(Embedder):
    """The question is one axis; each known text sits at a chosen cosine to it, every other
    text (the uses a memory borrows from its category) at a right angle."""

    name = "angles"
    dimensions = 8

    def __init__(self, cosines: dict[str, float]) -> None:
        self._cosines = cosines

    def embed(self, texts: Sequence[str]) -> Vectors:
        return np.stack([self._vector(text) for text in texts]).astype(np.float32)

    def _vector(self, text: str) -> Vectors:
        vector = np.zeros(self.dimensions, dtype=np.float32)
        if text == QUESTION:
            vector[0] = 1.0
            return vector
        cosine = self._cosines.get(text, 0.0)
        vector[0] = cosine
        vector[1 + len(text) % (self.dimensions - 1)] = (1 - cosine**2) ** 0.5
        return vector


def _recalled(stores: Stores, clock: ManualClock, cosines: dict[str, float]) -> list[str]:
    embedder = Angles(cosines)
    index = ExactIndex(stores.recall)
    memories = MemoryService(stores, clock, MemoryIndexer(embedder, index))
    for text in cosines:
        memories.create(ALICE, NewMemory(text=text, category="family"))
    # The match is the plain cosine of the words: the bars alone decide.
    params = RelevanceParams(
        threshold=0.3,
        gate_floor=None,
        companion_threshold=0.24,
        companion_ratio=0.75,
        own_uses_weight=0.0,
        category_uses_weight=0.0,
        importance_weight=0.0,
    )
    retriever = Retriever(stores, embedder, index, clock, RelevanceModel(embedder, params))
    return [item.memory.text for item in retriever.recall(ALICE, QUESTION)]


BOYS = "Has two boys, Owen and Finn."
ALLERGY = "Her son Owen is allergic to tree nuts."
CAR = "Bought a blue car last spring."
TOMATOES = "Grows tomatoes on the balcony."

CASES = [
    # (each fact's cosine to the question, what the turn should send, best first)
    pytest.param(
        {ALLERGY: 0.70, BOYS: 0.80, CAR: 0.50},
        [BOYS, ALLERGY],
        id="a second fact nearly as fitting as the best joins it; a weak guess does not",
    ),
    pytest.param(
        {BOYS: 0.50, CAR: 0.40, TOMATOES: 0.30},
        [BOYS, CAR],
        id="beside a modest best match a fact within its share joins; one further back not",
    ),
    pytest.param(
        {BOYS: 0.31, CAR: 0.23},
        [BOYS],
        id="a fact below the companions' floor never joins, however near the best",
    ),
]


@pytest.mark.parametrize("stores", ["sqlite"], indirect=True)
@pytest.mark.parametrize(("cosines", "expected"), CASES)
def test_companions_join_the_best_memory_only_when_near_enough_to_it(
    stores: Stores, clock: ManualClock, cosines: dict[str, float], expected: list[str]
) -> None:
    # Given facts at these cosines to the question (the match is the cosine itself)
    # When the question is asked
    recalled = _recalled(stores, clock, cosines)

    # Then what is sent is the best one and those near enough to it, above the floor
    assert recalled == expected
