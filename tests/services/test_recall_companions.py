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
QUESTION = "what should I cook for the kids on Saturday?"


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


@pytest.mark.parametrize("stores", ["sqlite"], indirect=True)
def test_a_second_fact_nearly_as_fitting_as_the_best_joins_it(
    stores: Stores, clock: ManualClock
) -> None:
    # Given two facts that both fit the question well, and one that fits it only a little
    cosines = {
        "Her son Owen is allergic to tree nuts.": 0.70,
        "Has two boys, Owen and Finn.": 0.80,
        "Bought a blue car last spring.": 0.50,
    }

    # When the question is asked
    recalled = _recalled(stores, clock, cosines)

    # Then both fitting facts are sent, best first, and the weak one is not
    assert recalled == ["Has two boys, Owen and Finn.", "Her son Owen is allergic to tree nuts."]


@pytest.mark.parametrize("stores", ["sqlite"], indirect=True)
def test_beside_a_weaker_best_match_a_fact_just_as_weak_still_joins(
    stores: Stores, clock: ManualClock
) -> None:
    # Given facts that all fit the question modestly, one a little better than the others
    cosines = {
        "Has two boys, Owen and Finn.": 0.50,
        "Bought a blue car last spring.": 0.40,
        "Grows tomatoes on the balcony.": 0.30,
    }

    # When the question is asked
    recalled = _recalled(stores, clock, cosines)

    # Then the one within the companions' share of the best joins it (0.40 beside 0.50),
    # and the one further behind stays out though above the floor (0.30 beside 0.50)
    assert recalled == ["Has two boys, Owen and Finn.", "Bought a blue car last spring."]


@pytest.mark.parametrize("stores", ["sqlite"], indirect=True)
def test_a_fact_below_the_companion_floor_never_joins_however_near_the_best(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a best match that barely clears the bar, and another just behind it but below
    # the companions' floor
    cosines = {"Has two boys, Owen and Finn.": 0.31, "Bought a blue car last spring.": 0.23}

    # When the question is asked
    recalled = _recalled(stores, clock, cosines)

    # Then only the best is sent
    assert recalled == ["Has two boys, Owen and Finn."]
