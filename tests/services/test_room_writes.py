"""A room's write on both stores, with the offline model: once per quiet spell, once per
persona seated, from that persona's seat — and nothing from a fiction or incognito room,
about someone absent, or about someone who switched memory off or muted the persona."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.memory import Memory
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.rooms import NewRoomMessage, Room, RoomKind
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.room_service import NewRoom
from tests.support.product import IDLE, Product

DAN, CARA = "dan", "cara"
WARREN, NOLAN = "warren", "nolan"


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return Product(stores, clock)


def open_room(
    product: Product, members: set[str], personas: set[str] | None = None, **switches: bool
) -> Room:
    kind = RoomKind.PRIVATE if len(members) == 1 else RoomKind.GROUP
    return product.rooms.open(
        NewRoom(
            kind=kind, personas=sorted(personas or {WARREN}), members=sorted(members), **switches
        )
    )


def say(product: Product, room: Room, speaker: str, text: str) -> None:
    product.rooms.post(room.room_id, [NewRoomMessage(speaker, text)])
    product.clock.advance(timedelta(seconds=20))


def go_quiet(product: Product) -> int:
    product.clock.advance(IDLE + timedelta(seconds=1))
    return product.jobs.run_due()


def held(stores: Stores, user: str, persona: str = WARREN) -> list[Memory]:
    return list(stores.memories.iter_memories(user, MemoryQuery(persona=persona)))


def texts(rows: list[Memory]) -> list[str]:
    return sorted(m.text for m in rows)


def test_a_private_chat_that_goes_quiet_is_remembered_by_its_persona_once(
    product: Product, stores: Stores
) -> None:
    room = open_room(product, {DAN})
    say(product, room, f"u:{DAN}", "I'm vegetarian and I live in Pune.")
    product.rooms.turn(room.room_id, WARREN)

    assert go_quiet(product) == 1

    rows = held(stores, DAN)
    assert texts(rows) == ["Is vegetarian.", "Lives in Pune."]
    pune = next(m for m in rows if m.text == "Lives in Pune.")
    assert (pune.subject, pune.witnessed, pune.room_id) == (f"u:{DAN}", (DAN,), room.room_id)
    assert pune.evidence == (f"{room.room_id}_1",)
    assert stores.rooms.extraction_cursor(room.room_id, WARREN) == 2
    # one notice for the spell, saying who noted it
    notices = stores.notices.list_notices(DAN)
    assert [n.text for n in notices] == ["Warren noted: Is vegetarian. · Lives in Pune."]
    # a second check finds nothing new
    assert product.room_writes.check(room.room_id, now_or_never=True) == 0
    assert len(held(stores, DAN)) == 2


def test_the_quiet_timer_debounces_a_burst(product: Product, stores: Stores) -> None:
    room = open_room(product, {DAN})
    say(product, room, f"u:{DAN}", "I'm vegetarian.")
    product.clock.advance(timedelta(minutes=9))
    say(product, room, f"u:{DAN}", "I live in Pune.")  # re-arms the timer

    product.clock.advance(timedelta(minutes=2))  # the first timer falls due: not quiet yet
    product.jobs.run_due()
    assert held(stores, DAN) == []

    go_quiet(product)
    assert texts(held(stores, DAN)) == ["Is vegetarian.", "Lives in Pune."]


def test_in_a_group_each_person_is_remembered_from_their_own_words_with_the_audience(
    product: Product, stores: Stores
) -> None:
    room = open_room(product, {DAN, CARA})
    say(product, room, f"u:{DAN}", "I'm vegetarian.")
    say(product, room, f"u:{CARA}", "I live in Lyon.")

    go_quiet(product)

    dan, cara = held(stores, DAN), held(stores, CARA)
    assert texts(dan) == ["Is vegetarian."] and texts(cara) == ["Lives in Lyon."]
    assert dan[0].witnessed == (CARA, DAN) and dan[0].subject == f"u:{DAN}"
    # formed in company, it loads in Dan's later private chat, untagged
    private = open_room(product, {DAN})
    block = product.rooms.context(private.room_id, WARREN)
    assert "- Is vegetarian. (" in block.text and "· confidence" not in block.text
    assert "Lyon" not in block.text


def test_each_seated_persona_writes_its_own_memory(product: Product, stores: Stores) -> None:
    room = open_room(product, {DAN}, {WARREN, NOLAN})
    say(product, room, f"u:{DAN}", "I live in Pune.")

    assert go_quiet(product) == 1  # one timer fired; both personas wrote
    assert texts(held(stores, DAN, WARREN)) == ["Lives in Pune."]
    assert texts(held(stores, DAN, NOLAN)) == ["Lives in Pune."]
    notices = stores.notices.list_notices(DAN)
    assert sorted(n.text for n in notices) == [
        "Nolan noted: Lives in Pune.",
        "Warren noted: Lives in Pune.",
    ]


@pytest.mark.parametrize("switch", ["fiction", "incognito"])
def test_nothing_is_learned_in_a_fiction_or_incognito_room(
    product: Product, stores: Stores, switch: str
) -> None:
    room = open_room(product, {DAN}, **{switch: True})
    say(product, room, f"u:{DAN}", "I live in Pune.")

    go_quiet(product)

    assert held(stores, DAN) == [] and stores.notices.list_notices(DAN) == []
    # read, so the sweep does not come back to it
    assert stores.rooms.extraction_cursor(room.room_id, WARREN) == 1


def test_someone_with_memory_off_is_neither_read_nor_remembered(
    product: Product, stores: Stores
) -> None:
    stores.user_state.put_settings(MemorySettings(user_id=CARA, enabled=False))
    room = open_room(product, {DAN, CARA})
    say(product, room, f"u:{CARA}", "I live in Lyon.")
    say(product, room, f"u:{DAN}", "I'm vegetarian.")

    go_quiet(product)

    assert held(stores, CARA) == []
    assert texts(held(stores, DAN)) == ["Is vegetarian."]


def test_a_muted_persona_forgets_me_but_the_others_remember(
    product: Product, stores: Stores
) -> None:
    stores.user_state.put_settings(MemorySettings(user_id=DAN, muted_personas=frozenset({NOLAN})))
    room = open_room(product, {DAN}, {WARREN, NOLAN})
    say(product, room, f"u:{DAN}", "I live in Pune.")

    go_quiet(product)

    assert texts(held(stores, DAN, WARREN)) == ["Lives in Pune."]
    assert held(stores, DAN, NOLAN) == []


def test_a_correction_in_a_later_spell_closes_the_old_row_under_the_new(
    product: Product, stores: Stores
) -> None:
    room = open_room(product, {DAN})
    say(product, room, f"u:{DAN}", "I live in Pune.")
    go_quiet(product)
    say(product, room, f"u:{DAN}", "I live in Mumbai now.")
    go_quiet(product)

    rows = list(stores.memories.iter_memories(DAN, MemoryQuery(status=None, persona=WARREN)))
    active = [m for m in rows if m.status.value == "active"]
    assert [m.text for m in active] == ["Lives in Mumbai."]
    old = next(m for m in rows if m.text == "Lives in Pune.")
    assert old.status.value == "superseded" and old.closed_by == active[0].memory_id


def test_a_write_run_twice_lands_on_the_same_rows(product: Product, stores: Stores) -> None:
    room = open_room(product, {DAN})
    say(product, room, f"u:{DAN}", "I live in Pune.")
    first = product.room_writes.write(room.room_id, WARREN, 1)
    # the cursor is put back as if the first try had crashed after writing
    stores.rooms.advance_room_extraction(room.room_id, WARREN, upto_seq=0, expected_upto_seq=1)

    product.room_writes.write(room.room_id, WARREN, 1)

    assert first.written == 1 and len(held(stores, DAN)) == 1


def test_the_sweep_writes_a_room_whose_timer_was_lost(product: Product, stores: Stores) -> None:
    room = open_room(product, {DAN})
    say(product, room, f"u:{DAN}", "I live in Pune.")
    product.jobs._timers.clear()  # the timer is lost (a crash, a dropped message)
    product.clock.advance(IDLE + timedelta(seconds=1))

    assert product.room_writes.sweep() == 1
    assert texts(held(stores, DAN)) == ["Lives in Pune."]
    assert product.room_writes.sweep() == 0


def test_a_line_from_someone_not_in_the_room_is_refused_and_nothing_is_kept(
    product: Product, stores: Stores
) -> None:
    room = open_room(product, {DAN})

    with pytest.raises(InvalidField):
        product.rooms.post(
            room.room_id,
            [NewRoomMessage(f"u:{DAN}", "hi"), NewRoomMessage(f"u:{CARA}", "I live in Lyon.")],
        )
    with pytest.raises(InvalidField):
        product.rooms.post(room.room_id, [NewRoomMessage(f"p:{NOLAN}", "hello")])

    assert stores.rooms.list_room_messages(room.room_id) == []
