"""Forget everything, on both stores: the user leaves the witnessed lists of the world
facts personas learned with them present, and the facts stay for everyone else; their
own lines in the rooms are replaced, so no later turn or room write reads them."""

from __future__ import annotations

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.memory import Kind, Memory
from chatmemory.domain.rooms import FORGOTTEN_LINE, NewRoomMessage, RoomKind
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.room_service import TURN_WINDOW, NewRoom
from tests.support import builders
from tests.support.product import Product

WARREN = "warren"
DAN, CARA = "dan", "cara"


def world_fact(clock: ManualClock, text: str, *witnessed: str) -> Memory:
    return builders.memory(
        WARREN,
        text,
        clock.now(),
        persona=WARREN,
        subject="world",
        kind=Kind.EVENT,
        witnessed=witnessed,
        room_id="room_cinema",
    )


def test_after_forget_everything_a_world_fact_lists_only_the_others_present(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a world fact Warren learned with Dan and Cara present, one with Cara alone,
    # and a memory of Dan's own
    memories = MemoryService(stores, clock)
    shared = world_fact(clock, "Nolan's Odyssey opened 2026-07-17.", DAN, CARA)
    caras = world_fact(clock, "The cinema on Fuxing Road reopened.", CARA)
    assert stores.persona_memories.add_persona_memory(shared)
    assert stores.persona_memories.add_persona_memory(caras)
    memories.create(DAN, NewMemory(text="Owns a flat in Xuhui."))

    # When Dan forgets everything
    memories.forget_everything(DAN)

    # Then the fact Dan witnessed lists only Cara, Cara's is untouched, and Dan's own
    # memory is gone
    rows = {m.memory_id: m for m in stores.persona_memories.list_persona_memories(WARREN)}
    assert rows[shared.memory_id] == shared.with_changes(witnessed=(CARA,))
    assert rows[caras.memory_id] == caras
    assert list(stores.memories.iter_memories(DAN, MemoryQuery(status=None))) == []


def test_after_forget_everything_a_row_about_someone_else_lists_only_the_others_present(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row of Dan's that Warren formed in a group room with Cara and Dan present,
    # one formed with Dan alone, and a memory of Cara's own
    memories = MemoryService(stores, clock)
    group = builders.memory(
        DAN,
        "Dan is interviewing at Tencent.",
        clock.now(),
        witnessed=(CARA, DAN),
        room_id="room_cinema",
    )
    alone = builders.memory(DAN, "Dan owns a flat in Xuhui.", clock.now(), witnessed=(DAN,))
    assert stores.memories.add_memory(group)
    assert stores.memories.add_memory(alone)
    memories.create(CARA, NewMemory(text="Is moving to Lisbon."))

    # When Cara forgets everything
    memories.forget_everything(CARA)

    # Then Dan's row from the group lists only Dan, his other row is untouched, both
    # still show for him, and Cara's own memory is gone
    rows = {m.memory_id: m for m in stores.memories.iter_memories(DAN, MemoryQuery(status=None))}
    assert rows == {group.memory_id: group.with_changes(witnessed=(DAN,)), alone.memory_id: alone}
    assert list(stores.memories.iter_memories(CARA, MemoryQuery(status=None))) == []


# ---- their own lines in the rooms --------------------------------------------------------------


def test_after_forget_everything_a_rooms_recent_window_holds_none_of_the_users_words(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a group room where Dan and Cara spoke, and Warren answered
    product = Product(stores, clock)
    room = product.rooms.open(NewRoom(kind=RoomKind.GROUP, personas=[WARREN], members=[DAN, CARA]))
    product.rooms.post(
        room.room_id,
        [
            NewRoomMessage(f"u:{DAN}", "I'm interviewing at Tencent next week."),
            NewRoomMessage(f"u:{CARA}", "Which team, Dan?"),
            NewRoomMessage(f"u:{DAN}", "Payments, in Shenzhen."),
            NewRoomMessage(f"p:{WARREN}", "Good luck, both of you."),
        ],
    )

    # When Dan forgets everything
    product.memories.forget_everything(DAN)

    # Then the window a persona's next turn reads holds none of his words: his lines
    # keep their place, Cara's and Warren's are as they were
    recent = stores.rooms.list_room_messages(room.room_id, last=TURN_WINDOW)
    assert [(m.seq, m.speaker) for m in recent] == [
        (1, f"u:{DAN}"),
        (2, f"u:{CARA}"),
        (3, f"u:{DAN}"),
        (4, f"p:{WARREN}"),
    ]
    assert [m.text for m in recent if m.speaker == f"u:{DAN}"] == [FORGOTTEN_LINE] * 2
    assert [m.text for m in recent[1::2]] == ["Which team, Dan?", "Good luck, both of you."]
    words = " ".join(m.text for m in recent)
    assert "Tencent" not in words and "Shenzhen" not in words
    prompt, _ = product.rooms.preview(room.room_id, WARREN)
    assert "Tencent" not in prompt.text() and "Shenzhen" not in prompt.text()


def test_after_forget_everything_a_later_room_write_learns_nothing_of_the_users_words(
    stores: Stores, clock: ManualClock
) -> None:
    # Given Dan's private chat with Warren, not yet written when Dan forgets everything
    product = Product(stores, clock)
    room = product.rooms.open(NewRoom(kind=RoomKind.PRIVATE, personas=[WARREN], members=[DAN]))
    product.rooms.post(
        room.room_id, [NewRoomMessage(f"u:{DAN}", "I'm vegetarian and I live in Pune.")]
    )
    product.memories.forget_everything(DAN)

    # When the room goes quiet and Warren's write runs over those lines
    product.go_quiet()

    # Then it read them, and learned nothing about Dan from them
    assert stores.rooms.extraction_cursor(room.room_id, WARREN) == 1
    assert list(stores.memories.iter_memories(DAN, MemoryQuery(status=None))) == []
    assert stores.notices.list_notices(DAN) == []
