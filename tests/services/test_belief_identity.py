"""A belief's identity never rests on a field the caller left out, on both stores: the
same words typed again, with or without a category, are the belief already held.

Regression: `{"text": "Has a cat named Miso.", "category": "pets"}`, then `{"text": "has a
cat named miso"}` answered 201 with a second active row under "general", which then
showed twice in the prompt.
"""

from __future__ import annotations

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.ports.stores import Stores
from chatmemory.services.context import ContextRequest
from chatmemory.services.memories import NewMemory
from tests.support.product import ALICE, Product


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


def test_the_same_words_without_a_category_are_the_belief_already_held(
    product: Product,
) -> None:
    # Given a memory typed with its category
    first = product.memories.create(ALICE, NewMemory(text="Has a cat named Miso.", category="pets"))
    assert first.created

    # When the same words come again in other case, with no category
    again = product.memories.create(ALICE, NewMemory(text="has a cat named miso"))

    # Then it is the same belief (the API answers 200 with it), held once
    assert not again.created and again.memory.memory_id == first.memory.memory_id
    assert product.active() == ["Has a cat named Miso."]
    built = product.context.build(
        ContextRequest(user_id=ALICE, message="Tell me about Miso the cat")
    )
    assert built.rendered.text().count("Has a cat named Miso.") == 1


def test_the_same_words_under_another_category_are_the_same_belief(product: Product) -> None:
    # Given a memory typed under one category
    first = product.memories.create(ALICE, NewMemory(text="Plays the cello.", category="hobbies"))

    # When the same words are typed under another
    again = product.memories.create(ALICE, NewMemory(text="Plays the cello.", category="music"))

    # Then it is still the one belief
    assert not again.created and again.memory.memory_id == first.memory.memory_id


def test_an_omitted_category_is_the_one_the_words_name(product: Product) -> None:
    # When a memory is typed without a category
    created = product.memories.create(ALICE, NewMemory(text="Has a dog named Rex."))

    # Then it is filed where its words say, not under a catch-all
    assert created.memory.category == "pets"
    # and a memory whose words name nothing is general
    other = product.memories.create(ALICE, NewMemory(text="Was born on a Tuesday."))
    assert other.memory.category == "general"
