"""The Store contract: every test runs on SQLite and on DynamoDB (under moto).

What the laptop default does, AWS does too — that is what lets one stand in for the other.
"""

from __future__ import annotations

import dataclasses
import threading
from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain import vectors
from chatmemory.domain.conversation import Conversation, Role
from chatmemory.domain.errors import (
    ConcurrentChange,
    ConversationNotFound,
    InvalidField,
    MemoryNotFound,
)
from chatmemory.domain.events import Actor, Op
from chatmemory.domain.extraction import Candidate, ExtractionRun, run_id_for
from chatmemory.domain.ids import new_memory_id, new_notice_id
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.notice import Notice
from chatmemory.domain.profile import Profile
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports import MemoryQuery, NewMessage, Store
from tests.support import builders

ALICE = "alice"
BOB = "bob"
CAROL = "carol"
SUPERSEDED = MemoryQuery(status=Status.SUPERSEDED)
EVERY_STATUS = MemoryQuery(status=None)


def all_ids(store: Store, user_id: str, query: MemoryQuery | None = None) -> list[str]:
    return [m.memory_id for m in store.iter_memories(user_id, query)]


# ---- memories: round trips ------------------------------------------------------------


def test_a_memory_reads_back_with_every_field(store: Store, clock: ManualClock) -> None:
    # Given a memory with every optional field filled
    now = clock.now()
    original = builders.memory(
        ALICE,
        "Dan owns a flat in Xuhui, bought Jul 2026.",
        now,
        persona="warren",
        subject="u:alice",
        witnessed=("alice", "cara"),
        room_id="conv_" + "a" * 32,
        kind=Kind.EVENT,
        category="home",
        key="home:flat",
        importance=7,
        stated_by=StatedBy.INFERRED,
        valid_from=now - timedelta(days=120),
        valid_until=now + timedelta(days=365),
        evidence=("msg_" + "a" * 32 + "_3", "msg_" + "a" * 32 + "_4"),
        source_message_id="msg_" + "a" * 32 + "_3",
        last_used_at=now - timedelta(days=1),
        recall_count=4,
        embedding=vectors.pack([0.1, -0.2, 0.3, 0.0]),
        meta={"cadence": "slow", "asked": None, "deflects": 0, "tags": ["a", "ü"]},
    )
    # When it is stored and read back
    assert store.add_memory(original) is True
    # Then nothing was lost or changed
    assert store.get_memory(ALICE, original.memory_id) == original


def test_unicode_and_500_character_texts_survive(store: Store, clock: ManualClock) -> None:
    long_text = ("Préfère le thé vert 🍵, 日本語も話す — " * 20)[:500]
    assert len(long_text) == 500
    for text in (long_text, "Ist Vegetarier 🥦.", "Живёт в Пуне.", "يحب القهوة", "a"):
        memory = builders.memory(ALICE, text, clock.now())
        store.add_memory(memory)
        stored = store.get_memory(ALICE, memory.memory_id)
        assert stored is not None and stored.text == text


def test_adding_an_existing_id_writes_nothing(store: Store, clock: ManualClock) -> None:
    first = builders.memory(ALICE, "Is vegetarian.", clock.now())
    replay = first.with_changes(text="Eats fish.")
    added_event = builders.event(ALICE, first.memory_id, Op.ADD, clock.now())

    assert store.add_memory(first) is True
    assert store.add_memory(replay, events=[added_event]) is False

    stored = store.get_memory(ALICE, first.memory_id)
    assert stored is not None and stored.text == "Is vegetarian."
    assert store.list_events(ALICE, first.memory_id) == []


def test_put_memory_replaces_the_row(store: Store, clock: ManualClock) -> None:
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    store.add_memory(memory)
    with_vector = memory.with_changes(embedding=vectors.pack([1.0, 0.0]), importance=8)

    store.put_memory(with_vector)

    assert store.get_memory(ALICE, memory.memory_id) == with_vector


def test_add_memory_stores_its_events_with_it(store: Store, clock: ManualClock) -> None:
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    added = builders.event(ALICE, memory.memory_id, Op.ADD, clock.now())

    store.add_memory(memory, events=[added])

    assert store.list_events(ALICE, memory.memory_id) == [added]


# ---- memories: listing and pagination ---------------------------------------------------


def test_listing_is_newest_first_and_filters_by_status_and_persona(
    store: Store, clock: ManualClock
) -> None:
    older = builders.memory(ALICE, "Lives in Pune.", clock.now())
    clock.advance(timedelta(minutes=1))
    warren = builders.memory(ALICE, "Owns a flat.", clock.now(), persona="warren")
    clock.advance(timedelta(minutes=1))
    newer = builders.memory(ALICE, "Is vegetarian.", clock.now())
    for memory in (older, warren, newer):
        store.add_memory(memory)
    clock.advance(timedelta(minutes=1))
    store.close_memory(ALICE, older.memory_id, clock.now())

    assert all_ids(store, ALICE) == [newer.memory_id, warren.memory_id]
    assert all_ids(store, ALICE, MemoryQuery(persona="warren")) == [warren.memory_id]
    assert all_ids(store, ALICE, MemoryQuery(status=Status.CLOSED)) == [older.memory_id]
    assert all_ids(store, ALICE, EVERY_STATUS) == [
        newer.memory_id,
        warren.memory_id,
        older.memory_id,
    ]


def test_created_after_keeps_only_newer_rows(store: Store, clock: ManualClock) -> None:
    old = builders.memory(ALICE, "Lives in Pune.", clock.now())
    store.add_memory(old)
    cutoff = clock.advance(timedelta(seconds=30))
    clock.advance(timedelta(seconds=1))
    fresh = builders.memory(ALICE, "Is vegetarian.", clock.now())
    store.add_memory(fresh)

    assert all_ids(store, ALICE, MemoryQuery(created_after=cutoff)) == [fresh.memory_id]


def test_pagination_returns_every_row_exactly_once(store: Store, clock: ManualClock) -> None:
    # Given 130 memories, a third of them history, some sharing a timestamp
    expected_active = []
    for index in range(130):
        if index % 7 == 0:
            clock.advance(timedelta(seconds=1))
        memory = builders.memory(ALICE, f"Fact number {index}.", clock.now())
        store.add_memory(memory)
        if index % 3 == 0:
            store.close_memory(ALICE, memory.memory_id, clock.now())
        else:
            expected_active.append(memory.memory_id)
    # When they are read 25 at a time
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = store.list_memories(ALICE, limit=25, cursor=cursor)
        assert len(page.items) <= 25
        seen.extend(m.memory_id for m in page.items)
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    # Then every active row came back once, newest first, over several pages
    assert pages >= 4
    assert sorted(seen) == sorted(expected_active)
    assert len(seen) == len(set(seen))
    created = [store.get_memory(ALICE, memory_id).created_at for memory_id in seen]  # type: ignore[union-attr]
    assert created == sorted(created, reverse=True)


def test_the_last_page_has_no_cursor(store: Store, clock: ManualClock) -> None:
    for index in range(3):
        store.add_memory(builders.memory(ALICE, f"Fact {index}.", clock.now()))

    page = store.list_memories(ALICE, limit=3)

    assert len(page.items) == 3 and page.next_cursor is None


def test_a_cursor_only_works_for_the_user_it_was_issued_to(
    store: Store, clock: ManualClock
) -> None:
    for index in range(3):
        store.add_memory(builders.memory(ALICE, f"Fact {index}.", clock.now()))
    cursor = store.list_memories(ALICE, limit=1).next_cursor
    assert cursor is not None

    with pytest.raises(InvalidField) as refused:
        store.list_memories(BOB, limit=1, cursor=cursor)
    assert refused.value.field == "next"
    with pytest.raises(InvalidField):
        store.list_memories(ALICE, limit=1, cursor="not-a-cursor")


def test_limit_outside_1_to_100_is_refused(store: Store) -> None:
    for bad in (0, 101):
        with pytest.raises(InvalidField):
            store.list_memories(ALICE, limit=bad)


def test_digests_list_exactly_the_memories_recall_may_use(store: Store, clock: ManualClock) -> None:
    # Given active, superseded, closed, deleted, expired and other-persona memories
    veg = builders.memory(
        ALICE,
        "Is vegetarian.",
        clock.now(),
        importance=8,
        embedding=vectors.pack_rows([[1.0, 0.0], [0.0, 1.0]]),
        meta={"uses": ["dinner ideas"], "uses_from": "category"},
    )
    pune = builders.memory(ALICE, "Lives in Pune.", clock.now())
    goa = builders.memory(ALICE, "Lives in Goa.", clock.now(), supersedes=pune.memory_id)
    job = builders.memory(ALICE, "Works at Acme.", clock.now())
    gone = builders.memory(ALICE, "Likes jazz.", clock.now())
    trip = builders.memory(
        ALICE, "Is in Lisbon this week.", clock.now(), valid_until=clock.now() + timedelta(hours=1)
    )
    warren = builders.memory(ALICE, "Owns a flat.", clock.now(), persona="warren")
    for memory in (veg, pune, job, gone, trip, warren):
        store.add_memory(memory)
    store.supersede_memory(ALICE, pune.memory_id, goa)
    store.close_memory(ALICE, job.memory_id, clock.now())
    store.tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id=gone.memory_id, deleted_at=clock.now())]
    )
    store.add_memory(builders.memory(BOB, "Bob's fact.", clock.now()))
    clock.advance(timedelta(hours=2))

    # When recall reads the digests
    digests = {d.memory_id: d for d in store.memory_digests(ALICE)}

    # Then only active, visible, unexpired rows are there, with what scoring needs
    assert set(digests) == {veg.memory_id, goa.memory_id, warren.memory_id}
    assert digests[veg.memory_id].importance == 8 and digests[veg.memory_id].borrowed_uses
    assert not digests[goa.memory_id].borrowed_uses
    assert [d.memory_id for d in store.memory_digests(ALICE, "warren")] == [warren.memory_id]
    assert store.memory_embeddings(ALICE, [veg.memory_id, goa.memory_id, "mem_x"]) == {
        veg.memory_id: veg.embedding
    }
    assert store.memory_embeddings(BOB, [veg.memory_id]) == {}
    store.forget_everything(ALICE, clock.now())
    assert store.memory_digests(ALICE) == []


def test_a_digest_version_changes_when_the_vectors_may_have(
    store: Store, clock: ManualClock
) -> None:
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    store.add_memory(memory)
    [before] = store.memory_digests(ALICE)
    clock.advance(timedelta(seconds=1))

    store.put_memory(
        memory.with_changes(embedding=vectors.pack([1.0, 0.0]), updated_at=clock.now())
    )

    [after] = store.memory_digests(ALICE)
    assert before.version != after.version


def test_get_memories_returns_visible_rows_in_the_order_asked(
    store: Store, clock: ManualClock
) -> None:
    first = builders.memory(ALICE, "Is vegetarian.", clock.now())
    second = builders.memory(ALICE, "Lives in Pune.", clock.now())
    gone = builders.memory(ALICE, "Likes jazz.", clock.now())
    bobs = builders.memory(BOB, "Bob's fact.", clock.now())
    for memory in (first, second, gone, bobs):
        store.add_memory(memory)
    store.tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id=gone.memory_id, deleted_at=clock.now())]
    )

    found = store.get_memories(
        ALICE, [second.memory_id, gone.memory_id, bobs.memory_id, first.memory_id, "mem_x"]
    )

    assert found == [second, first]
    assert store.get_memories(ALICE, []) == []


# ---- supersede and close ----------------------------------------------------------------


def test_supersede_closes_the_old_row_and_writes_the_new_one_together(
    store: Store, clock: ManualClock
) -> None:
    pune = builders.memory(ALICE, "Lives in Pune.", clock.now(), key="home_city")
    store.add_memory(pune)
    clock.advance(timedelta(days=30))
    bengaluru = builders.memory(
        ALICE, "Lives in Bengaluru.", clock.now(), key="home_city", supersedes=pune.memory_id
    )
    update_old = builders.event(ALICE, pune.memory_id, Op.UPDATE, clock.now())
    add_new = builders.event(ALICE, bengaluru.memory_id, Op.ADD, clock.now())

    returned = store.supersede_memory(
        ALICE, pune.memory_id, bengaluru, events=[update_old, add_new]
    )

    assert all_ids(store, ALICE) == [bengaluru.memory_id]
    assert all_ids(store, ALICE, SUPERSEDED) == [pune.memory_id]
    history = store.list_memories(ALICE, SUPERSEDED).items[0]
    assert history == returned
    assert history.status is Status.SUPERSEDED
    assert history.closed_by == bengaluru.memory_id
    assert history.valid_to == bengaluru.created_at
    assert history.text == "Lives in Pune."  # kept as history, never overwritten
    assert store.list_events(ALICE, pune.memory_id) == [update_old]
    assert store.list_events(ALICE, bengaluru.memory_id) == [add_new]


def test_supersede_writes_nothing_when_the_new_id_already_exists(
    store: Store, clock: ManualClock
) -> None:
    pune = builders.memory(ALICE, "Lives in Pune.", clock.now())
    taken = builders.memory(ALICE, "Likes tea.", clock.now())
    store.add_memory(pune)
    store.add_memory(taken)
    clash = taken.with_changes(text="Lives in Bengaluru.", supersedes=pune.memory_id)
    event = builders.event(ALICE, pune.memory_id, Op.UPDATE, clock.now())

    with pytest.raises(ConcurrentChange):
        store.supersede_memory(ALICE, pune.memory_id, clash, events=[event])

    assert store.get_memory(ALICE, pune.memory_id) == pune
    assert store.get_memory(ALICE, taken.memory_id) == taken
    assert store.list_events(ALICE, pune.memory_id) == []


def test_only_one_of_two_racing_supersedes_wins(store: Store, clock: ManualClock) -> None:
    pune = builders.memory(ALICE, "Lives in Pune.", clock.now())
    store.add_memory(pune)
    first = builders.memory(ALICE, "Lives in Delhi.", clock.now(), supersedes=pune.memory_id)
    second = builders.memory(ALICE, "Lives in Goa.", clock.now(), supersedes=pune.memory_id)

    store.supersede_memory(ALICE, pune.memory_id, first)
    with pytest.raises(ConcurrentChange):
        store.supersede_memory(ALICE, pune.memory_id, second)

    assert store.get_memory(ALICE, second.memory_id) is None
    assert all_ids(store, ALICE) == [first.memory_id]


def test_superseding_a_missing_memory_writes_nothing(store: Store, clock: ManualClock) -> None:
    ghost = new_memory_id()
    new = builders.memory(ALICE, "Lives in Goa.", clock.now(), supersedes=ghost)

    with pytest.raises(MemoryNotFound):
        store.supersede_memory(ALICE, ghost, new)

    assert store.get_memory(ALICE, new.memory_id) is None


def _corrected(store: Store, clock: ManualClock) -> tuple[Memory, Memory]:
    """Pune, superseded a month later by Bengaluru."""
    pune = builders.memory(ALICE, "Lives in Pune.", clock.now(), key="home_city")
    store.add_memory(pune)
    clock.advance(timedelta(days=30))
    bengaluru = builders.memory(
        ALICE, "Lives in Bengaluru.", clock.now(), key="home_city", supersedes=pune.memory_id
    )
    store.supersede_memory(ALICE, pune.memory_id, bengaluru)
    clock.advance(timedelta(hours=1))
    return pune, bengaluru


def test_reverting_a_supersede_restores_the_earlier_version_exactly(
    store: Store, clock: ManualClock
) -> None:
    pune, bengaluru = _corrected(store, clock)
    tombstone = Tombstone(user_id=ALICE, memory_id=bengaluru.memory_id, deleted_at=clock.now())
    undone = builders.event(ALICE, bengaluru.memory_id, Op.DELETE, clock.now())

    reinstated = store.revert_supersede(ALICE, tombstone, events=[undone])

    assert reinstated == pune.with_changes(updated_at=clock.now())
    assert store.get_memory(ALICE, pune.memory_id) == reinstated
    assert all_ids(store, ALICE) == [pune.memory_id]
    assert all_ids(store, ALICE, SUPERSEDED) == []
    assert store.get_memory(ALICE, bengaluru.memory_id) is None
    assert store.get_tombstone(ALICE, bengaluru.memory_id) == tombstone
    assert store.list_events(ALICE, bengaluru.memory_id) == [undone]


def test_a_supersede_that_moved_on_is_not_reverted(store: Store, clock: ManualClock) -> None:
    pune, bengaluru = _corrected(store, clock)
    goa = builders.memory(
        ALICE, "Lives in Goa.", clock.now(), key="home_city", supersedes=bengaluru.memory_id
    )
    store.supersede_memory(ALICE, bengaluru.memory_id, goa)
    tombstone = Tombstone(user_id=ALICE, memory_id=bengaluru.memory_id, deleted_at=clock.now())

    with pytest.raises(ConcurrentChange):
        store.revert_supersede(ALICE, tombstone)

    assert all_ids(store, ALICE) == [goa.memory_id]
    assert store.get_tombstone(ALICE, bengaluru.memory_id) is None
    with pytest.raises(ConcurrentChange):  # a memory that corrects nothing
        store.revert_supersede(
            ALICE, Tombstone(user_id=ALICE, memory_id=pune.memory_id, deleted_at=clock.now())
        )
    with pytest.raises(MemoryNotFound):
        store.revert_supersede(
            ALICE, Tombstone(user_id=ALICE, memory_id=new_memory_id(), deleted_at=clock.now())
        )
    assert all_ids(store, ALICE) == [goa.memory_id]


def test_the_forget_watermark_reads_back_and_never_moves_back(
    store: Store, clock: ManualClock
) -> None:
    assert store.forgotten_before(ALICE) is None
    first = clock.now()
    store.forget_everything(ALICE, first)
    store.forget_everything(ALICE, first - timedelta(days=1))  # replayed late

    assert store.forgotten_before(ALICE) == first
    assert store.forgotten_before(BOB) is None


def test_close_ends_a_belief_once(store: Store, clock: ManualClock) -> None:
    job = builders.memory(ALICE, "Works at Acme.", clock.now())
    store.add_memory(job)
    clock.advance(timedelta(days=3))

    closed = store.close_memory(ALICE, job.memory_id, clock.now())

    assert closed.status is Status.CLOSED and closed.valid_to == clock.now()
    assert store.list_memories(ALICE, MemoryQuery(status=Status.CLOSED)).items == [closed]
    assert all_ids(store, ALICE) == []
    with pytest.raises(ConcurrentChange):
        store.close_memory(ALICE, job.memory_id, clock.now())


def test_record_use_reinforces_visible_memories_only(store: Store, clock: ManualClock) -> None:
    used = builders.memory(ALICE, "Is vegetarian.", clock.now())
    deleted = builders.memory(ALICE, "Likes jazz.", clock.now())
    store.add_memory(used)
    store.add_memory(deleted)
    store.tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id=deleted.memory_id, deleted_at=clock.now())]
    )
    later = clock.advance(timedelta(hours=2))

    store.record_use(ALICE, [used.memory_id, deleted.memory_id, "mem_unknown"], later)
    store.record_use(ALICE, [used.memory_id], later)

    reloaded = store.get_memory(ALICE, used.memory_id)
    assert reloaded is not None
    assert reloaded.recall_count == 2 and reloaded.last_used_at == later


# ---- shelf life (TTL) -------------------------------------------------------------------


def test_a_memory_past_its_shelf_life_is_gone_from_every_read(
    store: Store, clock: ManualClock
) -> None:
    trip = builders.memory(
        ALICE,
        "Is travelling to Lisbon next week.",
        clock.now(),
        valid_until=clock.now() + timedelta(days=7),
    )
    store.add_memory(trip)
    assert store.get_memory(ALICE, trip.memory_id) == trip

    clock.advance(timedelta(days=7, seconds=1))

    assert store.get_memory(ALICE, trip.memory_id) is None
    assert all_ids(store, ALICE, EVERY_STATUS) == []
    with pytest.raises(MemoryNotFound):
        store.close_memory(ALICE, trip.memory_id, clock.now())


# ---- tombstones, purge and forgetting everything ----------------------------------------


def test_a_tombstone_hides_the_memory_and_its_older_versions_at_once(
    store: Store, clock: ManualClock
) -> None:
    pune = builders.memory(ALICE, "Lives in Pune.", clock.now())
    store.add_memory(pune)
    clock.advance(timedelta(minutes=1))
    goa = builders.memory(ALICE, "Lives in Goa.", clock.now(), supersedes=pune.memory_id)
    store.supersede_memory(ALICE, pune.memory_id, goa)
    keep = builders.memory(ALICE, "Likes tea.", clock.now())
    store.add_memory(keep)
    tombstone = Tombstone(
        user_id=ALICE,
        memory_id=goa.memory_id,
        deleted_at=clock.now(),
        versions=(pune.memory_id, goa.memory_id),
        source_message_ids=("msg_" + "b" * 32 + "_2",),
        conversation_ids=("conv_" + "b" * 32,),
    )
    deleted = builders.event(ALICE, goa.memory_id, Op.DELETE, clock.now())

    store.tombstone_memories(ALICE, [tombstone], events=[deleted])

    assert store.get_memory(ALICE, goa.memory_id) is None
    assert store.get_memory(ALICE, pune.memory_id) is None
    assert all_ids(store, ALICE, EVERY_STATUS) == [keep.memory_id]
    assert store.get_tombstone(ALICE, goa.memory_id) == tombstone
    assert store.list_events(ALICE, goa.memory_id) == [deleted]
    with pytest.raises(MemoryNotFound):
        store.close_memory(ALICE, goa.memory_id, clock.now())


def test_tombstoning_twice_keeps_the_first_tombstone(store: Store, clock: ManualClock) -> None:
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    store.add_memory(memory)
    first = Tombstone(user_id=ALICE, memory_id=memory.memory_id, deleted_at=clock.now())
    store.tombstone_memories(ALICE, [first])
    clock.advance(timedelta(hours=1))

    store.tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id=memory.memory_id, deleted_at=clock.now())]
    )

    assert store.get_tombstone(ALICE, memory.memory_id) == first


def test_the_purge_removes_rows_and_records_the_tombstone_as_purged(
    store: Store, clock: ManualClock
) -> None:
    memories = [builders.memory(ALICE, f"Fact {i}.", clock.now()) for i in range(30)]
    for memory in memories:
        store.add_memory(memory)
    tombstones = [
        Tombstone(user_id=ALICE, memory_id=m.memory_id, deleted_at=clock.now()) for m in memories
    ]
    store.tombstone_memories(ALICE, tombstones)
    assert [t.memory_id for t in store.list_tombstones(ALICE, unpurged_only=True)] == sorted(
        t.memory_id for t in tombstones
    )

    store.purge_memories(ALICE, [m.memory_id for m in memories] + ["mem_never_existed"])
    purged = dataclasses.replace(tombstones[0], purged_at=clock.now())
    store.put_tombstone(purged)

    assert all_ids(store, ALICE, EVERY_STATUS) == []
    assert store.get_tombstone(ALICE, purged.memory_id) == purged
    assert len(store.list_tombstones(ALICE)) == 30
    assert purged.memory_id not in [
        t.memory_id for t in store.list_tombstones(ALICE, unpurged_only=True)
    ]


def test_a_tombstoned_id_is_never_written_again(store: Store, clock: ManualClock) -> None:
    # Given a memory that was deleted and purged
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    store.add_memory(memory)
    store.tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id=memory.memory_id, deleted_at=clock.now())]
    )
    store.purge_memories(ALICE, [memory.memory_id])

    # When a late writer (say, one attaching an embedding) puts or adds the row again
    with pytest.raises(MemoryNotFound):
        store.put_memory(memory.with_changes(embedding=vectors.pack([1.0, 0.0])))
    assert store.add_memory(memory) is False

    # Then it stays gone
    assert store.get_memory(ALICE, memory.memory_id) is None
    assert all_ids(store, ALICE, EVERY_STATUS) == []


def test_forget_everything_hides_every_existing_memory_and_the_profile(
    store: Store, clock: ManualClock
) -> None:
    memories = [builders.memory(ALICE, f"Fact {i}.", clock.now()) for i in range(5)]
    for memory in memories:
        store.add_memory(memory)
    store.close_memory(ALICE, memories[0].memory_id, clock.now())
    store.put_profile(
        Profile(
            user_id=ALICE,
            text="Vegetarian.",
            token_count=3,
            built_from=(memories[1].memory_id,),
            rebuilt_at=clock.now(),
        )
    )
    store.add_memory(builders.memory(BOB, "Bob's fact.", clock.now()))

    store.forget_everything(ALICE, clock.now())

    assert all_ids(store, ALICE, EVERY_STATUS) == []
    assert store.get_memory(ALICE, memories[2].memory_id) is None
    assert store.get_profile(ALICE) is None
    assert len(all_ids(store, BOB)) == 1
    # and a memory written afterwards is remembered normally
    clock.advance(timedelta(seconds=1))
    fresh = builders.memory(ALICE, "Starts again.", clock.now())
    store.add_memory(fresh)
    assert all_ids(store, ALICE) == [fresh.memory_id]


# ---- user isolation ---------------------------------------------------------------------


def test_another_user_never_sees_alices_rows_through_any_method(
    store: Store, clock: ManualClock
) -> None:
    # Given Alice has one of everything
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    store.add_memory(memory, events=[builders.event(ALICE, memory.memory_id, Op.ADD, clock.now())])
    conversation = builders.conversation(ALICE, clock.now())
    store.create_conversation(conversation)
    store.append_message(
        ALICE,
        conversation.conversation_id,
        role=Role.USER,
        content="I'm vegetarian",
        tokens=4,
        at=clock.now(),
    )
    store.put_profile(
        Profile(
            user_id=ALICE,
            text="Vegetarian.",
            token_count=3,
            built_from=(memory.memory_id,),
            rebuilt_at=clock.now(),
        )
    )
    store.put_settings(MemorySettings(user_id=ALICE, enabled=False, note="Call me Al."))
    notice = Notice(
        user_id=ALICE,
        notice_id=new_notice_id(),
        text="noted: is vegetarian",
        memory_ids=(memory.memory_id,),
        created_at=clock.now(),
    )
    store.add_notice(notice)
    store.tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id="mem_gone", deleted_at=clock.now())]
    )

    # Then Bob, asking with Alice's ids, gets nothing
    assert store.get_memory(BOB, memory.memory_id) is None
    assert all_ids(store, BOB, EVERY_STATUS) == []
    assert store.list_events(BOB, memory.memory_id) == []
    assert store.get_conversation(BOB, conversation.conversation_id) is None
    assert store.list_conversations(BOB) == []
    assert store.list_messages(BOB, conversation.conversation_id) == []
    assert store.get_profile(BOB) is None
    assert store.get_settings(BOB) == MemorySettings(user_id=BOB)
    assert store.get_notice(BOB, notice.notice_id) is None
    assert store.list_notices(BOB) == []
    assert store.mark_notice_undone(BOB, notice.notice_id, clock.now()) is False
    assert store.get_tombstone(BOB, "mem_gone") is None
    assert store.list_tombstones(BOB) == []
    assert not store.update_summary(
        BOB,
        conversation.conversation_id,
        summary="x",
        upto_seq=1,
        expected_upto_seq=0,
        fold_count=1,
        at=clock.now(),
    )
    assert not store.advance_extraction(
        BOB, conversation.conversation_id, upto_seq=1, expected_upto_seq=0
    )
    # and Bob's writes aimed at Alice's ids change nothing of hers
    with pytest.raises(MemoryNotFound):
        store.close_memory(BOB, memory.memory_id, clock.now())
    with pytest.raises(MemoryNotFound):
        store.supersede_memory(
            BOB,
            memory.memory_id,
            builders.memory(BOB, "Eats meat.", clock.now(), supersedes=memory.memory_id),
        )
    with pytest.raises(ConversationNotFound):
        store.append_message(
            BOB,
            conversation.conversation_id,
            role=Role.USER,
            content="hi",
            tokens=1,
            at=clock.now(),
        )
    store.record_use(BOB, [memory.memory_id], clock.now())
    store.tombstone_memories(
        BOB, [Tombstone(user_id=BOB, memory_id=memory.memory_id, deleted_at=clock.now())]
    )
    store.purge_memories(BOB, [memory.memory_id])
    store.delete_notices(BOB, [notice.notice_id])
    store.delete_profiles(BOB)
    store.forget_everything(BOB, clock.now())
    assert store.get_memory(ALICE, memory.memory_id) == memory
    assert store.get_notice(ALICE, notice.notice_id) == notice
    assert store.get_profile(ALICE) is not None
    assert store.get_conversation(ALICE, conversation.conversation_id) is not None
    assert len(store.list_messages(ALICE, conversation.conversation_id)) == 1


# ---- conversations and messages ---------------------------------------------------------


def test_a_conversation_reads_back_and_cannot_be_created_twice(
    store: Store, clock: ManualClock
) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    store.create_conversation(conversation)

    assert store.get_conversation(ALICE, conversation.conversation_id) == conversation
    with pytest.raises(ConcurrentChange):
        store.create_conversation(conversation)


def test_messages_get_consecutive_sequence_numbers(store: Store, clock: ManualClock) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    store.create_conversation(conversation)

    user_turn = store.append_message(
        ALICE,
        conversation.conversation_id,
        role=Role.USER,
        content="Hallo 👋 ich bin Vegetarier",
        tokens=7,
        at=clock.now(),
    )
    reply_at = clock.advance(timedelta(seconds=2))
    reply = store.append_message(
        ALICE,
        conversation.conversation_id,
        role=Role.ASSISTANT,
        content="Schön!",
        tokens=2,
        at=reply_at,
        memories_used=("mem_a",),
    )

    assert (user_turn.seq, reply.seq) == (1, 2)
    assert store.list_messages(ALICE, conversation.conversation_id) == [user_turn, reply]
    state = store.get_conversation(ALICE, conversation.conversation_id)
    assert state is not None
    assert state.last_seq == 2
    assert state.updated_at == reply_at
    assert state.last_user_message_at == conversation.created_at


def test_an_exchange_is_stored_whole_with_its_new_conversation(
    store: Store, clock: ManualClock
) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    exchange = [
        NewMessage(Role.USER, "remember that I'm vegetarian", 6),
        NewMessage(Role.ASSISTANT, "Noted.", 2, ("mem_a",)),
    ]

    stored = store.append_messages(
        ALICE, conversation.conversation_id, exchange, clock.now(), create=conversation
    )

    assert [(m.seq, m.role, m.memories_used) for m in stored] == [
        (1, Role.USER, ()),
        (2, Role.ASSISTANT, ("mem_a",)),
    ]
    assert store.list_messages(ALICE, conversation.conversation_id) == stored
    state = store.get_conversation(ALICE, conversation.conversation_id)
    assert state is not None and state.last_seq == 2
    assert state.last_user_message_at == clock.now()
    with pytest.raises(ConcurrentChange):
        store.append_messages(
            ALICE, conversation.conversation_id, exchange, clock.now(), create=conversation
        )
    assert len(store.list_messages(ALICE, conversation.conversation_id)) == 2


def test_an_exchange_continues_the_sequence(store: Store, clock: ManualClock) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    store.create_conversation(conversation)
    store.append_message(
        ALICE, conversation.conversation_id, role=Role.USER, content="hi", tokens=1, at=clock.now()
    )

    stored = store.append_messages(
        ALICE,
        conversation.conversation_id,
        [NewMessage(Role.ASSISTANT, "hello", 1), NewMessage(Role.USER, "again", 1)],
        clock.now(),
    )

    assert [m.seq for m in stored] == [2, 3]
    with pytest.raises(ConversationNotFound):
        store.append_messages(
            BOB, conversation.conversation_id, [NewMessage(Role.USER, "x", 1)], clock.now()
        )


def test_message_windows(store: Store, clock: ManualClock) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    store.create_conversation(conversation)
    for turn in range(1, 13):
        role = Role.USER if turn % 2 else Role.ASSISTANT
        store.append_message(
            ALICE,
            conversation.conversation_id,
            role=role,
            content=f"turn {turn}",
            tokens=2,
            at=clock.now(),
        )

    def seqs(**window: int) -> list[int]:
        return [m.seq for m in store.list_messages(ALICE, conversation.conversation_id, **window)]

    assert seqs() == list(range(1, 13))
    assert seqs(after_seq=8) == [9, 10, 11, 12]
    assert seqs(after_seq=2, upto_seq=6) == [3, 4, 5, 6]
    assert seqs(last=4) == [9, 10, 11, 12]
    assert seqs(upto_seq=6, last=2) == [5, 6]


def test_concurrent_appends_never_share_a_sequence_number(store: Store, clock: ManualClock) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    store.create_conversation(conversation)
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            for index in range(8):
                store.append_message(
                    ALICE,
                    conversation.conversation_id,
                    role=Role.USER,
                    content=f"{name} {index}",
                    tokens=2,
                    at=clock.now(),
                )
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(f"w{n}",)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    messages = store.list_messages(ALICE, conversation.conversation_id)
    assert [m.seq for m in messages] == list(range(1, 25))


def test_a_temporary_chat_and_its_messages_expire(store: Store, clock: ManualClock) -> None:
    temporary = builders.conversation(ALICE, clock.now(), temporary=True, ttl=timedelta(hours=24))
    store.create_conversation(temporary)
    message = store.append_message(
        ALICE,
        temporary.conversation_id,
        role=Role.USER,
        content="secret-ish",
        tokens=2,
        at=clock.now(),
    )
    assert message.expires_at == temporary.expires_at

    clock.advance(timedelta(hours=24, seconds=1))

    assert store.get_conversation(ALICE, temporary.conversation_id) is None
    assert store.list_conversations(ALICE) == []
    assert store.list_messages(ALICE, temporary.conversation_id) == []
    with pytest.raises(ConversationNotFound):
        store.append_message(
            ALICE, temporary.conversation_id, role=Role.USER, content="hi", tokens=1, at=clock.now()
        )


def test_conversations_list_most_recently_updated_first(store: Store, clock: ManualClock) -> None:
    first = builders.conversation(ALICE, clock.now())
    store.create_conversation(first)
    clock.advance(timedelta(minutes=1))
    second = builders.conversation(ALICE, clock.now())
    store.create_conversation(second)
    clock.advance(timedelta(minutes=1))
    store.append_message(
        ALICE, first.conversation_id, role=Role.USER, content="back again", tokens=2, at=clock.now()
    )

    assert [c.conversation_id for c in store.list_conversations(ALICE)] == [
        first.conversation_id,
        second.conversation_id,
    ]


def _eight_turns(store: Store, clock: ManualClock) -> Conversation:
    """A conversation of Alice's with eight user messages and no summary yet."""
    conversation = builders.conversation(ALICE, clock.now())
    store.create_conversation(conversation)
    for turn in range(8):
        store.append_message(
            ALICE,
            conversation.conversation_id,
            role=Role.USER,
            content=f"turn {turn}",
            tokens=2,
            at=clock.now(),
        )
    return conversation


def test_two_folds_from_the_same_state_cannot_both_win(store: Store, clock: ManualClock) -> None:
    conversation = _eight_turns(store, clock)

    first = store.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="Alice is vegetarian.",
        upto_seq=4,
        expected_upto_seq=0,
        fold_count=1,
        at=clock.now(),
    )
    second = store.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="Alice likes Goa.",
        upto_seq=4,
        expected_upto_seq=0,
        fold_count=1,
        at=clock.now(),
    )

    assert (first, second) == (True, False)
    state = store.get_conversation(ALICE, conversation.conversation_id)
    assert state is not None
    assert (state.summary, state.summary_upto_seq, state.fold_count) == (
        "Alice is vegetarian.",
        4,
        1,
    )
    # a fold past the last message is refused too
    assert not store.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="x",
        upto_seq=99,
        expected_upto_seq=4,
        fold_count=2,
        at=clock.now(),
    )


def test_a_rewrite_of_the_summary_beats_a_fold_that_read_it_before(
    store: Store, clock: ManualClock
) -> None:
    # Given a folded conversation
    conversation = _eight_turns(store, clock)
    assert store.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="Alice is vegetarian. Alice likes Goa.",
        upto_seq=4,
        expected_upto_seq=0,
        fold_count=1,
        at=clock.now(),
    )

    # When a purge rewrites the summary in place (same upto_seq, next fold_count)
    rewritten = store.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="Alice likes Goa.",
        upto_seq=4,
        expected_upto_seq=4,
        fold_count=2,
        expected_fold_count=1,
        at=clock.now(),
    )
    # and a fold that read the summary before the rewrite tries to apply
    stale_fold = store.update_summary(
        ALICE,
        conversation.conversation_id,
        summary="Alice is vegetarian. Alice likes Goa. Turns 5-8.",
        upto_seq=8,
        expected_upto_seq=4,
        fold_count=2,
        expected_fold_count=1,
        at=clock.now(),
    )

    # Then the rewrite stands and the stale fold is refused
    assert (rewritten, stale_fold) == (True, False)
    state = store.get_conversation(ALICE, conversation.conversation_id)
    assert state is not None
    assert (state.summary, state.summary_upto_seq, state.fold_count) == ("Alice likes Goa.", 4, 2)


def test_users_with_unfinished_purges_are_found_oldest_first(
    store: Store, clock: ManualClock
) -> None:
    # Given Bob deleted a memory, then Alice two, and Carol's purge already finished
    def deleted(user_id: str, text: str) -> Tombstone:
        memory = builders.memory(user_id, text, clock.now())
        store.add_memory(memory)
        tombstone = Tombstone(user_id=user_id, memory_id=memory.memory_id, deleted_at=clock.now())
        store.tombstone_memories(user_id, [tombstone])
        clock.advance(timedelta(minutes=1))
        return tombstone

    deleted(BOB, "Has a dog.")
    first_of_alice = deleted(ALICE, "Is vegetarian.")
    deleted(ALICE, "Lives in Pune.")
    carols = deleted(CAROL, "Plays chess.")
    store.put_tombstone(dataclasses.replace(carols, purged_at=clock.now()))

    # Then the sweep finds Bob, then Alice — each once, Carol not at all
    assert store.pending_purges(deleted_before=clock.now()) == [BOB, ALICE]
    assert store.pending_purges(deleted_before=clock.now(), limit=1) == [BOB]
    # And only deletions older than the cut-off count
    assert store.pending_purges(deleted_before=first_of_alice.deleted_at) == [BOB]

    # When Alice's purges finish, only Bob is left
    for tombstone in store.list_tombstones(ALICE, unpurged_only=True):
        store.put_tombstone(dataclasses.replace(tombstone, purged_at=clock.now()))
    assert store.pending_purges(deleted_before=clock.now()) == [BOB]


def test_the_extraction_cursor_moves_only_from_where_it_was_read(
    store: Store, clock: ManualClock
) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    store.create_conversation(conversation)
    for turn in range(3):
        store.append_message(
            ALICE,
            conversation.conversation_id,
            role=Role.USER,
            content=f"turn {turn}",
            tokens=2,
            at=clock.now(),
        )

    assert store.advance_extraction(
        ALICE, conversation.conversation_id, upto_seq=3, expected_upto_seq=0
    )
    assert not store.advance_extraction(
        ALICE, conversation.conversation_id, upto_seq=3, expected_upto_seq=0
    )
    state = store.get_conversation(ALICE, conversation.conversation_id)
    assert state is not None and state.extracted_upto_seq == 3


# ---- profile, settings, events, notices -------------------------------------------------


def test_profiles_are_kept_per_persona_and_deleted_together(
    store: Store, clock: ManualClock
) -> None:
    assistant = Profile(
        user_id=ALICE,
        text="Vegetarian; lives in Pune.",
        token_count=8,
        built_from=("mem_a", "mem_b"),
        rebuilt_at=clock.now(),
    )
    warren = Profile(
        user_id=ALICE,
        persona="warren",
        text="Owns a flat.",
        token_count=4,
        built_from=("mem_c",),
        rebuilt_at=clock.now(),
    )
    store.put_profile(assistant)
    store.put_profile(warren)

    assert store.get_profile(ALICE) == assistant
    assert store.get_profile(ALICE, "warren") == warren

    store.delete_profiles(ALICE)
    assert store.get_profile(ALICE) is None and store.get_profile(ALICE, "warren") is None


def test_settings_default_to_enabled_and_round_trip(store: Store, clock: ManualClock) -> None:
    assert store.get_settings(ALICE) == MemorySettings(user_id=ALICE, enabled=True, note="")
    saved = MemorySettings(
        user_id=ALICE,
        enabled=False,
        note="Ich heiße Al — 呼んで",
        muted_personas=frozenset({"warren"}),
        updated_at=clock.now(),
    )

    store.put_settings(saved)

    assert store.get_settings(ALICE) == saved


def test_events_list_oldest_first_and_are_idempotent(store: Store, clock: ManualClock) -> None:
    added = builders.event(ALICE, "mem_x", Op.ADD, clock.now())
    clock.advance(timedelta(seconds=5))
    used = builders.event(ALICE, "mem_x", Op.USE, clock.now(), actor=Actor.SYSTEM)
    other = builders.event(ALICE, "mem_y", Op.ADD, clock.now())

    store.add_events([used, added, other])
    store.add_events([added])

    assert store.list_events(ALICE, "mem_x") == [added, used]


def test_notices_list_newest_first_and_undo_once(store: Store, clock: ManualClock) -> None:
    older = Notice(
        user_id=ALICE,
        notice_id=new_notice_id(),
        text="noted: is vegetarian",
        memory_ids=("mem_a",),
        created_at=clock.now(),
        conversation_id="conv_" + "c" * 32,
    )
    clock.advance(timedelta(minutes=1))
    newer = Notice(
        user_id=ALICE,
        notice_id=new_notice_id(),
        text="noted: lives in Pune · works at Acme",
        memory_ids=("mem_b", "mem_c"),
        created_at=clock.now(),
    )
    store.add_notice(older)
    store.add_notice(newer)
    store.add_notice(older)

    assert store.list_notices(ALICE) == [newer, older]
    assert store.get_notice(ALICE, older.notice_id) == older

    assert store.mark_notice_undone(ALICE, older.notice_id, clock.now()) is True
    assert store.mark_notice_undone(ALICE, older.notice_id, clock.now()) is False
    assert store.list_notices(ALICE) == [newer]
    undone = store.list_notices(ALICE, include_undone=True)
    assert [n.notice_id for n in undone] == [newer.notice_id, older.notice_id]
    assert undone[1].undone_at == clock.now()

    store.delete_notices(ALICE, [older.notice_id, newer.notice_id])
    assert store.list_notices(ALICE, include_undone=True) == []


def test_notices_about_memories_include_undone_ones_and_only_the_users_own(
    store: Store, clock: ManualClock
) -> None:
    # Given notices naming memories — one undone, many others, and Bob's about the same id
    def notice(user_id: str, memory_ids: tuple[str, ...]) -> Notice:
        clock.advance(timedelta(seconds=1))
        made = Notice(
            user_id=user_id,
            notice_id=new_notice_id(),
            text="noted: " + " · ".join(memory_ids),
            memory_ids=memory_ids,
            created_at=clock.now(),
        )
        store.add_notice(made)
        return made

    first = notice(ALICE, ("mem_a", "mem_b"))
    undone = notice(ALICE, ("mem_a",))
    store.mark_notice_undone(ALICE, undone.notice_id, clock.now())
    for n in range(120):  # more than one page of notices
        notice(ALICE, (f"mem_other{n}",))
    about_b = notice(ALICE, ("mem_c", "mem_b"))
    notice(BOB, ("mem_a",))

    # Then every notice of Alice's naming a or b is found, newest first, and no other
    found = store.notices_about(ALICE, ["mem_a", "mem_b"])
    assert [n.notice_id for n in found] == [about_b.notice_id, undone.notice_id, first.notice_id]
    assert store.notices_about(ALICE, []) == []
    assert store.notices_about(ALICE, ["mem_never"]) == []


# ---- the write pipeline ----------------------------------------------------------------


def test_the_sweep_finds_conversations_whose_new_messages_are_unread(
    store: Store, clock: ManualClock
) -> None:
    # Given conversations: unread (alice, bob), temporary, caught up, and one said too late
    unread = builders.conversation(ALICE, clock.now())
    bobs = builders.conversation(BOB, clock.now())
    temporary = builders.conversation(ALICE, clock.now(), temporary=True)
    caught_up = builders.conversation(ALICE, clock.now())
    for conversation in (unread, bobs, temporary, caught_up):
        store.create_conversation(conversation)
        store.append_message(
            conversation.user_id,
            conversation.conversation_id,
            role=Role.USER,
            content="I live in Pune",
            tokens=4,
            at=clock.now(),
        )
    assert store.advance_extraction(
        ALICE, caught_up.conversation_id, upto_seq=1, expected_upto_seq=0
    )
    clock.advance(timedelta(minutes=5))
    recent = builders.conversation(ALICE, clock.now())
    store.create_conversation(recent)
    store.append_message(
        ALICE, recent.conversation_id, role=Role.USER, content="hi", tokens=1, at=clock.now()
    )

    # When the sweep asks for what went quiet before now
    pending = store.pending_extractions(said_before=clock.now() - timedelta(minutes=1))

    # Then only the quiet, unread, non-temporary ones come back, oldest first
    assert set(pending) == {(ALICE, unread.conversation_id), (BOB, bobs.conversation_id)}
    # and a conversation leaves the list once read, and returns with a new user message
    store.advance_extraction(ALICE, unread.conversation_id, upto_seq=1, expected_upto_seq=0)
    assert (ALICE, unread.conversation_id) not in store.pending_extractions(said_before=clock.now())
    store.append_message(
        ALICE, unread.conversation_id, role=Role.USER, content="I moved", tokens=2, at=clock.now()
    )
    clock.advance(timedelta(minutes=1))
    assert (ALICE, unread.conversation_id) in store.pending_extractions(said_before=clock.now())


def test_extraction_runs_round_trip_expire_and_go_with_their_conversation(
    store: Store, clock: ManualClock
) -> None:
    conversation = builders.conversation(ALICE, clock.now())
    candidate = Candidate(
        text="Lives in Pune.",
        category="location",
        kind=Kind.FACT,
        importance=6,
        stated_by=StatedBy.USER,
        evidence=("msg_" + "a" * 32 + "_1",),
        key="home_city",
        uses=("weather",),
    )
    run = ExtractionRun(
        user_id=ALICE,
        run_id=run_id_for(ALICE, conversation.conversation_id, 4),
        conversation_id=conversation.conversation_id,
        persona="assistant",
        from_seq=0,
        upto_seq=4,
        created_at=clock.now(),
        expires_at=clock.now() + timedelta(days=7),
        candidates=(candidate,),
        dropped={"secret": 1},
    )

    store.put_extraction_run(run)

    assert store.get_extraction_run(ALICE, run.run_id) == run
    assert store.get_extraction_run(BOB, run.run_id) is None
    store.delete_extraction_runs(ALICE, conversation.conversation_id)
    assert store.get_extraction_run(ALICE, run.run_id) is None
    store.put_extraction_run(run)
    clock.advance(timedelta(days=7, seconds=1))
    assert store.get_extraction_run(ALICE, run.run_id) is None
