"""An ending closes what it ends, on both stores and every write path: a room's quiet
spell, a chat's background read, the save tool and a memory typed through the API. The
old belief becomes history (`valid_to`, `closed_by` the ending), never deleted (seed 000:
"Sold the flat" does not erase that the flat existed)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.rooms import NewRoomMessage, Room, RoomKind
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.memories import NewMemory
from chatmemory.services.room_service import NewRoom
from tests.support.product import ALICE, IDLE, Product

DAN, WARREN = "dan", "warren"


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


def _rows(
    stores: Stores, user: str, status: Status | None, persona: str | None = None
) -> list[Memory]:
    query = MemoryQuery(status=status, persona=persona)
    return list(stores.memories.iter_memories(user, query))


def _go_quiet(product: Product) -> None:
    product.clock.advance(IDLE + timedelta(seconds=1))
    product.jobs.run_due()


def _closed_under(stores: Stores, user: str, text: str) -> Memory:
    """The row saying `text`, history now (closed, or superseded when the chat took the
    ending as a correction), checked to rest under an active ending."""
    [closed] = [
        m
        for m in _rows(stores, user, None)
        if m.text == text and m.status in (Status.CLOSED, Status.SUPERSEDED)
    ]
    assert closed.valid_to is not None and closed.closed_by is not None
    ending = stores.memories.get_memory(user, closed.closed_by)
    assert ending is not None and ending.status is Status.ACTIVE
    return ending


def test_a_sale_said_in_a_room_closes_the_flat_it_ends(product: Product, stores: Stores) -> None:
    # Given Warren learned in Dan's private chat that he owns a flat in Xuhui
    room = product.rooms.open(NewRoom(kind=RoomKind.PRIVATE, personas=[WARREN], members=[DAN]))
    _say_in_room(product, room, "I own a flat in Xuhui.")
    _go_quiet(product)
    assert [m.text for m in _rows(stores, DAN, Status.ACTIVE)] == ["Owns a flat in Xuhui."]

    # When Dan later says he sold it
    product.clock.advance(timedelta(days=3))
    _say_in_room(product, room, "I sold my flat in Xuhui last week.")
    _go_quiet(product)

    # Then the flat is history, closed under the sale, and only the sale is believed
    ending = _closed_under(stores, DAN, "Owns a flat in Xuhui.")
    assert ending.text.startswith("Sold their flat in Xuhui")
    assert [m.text for m in _rows(stores, DAN, Status.ACTIVE)] == [ending.text]
    # and Warren's next block carries the sale, not the flat as still owned
    block = product.rooms.context(
        product.rooms.open(
            NewRoom(kind=RoomKind.PRIVATE, personas=[WARREN], members=[DAN])
        ).room_id,
        WARREN,
    )
    assert "Owns a flat" not in block.text and "Sold their flat in Xuhui" in block.text


def _say_in_room(product: Product, room: Room, text: str) -> None:
    product.rooms.post(room.room_id, [NewRoomMessage(f"u:{DAN}", text)])
    product.clock.advance(timedelta(seconds=20))


@pytest.mark.parametrize(
    ("before", "after", "ended"),
    [
        ("I own a car.", "I sold my car.", "Owns a car."),
        ("I'm vegetarian.", "I'm no longer vegetarian.", "Is vegetarian."),
        ("I work as a nurse at Acme.", "I quit my job at Acme.", "Works as a nurse at Acme."),
    ],
)
def test_an_ending_said_in_a_chat_closes_what_it_ends_in_the_background(
    product: Product, stores: Stores, before: str, after: str, ended: str
) -> None:
    # Given a belief learned from an earlier chat
    product.say(before)
    product.go_quiet()
    assert product.active() == [ended]

    # When a later chat says it ended, and goes quiet
    product.clock.advance(timedelta(days=2))
    product.say(after)
    product.go_quiet()

    # Then it is history under the ending, which is what is believed now
    ending = _closed_under(stores, ALICE, ended)
    assert product.active() == [ending.text]


def test_an_ending_typed_through_the_api_closes_what_it_ends(
    product: Product, stores: Stores
) -> None:
    # Given a memory she typed
    flat = product.memories.create(ALICE, NewMemory(text="Owns a flat in Xuhui.", category="home"))

    # When she types that she sold it
    sale = product.memories.create(ALICE, NewMemory(text="Sold my flat in Xuhui in November."))

    # Then the flat closes under the sale at once
    assert _closed_under(stores, ALICE, "Owns a flat in Xuhui.") == sale.memory
    assert flat.memory.memory_id not in {m.memory_id for m in _rows(stores, ALICE, Status.ACTIVE)}


def test_an_ending_the_save_tool_keeps_closes_what_it_ends(
    product: Product, stores: Stores
) -> None:
    # Given she asked to remember her boyfriend
    product.say("Please remember that I am dating Sam.")
    assert product.active() == ["Is dating Sam."]

    # When she asks to remember the break-up
    product.say("Please remember that I broke up with Sam.")

    # Then the relationship is history under the break-up, at once
    ending = _closed_under(stores, ALICE, "Is dating Sam.")
    assert product.active() == [ending.text]


def test_an_ending_leaves_alone_what_it_does_not_name(product: Product, stores: Stores) -> None:
    # Given two things she owns
    product.memories.create(ALICE, NewMemory(text="Owns a flat in Xuhui.", category="home"))
    product.memories.create(ALICE, NewMemory(text="Owns a car.", category="general"))

    # When she sold the car
    product.memories.create(ALICE, NewMemory(text="Sold their car."))

    # Then the flat is still believed
    assert sorted(product.active()) == ["Owns a flat in Xuhui.", "Sold their car."]
