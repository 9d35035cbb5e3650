"""A room's persona blocks on both stores: built at open, the same bytes every turn,
rebuilt on a join or a leave, and holding only what the audience rule lets in."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import timedelta
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.memory import Kind, Memory
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.rooms import Room, RoomKind
from chatmemory.ports.stores import Stores
from chatmemory.services.rooms import RoomBlocks
from tests.support import builders

DAN, CARA = "dan", "cara"
WARREN, NOLAN = "warren", "nolan"


@pytest.fixture
def blocks(stores: Stores, clock: ManualClock) -> RoomBlocks:
    return RoomBlocks(stores, clock)


def room(clock: ManualClock, members: set[str], **fields: Any) -> Room:
    values: dict[str, Any] = {
        "room_id": f"room_{uuid.uuid4().hex}",
        "kind": RoomKind.PRIVATE if len(members) == 1 else RoomKind.GROUP,
        "created_at": clock.now(),
        "personas": frozenset({WARREN, NOLAN}),
        "members": frozenset(members),
    }
    values.update(fields)
    return Room(**values)


def remember(stores: Stores, clock: ManualClock, user: str, text: str, **fields: Any) -> Memory:
    """A memory Warren holds about `user`, formed one-to-one unless said otherwise."""
    values: dict[str, Any] = {"persona": WARREN, "witnessed": (user,)}
    values.update(fields)
    memory = builders.memory(user, text, clock.now(), **values)
    assert stores.memories.add_memory(memory)
    return memory


def test_a_private_chat_block_holds_what_the_persona_knows_tagged_and_metered(
    stores: Stores, clock: ManualClock, blocks: RoomBlocks
) -> None:
    # Given a fact Warren learned from Dan alone, and Dan's note
    remember(stores, clock, DAN, "Dan owns a flat in Xuhui, bought Jul 2026.")
    stores.user_state.put_settings(MemorySettings(user_id=DAN, note="Call me Dan."))
    clock.advance(timedelta(days=1))

    # When Dan opens a private chat with Warren and Nolan
    opened = blocks.open(room(clock, {DAN}))

    # Then Warren's block carries the fact as a confidence, with its date, and the note;
    # Nolan holds nothing about Dan but the note
    warren = blocks.block(opened.room_id, WARREN)
    assert "Dan owns a flat in Xuhui" in warren.text and "confidence" in warren.text
    assert "Call me Dan." in warren.text
    assert warren.meter == f"{warren.chars_current} / 1200"
    nolan = blocks.block(opened.room_id, NOLAN)
    assert "Xuhui" not in nolan.text


def test_every_turn_gets_the_same_bytes_until_someone_joins(
    stores: Stores, clock: ManualClock, blocks: RoomBlocks
) -> None:
    # Given an open private chat
    remember(stores, clock, DAN, "Dan is training for the Shanghai marathon.")
    opened = blocks.open(room(clock, {DAN}))
    first = blocks.block(opened.room_id, WARREN)

    # When turns go by, and a memory is even written meanwhile
    clock.advance(timedelta(hours=2))
    remember(stores, clock, DAN, "Dan switched to a plant-based diet.")
    again = [blocks.block(opened.room_id, WARREN) for _ in range(3)]

    # Then every turn sends the very same block (the cached prefix survives)
    assert all(block.text == first.text for block in again)
    assert "plant-based" not in first.text

    # And when Cara joins, the block is rebuilt: in a group, v1 loads world facts only
    joined = blocks.join(opened.room_id, [CARA])
    rebuilt = blocks.block(opened.room_id, WARREN)
    assert joined.version == opened.version + 1
    assert rebuilt.text != first.text and "marathon" not in rebuilt.text


def test_a_leave_rebuilds_the_block_yet_a_group_never_turns_private(
    stores: Stores, clock: ManualClock, blocks: RoomBlocks
) -> None:
    # Given a group room of Dan and Cara, and a memory of Dan's written while it is live
    opened = blocks.open(room(clock, {DAN, CARA}))
    before = blocks.block(opened.room_id, WARREN)
    remember(stores, clock, DAN, "Dan adopted a greyhound called Mochi.")

    # When Cara leaves
    left = blocks.leave(opened.room_id, [CARA])

    # Then the block was rebuilt for the new audience (its own version), but a group room
    # left with one human is still a group: v1 loads no personal memory there
    assert left.version == opened.version + 1 and left.members == frozenset({DAN})
    after = blocks.block(opened.room_id, WARREN)
    assert "Mochi" not in after.text and "Mochi" not in before.text


def test_nothing_about_someone_absent_muted_or_switched_off_is_loaded(
    stores: Stores, clock: ManualClock, blocks: RoomBlocks
) -> None:
    # Given memories of Dan's and Cara's that Warren holds
    remember(stores, clock, DAN, "Dan is interviewing at Tencent on Thursday.")
    remember(stores, clock, CARA, "Cara is learning the cello.")

    # When Cara has a private chat (Dan absent), then when she muted Warren, then when
    # she switched memory off
    alone = blocks.open(room(clock, {CARA}))
    assert "Tencent" not in blocks.block(alone.room_id, WARREN).text
    assert "cello" in blocks.block(alone.room_id, WARREN).text
    stores.user_state.put_settings(MemorySettings(user_id=CARA, muted_personas=frozenset({WARREN})))
    muted = blocks.open(room(clock, {CARA}))
    stores.user_state.put_settings(MemorySettings(user_id=CARA, enabled=False))
    off = blocks.open(room(clock, {CARA}))

    # Then neither block holds anything of hers
    for opened in (muted, off):
        text = blocks.block(opened.room_id, WARREN).text
        assert "cello" not in text and "Tencent" not in text


def test_an_incognito_room_reads_nothing(
    stores: Stores, clock: ManualClock, blocks: RoomBlocks
) -> None:
    remember(stores, clock, DAN, "Dan collects vinyl records.")
    stores.user_state.put_settings(MemorySettings(user_id=DAN, note="Call me Dan."))

    opened = blocks.open(room(clock, {DAN}, incognito=True))

    block = blocks.block(opened.room_id, WARREN)
    assert block.text == "" and block.memory_ids == ()


def test_a_promise_rides_with_the_person_it_was_made_to_and_loading_reinforces(
    stores: Stores, clock: ManualClock, blocks: RoomBlocks
) -> None:
    # Given Warren's promise to Dan, kept in Dan's partition, never loaded before
    promise = remember(
        stores,
        clock,
        DAN,
        "Warren said he would send Dan the 1988 shareholder letter.",
        subject="self",
        counterpart=f"u:{DAN}",
        kind=Kind.PROMISE,
    )
    clock.advance(timedelta(minutes=5))

    # When Dan opens a private chat
    opened = blocks.open(room(clock, {DAN}))

    # Then the promise rides, and loading it touched it
    block = blocks.block(opened.room_id, WARREN)
    assert promise.memory_id in block.memory_ids and "promise" in block.text
    touched = stores.memories.get_memory(DAN, promise.memory_id)
    assert touched is not None
    assert touched.last_used_at == clock.now() and touched.recall_count == 1
    assert (
        dataclasses.replace(
            touched,
            last_used_at=None,
            recall_count=0,
            updated_at=promise.updated_at,
            stability_days=None,  # a use is new evidence (seed 003): it lasts longer
            reinforced_at=None,
        )
        == promise
    )


def test_a_deleted_memory_is_gone_from_the_next_block(
    stores: Stores, clock: ManualClock, blocks: RoomBlocks
) -> None:
    from chatmemory.domain.tombstone import Tombstone  # noqa: PLC0415
    from chatmemory.services.deletions import Deletions  # noqa: PLC0415

    secret = remember(stores, clock, DAN, "Dan is planning to propose in June.")
    Deletions(stores).tombstone_memories(
        DAN, [Tombstone(user_id=DAN, memory_id=secret.memory_id, deleted_at=clock.now())]
    )

    opened = blocks.open(room(clock, {DAN}))

    assert "propose" not in blocks.block(opened.room_id, WARREN).text


def test_what_a_private_chat_with_warren_taught_him_shows_in_his_next_block_only(
    stores: Stores, clock: ManualClock, blocks: RoomBlocks
) -> None:
    from tests.support.product import ALICE, Product  # noqa: PLC0415

    # Given Alice told Warren something in a private chat, and the chat went quiet (the
    # write pipeline ran with the offline model)
    product = Product(stores, clock)
    product.say("I'm vegetarian and I live in Pune.", persona=WARREN)
    product.go_quiet()
    learned = [m for m in stores.memories.iter_memories(ALICE) if "Pune" in m.text]
    assert learned and all(m.persona == WARREN for m in learned)

    # When she opens a private room with Warren and Nolan, and later a group room
    private = blocks.open(room(clock, {ALICE}))
    group = blocks.open(room(clock, {ALICE, CARA}))

    # Then Warren's private block carries it, with its date and the meter; Nolan's does
    # not; and the group room's blocks carry no personal memory
    warren = blocks.block(private.room_id, WARREN)
    assert "Pune" in warren.text and clock.now().date().isoformat()[:7] in warren.text
    assert warren.chars_current > 0 and warren.meter.endswith("/ 1200")
    assert "Pune" not in blocks.block(private.room_id, NOLAN).text
    assert all("Pune" not in blocks.block(group.room_id, p).text for p in (WARREN, NOLAN))
