"""The memory store contract, on SQLite and on DynamoDB (under moto): rows, listings,
digests, corrections, use and shelf life."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain import fading, vectors
from chatmemory.domain.errors import (
    ConcurrentChange,
    InvalidField,
    MemoryNotFound,
)
from chatmemory.domain.events import Op
from chatmemory.domain.ids import new_memory_id
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.deletions import Deletions
from tests.contract.stores.common import (
    ALICE,
    BOB,
    EVERY_STATUS,
    SUPERSEDED,
    all_ids,
)
from tests.support import builders

# ---- memories: round trips ------------------------------------------------------------


def test_a_memory_reads_back_with_every_field(stores: Stores, clock: ManualClock) -> None:
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
        stability_days=412.5,
        reinforced_at=now - timedelta(days=2),
        archived_at=now - timedelta(hours=3),
        embedding=vectors.pack([0.1, -0.2, 0.3, 0.0]),
        meta={"cadence": "slow", "asked": None, "deflects": 0, "tags": ["a", "ü"]},
    )
    # When it is stored and read back
    assert stores.memories.add_memory(original) is True
    # Then nothing was lost or changed
    assert stores.memories.get_memory(ALICE, original.memory_id) == original


def test_a_personas_own_promise_keeps_whom_it_is_with(stores: Stores, clock: ManualClock) -> None:
    # Given Warren's promise to Alice (a 'self' row with its counterpart)
    promise = builders.memory(
        ALICE,
        "Warren said he would send Alice the 1988 shareholder letter.",
        clock.now(),
        persona="warren",
        subject="self",
        counterpart="u:alice",
        kind=Kind.PROMISE,
        importance=7,
    )
    # When it is stored and read back
    assert stores.memories.add_memory(promise) is True
    stored = stores.memories.get_memory(ALICE, promise.memory_id)
    # Then it still says whom the promise is with
    assert stored == promise and stored is not None and stored.counterpart == "u:alice"


def test_unicode_and_500_character_texts_survive(stores: Stores, clock: ManualClock) -> None:
    long_text = ("Préfère le thé vert 🍵, 日本語も話す — " * 20)[:500]
    assert len(long_text) == 500
    for text in (long_text, "Ist Vegetarier 🥦.", "Живёт в Пуне.", "يحب القهوة", "a"):
        memory = builders.memory(ALICE, text, clock.now())
        stores.memories.add_memory(memory)
        stored = stores.memories.get_memory(ALICE, memory.memory_id)
        assert stored is not None and stored.text == text


def test_adding_an_existing_id_writes_nothing(stores: Stores, clock: ManualClock) -> None:
    first = builders.memory(ALICE, "Is vegetarian.", clock.now())
    replay = first.with_changes(text="Eats fish.")
    added_event = builders.event(ALICE, first.memory_id, Op.ADD, clock.now())

    assert stores.memories.add_memory(first) is True
    assert stores.memories.add_memory(replay, events=[added_event]) is False

    stored = stores.memories.get_memory(ALICE, first.memory_id)
    assert stored is not None and stored.text == "Is vegetarian."
    assert stores.events.list_events(ALICE, first.memory_id) == []


def test_put_memory_replaces_the_row(stores: Stores, clock: ManualClock) -> None:
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    stores.memories.add_memory(memory)
    with_vector = memory.with_changes(embedding=vectors.pack([1.0, 0.0]), importance=8)

    stores.memories.put_memory(with_vector)

    assert stores.memories.get_memory(ALICE, memory.memory_id) == with_vector


def test_add_memory_stores_its_events_with_it(stores: Stores, clock: ManualClock) -> None:
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    added = builders.event(ALICE, memory.memory_id, Op.ADD, clock.now())

    stores.memories.add_memory(memory, events=[added])

    assert stores.events.list_events(ALICE, memory.memory_id) == [added]


# ---- memories: listing and pagination ---------------------------------------------------


def test_listing_is_newest_first_and_filters_by_status_and_persona(
    stores: Stores, clock: ManualClock
) -> None:
    older = builders.memory(ALICE, "Lives in Pune.", clock.now())
    clock.advance(timedelta(minutes=1))
    warren = builders.memory(ALICE, "Owns a flat.", clock.now(), persona="warren")
    clock.advance(timedelta(minutes=1))
    newer = builders.memory(ALICE, "Is vegetarian.", clock.now())
    for memory in (older, warren, newer):
        stores.memories.add_memory(memory)
    clock.advance(timedelta(minutes=1))
    stores.memories.close_memory(ALICE, older.memory_id, clock.now())

    assert all_ids(stores, ALICE) == [newer.memory_id, warren.memory_id]
    assert all_ids(stores, ALICE, MemoryQuery(persona="warren")) == [warren.memory_id]
    assert all_ids(stores, ALICE, MemoryQuery(status=Status.CLOSED)) == [older.memory_id]
    assert all_ids(stores, ALICE, EVERY_STATUS) == [
        newer.memory_id,
        warren.memory_id,
        older.memory_id,
    ]


def test_listing_by_kind_keeps_only_rows_of_that_kind(stores: Stores, clock: ManualClock) -> None:
    # Given a fact, a thread and a preference of Alice's, and a thread of Bob's
    fact = builders.memory(ALICE, "Is vegetarian.", clock.now())
    clock.advance(timedelta(minutes=1))
    story = builders.memory(ALICE, "Interviewing at Acme.", clock.now(), kind=Kind.THREAD)
    liking = builders.memory(ALICE, "Likes jazz.", clock.now(), kind=Kind.PREFERENCE)
    bobs = builders.memory(BOB, "Training for a marathon.", clock.now(), kind=Kind.THREAD)
    for memory in (fact, story, liking, bobs):
        stores.memories.add_memory(memory)

    # Then a listing of her threads holds her thread only, and a kind combines with a status
    assert all_ids(stores, ALICE, MemoryQuery(kind=Kind.THREAD)) == [story.memory_id]
    assert all_ids(stores, ALICE, MemoryQuery(kind=Kind.FACT)) == [fact.memory_id]
    stores.memories.close_memory(ALICE, story.memory_id, clock.now())
    assert all_ids(stores, ALICE, MemoryQuery(kind=Kind.THREAD)) == []
    assert all_ids(stores, ALICE, MemoryQuery(status=None, kind=Kind.THREAD)) == [story.memory_id]


def test_created_after_keeps_only_newer_rows(stores: Stores, clock: ManualClock) -> None:
    old = builders.memory(ALICE, "Lives in Pune.", clock.now())
    stores.memories.add_memory(old)
    cutoff = clock.advance(timedelta(seconds=30))
    clock.advance(timedelta(seconds=1))
    fresh = builders.memory(ALICE, "Is vegetarian.", clock.now())
    stores.memories.add_memory(fresh)

    assert all_ids(stores, ALICE, MemoryQuery(created_after=cutoff)) == [fresh.memory_id]


def test_pagination_returns_every_row_exactly_once(stores: Stores, clock: ManualClock) -> None:
    # Given 130 memories, a third of them history, some sharing a timestamp
    expected_active = []
    for index in range(130):
        if index % 7 == 0:
            clock.advance(timedelta(seconds=1))
        memory = builders.memory(ALICE, f"Fact number {index}.", clock.now())
        stores.memories.add_memory(memory)
        if index % 3 == 0:
            stores.memories.close_memory(ALICE, memory.memory_id, clock.now())
        else:
            expected_active.append(memory.memory_id)
    # When they are read 25 at a time
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = stores.memories.list_memories(ALICE, limit=25, cursor=cursor)
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
    created = [stores.memories.get_memory(ALICE, memory_id).created_at for memory_id in seen]  # type: ignore[union-attr]
    assert created == sorted(created, reverse=True)


def test_the_last_page_has_no_cursor(stores: Stores, clock: ManualClock) -> None:
    for index in range(3):
        stores.memories.add_memory(builders.memory(ALICE, f"Fact {index}.", clock.now()))

    page = stores.memories.list_memories(ALICE, limit=3)

    assert len(page.items) == 3 and page.next_cursor is None


def test_a_cursor_only_works_for_the_user_it_was_issued_to(
    stores: Stores, clock: ManualClock
) -> None:
    for index in range(3):
        stores.memories.add_memory(builders.memory(ALICE, f"Fact {index}.", clock.now()))
    cursor = stores.memories.list_memories(ALICE, limit=1).next_cursor
    assert cursor is not None

    with pytest.raises(InvalidField) as refused:
        stores.memories.list_memories(BOB, limit=1, cursor=cursor)
    assert refused.value.field == "next"
    with pytest.raises(InvalidField):
        stores.memories.list_memories(ALICE, limit=1, cursor="not-a-cursor")


def test_limit_outside_1_to_100_is_refused(stores: Stores) -> None:
    for bad in (0, 101):
        with pytest.raises(InvalidField):
            stores.memories.list_memories(ALICE, limit=bad)


def test_digests_list_exactly_the_memories_recall_may_use(
    stores: Stores, clock: ManualClock
) -> None:
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
        stores.memories.add_memory(memory)
    stores.memories.supersede_memory(ALICE, pune.memory_id, goa)
    stores.memories.close_memory(ALICE, job.memory_id, clock.now())
    Deletions(stores).tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id=gone.memory_id, deleted_at=clock.now())]
    )
    stores.memories.add_memory(builders.memory(BOB, "Bob's fact.", clock.now()))
    clock.advance(timedelta(hours=2))

    # When recall reads the digests
    digests = {d.memory_id: d for d in stores.recall.memory_digests(ALICE)}

    # Then only active, visible, unexpired rows are there, with what scoring needs
    assert set(digests) == {veg.memory_id, goa.memory_id, warren.memory_id}
    assert digests[veg.memory_id].importance == 8 and digests[veg.memory_id].borrowed_uses
    assert not digests[goa.memory_id].borrowed_uses
    assert [d.memory_id for d in stores.recall.memory_digests(ALICE, "warren")] == [
        warren.memory_id
    ]
    assert stores.recall.memory_embeddings(ALICE, [veg.memory_id, goa.memory_id, "mem_x"]) == {
        veg.memory_id: veg.embedding
    }
    assert stores.recall.memory_embeddings(BOB, [veg.memory_id]) == {}
    Deletions(stores).forget_everything(ALICE, clock.now())
    assert stores.recall.memory_digests(ALICE) == []


def test_a_digest_version_changes_when_the_vectors_may_have(
    stores: Stores, clock: ManualClock
) -> None:
    memory = builders.memory(ALICE, "Is vegetarian.", clock.now())
    stores.memories.add_memory(memory)
    [before] = stores.recall.memory_digests(ALICE)
    clock.advance(timedelta(seconds=1))

    stores.memories.put_memory(
        memory.with_changes(embedding=vectors.pack([1.0, 0.0]), updated_at=clock.now())
    )

    [after] = stores.recall.memory_digests(ALICE)
    assert before.version != after.version


def test_get_memories_returns_visible_rows_in_the_order_asked(
    stores: Stores, clock: ManualClock
) -> None:
    first = builders.memory(ALICE, "Is vegetarian.", clock.now())
    second = builders.memory(ALICE, "Lives in Pune.", clock.now())
    gone = builders.memory(ALICE, "Likes jazz.", clock.now())
    bobs = builders.memory(BOB, "Bob's fact.", clock.now())
    for memory in (first, second, gone, bobs):
        stores.memories.add_memory(memory)
    Deletions(stores).tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id=gone.memory_id, deleted_at=clock.now())]
    )

    found = stores.memories.get_memories(
        ALICE, [second.memory_id, gone.memory_id, bobs.memory_id, first.memory_id, "mem_x"]
    )

    assert found == [second, first]
    assert stores.memories.get_memories(ALICE, []) == []


# ---- supersede and close ----------------------------------------------------------------


def test_supersede_closes_the_old_row_and_writes_the_new_one_together(
    stores: Stores, clock: ManualClock
) -> None:
    pune = builders.memory(ALICE, "Lives in Pune.", clock.now(), key="home_city")
    stores.memories.add_memory(pune)
    clock.advance(timedelta(days=30))
    bengaluru = builders.memory(
        ALICE, "Lives in Bengaluru.", clock.now(), key="home_city", supersedes=pune.memory_id
    )
    update_old = builders.event(ALICE, pune.memory_id, Op.UPDATE, clock.now())
    add_new = builders.event(ALICE, bengaluru.memory_id, Op.ADD, clock.now())

    returned = stores.memories.supersede_memory(
        ALICE, pune.memory_id, bengaluru, events=[update_old, add_new]
    )

    assert all_ids(stores, ALICE) == [bengaluru.memory_id]
    assert all_ids(stores, ALICE, SUPERSEDED) == [pune.memory_id]
    history = stores.memories.list_memories(ALICE, SUPERSEDED).items[0]
    assert history == returned
    assert history.status is Status.SUPERSEDED
    assert history.closed_by == bengaluru.memory_id
    assert history.valid_to == bengaluru.created_at
    assert history.text == "Lives in Pune."  # kept as history, never overwritten
    assert stores.events.list_events(ALICE, pune.memory_id) == [update_old]
    assert stores.events.list_events(ALICE, bengaluru.memory_id) == [add_new]


def test_supersede_writes_nothing_when_the_new_id_already_exists(
    stores: Stores, clock: ManualClock
) -> None:
    pune = builders.memory(ALICE, "Lives in Pune.", clock.now())
    taken = builders.memory(ALICE, "Likes tea.", clock.now())
    stores.memories.add_memory(pune)
    stores.memories.add_memory(taken)
    clash = taken.with_changes(text="Lives in Bengaluru.", supersedes=pune.memory_id)
    event = builders.event(ALICE, pune.memory_id, Op.UPDATE, clock.now())

    with pytest.raises(ConcurrentChange):
        stores.memories.supersede_memory(ALICE, pune.memory_id, clash, events=[event])

    assert stores.memories.get_memory(ALICE, pune.memory_id) == pune
    assert stores.memories.get_memory(ALICE, taken.memory_id) == taken
    assert stores.events.list_events(ALICE, pune.memory_id) == []


def test_only_one_of_two_racing_supersedes_wins(stores: Stores, clock: ManualClock) -> None:
    pune = builders.memory(ALICE, "Lives in Pune.", clock.now())
    stores.memories.add_memory(pune)
    first = builders.memory(ALICE, "Lives in Delhi.", clock.now(), supersedes=pune.memory_id)
    second = builders.memory(ALICE, "Lives in Goa.", clock.now(), supersedes=pune.memory_id)

    stores.memories.supersede_memory(ALICE, pune.memory_id, first)
    with pytest.raises(ConcurrentChange):
        stores.memories.supersede_memory(ALICE, pune.memory_id, second)

    assert stores.memories.get_memory(ALICE, second.memory_id) is None
    assert all_ids(stores, ALICE) == [first.memory_id]


def test_superseding_a_missing_memory_writes_nothing(stores: Stores, clock: ManualClock) -> None:
    ghost = new_memory_id()
    new = builders.memory(ALICE, "Lives in Goa.", clock.now(), supersedes=ghost)

    with pytest.raises(MemoryNotFound):
        stores.memories.supersede_memory(ALICE, ghost, new)

    assert stores.memories.get_memory(ALICE, new.memory_id) is None


def test_close_ends_a_belief_once(stores: Stores, clock: ManualClock) -> None:
    job = builders.memory(ALICE, "Works at Acme.", clock.now())
    stores.memories.add_memory(job)
    clock.advance(timedelta(days=3))

    closed = stores.memories.close_memory(ALICE, job.memory_id, clock.now())

    assert closed.status is Status.CLOSED and closed.valid_to == clock.now()
    assert stores.memories.list_memories(ALICE, MemoryQuery(status=Status.CLOSED)).items == [closed]
    assert all_ids(stores, ALICE) == []
    with pytest.raises(ConcurrentChange):
        stores.memories.close_memory(ALICE, job.memory_id, clock.now())


def test_record_use_reinforces_visible_memories_only(stores: Stores, clock: ManualClock) -> None:
    used = builders.memory(ALICE, "Is vegetarian.", clock.now())
    deleted = builders.memory(ALICE, "Likes jazz.", clock.now())
    stores.memories.add_memory(used)
    stores.memories.add_memory(deleted)
    Deletions(stores).tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id=deleted.memory_id, deleted_at=clock.now())]
    )
    later = clock.advance(timedelta(hours=2))

    stores.memories.record_use(ALICE, [used.memory_id, deleted.memory_id, "mem_unknown"], later)
    stores.memories.record_use(ALICE, [used.memory_id], later)

    reloaded = stores.memories.get_memory(ALICE, used.memory_id)
    assert reloaded is not None
    assert reloaded.recall_count == 2 and reloaded.last_used_at == later


def test_record_use_is_new_evidence_that_lengthens_the_shelf_life(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a mood (three days of stability) half-forgotten, and set aside by the cap
    mood = builders.memory(
        ALICE, "Feels anxious about the move.", clock.now(), category="mood", kind=Kind.FACT
    )
    stores.memories.add_memory(mood)
    stores.memories.set_fading(ALICE, [fading.set_aside(mood, clock.now())])
    later = clock.advance(timedelta(days=2))
    # When it is used in a reply
    stores.memories.record_use(ALICE, [mood.memory_id], later)
    # Then it counts from now, lasts longer (the spacing effect), and is back in use
    reloaded = stores.memories.get_memory(ALICE, mood.memory_id)
    assert reloaded is not None
    assert reloaded.reinforced_at == later and reloaded.archived_at is None
    assert reloaded.stability_days is not None and reloaded.stability_days > 3.0
    assert fading.retention(reloaded, later) == 1.0


def test_set_fading_writes_only_the_fading_fields_of_active_rows(
    stores: Stores, clock: ManualClock
) -> None:
    # Given an active row and a row that became history
    kept = builders.memory(ALICE, "Lives in Pune.", clock.now(), category="location")
    old = builders.memory(ALICE, "Lived in Delhi.", clock.now())
    stores.memories.add_memory(kept)
    stores.memories.add_memory(old)
    stores.memories.close_memory(ALICE, old.memory_id, clock.now())
    later = clock.advance(timedelta(days=1))
    # When both are set aside, with a different text that must not be written
    changed = [
        fading.set_aside(kept.with_changes(text="Lives in Goa."), later),
        fading.set_aside(old, later),
    ]
    stores.memories.set_fading(ALICE, changed)
    # Then only the active row changed, and only in its fading fields
    reloaded = stores.memories.get_memory(ALICE, kept.memory_id)
    assert reloaded is not None
    assert reloaded.archived_at == later and reloaded.text == "Lives in Pune."
    assert reloaded == kept.with_changes(archived_at=later)
    history = stores.memories.get_memory(ALICE, old.memory_id)
    assert history is not None and history.archived_at is None


# ---- shelf life (TTL) -------------------------------------------------------------------


def test_a_memory_past_its_shelf_life_is_gone_from_every_read(
    stores: Stores, clock: ManualClock
) -> None:
    trip = builders.memory(
        ALICE,
        "Is travelling to Lisbon next week.",
        clock.now(),
        valid_until=clock.now() + timedelta(days=7),
    )
    stores.memories.add_memory(trip)
    assert stores.memories.get_memory(ALICE, trip.memory_id) == trip

    clock.advance(timedelta(days=7, seconds=1))

    assert stores.memories.get_memory(ALICE, trip.memory_id) is None
    assert all_ids(stores, ALICE, EVERY_STATUS) == []
    with pytest.raises(MemoryNotFound):
        stores.memories.close_memory(ALICE, trip.memory_id, clock.now())


# ---- uses: the compare-and-set write of a row's own uses, and the rows still waiting --------

CATEGORY_USES = {"uses": ["what should I cook", "meal ideas"], "uses_from": "category"}
OWN_USES = {"uses": ["a dinner party menu", "is this snack ok for me", "ordering at a cafe"]}
OLD_VECTORS = vectors.pack_rows([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
NEW_VECTORS = vectors.pack_rows([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [0.6, 0.8]])


def waiting(clock: ManualClock, text: str = "Is vegetarian.", **fields: object) -> Memory:
    """A row stored with its category's uses, as a typed memory is."""
    values: dict[str, object] = {
        "category": "diet",
        "meta": {**CATEGORY_USES, "seen": 2},
        "embedding": OLD_VECTORS,
    }
    values.update(fields)
    return builders.memory(ALICE, text, clock.now(), **values)


def own_meta(row: Memory) -> dict[str, object]:
    return {"seen": row.meta.get("seen", 1), **OWN_USES}


def test_a_rows_own_uses_and_vectors_are_written_in_place(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row stored with its category's uses
    row = waiting(clock)
    stores.memories.add_memory(row)
    clock.advance(timedelta(minutes=1))

    # When its own uses are written over the row as read
    written = stores.memories.set_uses(
        ALICE, row.memory_id, expected=row, meta=own_meta(row), embedding=NEW_VECTORS
    )

    # Then they land with their vectors, and nothing else about the row changed (not
    # `updated_at`: what the memory says did not)
    assert written is True
    assert stores.memories.get_memory(ALICE, row.memory_id) == row.with_changes(
        meta=own_meta(row), embedding=NEW_VECTORS
    )


def test_a_use_recorded_between_the_read_and_the_write_is_kept(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row read for its uses, then loaded into a prompt a moment later
    row = waiting(clock)
    stores.memories.add_memory(row)
    clock.advance(timedelta(seconds=5))
    stores.memories.record_use(ALICE, [row.memory_id], clock.now())

    # When its own uses are written over the row as read
    written = stores.memories.set_uses(
        ALICE, row.memory_id, expected=row, meta=own_meta(row), embedding=NEW_VECTORS
    )

    # Then the use moved nothing the uses were written for: both stand
    stored = stores.memories.get_memory(ALICE, row.memory_id)
    assert written is True and stored is not None
    assert (stored.meta, stored.embedding) == (own_meta(row), NEW_VECTORS)
    assert (stored.recall_count, stored.last_used_at) == (1, clock.now())


def _corrected(stores: Stores, clock: ManualClock, row: Memory) -> None:
    replacement = builders.memory(
        ALICE, "Is vegan.", clock.now(), category="diet", supersedes=row.memory_id
    )
    stores.memories.supersede_memory(ALICE, row.memory_id, replacement)


def _deleted(stores: Stores, clock: ManualClock, row: Memory) -> None:
    Deletions(stores).tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id=row.memory_id, deleted_at=clock.now())]
    )


def _closed(stores: Stores, clock: ManualClock, row: Memory) -> None:
    stores.memories.close_memory(ALICE, row.memory_id, clock.now())


def _rewritten(stores: Stores, clock: ManualClock, row: Memory) -> None:
    meta = {**row.meta, "seen": 3}  # the same fact said again, counted
    stores.memories.put_memory(row.with_changes(meta=meta, updated_at=clock.now()))


def _reworded(stores: Stores, clock: ManualClock, row: Memory) -> None:
    stores.memories.put_memory(row.with_changes(text="Is pescatarian.", updated_at=clock.now()))


def _given_own_uses(stores: Stores, clock: ManualClock, row: Memory) -> None:
    stores.memories.set_uses(
        ALICE, row.memory_id, expected=row, meta={"uses": ["lunch"]}, embedding=OLD_VECTORS
    )


def _forgotten(stores: Stores, clock: ManualClock, row: Memory) -> None:
    Deletions(stores).forget_everything(ALICE, clock.now())


@pytest.mark.parametrize(
    "change",
    [_corrected, _deleted, _closed, _rewritten, _reworded, _given_own_uses, _forgotten],
    ids=["corrected", "deleted", "closed", "rewritten", "reworded", "uses-written", "forgotten"],
)
def test_a_row_changed_since_it_was_read_is_never_written_over(
    stores: Stores, clock: ManualClock, change: Callable[[Stores, ManualClock, Memory], None]
) -> None:
    # Given a row read for its uses, and then changed before they are written
    row = waiting(clock)
    stores.memories.add_memory(row)
    clock.advance(timedelta(seconds=5))
    change(stores, clock, row)
    before = stores.memories.list_memories(ALICE, EVERY_STATUS).items

    # When the uses written for the row as read arrive
    written = stores.memories.set_uses(
        ALICE, row.memory_id, expected=row, meta=own_meta(row), embedding=NEW_VECTORS
    )

    # Then the change wins: nothing was written
    assert written is False
    assert stores.memories.list_memories(ALICE, EVERY_STATUS).items == before


def test_a_row_of_another_user_or_that_never_was_is_not_written(
    stores: Stores, clock: ManualClock
) -> None:
    row = waiting(clock)
    stores.memories.add_memory(row)
    bobs = row.with_changes(user_id=BOB)

    assert not stores.memories.set_uses(
        BOB, row.memory_id, expected=bobs, meta=own_meta(row), embedding=NEW_VECTORS
    )
    ghost = waiting(clock)
    assert not stores.memories.set_uses(
        ALICE, ghost.memory_id, expected=ghost, meta=own_meta(ghost), embedding=NEW_VECTORS
    )
    assert stores.memories.get_memory(ALICE, row.memory_id) == row
    with pytest.raises(InvalidField):
        stores.memories.set_uses(
            BOB, row.memory_id, expected=row, meta=own_meta(row), embedding=NEW_VECTORS
        )


def test_uses_that_still_say_they_wait_are_refused(stores: Stores, clock: ManualClock) -> None:
    row = waiting(clock)
    stores.memories.add_memory(row)

    for meta in (CATEGORY_USES, {"uses": ["x"], "uses_from": "carried"}, {"uses": []}):
        with pytest.raises(InvalidField):
            stores.memories.set_uses(
                ALICE, row.memory_id, expected=row, meta=meta, embedding=NEW_VECTORS
            )
    assert stores.memories.get_memory(ALICE, row.memory_id) == row


def test_the_digest_of_a_row_whose_own_uses_landed_says_so_and_changes_its_version(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row with its category's uses and one with uses carried from a correction,
    # both the same size of vectors as what will replace them
    borrowed = waiting(clock, embedding=NEW_VECTORS)
    carried = waiting(
        clock,
        "Lives in Pune.",
        category="location",
        meta={"uses": ["weather"], "uses_from": "carried"},
        embedding=NEW_VECTORS,
    )
    for row in (borrowed, carried):
        stores.memories.add_memory(row)
    before = {d.memory_id: d for d in stores.recall.memory_digests(ALICE)}

    # When their own uses land, as many vectors as before (and the clock did not move:
    # neither `updated_at` nor the size of the vectors can tell)
    same_size = vectors.pack_rows([[0.0, 1.0], [1.0, 0.0], [0.8, 0.6], [0.6, 0.8]])
    assert len(same_size) == len(NEW_VECTORS)
    for row in (borrowed, carried):
        assert stores.memories.set_uses(
            ALICE, row.memory_id, expected=row, meta=OWN_USES, embedding=same_size
        )

    # Then recall sees uses of their own, and a new version to read their vectors again
    after = {d.memory_id: d for d in stores.recall.memory_digests(ALICE)}
    assert before[borrowed.memory_id].borrowed_uses and not after[borrowed.memory_id].borrowed_uses
    assert not before[carried.memory_id].borrowed_uses  # carried uses count as its own
    for row in (borrowed, carried):
        assert before[row.memory_id].version != after[row.memory_id].version
    assert stores.recall.memory_embeddings(ALICE, [borrowed.memory_id]) == {
        borrowed.memory_id: same_size
    }


def test_the_rows_still_waiting_for_uses_are_listed_oldest_first_across_users(
    stores: Stores, clock: ManualClock
) -> None:
    # Given rows of two users: borrowed, carried and without any uses (waiting), with
    # uses of their own, corrected, deleted and expired
    borrowed = waiting(clock)
    stores.memories.add_memory(borrowed)
    clock.advance(timedelta(minutes=1))
    bobs = builders.memory(BOB, "Plays chess.", clock.now(), meta={"uses_from": "category"})
    own = builders.memory(ALICE, "Works at Acme.", clock.now(), meta=OWN_USES)
    for row in (bobs, own):
        stores.memories.add_memory(row)
    clock.advance(timedelta(minutes=1))
    old = builders.memory(ALICE, "Lives in Pune.", clock.now(), meta={"uses_from": "category"})
    stores.memories.add_memory(old)
    clock.advance(timedelta(minutes=1))
    carried = builders.memory(
        ALICE,
        "Lives in Goa.",
        clock.now(),
        supersedes=old.memory_id,
        meta={"uses": ["weather"], "uses_from": "carried"},
    )
    stores.memories.supersede_memory(ALICE, old.memory_id, carried)
    clock.advance(timedelta(minutes=1))
    bare = builders.memory(ALICE, "Has a plan.", clock.now())
    gone = waiting(clock, "Likes jazz.")
    trip = waiting(clock, "Is in Lisbon.", valid_until=clock.now() + timedelta(hours=1))
    for row in (bare, gone, trip):
        stores.memories.add_memory(row)
    _deleted(stores, clock, gone)
    clock.advance(timedelta(hours=2))

    # When the catch-up asks which rows still wait
    pending = stores.memories.pending_uses()

    # Then only the visible active ones are there, oldest first, as ids
    assert pending == [
        (ALICE, borrowed.memory_id),
        (BOB, bobs.memory_id),
        (ALICE, carried.memory_id),
        (ALICE, bare.memory_id),
    ]
    assert stores.memories.pending_uses(limit=1) == [(ALICE, borrowed.memory_id)]

    # And once a row's own uses land it waits no more
    assert stores.memories.set_uses(
        ALICE, borrowed.memory_id, expected=borrowed, meta=OWN_USES, embedding=NEW_VECTORS
    )
    assert (ALICE, borrowed.memory_id) not in stores.memories.pending_uses()


def test_a_correction_undone_puts_the_version_it_replaced_back_in_the_wait(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row with its category's uses, corrected into one with uses of its own
    old = waiting(clock)
    stores.memories.add_memory(old)
    clock.advance(timedelta(minutes=1))
    new = builders.memory(
        ALICE, "Is vegan.", clock.now(), category="diet", supersedes=old.memory_id, meta=OWN_USES
    )
    stores.memories.supersede_memory(ALICE, old.memory_id, new)
    assert stores.memories.pending_uses() == []

    # When the correction is undone
    undone = Tombstone(
        user_id=ALICE, memory_id=new.memory_id, deleted_at=clock.now(), versions=(new.memory_id,)
    )
    Deletions(stores).revert_supersede(ALICE, undone)

    # Then the row believed again waits for its uses as it did before
    assert stores.memories.pending_uses() == [(ALICE, old.memory_id)]


def test_rows_stored_without_vectors_are_listed_oldest_first_until_their_vectors_land(
    stores: Stores, clock: ManualClock
) -> None:
    # Given rows the embedder failed on (no vectors) of two users, beside rows that have
    # theirs, and bare ones since deleted, expired or superseded
    bare_typed = builders.memory(ALICE, "Is vegetarian.", clock.now(), category="diet")
    stores.memories.add_memory(bare_typed)
    clock.advance(timedelta(minutes=1))
    bare_learned = builders.memory(BOB, "Plays chess.", clock.now(), meta=OWN_USES)
    with_vectors = waiting(clock, "Works at Acme.")
    for row in (bare_learned, with_vectors):
        stores.memories.add_memory(row)
    clock.advance(timedelta(minutes=1))
    old = builders.memory(ALICE, "Lives in Pune.", clock.now())
    stores.memories.add_memory(old)
    clock.advance(timedelta(minutes=1))
    moved = waiting(clock, "Lives in Goa.", supersedes=old.memory_id)
    stores.memories.supersede_memory(ALICE, old.memory_id, moved)
    gone = builders.memory(ALICE, "Likes jazz.", clock.now())
    trip = builders.memory(
        ALICE, "Is in Lisbon.", clock.now(), valid_until=clock.now() + timedelta(hours=1)
    )
    for row in (gone, trip):
        stores.memories.add_memory(row)
    _deleted(stores, clock, gone)
    clock.advance(timedelta(hours=2))

    # When the sweep asks which rows have no vectors
    pending = stores.memories.pending_vectors()

    # Then only the visible active ones are there, oldest first, as ids
    assert pending == [(ALICE, bare_typed.memory_id), (BOB, bare_learned.memory_id)]
    assert stores.memories.pending_vectors(limit=1) == [(ALICE, bare_typed.memory_id)]
    # and the bare row whose uses are not its own waits for them too; the learned one not
    assert (ALICE, bare_typed.memory_id) in stores.memories.pending_uses()
    assert (BOB, bare_learned.memory_id) not in stores.memories.pending_uses()

    # And once a row's vectors land (its uses still borrowed) it waits for its uses only
    embedded = {**CATEGORY_USES}
    assert stores.memories.set_uses(
        ALICE,
        bare_typed.memory_id,
        expected=bare_typed,
        meta=embedded,
        embedding=NEW_VECTORS,
        own=False,
    )
    assert stores.memories.pending_vectors() == [(BOB, bare_learned.memory_id)]
    assert (ALICE, bare_typed.memory_id) in stores.memories.pending_uses()
    assert stores.memories.set_uses(
        BOB,
        bare_learned.memory_id,
        expected=bare_learned,
        meta=OWN_USES,
        embedding=NEW_VECTORS,
        own=False,
    )
    assert stores.memories.pending_vectors() == []
