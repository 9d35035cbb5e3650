"""A fact with an end date is learned by the offline default and expires from reads when
its time is over, on both stores.

Regression: "I am travelling to Goa next week", then `chatmemory flush`: nothing stored.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.context import ContextRequest
from tests.support.product import ALICE, Product


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


@pytest.mark.parametrize(
    "said",
    [
        "I am travelling to Goa next week",
        "I'm staying with my parents until Friday",
        "I'm in Lisbon for the summer",
        "I'm flying to Rome this weekend",
    ],
)
def test_a_fact_with_an_end_date_is_learned_with_its_shelf_life(
    product: Product, said: str
) -> None:
    # When she mentions a plan with an end, and the conversation goes quiet
    product.say(said)
    product.go_quiet()

    # Then it is remembered with the day it stops being true, written out in its words
    [memory] = list(product.stores.memories.iter_memories(ALICE, MemoryQuery()))
    assert memory.valid_until is not None and memory.valid_until > product.clock.now()
    assert any(char.isdigit() for char in memory.text)


def test_a_trip_is_forgotten_from_reads_once_it_is_over(product: Product) -> None:
    # Given a trip learned as next week's
    product.say("I am travelling to Goa next week")
    product.go_quiet()
    [trip] = list(product.stores.memories.iter_memories(ALICE, MemoryQuery()))
    assert trip.valid_until is not None

    # When its week is over
    product.clock.advance(trip.valid_until - product.clock.now() + timedelta(minutes=1))

    # Then no read holds it: not the listing, not a prompt about Goa
    assert list(product.stores.memories.iter_memories(ALICE, MemoryQuery())) == []
    built = product.context.build(ContextRequest(user_id=ALICE, message="How was Goa?"))
    assert "Goa" not in "\n".join(line.text for line in built.blocks.memories)
