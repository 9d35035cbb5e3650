"""Per-user quotas on every write path and a ceiling on what one user may store, on both
stores: the write past the minute's limit is refused before anything is written (with
the seconds to wait), deleting and switching memory off never are, and an account at its
ceiling is told to make room — long before the disk fills for everyone.

Regression: an ordinary user token posting to its own private room grew the database by
1.27 MB/s, every write path unbounded."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.errors import RateLimited, StorageFull
from chatmemory.domain.quotas import IMPORTED_ROWS, ROOM_LINES, WRITES, Ceiling
from chatmemory.domain.rooms import NewRoomMessage, RoomKind
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.memories import NewMemory
from chatmemory.services.memory_settings import SettingsService
from chatmemory.services.portability import PortabilityService
from chatmemory.services.quotas import QuotaGuard
from chatmemory.services.room_service import NewRoom
from tests.support import builders
from tests.support.product import ALICE, Product

LIMITS = {WRITES: 3, ROOM_LINES: 4, IMPORTED_ROWS: 5}


def guarded(stores: Stores, clock: ManualClock, ceiling: Ceiling | None = None) -> Product:
    return Product(stores, clock, quotas=QuotaGuard(stores.quotas, clock, LIMITS, ceiling))


@pytest.fixture
def product(stores: Stores, clock: ManualClock) -> Product:
    return guarded(stores, clock)


def _rows(product: Product) -> list[str]:
    return sorted(m.text for m in product.stores.memories.iter_memories(ALICE))


def test_typing_past_the_minutes_writes_is_refused_and_deleting_never_is(
    product: Product, clock: ManualClock
) -> None:
    # Given three memories typed this minute (the limit)
    typed = [
        product.memories.create(ALICE, NewMemory(text=f"Has visited city {n}.")).memory
        for n in range(3)
    ]

    # When a fourth is typed, and a correction sent
    with pytest.raises(RateLimited) as refused:
        product.memories.create(ALICE, NewMemory(text="Has visited city 3."))
    with pytest.raises(RateLimited):
        product.memories.correct(ALICE, typed[0].memory_id, text="Has visited Lyon.")

    # Then neither was written, and the wait is the rest of the minute
    assert len(_rows(product)) == 3 and 0 < refused.value.retry_after <= 60
    assert "memory writes" in str(refused.value)
    # but deleting and switching memory off are never refused
    product.memories.delete(ALICE, typed[1].memory_id)
    settings = SettingsService(
        product.stores, clock, QuotaGuard(product.stores.quotas, clock, LIMITS)
    )
    assert settings.update(ALICE, enabled=False).enabled is False
    # and the next minute goes on
    clock.advance(timedelta(minutes=1))
    settings.update(ALICE, enabled=True)
    product.memories.create(ALICE, NewMemory(text="Has visited city 3."))


def test_room_lines_past_the_minutes_limit_are_refused_and_none_is_kept(
    product: Product,
) -> None:
    # Given Dan's private chat, where four lines were said this minute (his and Warren's)
    room = product.rooms.open(NewRoom(kind=RoomKind.PRIVATE, personas=["warren"], members=["dan"]))
    product.rooms.post(
        room.room_id,
        [NewRoomMessage("u:dan", "line one"), NewRoomMessage("p:warren", "line two")],
    )
    product.rooms.post(room.room_id, [NewRoomMessage("u:dan", f"line {n}") for n in (3, 4)])

    # When a fifth is posted
    with pytest.raises(RateLimited) as refused:
        product.rooms.post(room.room_id, [NewRoomMessage("u:dan", "line five")])

    # Then it is refused and not kept
    assert "room lines" in str(refused.value)
    assert len(product.stores.rooms.list_room_messages(room.room_id)) == 4


def test_an_import_takes_a_row_each_from_its_own_quota(
    product: Product, clock: ManualClock
) -> None:
    service = PortabilityService(product.stores, clock, product.memories)
    rows = [builders.memory(ALICE, f"Speaks language {n}.", clock.now()) for n in range(6)]

    # Given five rows imported this minute (the quota)
    assert service.import_batch(ALICE, rows[:5]).imported == 5

    # When a sixth comes in the same minute, it is refused and does not land
    with pytest.raises(RateLimited) as refused:
        service.import_batch(ALICE, rows[5:])
    assert "imported rows" in str(refused.value)
    assert len(_rows(product)) == 5
    # and typing by hand has its own quota still
    product.memories.create(ALICE, NewMemory(text="Plays the cello."))


def test_an_account_at_its_ceiling_is_told_to_make_room_and_nothing_is_written(
    stores: Stores, clock: ManualClock
) -> None:
    # Given an account allowed five memory versions, holding five
    product = guarded(stores, clock, Ceiling(memory_rows=5, messages=1_000))
    for n in range(5):
        product.memories.create(ALICE, NewMemory(text=f"Has visited city {n}."))
        clock.advance(timedelta(minutes=1))

    # When a sixth is typed
    with pytest.raises(StorageFull) as full:
        product.memories.create(ALICE, NewMemory(text="Has visited city 5."))

    # Then nothing is written, and the person is told how to make room
    assert "5 memory versions of at most 5" in str(full.value)
    assert len(list(stores.memories.iter_memories(ALICE, MemoryQuery(status=None)))) == 5
    # while deleting stays possible at the ceiling
    [first, *_] = stores.memories.iter_memories(ALICE)
    product.memories.delete(ALICE, first.memory_id)
