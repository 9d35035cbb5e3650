"""The witnessed lists of users' rows, on both backends: a user who forgets everything
leaves the `witnessed` list of every row in other users' partitions (`MemoryStore.drop_witness`),
whatever the row's status, and nothing else about any row changes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.memory import Memory
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.stores import Stores
from chatmemory.services.deletions import Deletions
from tests.contract.stores.common import EVERY_STATUS, all_ids, at_once
from tests.support import builders
from tests.support.stored import nothing_stored_for

DAN = "dan"
CARA = "cara"
ERIN = "erin"
ROUNDS = 20  # races run per concurrency test: each is a chance to land in the gap


def formed(
    stores: Stores, clock: ManualClock, owner: str, text: str, *witnessed: str, **fields: Any
) -> Memory:
    """A row of `owner`'s, formed a minute after the last with `witnessed` present."""
    clock.advance(timedelta(minutes=1))
    row = builders.memory(
        owner, text, clock.now(), witnessed=witnessed, room_id="room_dinner", **fields
    )
    assert stores.memories.add_memory(row)
    return row


def rows_of(stores: Stores, owner: str) -> dict[str, Memory]:
    """Every visible row of the owner, any status, by id."""
    return {m.memory_id: m for m in stores.memories.iter_memories(owner, EVERY_STATUS)}


def stagger(stores: Stores, reads: int) -> None:
    """A few harmless reads, to start a racing write a little later."""
    for _ in range(reads):
        stores.memories.get_memory(ERIN, "mem_absent")


# ---- what a drop changes ---------------------------------------------------------------------


def test_a_row_formed_in_a_group_loses_the_witness_dropped_and_nothing_else(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row of Dan's formed with Cara and Dan present
    row = formed(stores, clock, DAN, "Dan is interviewing at Tencent.", CARA, DAN)
    clock.advance(timedelta(hours=1))

    # When Cara is dropped
    changed = stores.memories.drop_witness(CARA)

    # Then the row lists Dan alone, and every other field (updated_at too) is as it was
    assert changed == 1
    assert stores.memories.get_memory(DAN, row.memory_id) == row.with_changes(witnessed=(DAN,))


def test_only_rows_that_list_the_witness_change(stores: Stores, clock: ManualClock) -> None:
    # Given rows of Dan's and Erin's, some of them formed with Cara present
    dans = formed(stores, clock, DAN, "Dan owns a flat in Xuhui.", DAN, CARA, ERIN)
    alone = formed(stores, clock, DAN, "Dan sold his Tesla shares.", DAN)
    with_erin = formed(stores, clock, DAN, "Dan plays go.", ERIN, DAN)
    erins = formed(stores, clock, ERIN, "Erin runs marathons.", CARA)
    nobodys = formed(stores, clock, ERIN, "Erin likes tea.")

    # When Cara is dropped
    changed = stores.memories.drop_witness(CARA)

    # Then the two rows that listed her lose her (the others keep their order), and the
    # rest are untouched
    assert changed == 2
    assert rows_of(stores, DAN) == {
        dans.memory_id: dans.with_changes(witnessed=(DAN, ERIN)),
        alone.memory_id: alone,
        with_erin.memory_id: with_erin,
    }
    assert rows_of(stores, ERIN) == {
        erins.memory_id: erins.with_changes(witnessed=()),
        nobodys.memory_id: nobodys,
    }


def test_rows_of_every_status_lose_the_witness(stores: Stores, clock: ManualClock) -> None:
    # Given rows of Dan's that Cara witnessed: one superseded by a newer one she also
    # witnessed, and one closed since
    old = formed(stores, clock, DAN, "Dan lives in Pune.", CARA, DAN, key="home_city")
    clock.advance(timedelta(minutes=1))
    new = builders.memory(
        DAN,
        "Dan lives in Bengaluru.",
        clock.now(),
        witnessed=(DAN, CARA),
        key="home_city",
        supersedes=old.memory_id,
    )
    old = stores.memories.supersede_memory(DAN, old.memory_id, new)
    ended = formed(stores, clock, DAN, "Dan is training for a race.", CARA, DAN)
    clock.advance(timedelta(minutes=1))
    ended = stores.memories.close_memory(DAN, ended.memory_id, clock.now())

    # When Cara is dropped
    changed = stores.memories.drop_witness(CARA)

    # Then the superseded, the active and the closed row all list Dan alone
    assert changed == 3
    assert rows_of(stores, DAN) == {
        old.memory_id: old.with_changes(witnessed=(DAN,)),
        new.memory_id: new.with_changes(witnessed=(DAN,)),
        ended.memory_id: ended.with_changes(witnessed=(DAN,)),
    }


def test_a_hidden_row_loses_the_witness_too_and_stays_hidden(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row of Dan's that Cara witnessed, deleted by Dan (hidden, its purge pending)
    row = formed(stores, clock, DAN, "Dan is interviewing at Tencent.", CARA, DAN)
    tombstone = Tombstone(user_id=DAN, memory_id=row.memory_id, deleted_at=clock.now())
    Deletions(stores).tombstone_memories(DAN, [tombstone])

    # When Cara is dropped, Then the hidden row is rewritten as well (a row waiting for
    # its purge keeps her id no longer than a shown one), once
    assert stores.memories.drop_witness(CARA) == 1
    assert stores.memories.drop_witness(CARA) == 0

    # and it is still hidden: the rewrite never shows it again
    assert stores.memories.get_memory(DAN, row.memory_id) is None
    assert all_ids(stores, DAN, EVERY_STATUS) == []


def test_a_purged_row_is_never_written_again(stores: Stores, clock: ManualClock) -> None:
    # Given a row of Dan's that Cara witnessed, deleted and purged
    row = formed(stores, clock, DAN, "Dan is interviewing at Tencent.", CARA, DAN)
    tombstone = Tombstone(user_id=DAN, memory_id=row.memory_id, deleted_at=clock.now())
    Deletions(stores).tombstone_memories(DAN, [tombstone])
    stores.visibility.purge_memories(DAN, [row.memory_id])

    # When Cara is dropped, Then there is nothing to change, and nothing comes back
    assert stores.memories.drop_witness(CARA) == 0
    assert stores.memories.get_memory(DAN, row.memory_id) is None
    assert stores.memories.drop_witness(CARA) == 0


def test_the_witness_own_rows_are_not_touched(stores: Stores, clock: ManualClock) -> None:
    # Given rows of Cara's own that list her (her forget everything hides those)
    caras = formed(stores, clock, CARA, "Cara is moving to Lisbon.", CARA, DAN)
    solo = formed(stores, clock, CARA, "Cara likes jazz.", CARA)

    # When Cara is dropped, Then none of them changes
    assert stores.memories.drop_witness(CARA) == 0
    assert rows_of(stores, CARA) == {caras.memory_id: caras, solo.memory_id: solo}


def test_a_drop_of_someone_who_witnessed_nothing_changes_nothing(
    stores: Stores, clock: ManualClock
) -> None:
    row = formed(stores, clock, DAN, "Dan plays go.", ERIN, DAN)

    assert stores.memories.drop_witness(CARA) == 0
    assert rows_of(stores, DAN) == {row.memory_id: row}


# ---- idempotence and later writes ------------------------------------------------------------


def test_a_second_drop_changes_nothing(stores: Stores, clock: ManualClock) -> None:
    # Given rows Cara witnessed, and Cara dropped once
    formed(stores, clock, DAN, "Dan owns a flat in Xuhui.", CARA, DAN)
    formed(stores, clock, ERIN, "Erin runs marathons.", CARA, ERIN)
    assert stores.memories.drop_witness(CARA) == 2
    before = {owner: rows_of(stores, owner) for owner in (DAN, ERIN)}

    # When Cara is dropped again, Then nothing changes
    assert stores.memories.drop_witness(CARA) == 0
    assert {owner: rows_of(stores, owner) for owner in (DAN, ERIN)} == before


def test_rows_that_name_the_witness_after_a_drop_are_reached_by_the_next(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row Cara witnessed, and Cara dropped
    first = formed(stores, clock, DAN, "Dan owns a flat in Xuhui.", CARA, DAN)
    assert stores.memories.drop_witness(CARA) == 1

    # When the first is rewritten whole (as when an embedding is attached) from a copy
    # read before the drop, Then the next drop reaches it
    stores.memories.put_memory(first)
    assert stores.memories.drop_witness(CARA) == 1

    # and so for a new row, and then for a correction of it, each dropped in turn
    renting = formed(stores, clock, DAN, "Dan rents a flat in Jing'an.", DAN, CARA)
    assert stores.memories.drop_witness(CARA) == 1
    clock.advance(timedelta(minutes=1))
    bought = builders.memory(
        DAN,
        "Dan bought the flat in Jing'an.",
        clock.now(),
        witnessed=(CARA, DAN),
        supersedes=renting.memory_id,
    )
    renting = stores.memories.supersede_memory(DAN, renting.memory_id, bought)
    assert stores.memories.drop_witness(CARA) == 1

    # and in the end no row lists her
    assert rows_of(stores, DAN) == {
        first.memory_id: first.with_changes(witnessed=(DAN,)),
        renting.memory_id: renting.with_changes(witnessed=(DAN,)),
        bought.memory_id: bought.with_changes(witnessed=(DAN,)),
    }


# ---- partitions apart ------------------------------------------------------------------------


def test_a_witness_listings_never_show_what_others_rows_leave_behind(
    stores: Stores, clock: ManualClock
) -> None:
    # Given rows of Dan's and Erin's that Cara witnessed, and nothing of Cara's own
    dans = formed(stores, clock, DAN, "Dan owns a flat in Xuhui.", CARA, DAN)
    formed(stores, clock, ERIN, "Erin runs marathons.", CARA)

    # Then nothing shows as Cara's, in any listing
    assert nothing_stored_for(stores, CARA)
    assert stores.recall.memory_digests(CARA) == []
    assert stores.memories.list_memories(CARA, EVERY_STATUS).items == []
    # and Dan lists exactly his row, before and after she is dropped
    assert all_ids(stores, DAN, EVERY_STATUS) == [dans.memory_id]
    stores.memories.drop_witness(CARA)
    assert nothing_stored_for(stores, CARA)
    assert all_ids(stores, DAN, EVERY_STATUS) == [dans.memory_id]

    # and when Cara has a row of her own, it is all she lists
    own = formed(stores, clock, CARA, "Cara likes jazz.", CARA)
    formed(stores, clock, DAN, "Dan plays go.", CARA, DAN)
    assert all_ids(stores, CARA, EVERY_STATUS) == [own.memory_id]
    assert [d.memory_id for d in stores.recall.memory_digests(CARA)] == [own.memory_id]


# ---- at the same time ------------------------------------------------------------------------


def test_a_row_written_while_the_witness_is_dropped_is_never_lost(
    stores: Stores, clock: ManualClock
) -> None:
    written: list[Memory] = []
    for round_ in range(ROUNDS):
        # Given a row of Dan's that Cara witnessed, waiting for her drop
        written.append(formed(stores, clock, DAN, f"Fact {round_}.", CARA, DAN))

        # When another row naming her lands while she is dropped (a little later each
        # round, so that in some round it falls between the drop's reads and its writes)
        racing = builders.memory(DAN, f"Also {round_}.", clock.now(), witnessed=(DAN, CARA))

        def write(row: Memory = racing, later: int = round_ % 4) -> None:
            stagger(stores, later)
            assert stores.memories.add_memory(row)

        assert at_once(write, lambda: stores.memories.drop_witness(CARA)) == []
        written.append(racing)

        # Then the next drop reaches it if that one did not: no row lists her
        stores.memories.drop_witness(CARA)
        rows = rows_of(stores, DAN)
        assert set(rows) == {row.memory_id for row in written}
        assert {row.witnessed for row in rows.values()} == {(DAN,)}


def test_a_row_rewritten_while_the_witness_is_dropped_is_never_lost(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row of Dan's that Cara witnessed, and a copy of it read then
    row = formed(stores, clock, DAN, "Dan owns a flat in Xuhui.", CARA, DAN)

    for round_ in range(ROUNDS):
        # When the copy is written back whole (as when a late embedding is attached), so
        # the row names her again, and written back once more while she is dropped (a
        # little later each round)
        stores.memories.put_memory(row)

        def rewrite(later: int = round_ % 4) -> None:
            stagger(stores, later)
            stores.memories.put_memory(row)

        assert at_once(rewrite, lambda: stores.memories.drop_witness(CARA)) == []

        # Then the next drop reaches it if that one did not
        stores.memories.drop_witness(CARA)
        assert rows_of(stores, DAN) == {row.memory_id: row.with_changes(witnessed=(DAN,))}


def test_two_witnesses_dropped_at_once_never_put_each_other_back(
    stores: Stores, clock: ManualClock
) -> None:
    # Given rows of Dan's that Cara and Erin both witnessed
    rows = [formed(stores, clock, DAN, f"Fact {n}.", CARA, DAN, ERIN) for n in range(4)]

    # When both are dropped at the same moment
    errors = at_once(
        lambda: stores.memories.drop_witness(CARA), lambda: stores.memories.drop_witness(ERIN)
    )

    # Then every row lists Dan alone
    assert errors == []
    assert rows_of(stores, DAN) == {
        row.memory_id: row.with_changes(witnessed=(DAN,)) for row in rows
    }
