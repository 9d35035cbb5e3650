"""Threads in rooms (seed 004), on both stores with the offline model: a persona learns the
person's story from its seat, follows it in their private chats only, opens a reunion with
one question by its anchors, keeps one ask per room per day across personas, and hears a
deflection as an answer."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.memory import Kind
from chatmemory.domain.rooms import NewRoomMessage, Room, RoomKind
from chatmemory.domain.threads import ThreadStatus, meta_of
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.room_service import NewRoom
from tests.support.product import IDLE, Product

DAN, CARA = "dan", "cara"
WARREN, NOLAN = "warren", "nolan"
INTERVIEW = "I have a job interview at Acme on Thursday."
FOLLOWED = "threads you're following:"


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


def room(product: Product, *personas: str, kind: RoomKind = RoomKind.PRIVATE, **more: str) -> Room:
    members = [DAN, *more.values()]
    return product.rooms.open(NewRoom(kind=kind, personas=list(personas), members=members))


def dan_says(product: Product, room_id: str, text: str) -> None:
    product.rooms.post(room_id, [NewRoomMessage(f"u:{DAN}", text)])


def quiet(product: Product) -> None:
    product.clock.advance(IDLE + timedelta(seconds=1))
    product.jobs.run_due()


def threads(product: Product, persona: str = WARREN) -> list[str]:
    query = MemoryQuery(kind=Kind.THREAD, persona=persona)
    return [m.text for m in product.stores.memories.iter_memories(DAN, query)]


def told(product: Product, *personas: str) -> Room:
    """Dan tells the personas of his private chat about the interview; the room goes quiet."""
    chat = room(product, *personas)
    dan_says(product, chat.room_id, INTERVIEW)
    for persona in personas:
        product.rooms.turn(chat.room_id, persona)
    quiet(product)
    return chat


def test_a_persona_learns_the_story_from_its_seat_and_follows_it_in_private(
    product: Product,
) -> None:
    told(product, WARREN)

    (text,) = threads(product)
    assert "Acme" in text and "Thursday" in text
    later = room(product, WARREN)
    block = product.rooms.context(later.room_id, WARREN)
    assert FOLLOWED in block.text and "Acme" in block.text
    assert "still ahead" in block.text  # the interview has not happened yet


def test_a_thread_is_never_in_a_group_room_even_with_its_person_there(product: Product) -> None:
    told(product, WARREN)

    group = room(product, WARREN, kind=RoomKind.GROUP, other=CARA)

    assert "Acme" not in product.rooms.context(group.room_id, WARREN).text


def test_a_private_chat_reopened_after_quiet_days_opens_with_the_one_question(
    product: Product,
) -> None:
    chat = told(product, WARREN)

    # When Dan comes back eight days later, in the same private chat
    product.clock.advance(timedelta(days=8))
    dan_says(product, chat.room_id, "Hey!")
    first = product.rooms.turn(chat.room_id, WARREN).message.text
    dan_says(product, chat.room_id, "Any good films lately?")
    second = product.rooms.turn(chat.room_id, WARREN).message.text

    # Then the block was rebuilt for the reunion, and Warren asks once, by its anchors
    block = product.rooms.context(chat.room_id, WARREN)
    assert "When you first speak here: You last talked 8 days ago" in block.text
    assert "Acme" in first and "how did it go" in first
    assert "Acme" not in second


def test_two_personas_in_one_room_never_both_open_with_the_question(product: Product) -> None:
    chat = told(product, WARREN, NOLAN)
    assert threads(product, WARREN) and threads(product, NOLAN)

    product.clock.advance(timedelta(days=8))
    dan_says(product, chat.room_id, "Hey, both of you!")

    blocks = {p: product.rooms.context(chat.room_id, p).text for p in (WARREN, NOLAN)}
    asking = [p for p, text in blocks.items() if "ask this one thing" in text]
    assert asking == [NOLAN]  # the first by name takes the room's one ask
    assert "already raised here today" in blocks[WARREN]


def test_a_deflection_in_a_room_sleeps_the_thread_and_stamps_the_room(product: Product) -> None:
    chat = told(product, WARREN)
    product.clock.advance(timedelta(days=8))
    dan_says(product, chat.room_id, "Hey!")
    product.rooms.turn(chat.room_id, WARREN)  # the reunion's one question

    # When Dan steers away and the room goes quiet
    dan_says(product, chat.room_id, "eh, let's talk about something else")
    quiet(product)

    # Then the thread sleeps, and the room remembers a thread was raised today
    (row,) = product.stores.memories.iter_memories(DAN, MemoryQuery(kind=Kind.THREAD))
    manners = meta_of(row)
    assert manners.deflects == 1 and manners.status is ThreadStatus.LIVE
    assert manners.asked == product.clock.now().date()
    stamped = product.rooms.get(chat.room_id)
    assert stamped.threads_asked_on == product.clock.now().date()

    # And when the room speaks again later that day, no persona opens with it
    product.clock.advance(timedelta(hours=2))
    dan_says(product, chat.room_id, "Back again.")
    assert "ask this one thing" not in product.rooms.context(chat.room_id, WARREN).text
