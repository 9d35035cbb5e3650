"""The persona partition's contract, on both backends: a persona's own rows (world facts,
its notes with no counterpart) — add, list, supersede, close, reinforce — kept apart from
every user's rows and from other personas', and a user taken out of the witnessed lists."""

from __future__ import annotations

import sys
import threading
from datetime import datetime, timedelta
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.errors import ConcurrentChange, InvalidField, MemoryNotFound
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.ports.stores import Stores
from tests.contract.stores.common import EVERY_STATUS, all_ids
from tests.support import builders

WARREN = "warren"
MIRA = "mira"
DAN = "dan"
CARA = "cara"


def world(persona: str, text: str, at: datetime, **fields: Any) -> Memory:
    """A world fact the persona learned, kept under its own slug."""
    values: dict[str, Any] = {"persona": persona, "subject": "world", "kind": Kind.EVENT}
    values.update(fields)
    return builders.memory(values.pop("user_id", persona), text, at, **values)


def learned(stores: Stores, clock: ManualClock, persona: str, text: str, **fields: Any) -> Memory:
    """The persona learns `text`, a minute after whatever it learned before."""
    clock.advance(timedelta(minutes=1))
    row = world(persona, text, clock.now(), **fields)
    assert stores.persona_memories.add_persona_memory(row)
    return row


def texts(rows: list[Memory]) -> list[str]:
    return [row.text for row in rows]


# ---- add and list ----------------------------------------------------------------------------


def test_a_world_row_reads_back_with_every_field(stores: Stores, clock: ManualClock) -> None:
    # Given a world fact with every field set away from its default
    row = world(
        WARREN,
        "Nolan's Odyssey opened 2026-07-17.",
        clock.now(),
        witnessed=(DAN, CARA),
        room_id="room_1",
        category="films",
        key="film.odyssey",
        importance=4,
        valid_from=clock.now() - timedelta(days=3),
        valid_until=clock.now() + timedelta(days=365),
        evidence=("room_1_3", "room_1_4"),
        embedding=b"\x01\x02\x03",
        meta={"uses": ["tone"]},
    )

    # When it is added
    assert stores.persona_memories.add_persona_memory(row)

    # Then it reads back whole, under the persona
    assert stores.persona_memories.list_persona_memories(WARREN) == [row]


def test_rows_list_newest_first_and_by_status(stores: Stores, clock: ManualClock) -> None:
    # Given four rows: one closed later, one superseded by the newest
    opened = learned(stores, clock, WARREN, "Odyssey opened.")
    rumour = learned(stores, clock, WARREN, "A sequel is rumoured.")
    dated = learned(stores, clock, WARREN, "The sequel is due in 2028.")
    clock.advance(timedelta(minutes=1))
    stores.persona_memories.close_persona_memory(WARREN, rumour.memory_id, clock.now())
    redated = world(WARREN, "The sequel is due in 2029.", clock.now(), supersedes=dated.memory_id)
    stores.persona_memories.supersede_persona_memory(WARREN, dated.memory_id, redated)

    def listed(status: Status | None) -> list[str]:
        return texts(stores.persona_memories.list_persona_memories(WARREN, status))

    # Then each status lists its rows, newest first, and None lists them all
    assert listed(Status.ACTIVE) == [redated.text, opened.text]
    assert listed(Status.CLOSED) == [rumour.text]
    assert listed(Status.SUPERSEDED) == [dated.text]
    assert listed(None) == [redated.text, dated.text, rumour.text, opened.text]
    assert texts(stores.persona_memories.list_persona_memories(WARREN)) == listed(Status.ACTIVE)


def test_a_persona_with_no_rows_lists_none(stores: Stores) -> None:
    assert stores.persona_memories.list_persona_memories(WARREN, None) == []


def test_an_id_that_exists_is_refused_and_the_first_row_kept(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row
    first = learned(stores, clock, WARREN, "Odyssey opened.", witnessed=(DAN,))

    # When another row with its id is added
    again = world(WARREN, "Something else.", clock.now(), memory_id=first.memory_id)

    # Then it is refused, and the stored row is the first
    assert not stores.persona_memories.add_persona_memory(again)
    assert stores.persona_memories.list_persona_memories(WARREN, None) == [first]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"subject": f"u:{DAN}"}, "subject"),
        ({"subject": "self", "kind": Kind.PROMISE, "counterpart": f"u:{DAN}"}, "counterpart"),
        ({"user_id": DAN}, "user_id"),
    ],
    ids=["about a user", "with a counterpart", "under a user's id"],
)
def test_a_row_that_belongs_in_a_users_partition_is_refused_and_nothing_written(
    stores: Stores, clock: ManualClock, fields: dict[str, Any], field: str
) -> None:
    # Given a row about (or with, or under) Dan, that Dan witnessed
    values: dict[str, Any] = {"witnessed": (DAN,)}
    values.update(fields)
    row = world(WARREN, "Dan is interviewing at Tencent.", clock.now(), **values)

    # When it is added to Warren's own partition, Then it is refused by its field
    with pytest.raises(InvalidField) as refused:
        stores.persona_memories.add_persona_memory(row)
    assert refused.value.field == field

    # and nothing was written, anywhere
    assert stores.persona_memories.list_persona_memories(WARREN, None) == []
    assert all_ids(stores, DAN, EVERY_STATUS) == []
    assert stores.persona_memories.drop_witness(DAN) == 0


def test_a_persona_note_with_no_counterpart_is_its_own(stores: Stores, clock: ManualClock) -> None:
    note = learned(stores, clock, WARREN, "Warren means to reread the 1988 letter.", subject="self")

    assert stores.persona_memories.list_persona_memories(WARREN) == [note]


# ---- supersede and close ---------------------------------------------------------------------


def test_a_supersede_closes_the_old_row_and_writes_the_new_together(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row
    old = learned(stores, clock, WARREN, "The sequel is due in 2028.")
    clock.advance(timedelta(days=2))

    # When a newer row supersedes it
    new = world(WARREN, "The sequel is due in 2029.", clock.now(), supersedes=old.memory_id)
    returned = stores.persona_memories.supersede_persona_memory(WARREN, old.memory_id, new)

    # Then the old row is history closed by the new one, and both are stored
    assert returned == old.superseded_by(new)
    assert (returned.status, returned.closed_by) == (Status.SUPERSEDED, new.memory_id)
    assert stores.persona_memories.list_persona_memories(WARREN, None) == [new, returned]


def test_a_supersede_that_fails_writes_nothing(stores: Stores, clock: ManualClock) -> None:
    # Given an active row, a closed row, and a third row whose id a new row will reuse
    active = learned(stores, clock, WARREN, "The sequel is due in 2028.")
    closed = learned(stores, clock, WARREN, "A sequel is rumoured.")
    taken = learned(stores, clock, WARREN, "Odyssey opened.")
    clock.advance(timedelta(minutes=1))
    stores.persona_memories.close_persona_memory(WARREN, closed.memory_id, clock.now())
    before = stores.persona_memories.list_persona_memories(WARREN, None)

    def replacing(old: Memory, **fields: Any) -> Memory:
        return world(
            WARREN, "The sequel is due in 2029.", clock.now(), supersedes=old.memory_id, **fields
        )

    # When each kind of failure is tried, Then each is refused
    with pytest.raises(MemoryNotFound):
        stores.persona_memories.supersede_persona_memory(
            WARREN, "mem_missing", world(WARREN, "x.", clock.now(), supersedes="mem_missing")
        )
    with pytest.raises(ConcurrentChange):
        stores.persona_memories.supersede_persona_memory(
            WARREN, closed.memory_id, replacing(closed)
        )
    with pytest.raises(ConcurrentChange):
        stores.persona_memories.supersede_persona_memory(
            WARREN, active.memory_id, replacing(active, memory_id=taken.memory_id)
        )
    with pytest.raises(InvalidField):  # the new row must name the row it supersedes
        stores.persona_memories.supersede_persona_memory(WARREN, active.memory_id, replacing(taken))
    with pytest.raises(InvalidField):  # a row about a user never lands here
        stores.persona_memories.supersede_persona_memory(
            WARREN, active.memory_id, replacing(active, subject=f"u:{DAN}")
        )
    with pytest.raises(InvalidField):  # nor another persona's
        stores.persona_memories.supersede_persona_memory(
            WARREN,
            active.memory_id,
            world(MIRA, "Due in 2029.", clock.now(), supersedes=active.memory_id),
        )

    # and nothing was written by any of them
    assert stores.persona_memories.list_persona_memories(WARREN, None) == before
    assert stores.persona_memories.list_persona_memories(MIRA, None) == []


def test_a_close_ends_an_active_row_once(stores: Stores, clock: ManualClock) -> None:
    # Given a row
    row = learned(stores, clock, WARREN, "The cinema on Fuxing Road is open.")
    closed_at = clock.advance(timedelta(days=1))

    # When it is closed
    closed = stores.persona_memories.close_persona_memory(WARREN, row.memory_id, closed_at)

    # Then it is closed as of then, stored so, and cannot be closed again
    assert closed == row.closed(closed_at)
    assert stores.persona_memories.list_persona_memories(WARREN, Status.CLOSED) == [closed]
    with pytest.raises(ConcurrentChange):
        stores.persona_memories.close_persona_memory(WARREN, row.memory_id, closed_at)
    with pytest.raises(MemoryNotFound):
        stores.persona_memories.close_persona_memory(WARREN, "mem_missing", closed_at)


# ---- reinforcement ---------------------------------------------------------------------------


def test_loading_reinforces_and_unknown_ids_are_skipped(stores: Stores, clock: ManualClock) -> None:
    # Given two rows
    used = learned(stores, clock, WARREN, "Odyssey opened.")
    unused = learned(stores, clock, WARREN, "A sequel is rumoured.")
    first = clock.advance(timedelta(hours=1))

    # When one is loaded twice (with an unknown id alongside)
    stores.persona_memories.record_persona_use(WARREN, [used.memory_id, "mem_missing"], first)
    second = clock.advance(timedelta(hours=1))
    stores.persona_memories.record_persona_use(WARREN, [used.memory_id], second)
    stores.persona_memories.record_persona_use(WARREN, [], second)

    # Then it counts both loads and was last used at the second; the other is untouched
    rows = {m.memory_id: m for m in stores.persona_memories.list_persona_memories(WARREN)}
    assert rows[used.memory_id] == used.recalled(first).recalled(second)
    assert rows[unused.memory_id] == unused
    assert set(rows) == {used.memory_id, unused.memory_id}


# ---- partitions apart ------------------------------------------------------------------------


def test_two_personas_rows_never_show_through_each_other(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row of Warren's
    warrens = learned(stores, clock, WARREN, "Odyssey opened.")
    at = clock.advance(timedelta(minutes=1))

    # Then Mira lists none of it, and cannot close, supersede or reinforce it
    assert stores.persona_memories.list_persona_memories(MIRA, None) == []
    with pytest.raises(MemoryNotFound):
        stores.persona_memories.close_persona_memory(MIRA, warrens.memory_id, at)
    replacement = world(MIRA, "Odyssey closed.", at, supersedes=warrens.memory_id)
    with pytest.raises(MemoryNotFound):
        stores.persona_memories.supersede_persona_memory(MIRA, warrens.memory_id, replacement)
    stores.persona_memories.record_persona_use(MIRA, [warrens.memory_id], at)
    assert stores.persona_memories.list_persona_memories(WARREN, None) == [warrens]
    assert stores.persona_memories.list_persona_memories(MIRA, None) == []


def test_a_users_own_listings_never_show_persona_rows(stores: Stores, clock: ManualClock) -> None:
    # Given a user whose id is the persona's slug, with a memory of their own, and
    # Warren's world rows that Dan and that user witnessed
    own = builders.memory(WARREN, "Likes long walks.", clock.now())
    stores.memories.add_memory(own)
    learned(stores, clock, WARREN, "Odyssey opened.", witnessed=(DAN, WARREN))
    learned(stores, clock, WARREN, "Warren means to reread the letter.", subject="self")

    # Then the user's listings show only their own row, and Dan's show nothing
    assert all_ids(stores, WARREN, EVERY_STATUS) == [own.memory_id]
    assert [d.memory_id for d in stores.recall.memory_digests(WARREN)] == [own.memory_id]
    for user in (DAN, WARREN):
        assert stores.conversations.list_conversations(user) == []
        assert stores.notices.list_notices(user, include_undone=True) == []
        assert stores.tombstones.list_tombstones(user) == []
    assert all_ids(stores, DAN, EVERY_STATUS) == []
    assert stores.recall.memory_digests(DAN) == []
    # and the persona's listing shows only its own rows, never the user's
    persona_ids = {m.memory_id for m in stores.persona_memories.list_persona_memories(WARREN)}
    assert own.memory_id not in persona_ids and len(persona_ids) == 2


# ---- a user leaves the witnessed lists -------------------------------------------------------


def test_drop_witness_takes_the_user_out_of_every_row_they_witnessed_and_only_those(
    stores: Stores, clock: ManualClock
) -> None:
    # Given rows of two personas, some witnessed by Dan, one (closed since) by Dan alone
    both = learned(stores, clock, WARREN, "Odyssey opened.", witnessed=(DAN, CARA))
    alone = learned(stores, clock, WARREN, "A sequel is rumoured.", witnessed=(DAN,))
    caras = learned(stores, clock, WARREN, "The cinema reopened.", witnessed=(CARA,))
    miras = learned(stores, clock, MIRA, "Tea prices rose.", witnessed=(CARA, DAN))
    nobodys = learned(stores, clock, MIRA, "Mira means to learn Go.", subject="self")
    clock.advance(timedelta(minutes=1))
    alone = stores.persona_memories.close_persona_memory(WARREN, alone.memory_id, clock.now())

    # When Dan is dropped
    changed = stores.persona_memories.drop_witness(DAN)

    # Then the three rows Dan witnessed lose him, whatever their status, and nothing else
    assert changed == 3
    assert stores.persona_memories.list_persona_memories(WARREN, None) == [
        caras,
        alone.with_changes(witnessed=()),
        both.with_changes(witnessed=(CARA,)),
    ]
    assert stores.persona_memories.list_persona_memories(MIRA, None) == [
        nobodys,
        miras.with_changes(witnessed=(CARA,)),
    ]


def test_drop_witness_is_idempotent_and_finds_rows_written_after_it(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a row Dan witnessed, and Dan dropped once
    learned(stores, clock, WARREN, "Odyssey opened.", witnessed=(DAN, CARA))
    assert stores.persona_memories.drop_witness(DAN) == 1

    # When Dan is dropped again, Then nothing changes
    before = stores.persona_memories.list_persona_memories(WARREN, None)
    assert stores.persona_memories.drop_witness(DAN) == 0
    assert stores.persona_memories.list_persona_memories(WARREN, None) == before

    # and a row Dan witnesses later, through a supersede, is reached by the next drop
    clock.advance(timedelta(minutes=1))
    old = before[0]
    new = world(WARREN, "Odyssey closed.", clock.now(), supersedes=old.memory_id, witnessed=(DAN,))
    stores.persona_memories.supersede_persona_memory(WARREN, old.memory_id, new)
    assert stores.persona_memories.drop_witness(DAN) == 1
    (latest, _) = stores.persona_memories.list_persona_memories(WARREN, None)
    assert latest == new.with_changes(witnessed=())


def test_two_users_dropped_at_once_never_put_each_other_back(
    stores: Stores, clock: ManualClock
) -> None:
    # Given rows Dan and Cara both witnessed
    rows = [learned(stores, clock, WARREN, f"Fact {n}.", witnessed=(DAN, CARA)) for n in range(4)]

    # When both are dropped at the same moment (threads switched as often as the
    # interpreter allows, so their reads and rewrites interleave)
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def drop(user: str) -> None:
        try:
            start.wait()
            stores.persona_memories.drop_witness(user)
        except BaseException as exc:  # handed back to the test
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=drop, args=(user,)) for user in (DAN, CARA)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)

    # Then no row lists either of them
    assert errors == []
    listed = stores.persona_memories.list_persona_memories(WARREN)
    assert sorted(m.memory_id for m in listed) == sorted(r.memory_id for r in rows)
    assert [m.witnessed for m in listed] == [()] * len(rows)


def test_drop_witness_of_someone_who_witnessed_nothing_changes_nothing(
    stores: Stores, clock: ManualClock
) -> None:
    row = learned(stores, clock, WARREN, "Odyssey opened.", witnessed=(CARA,))

    assert stores.persona_memories.drop_witness(DAN) == 0
    assert stores.persona_memories.list_persona_memories(WARREN) == [row]
