"""What a delete reads of a row (`MemoryVisibility.traces`), on both backends: the ids and
places of exactly the rows a read shows, read without the row's words or times — so a
row damaged in place is still found, and so still deleted."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.memory import Kind, Status
from chatmemory.domain.tombstone import MemoryTrace, Tombstone
from chatmemory.ports.stores import Stores
from chatmemory.services.deletions import Deletions
from tests.contract.stores.common import ALICE, BOB, corrected
from tests.support import builders
from tests.support.damaged import SQLITE_FILE, YEAR_ONE_AS_STORED, damage_memory


def test_a_trace_holds_the_ids_and_places_of_the_row(stores: Stores, clock: ManualClock) -> None:
    # Given a correction: a newer version, and the one it superseded
    pune, bengaluru = corrected(stores, clock)

    # When their traces are read
    traces = stores.visibility.traces(ALICE, [bengaluru.memory_id, pune.memory_id])

    # Then each is the row's ids, persona, kind, status and where it came from
    assert traces == sorted(
        [MemoryTrace.of(bengaluru), MemoryTrace.of(pune.superseded_by(bengaluru))],
        key=lambda trace: trace.memory_id,
    )
    newer = next(trace for trace in traces if trace.memory_id == bengaluru.memory_id)
    assert (newer.supersedes, newer.kind, newer.status) == (
        pune.memory_id,
        Kind.FACT,
        Status.ACTIVE,
    )


def test_traces_show_only_the_rows_a_read_shows(stores: Stores, clock: ManualClock) -> None:
    # Given Alice's rows: one kept, one deleted, one past its shelf life; and Bob's
    kept = builders.memory(ALICE, "Is vegetarian.", clock.now(), source_message_id="msg_c1_1")
    deleted = builders.memory(ALICE, "Has a cat.", clock.now())
    expired = builders.memory(
        ALICE, "Is in Goa.", clock.now(), valid_until=clock.now() + timedelta(hours=1)
    )
    bobs = builders.memory(BOB, "Keeps bees.", clock.now())
    for memory in (kept, deleted, expired, bobs):
        assert stores.memories.add_memory(memory)
    tombstone = Tombstone(user_id=ALICE, memory_id=deleted.memory_id, deleted_at=clock.now())
    Deletions(stores).tombstone_memories(ALICE, [tombstone])
    clock.advance(timedelta(hours=2))

    # When every trace of Alice's is read, and the deleted, expired and Bob's by id
    every = stores.visibility.traces(ALICE)
    named = stores.visibility.traces(ALICE, [deleted.memory_id, expired.memory_id, bobs.memory_id])

    # Then only the row she still has is there
    assert every == [MemoryTrace.of(kept)]
    assert every[0].message_ids == ("msg_c1_1",)
    assert named == []


def test_traces_after_forget_everything_are_only_of_rows_learned_since(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row forgotten, and one learned after
    before = builders.memory(ALICE, "Lives in Pune.", clock.now())
    assert stores.memories.add_memory(before)
    clock.advance(timedelta(minutes=1))
    Deletions(stores).forget_everything(ALICE, clock.now())
    clock.advance(timedelta(minutes=1))
    after = builders.memory(ALICE, "Lives in Goa.", clock.now())
    assert stores.memories.add_memory(after)

    # When her traces are read
    traces = stores.visibility.traces(ALICE, [before.memory_id, after.memory_id])

    # Then only the one learned since is there
    assert traces == [MemoryTrace.of(after)]


def test_a_row_damaged_in_place_still_has_its_trace(
    stores: Stores, clock: ManualClock, tmp_path: Path
) -> None:
    # Given a row whose times and kind no longer read (as an older release stored year 1)
    memory = builders.memory(ALICE, "Lives in Pune.", clock.now(), persona="nolan")
    assert stores.memories.add_memory(memory)
    damage_memory(
        stores,
        tmp_path / SQLITE_FILE,
        ALICE,
        memory.memory_id,
        created_at=YEAR_ONE_AS_STORED,
        last_used_at=YEAR_ONE_AS_STORED,
        kind="no-such-kind",
    )

    # When its trace is read, by id and among every row
    by_id = stores.visibility.traces(ALICE, [memory.memory_id])
    every = stores.visibility.traces(ALICE)

    # Then it is there, with what still reads
    expected = MemoryTrace(
        user_id=ALICE, memory_id=memory.memory_id, persona="nolan", status=Status.ACTIVE
    )
    assert by_id == every == [expected]
