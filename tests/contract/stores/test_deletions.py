"""The deletion contract, on both backends: tombstones hide rows at once and for good,
an undone correction restores exactly, the purge and "forget everything"."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain import vectors
from chatmemory.domain.errors import (
    ConcurrentChange,
    MemoryNotFound,
)
from chatmemory.domain.events import Op
from chatmemory.domain.ids import new_memory_id
from chatmemory.domain.memory import Kind
from chatmemory.domain.profile import Profile
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.stores import Stores
from chatmemory.services.deletions import Deletions
from tests.contract.stores.common import (
    ALICE,
    BOB,
    CAROL,
    EVERY_STATUS,
    SUPERSEDED,
    all_ids,
    corrected,
)
from tests.support import builders


def test_reverting_a_supersede_restores_the_earlier_version_exactly(
    stores: Stores, clock: ManualClock
) -> None:
    pune, bengaluru = corrected(stores, clock)
    tombstone = Tombstone(user_id=ALICE, memory_id=bengaluru.memory_id, deleted_at=clock.now())
    undone = builders.event(ALICE, bengaluru.memory_id, Op.DELETE, clock.now())

    reinstated = Deletions(stores).revert_supersede(ALICE, tombstone, events=[undone])

    assert reinstated == pune.with_changes(updated_at=clock.now())
    assert stores.memories.get_memory(ALICE, pune.memory_id) == reinstated
    assert all_ids(stores, ALICE) == [pune.memory_id]
    assert all_ids(stores, ALICE, SUPERSEDED) == []
    assert stores.memories.get_memory(ALICE, bengaluru.memory_id) is None
    assert stores.tombstones.get_tombstone(ALICE, bengaluru.memory_id) == tombstone
    assert stores.events.list_events(ALICE, bengaluru.memory_id) == [undone]


def test_a_supersede_that_moved_on_is_not_reverted(stores: Stores, clock: ManualClock) -> None:
    pune, bengaluru = corrected(stores, clock)
    goa = builders.memory(
        ALICE, "Lives in Goa.", clock.now(), key="home_city", supersedes=bengaluru.memory_id
    )
    stores.memories.supersede_memory(ALICE, bengaluru.memory_id, goa)
    tombstone = Tombstone(user_id=ALICE, memory_id=bengaluru.memory_id, deleted_at=clock.now())

    with pytest.raises(ConcurrentChange):
        Deletions(stores).revert_supersede(ALICE, tombstone)

    assert all_ids(stores, ALICE) == [goa.memory_id]
    assert stores.tombstones.get_tombstone(ALICE, bengaluru.memory_id) is None
    with pytest.raises(ConcurrentChange):  # a memory that corrects nothing
        Deletions(stores).revert_supersede(
            ALICE, Tombstone(user_id=ALICE, memory_id=pune.memory_id, deleted_at=clock.now())
        )
    with pytest.raises(MemoryNotFound):
        Deletions(stores).revert_supersede(
            ALICE, Tombstone(user_id=ALICE, memory_id=new_memory_id(), deleted_at=clock.now())
        )
    assert all_ids(stores, ALICE) == [goa.memory_id]


def test_the_forget_watermark_reads_back_and_never_moves_back(
    stores: Stores, clock: ManualClock
) -> None:
    assert stores.tombstones.forgotten_before(ALICE) is None
    first = clock.now()
    Deletions(stores).forget_everything(ALICE, first)
    Deletions(stores).forget_everything(ALICE, first - timedelta(days=1))  # replayed late

    assert stores.tombstones.forgotten_before(ALICE) == first
    assert stores.tombstones.forgotten_before(BOB) is None


# ---- tombstones, purge and forgetting everything ----------------------------------------


def test_a_tombstone_hides_the_memory_and_its_older_versions_at_once(
    stores: Stores, clock: ManualClock
) -> None:
    pune = builders.memory(ALICE, "Lives in Pune.", clock.now())
    stores.memories.add_memory(pune)
    clock.advance(timedelta(minutes=1))
    goa = builders.memory(ALICE, "Lives in Goa.", clock.now(), supersedes=pune.memory_id)
    stores.memories.supersede_memory(ALICE, pune.memory_id, goa)
    keep = builders.memory(ALICE, "Likes tea.", clock.now())
    stores.memories.add_memory(keep)
    tombstone = Tombstone(
        user_id=ALICE,
        memory_id=goa.memory_id,
        deleted_at=clock.now(),
        versions=(pune.memory_id, goa.memory_id),
        source_message_ids=("msg_" + "b" * 32 + "_2",),
        conversation_ids=("conv_" + "b" * 32,),
    )
    deleted = builders.event(ALICE, goa.memory_id, Op.DELETE, clock.now())

    Deletions(stores).tombstone_memories(ALICE, [tombstone], events=[deleted])

    assert stores.memories.get_memory(ALICE, goa.memory_id) is None
    assert stores.memories.get_memory(ALICE, pune.memory_id) is None
    assert all_ids(stores, ALICE, EVERY_STATUS) == [keep.memory_id]
    assert stores.tombstones.get_tombstone(ALICE, goa.memory_id) == tombstone
    assert stores.events.list_events(ALICE, goa.memory_id) == [deleted]
    with pytest.raises(MemoryNotFound):
        stores.memories.close_memory(ALICE, goa.memory_id, clock.now())
    # and their ids stay taken, though no read shows them (never given to another row)
    assert stores.memories.id_in_use(ALICE, pune.memory_id)
    assert stores.memories.id_in_use(ALICE, goa.memory_id)
    assert stores.memories.id_in_use(ALICE, keep.memory_id)
    assert not stores.memories.id_in_use(ALICE, new_memory_id())
    assert not stores.memories.id_in_use("bob", keep.memory_id)  # another user's: not theirs


def test_tombstoning_twice_keeps_the_first_tombstone(stores: Stores, clock: ManualClock) -> None:
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    stores.memories.add_memory(memory)
    first = Tombstone(user_id=ALICE, memory_id=memory.memory_id, deleted_at=clock.now())
    Deletions(stores).tombstone_memories(ALICE, [first])
    clock.advance(timedelta(hours=1))

    Deletions(stores).tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id=memory.memory_id, deleted_at=clock.now())]
    )

    assert stores.tombstones.get_tombstone(ALICE, memory.memory_id) == first


def test_the_purge_removes_rows_and_records_the_tombstone_as_purged(
    stores: Stores, clock: ManualClock
) -> None:
    memories = [builders.memory(ALICE, f"Fact {i}.", clock.now()) for i in range(30)]
    for memory in memories:
        stores.memories.add_memory(memory)
    tombstones = [
        Tombstone(user_id=ALICE, memory_id=m.memory_id, deleted_at=clock.now()) for m in memories
    ]
    Deletions(stores).tombstone_memories(ALICE, tombstones)
    assert [
        t.memory_id for t in stores.tombstones.list_tombstones(ALICE, unpurged_only=True)
    ] == sorted(t.memory_id for t in tombstones)

    stores.visibility.purge_memories(ALICE, [m.memory_id for m in memories] + ["mem_never_existed"])
    purged = dataclasses.replace(tombstones[0], purged_at=clock.now())
    stores.tombstones.put_tombstone(purged)

    assert all_ids(stores, ALICE, EVERY_STATUS) == []
    assert stores.tombstones.get_tombstone(ALICE, purged.memory_id) == purged
    assert len(stores.tombstones.list_tombstones(ALICE)) == 30
    assert purged.memory_id not in [
        t.memory_id for t in stores.tombstones.list_tombstones(ALICE, unpurged_only=True)
    ]


def test_a_tombstone_reads_back_with_every_field(stores: Stores, clock: ManualClock) -> None:
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    stores.memories.add_memory(memory)
    tombstone = Tombstone(
        user_id=ALICE,
        memory_id=memory.memory_id,
        deleted_at=clock.now(),
        persona="coach",
        kind=Kind.PREFERENCE,
        versions=(memory.memory_id, "mem_older"),
        source_message_ids=("conv_a_1",),
        conversation_ids=("conv_a",),
    )

    Deletions(stores).tombstone_memories(ALICE, [tombstone])
    purged = dataclasses.replace(tombstone, purged_at=clock.now(), purge_error="Timeout")
    stores.tombstones.put_tombstone(purged)

    assert stores.tombstones.get_tombstone(ALICE, memory.memory_id) == purged


def test_a_tombstoned_id_is_never_written_again(stores: Stores, clock: ManualClock) -> None:
    # Given a memory that was deleted and purged
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    stores.memories.add_memory(memory)
    Deletions(stores).tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id=memory.memory_id, deleted_at=clock.now())]
    )
    stores.visibility.purge_memories(ALICE, [memory.memory_id])

    # When a late writer (say, one attaching an embedding) puts or adds the row again
    with pytest.raises(MemoryNotFound):
        stores.memories.put_memory(memory.with_changes(embedding=vectors.pack([1.0, 0.0])))
    assert stores.memories.add_memory(memory) is False

    # Then it stays gone
    assert stores.memories.get_memory(ALICE, memory.memory_id) is None
    assert all_ids(stores, ALICE, EVERY_STATUS) == []


def test_forget_everything_hides_every_existing_memory_and_the_profile(
    stores: Stores, clock: ManualClock
) -> None:
    memories = [builders.memory(ALICE, f"Fact {i}.", clock.now()) for i in range(5)]
    for memory in memories:
        stores.memories.add_memory(memory)
    stores.memories.close_memory(ALICE, memories[0].memory_id, clock.now())
    stores.user_state.put_profile(
        Profile(
            user_id=ALICE,
            text="Vegetarian.",
            token_count=3,
            built_from=(memories[1].memory_id,),
            rebuilt_at=clock.now(),
        )
    )
    stores.memories.add_memory(builders.memory(BOB, "Bob's fact.", clock.now()))

    Deletions(stores).forget_everything(ALICE, clock.now())

    assert all_ids(stores, ALICE, EVERY_STATUS) == []
    assert stores.memories.get_memory(ALICE, memories[2].memory_id) is None
    assert stores.user_state.get_profile(ALICE) is None
    assert len(all_ids(stores, BOB)) == 1
    # and a memory written afterwards is remembered normally
    clock.advance(timedelta(seconds=1))
    fresh = builders.memory(ALICE, "Starts again.", clock.now())
    stores.memories.add_memory(fresh)
    assert all_ids(stores, ALICE) == [fresh.memory_id]


def test_users_with_unfinished_purges_are_found_oldest_first(
    stores: Stores, clock: ManualClock
) -> None:
    # Given Bob deleted a memory, then Alice two, and Carol's purge already finished
    def deleted(user_id: str, text: str) -> Tombstone:
        memory = builders.memory(user_id, text, clock.now())
        stores.memories.add_memory(memory)
        tombstone = Tombstone(user_id=user_id, memory_id=memory.memory_id, deleted_at=clock.now())
        Deletions(stores).tombstone_memories(user_id, [tombstone])
        clock.advance(timedelta(minutes=1))
        return tombstone

    deleted(BOB, "Has a dog.")
    first_of_alice = deleted(ALICE, "Is vegetarian.")
    deleted(ALICE, "Lives in Pune.")
    carols = deleted(CAROL, "Plays chess.")
    stores.tombstones.put_tombstone(dataclasses.replace(carols, purged_at=clock.now()))

    # Then the sweep finds Bob, then Alice — each once, Carol not at all
    assert stores.tombstones.pending_purges(deleted_before=clock.now()) == [BOB, ALICE]
    assert stores.tombstones.pending_purges(deleted_before=clock.now(), limit=1) == [BOB]
    # And only deletions older than the cut-off count
    assert stores.tombstones.pending_purges(deleted_before=first_of_alice.deleted_at) == [BOB]

    # When Alice's purges finish, only Bob is left
    for tombstone in stores.tombstones.list_tombstones(ALICE, unpurged_only=True):
        stores.tombstones.put_tombstone(dataclasses.replace(tombstone, purged_at=clock.now()))
    assert stores.tombstones.pending_purges(deleted_before=clock.now()) == [BOB]
