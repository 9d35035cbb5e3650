"""The thread store contract, on both backends: a user's threads as the read path lists
them, a thread's manners changed in place, and the nightly review's listing of live
threads gone quiet."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.errors import ConcurrentChange, InvalidField, MemoryNotFound
from chatmemory.domain.events import Op
from chatmemory.domain.ids import new_memory_id
from chatmemory.domain.memory import Kind, Memory
from chatmemory.domain.threads import Cadence, ThreadMeta, ThreadStatus, review_date
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.stores import Stores
from chatmemory.services.deletions import Deletions
from tests.contract.stores.common import ALICE, BOB, CAROL, EVERY_STATUS, all_ids, at_once
from tests.support import builders

WARREN = "warren"
MIRA = "mira"
FAST_REVIEW = timedelta(days=3 * 7 + 1)  # a live fast thread's review, after its last beat
SLOW_REVIEW = timedelta(days=3 * 28 + 1)


def thread(
    user_id: str,
    text: str,
    at: datetime,
    *,
    persona: str = WARREN,
    meta: ThreadMeta | None = None,
    **fields: Any,
) -> Memory:
    """A thread row of `persona`'s about the user: fast and live unless `meta` says else."""
    manners = meta or ThreadMeta(cadence=Cadence.FAST)
    return builders.memory(
        user_id, text, at, persona=persona, kind=Kind.THREAD, meta=manners.to_meta(), **fields
    )


def added(stores: Stores, *memories: Memory) -> None:
    for memory in memories:
        assert stores.memories.add_memory(memory) is True


def listed(stores: Stores, user_id: str, persona: str | None = None) -> list[str]:
    return [memory.memory_id for memory in stores.threads.list_threads(user_id, persona)]


def day_of(at: datetime, after: timedelta) -> date:
    return (at + after).date()


def deleted(stores: Stores, user_id: str, memory: Memory, at: datetime) -> None:
    """The user deletes the row: its tombstone, and the row hidden, in one unit of work."""
    tombstone = Tombstone(user_id=user_id, memory_id=memory.memory_id, deleted_at=at)
    Deletions(stores).tombstone_memories(user_id, [tombstone])


# ---- list_threads -------------------------------------------------------------------------


def test_list_threads_returns_the_users_active_threads_newest_first_and_nothing_else(
    stores: Stores, clock: ManualClock
) -> None:
    # Given two threads of Alice's, a fact of hers and a thread of Bob's
    older = thread(ALICE, "Interviewing at Acme; second round on Friday.", clock.now())
    clock.advance(timedelta(minutes=1))
    newer = thread(ALICE, "Hunting for a flat in Xuhui.", clock.now(), persona=MIRA)
    fact = builders.memory(ALICE, "Is vegetarian.", clock.now(), persona=WARREN)
    bobs = thread(BOB, "Training for the Berlin marathon.", clock.now())
    added(stores, older, newer, fact, bobs)

    # When Alice's threads are listed
    threads = stores.threads.list_threads(ALICE)

    # Then they are her two threads, whole, newest first
    assert threads == [newer, older]


def test_list_threads_of_a_persona_keeps_only_that_personas_threads(
    stores: Stores, clock: ManualClock
) -> None:
    warrens = thread(ALICE, "Holding TSLA since March.", clock.now())
    miras = thread(ALICE, "Learning the cello.", clock.now(), persona=MIRA)
    added(stores, warrens, miras)

    assert listed(stores, ALICE, WARREN) == [warrens.memory_id]
    assert listed(stores, ALICE, MIRA) == [miras.memory_id]
    assert listed(stores, ALICE, "somebody") == []


def test_a_thread_is_listed_whatever_its_manners(stores: Stores, clock: ManualClock) -> None:
    # Given a live, a dormant and a resolved thread
    rows = [
        thread(
            ALICE,
            f"Story {status.value}.",
            clock.now() + timedelta(seconds=n),
            meta=ThreadMeta(status=status),
        )
        for n, status in enumerate(ThreadStatus)
    ]
    added(stores, *rows)

    # Then all three are listed: the block, not the store, decides what a persona raises
    assert listed(stores, ALICE) == [row.memory_id for row in reversed(rows)]


def test_a_superseded_thread_gives_way_to_its_new_version(
    stores: Stores, clock: ManualClock
) -> None:
    first = thread(ALICE, "Interviewing at Acme.", clock.now())
    added(stores, first)
    clock.advance(timedelta(days=3))
    beat = thread(ALICE, "Acme made an offer.", clock.now(), supersedes=first.memory_id)

    stores.memories.supersede_memory(ALICE, first.memory_id, beat)

    assert stores.threads.list_threads(ALICE) == [beat]


def _closed(stores: Stores, row: Memory, clock: ManualClock) -> None:
    stores.memories.close_memory(ALICE, row.memory_id, clock.now())


def _written_as_history(stores: Stores, row: Memory, clock: ManualClock) -> None:
    stores.memories.put_memory(row.closed(clock.now()))


def _deleted(stores: Stores, row: Memory, clock: ManualClock) -> None:
    deleted(stores, ALICE, row, clock.now())


def _purged(stores: Stores, row: Memory, clock: ManualClock) -> None:
    deleted(stores, ALICE, row, clock.now())
    stores.visibility.purge_memories(ALICE, [row.memory_id])


def _forgotten(stores: Stores, row: Memory, clock: ManualClock) -> None:
    Deletions(stores).forget_everything(ALICE, clock.now())


def _expired(stores: Stores, row: Memory, clock: ManualClock) -> None:
    stores.memories.put_memory(row.with_changes(valid_until=clock.now() + timedelta(hours=1)))
    clock.advance(timedelta(hours=2))


ENDINGS: dict[str, Callable[[Stores, Memory, ManualClock], None]] = {
    "closed": _closed,
    "written as history": _written_as_history,
    "deleted": _deleted,
    "purged": _purged,
    "forgotten": _forgotten,
    "expired": _expired,
}


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_thread_that_no_longer_shows_is_no_longer_listed(
    stores: Stores, clock: ManualClock, ending: str
) -> None:
    # Given a thread of Alice's
    row = thread(ALICE, "Hunting for a flat in Xuhui.", clock.now())
    added(stores, row)
    clock.advance(timedelta(minutes=1))

    # When it ends (closed, deleted, purged, forgotten, past its shelf life)
    ENDINGS[ending](stores, row, clock)

    # Then it is not listed, and a thread written afterwards is
    assert listed(stores, ALICE) == []
    clock.advance(timedelta(seconds=1))
    later = thread(ALICE, "Learning the cello.", clock.now())
    added(stores, later)
    assert listed(stores, ALICE) == [later.memory_id]


def test_undoing_a_correction_lists_the_earlier_thread_again(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a thread corrected by a newer version
    first = thread(ALICE, "Interviewing at Acme.", clock.now())
    added(stores, first)
    clock.advance(timedelta(days=1))
    beat = thread(ALICE, "Interviewing at Acne.", clock.now(), supersedes=first.memory_id)
    stores.memories.supersede_memory(ALICE, first.memory_id, beat)

    # When the correction is undone
    tombstone = Tombstone(user_id=ALICE, memory_id=beat.memory_id, deleted_at=clock.now())
    reinstated = Deletions(stores).revert_supersede(ALICE, tombstone)

    # Then the earlier version is the one listed
    assert stores.threads.list_threads(ALICE) == [reinstated]


def test_a_threads_bookkeeping_never_shows_in_another_listing(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a live thread of Alice's and nothing else
    row = thread(ALICE, "Hunting for a flat in Xuhui.", clock.now())
    added(stores, row)

    # Then every listing of her rows holds the row once, and nothing beside it
    assert all_ids(stores, ALICE, EVERY_STATUS) == [row.memory_id]
    assert [d.memory_id for d in stores.recall.memory_digests(ALICE)] == [row.memory_id]
    assert stores.tombstones.list_tombstones(ALICE) == []
    assert stores.conversations.list_conversations(ALICE) == []
    assert stores.events.list_events(ALICE, row.memory_id) == []


# ---- set_thread_meta ----------------------------------------------------------------------


def test_set_thread_meta_changes_the_manners_with_its_events(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a live thread
    row = thread(ALICE, "Interviewing at Acme.", clock.now())
    added(stores, row)
    later = clock.advance(timedelta(days=8))
    asked = ThreadMeta(cadence=Cadence.FAST, asked=later.date()).to_meta()
    event = builders.event(ALICE, row.memory_id, Op.UPDATE, later)

    # When a persona raised it today
    changed = stores.threads.set_thread_meta(
        ALICE, row.memory_id, asked, later, expected=row.meta, events=[event]
    )

    # Then the row holds the new manners and moved on, its beat untouched, with its event
    assert changed == row.with_changes(meta=asked, updated_at=later)
    assert stores.memories.get_memory(ALICE, row.memory_id) == changed
    assert stores.threads.list_threads(ALICE) == [changed]
    assert stores.events.list_events(ALICE, row.memory_id) == [event]


def test_set_thread_meta_never_moves_updated_at_back(stores: Stores, clock: ManualClock) -> None:
    row = thread(ALICE, "Interviewing at Acme.", clock.now())
    added(stores, row)
    earlier = clock.now() - timedelta(hours=1)
    dormant = ThreadMeta(cadence=Cadence.FAST, status=ThreadStatus.DORMANT).to_meta()

    changed = stores.threads.set_thread_meta(
        ALICE, row.memory_id, dormant, earlier, expected=row.meta
    )

    assert changed.updated_at == row.updated_at
    assert stores.memories.get_memory(ALICE, row.memory_id) == changed


def test_set_thread_meta_on_manners_read_before_a_change_is_refused(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a thread whose manners changed after a reader read them
    row = thread(ALICE, "Interviewing at Acme.", clock.now())
    added(stores, row)
    first = ThreadMeta(cadence=Cadence.FAST, asked=clock.now().date()).to_meta()
    changed = stores.threads.set_thread_meta(
        ALICE, row.memory_id, first, clock.now(), expected=row.meta
    )
    event = builders.event(ALICE, row.memory_id, Op.UPDATE, clock.now())
    dormant = ThreadMeta(cadence=Cadence.FAST, status=ThreadStatus.DORMANT).to_meta()

    # When that reader writes what it decided on the old manners
    with pytest.raises(ConcurrentChange):
        stores.threads.set_thread_meta(
            ALICE, row.memory_id, dormant, clock.now(), expected=row.meta, events=[event]
        )

    # Then nothing of it was written
    assert stores.memories.get_memory(ALICE, row.memory_id) == changed
    assert stores.events.list_events(ALICE, row.memory_id) == []


def test_of_two_writers_of_the_same_manners_only_one_wins(
    stores: Stores, clock: ManualClock
) -> None:
    row = thread(ALICE, "Interviewing at Acme.", clock.now())
    added(stores, row)
    metas = [ThreadMeta(cadence=Cadence.FAST, deflects=n).to_meta() for n in (1, 2)]

    def write(meta: dict[str, Any]) -> Callable[[], object]:
        return lambda: stores.threads.set_thread_meta(
            ALICE, row.memory_id, meta, clock.now(), expected=row.meta
        )

    errors = at_once(*(write(meta) for meta in metas))

    assert len(errors) == 1 and isinstance(errors[0], ConcurrentChange)
    stored = stores.memories.get_memory(ALICE, row.memory_id)
    assert stored is not None and stored.meta in metas


def test_set_thread_meta_of_a_thread_no_longer_active_is_refused(
    stores: Stores, clock: ManualClock
) -> None:
    row = thread(ALICE, "Interviewing at Acme.", clock.now())
    added(stores, row)
    closed = stores.memories.close_memory(ALICE, row.memory_id, clock.now())
    event = builders.event(ALICE, row.memory_id, Op.UPDATE, clock.now())

    with pytest.raises(ConcurrentChange):
        stores.threads.set_thread_meta(
            ALICE,
            row.memory_id,
            ThreadMeta().to_meta(),
            clock.now(),
            expected=row.meta,
            events=[event],
        )

    assert stores.memories.list_memories(ALICE, EVERY_STATUS).items == [closed]
    assert stores.events.list_events(ALICE, row.memory_id) == []


def test_set_thread_meta_of_a_row_that_is_no_thread_is_refused(
    stores: Stores, clock: ManualClock
) -> None:
    fact = builders.memory(ALICE, "Is vegetarian.", clock.now(), meta={"note": 1})
    added(stores, fact)

    with pytest.raises(ConcurrentChange):
        stores.threads.set_thread_meta(
            ALICE, fact.memory_id, ThreadMeta().to_meta(), clock.now(), expected=fact.meta
        )

    assert stores.memories.get_memory(ALICE, fact.memory_id) == fact


def test_set_thread_meta_of_a_thread_that_does_not_show_is_not_found(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a deleted thread of Alice's, and a thread of Bob's
    gone = thread(ALICE, "Interviewing at Acme.", clock.now())
    bobs = thread(BOB, "Training for the Berlin marathon.", clock.now())
    added(stores, gone, bobs)
    deleted(stores, ALICE, gone, clock.now())
    manners = ThreadMeta().to_meta()

    # Then neither, nor an id never written, is Alice's to change
    for memory_id, expected in [
        (gone.memory_id, gone.meta),
        (bobs.memory_id, bobs.meta),
        (new_memory_id(), {}),
    ]:
        with pytest.raises(MemoryNotFound):
            stores.threads.set_thread_meta(
                ALICE, memory_id, manners, clock.now(), expected=expected
            )
    assert stores.memories.get_memory(BOB, bobs.memory_id) == bobs


# ---- threads_due --------------------------------------------------------------------------


def test_threads_due_lists_live_threads_due_by_the_day_oldest_first_across_users(
    stores: Stores, clock: ManualClock
) -> None:
    # Given Bob's fast thread, then a day later Alice's, and threads that are never due
    start = clock.now()
    bobs = thread(BOB, "Training for the Berlin marathon.", start)
    alices = thread(ALICE, "Interviewing at Acme.", start + timedelta(days=1))
    slow = thread(CAROL, "Hunting for a flat.", start, meta=ThreadMeta(cadence=Cadence.SLOW))
    dormant = thread(
        CAROL, "Learning the cello.", start, meta=ThreadMeta(status=ThreadStatus.DORMANT)
    )
    resolved = thread(CAROL, "Sold the car.", start, meta=ThreadMeta(status=ThreadStatus.RESOLVED))
    fact = builders.memory(CAROL, "Plays chess.", start)
    added(stores, bobs, alices, slow, dormant, resolved, fact)
    assert review_date(bobs) == day_of(start, FAST_REVIEW)

    # Then each is due from its review date on, oldest first, across users
    assert stores.threads.threads_due(day_of(start, FAST_REVIEW - timedelta(days=1))) == []
    assert stores.threads.threads_due(day_of(start, FAST_REVIEW)) == [(BOB, bobs.memory_id)]
    assert stores.threads.threads_due(day_of(start, FAST_REVIEW + timedelta(days=30))) == [
        (BOB, bobs.memory_id),
        (ALICE, alices.memory_id),
    ]
    assert stores.threads.threads_due(day_of(start, SLOW_REVIEW)) == [
        (BOB, bobs.memory_id),
        (ALICE, alices.memory_id),
        (CAROL, slow.memory_id),
    ]


def test_threads_due_lists_at_most_limit_oldest_first(stores: Stores, clock: ManualClock) -> None:
    rows = [
        thread(user, f"Story {n}.", clock.now() + timedelta(days=n))
        for n, user in enumerate([CAROL, ALICE, BOB, ALICE])
    ]
    added(stores, *rows)
    on = day_of(clock.now(), FAST_REVIEW + timedelta(days=10))

    assert stores.threads.threads_due(on, limit=3) == [
        (row.user_id, row.memory_id) for row in rows[:3]
    ]
    assert stores.threads.threads_due(on, limit=1) == [(CAROL, rows[0].memory_id)]
    with pytest.raises(InvalidField):
        stores.threads.threads_due(on, limit=0)


def test_a_thread_put_to_sleep_is_no_longer_due(stores: Stores, clock: ManualClock) -> None:
    # Given a live thread, due
    row = thread(ALICE, "Interviewing at Acme.", clock.now())
    added(stores, row)
    on = day_of(clock.now(), FAST_REVIEW)
    assert stores.threads.threads_due(on) == [(ALICE, row.memory_id)]

    # When the nightly review puts it to sleep
    dormant = ThreadMeta(cadence=Cadence.FAST, status=ThreadStatus.DORMANT).to_meta()
    stores.threads.set_thread_meta(ALICE, row.memory_id, dormant, clock.now(), expected=row.meta)

    # Then it is no longer due, and still listed as hers
    assert stores.threads.threads_due(on) == []
    assert listed(stores, ALICE) == [row.memory_id]


def test_a_threads_new_manners_move_its_review_date(stores: Stores, clock: ManualClock) -> None:
    # Given a live fast thread, then told of an event a month away
    row = thread(ALICE, "Interviewing at Acme.", clock.now())
    added(stores, row)
    event_on = day_of(clock.now(), timedelta(days=30))
    waiting = ThreadMeta(cadence=Cadence.EVENT, event_on=event_on).to_meta()

    changed = stores.threads.set_thread_meta(
        ALICE, row.memory_id, waiting, clock.now(), expected=row.meta
    )

    # Then it is due by the event's clock, not the beat's
    review_on = review_date(changed)
    assert review_on == event_on + FAST_REVIEW
    assert stores.threads.threads_due(day_of(clock.now(), FAST_REVIEW)) == []
    assert stores.threads.threads_due(review_on - timedelta(days=1)) == []
    assert stores.threads.threads_due(review_on) == [(ALICE, row.memory_id)]


def test_a_superseded_thread_is_due_by_its_new_versions_date(
    stores: Stores, clock: ManualClock
) -> None:
    first = thread(ALICE, "Interviewing at Acme.", clock.now())
    added(stores, first)
    clock.advance(timedelta(days=10))
    beat = thread(ALICE, "Acme made an offer.", clock.now(), supersedes=first.memory_id)

    stores.memories.supersede_memory(ALICE, first.memory_id, beat)

    assert stores.threads.threads_due(day_of(first.created_at, FAST_REVIEW)) == []
    assert stores.threads.threads_due(day_of(beat.created_at, FAST_REVIEW)) == [
        (ALICE, beat.memory_id)
    ]


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_thread_that_no_longer_shows_is_no_longer_due(
    stores: Stores, clock: ManualClock, ending: str
) -> None:
    # Given a live thread of Alice's beside one of Bob's
    row = thread(ALICE, "Interviewing at Acme.", clock.now())
    bobs = thread(BOB, "Training for the Berlin marathon.", clock.now())
    added(stores, row, bobs)
    on = day_of(clock.now(), FAST_REVIEW)
    clock.advance(timedelta(minutes=1))

    # When hers ends
    ENDINGS[ending](stores, row, clock)

    # Then only Bob's is due
    assert stores.threads.threads_due(on) == [(BOB, bobs.memory_id)]


def test_undoing_a_correction_makes_the_earlier_thread_due_again(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a thread corrected a day later
    first = thread(ALICE, "Interviewing at Acme.", clock.now())
    added(stores, first)
    clock.advance(timedelta(days=1))
    beat = thread(ALICE, "Interviewing at Acne.", clock.now(), supersedes=first.memory_id)
    stores.memories.supersede_memory(ALICE, first.memory_id, beat)
    on = day_of(first.created_at, FAST_REVIEW)
    assert stores.threads.threads_due(on) == []

    # When the correction is undone
    tombstone = Tombstone(user_id=ALICE, memory_id=beat.memory_id, deleted_at=clock.now())
    Deletions(stores).revert_supersede(ALICE, tombstone)

    # Then the earlier version is due by its own date, and the undone one never
    assert stores.threads.threads_due(on + timedelta(days=5)) == [(ALICE, first.memory_id)]


def test_a_thread_rewritten_whole_keeps_its_place(stores: Stores, clock: ManualClock) -> None:
    # Given a live thread rewritten whole (say, with its embedding attached)
    row = thread(ALICE, "Interviewing at Acme.", clock.now())
    added(stores, row)
    rewritten = dataclasses.replace(row, importance=8)

    stores.memories.put_memory(rewritten)

    # Then it is listed and due as before
    assert stores.threads.list_threads(ALICE) == [rewritten]
    assert stores.threads.threads_due(day_of(row.created_at, FAST_REVIEW)) == [
        (ALICE, row.memory_id)
    ]
