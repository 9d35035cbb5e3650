"""What per-turn recall reads, on SQLite and on DynamoDB (under moto): the memories in use
now, fresh after every write, and never a history row.

Each store reads them its own way (SQLite an index query over the rows, DynamoDB a
marker beside each row in use); both must answer exactly what the rows say.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain import fading
from chatmemory.domain.memory import Memory
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.deletions import Deletions
from tests.contract.stores.common import ALICE, BOB, at_once
from tests.support import builders


def in_use(stores: Stores, user_id: str = ALICE, persona: str | None = None) -> list[str]:
    return [d.memory_id for d in stores.recall.memory_digests(user_id, persona)]


def rows_in_use(stores: Stores, clock: ManualClock, user_id: str = ALICE) -> set[str]:
    """The oracle: what the rows themselves say is in use now."""
    now = clock.now()
    return {
        m.memory_id
        for m in stores.memories.iter_memories(user_id, MemoryQuery())
        if fading.in_use(m, now)
    }


def remembered(stores: Stores, clock: ManualClock, text: str, **fields: object) -> Memory:
    memory = builders.memory(ALICE, text, clock.now(), **fields)
    assert stores.memories.add_memory(memory)
    return memory


def test_a_new_memory_is_read_on_the_very_next_call_newest_first(
    stores: Stores, clock: ManualClock
) -> None:
    # Given two memories written a minute apart
    first = remembered(stores, clock, "Is vegetarian.")
    clock.advance(timedelta(minutes=1))
    second = remembered(stores, clock, "Lives in Pune.", persona="warren")

    # Then both are read at once, newest first, and only by persona when asked
    assert in_use(stores) == [second.memory_id, first.memory_id]
    assert in_use(stores, persona="warren") == [second.memory_id]
    assert in_use(stores, BOB) == []


def test_a_correction_a_close_and_a_delete_leave_only_what_is_in_use(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a fact, its correction, a closed belief and a deleted one
    pune = remembered(stores, clock, "Lives in Pune.", key="home_city")
    job = remembered(stores, clock, "Works at Acme.")
    jazz = remembered(stores, clock, "Likes jazz.")
    clock.advance(timedelta(minutes=1))
    goa = builders.memory(ALICE, "Lives in Goa.", clock.now(), supersedes=pune.memory_id)

    # When they are corrected, closed and deleted
    stores.memories.supersede_memory(ALICE, pune.memory_id, goa)
    stores.memories.close_memory(ALICE, job.memory_id, clock.now())
    Deletions(stores).tombstone_memories(
        ALICE, [Tombstone(user_id=ALICE, memory_id=jazz.memory_id, deleted_at=clock.now())]
    )

    # Then the very next read has the correction only
    assert in_use(stores) == [goa.memory_id]
    assert set(in_use(stores)) == rows_in_use(stores, clock)


def test_an_undone_correction_brings_the_earlier_version_back_at_once(
    stores: Stores, clock: ManualClock
) -> None:
    # Given Pune corrected to Goa
    pune = remembered(stores, clock, "Lives in Pune.", key="home_city")
    clock.advance(timedelta(minutes=1))
    goa = builders.memory(ALICE, "Lives in Goa.", clock.now(), supersedes=pune.memory_id)
    stores.memories.supersede_memory(ALICE, pune.memory_id, goa)

    # When the correction is undone
    Deletions(stores).revert_supersede(
        ALICE, Tombstone(user_id=ALICE, memory_id=goa.memory_id, deleted_at=clock.now())
    )

    # Then Pune is in use again and Goa gone
    assert in_use(stores) == [pune.memory_id]


def test_a_belief_set_aside_by_the_cap_is_not_read_until_it_is_revived(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a belief the cap set aside
    chess = remembered(stores, clock, "Plays chess.")
    kept = remembered(stores, clock, "Is vegetarian.")
    stores.memories.set_fading(ALICE, [fading.set_aside(chess, clock.now())])
    assert in_use(stores) == [kept.memory_id]

    # When new evidence revives it
    clock.advance(timedelta(hours=1))
    [archived] = stores.memories.get_memories(ALICE, [chess.memory_id])
    stores.memories.set_fading(ALICE, [fading.reinforced(archived, clock.now())])

    # Then it is read again
    assert set(in_use(stores)) == {chess.memory_id, kept.memory_id}


def test_a_belief_that_faded_is_not_read_and_a_use_or_evidence_brings_it_back(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a mood (it lasts days) and a fact (it lasts years)
    mood = remembered(stores, clock, "Feels tired.", category="mood")
    fact = remembered(stores, clock, "Lives in Pune.", category="location")

    # When two weeks pass with no evidence for the mood
    clock.advance(timedelta(days=14))

    # Then only the fact is read (on the next read too: nothing comes back by itself)
    assert in_use(stores) == [fact.memory_id]
    assert in_use(stores) == [fact.memory_id]
    assert set(in_use(stores)) == rows_in_use(stores, clock)

    # And when it is said again, it is back
    [faded] = stores.memories.get_memories(ALICE, [mood.memory_id])
    stores.memories.set_fading(ALICE, [fading.reinforced(faded, clock.now())])
    assert set(in_use(stores)) == {mood.memory_id, fact.memory_id}


def test_a_rewritten_row_is_read_as_rewritten_and_an_expired_one_not_at_all(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a memory, then rewritten with a new importance and another persona
    memory = remembered(stores, clock, "Is vegetarian.", importance=3)
    trip = remembered(stores, clock, "Is in Lisbon.", valid_until=clock.now() + timedelta(hours=1))
    clock.advance(timedelta(minutes=1))
    stores.memories.put_memory(
        dataclasses.replace(memory, importance=9, persona="warren", updated_at=clock.now())
    )

    # Then the read says so at once
    digests = {d.memory_id: d for d in stores.recall.memory_digests(ALICE)}
    assert set(digests) == {memory.memory_id, trip.memory_id}
    assert (digests[memory.memory_id].importance, digests[memory.memory_id].persona) == (
        9,
        "warren",
    )

    # And once the trip's shelf life has passed, it is no longer read
    clock.advance(timedelta(hours=1))
    assert in_use(stores) == [memory.memory_id]


def test_forgetting_everything_leaves_nothing_to_read_but_what_came_after(
    stores: Stores, clock: ManualClock
) -> None:
    remembered(stores, clock, "Is vegetarian.")
    clock.advance(timedelta(minutes=1))
    Deletions(stores).forget_everything(ALICE, clock.now())
    clock.advance(timedelta(minutes=1))
    later = remembered(stores, clock, "Lives in Goa.")

    assert in_use(stores) == [later.memory_id]
    assert in_use(stores) == [later.memory_id]


def test_a_use_recorded_while_the_row_changes_never_leaves_a_stale_read(
    stores: Stores, clock: ManualClock
) -> None:
    # Given memories that are recalled while some are corrected, closed or set aside
    rows = [remembered(stores, clock, f"Fact number {n}.", key=f"fact_{n}") for n in range(6)]
    clock.advance(timedelta(minutes=1))
    now = clock.now()

    def correct(row: Memory) -> None:
        newer = builders.memory(ALICE, f"{row.text} (corrected)", now, supersedes=row.memory_id)
        stores.memories.supersede_memory(ALICE, row.memory_id, newer)

    # When they race
    errors = at_once(
        lambda: stores.memories.record_use(ALICE, [r.memory_id for r in rows], now),
        lambda: correct(rows[0]),
        lambda: stores.memories.close_memory(ALICE, rows[1].memory_id, now),
        lambda: stores.memories.set_fading(ALICE, [fading.set_aside(rows[2], now)]),
        lambda: stores.memories.record_use(ALICE, [rows[3].memory_id], now),
    )

    # Then what recall reads is exactly what the rows say (the one set aside is back in
    # use if its use landed after, as a use revives it)
    assert errors == []
    assert set(in_use(stores)) == rows_in_use(stores, clock)
    assert rows[0].memory_id not in in_use(stores) and rows[1].memory_id not in in_use(stores)
