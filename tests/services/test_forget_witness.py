"""Forget everything, on both stores: the user leaves the witnessed lists of the world
facts personas learned with them present, and the facts stay for everyone else."""

from __future__ import annotations

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.memory import Kind, Memory
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.memories import MemoryService, NewMemory
from tests.support import builders

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
