"""What personas remember about you, grouped by persona, on both stores: each persona's rows,
history with its arc on request, and the meter of the block it would build for you alone
in a private chat — read without loading anything into any mind."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.rooms import Room, RoomKind
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.persona_view import PersonaView, arc
from chatmemory.services.rooms import RoomBlocks
from tests.support import builders

DAN, CARA = "dan", "cara"
WARREN, NOLAN = "warren", "nolan"
JULY = datetime(2026, 7, 14, tzinfo=UTC)
NOVEMBER = datetime(2026, 11, 2, tzinfo=UTC)


@pytest.fixture
def view(stores: Stores, clock: ManualClock) -> PersonaView:
    return PersonaView(stores, clock)


def remember(stores: Stores, clock: ManualClock, text: str, **fields: Any) -> Memory:
    """A memory about Dan that Warren holds (formed one-to-one) unless said otherwise."""
    values: dict[str, Any] = {"persona": WARREN, "witnessed": (DAN,)}
    values.update(fields)
    memory = builders.memory(values.pop("user", DAN), text, clock.now(), **values)
    assert stores.memories.add_memory(memory)
    return memory


def ended(stores: Stores, clock: ManualClock, text: str, **fields: Any) -> Memory:
    """A belief Warren held about Dan from July to November, closed since."""
    values: dict[str, Any] = {"status": Status.CLOSED, "valid_from": JULY, "valid_to": NOVEMBER}
    values.update(fields)
    return remember(stores, clock, text, **values)


def texts(group: Any) -> list[str]:
    return [row.memory.text for row in group.rows]


def test_each_persona_gets_its_own_group_by_name_with_what_it_believes(
    stores: Stores, clock: ManualClock, view: PersonaView
) -> None:
    # Given what Warren and Nolan each hold about Dan, one thing of it no longer true
    remember(stores, clock, "Dan owns a flat in Xuhui.")
    clock.advance(timedelta(minutes=1))
    remember(stores, clock, "Dan runs every morning.")
    remember(stores, clock, "Dan plays chess on Sundays.", persona=NOLAN)
    ended(stores, clock, "Dan rented in Jing'an.")

    # When Dan reads the page
    groups = view.by_persona(DAN)

    # Then there is one group per persona, by name, with its believed rows newest first
    assert [g.persona for g in groups] == [NOLAN, WARREN]
    nolan, warren = groups
    assert texts(nolan) == ["Dan plays chess on Sundays."]
    assert texts(warren) == ["Dan runs every morning.", "Dan owns a flat in Xuhui."]
    assert all(row.arc is None for g in groups for row in g.rows)


def test_history_on_request_shows_each_ended_belief_with_its_arc(
    stores: Stores, clock: ManualClock, view: PersonaView
) -> None:
    # Given a belief closed after July to November, one superseded, and one still held
    remember(stores, clock, "Dan owns a flat in Xuhui.")
    ended(stores, clock, "Dan rented in Jing'an.")
    replacement = remember(stores, clock, "Dan works at Tencent.")
    ended(
        stores,
        clock,
        "Dan works at Alibaba.",
        status=Status.SUPERSEDED,
        closed_by=replacement.memory_id,
        valid_from=None,
    )

    # When he asks for everything, and for the closed ones only
    everything = view.by_persona(DAN, status=None)
    closed = view.by_persona(DAN, status=Status.CLOSED)

    # Then ended rows carry their arc (from when they were written, if no start is known)
    arcs = {row.memory.text: row.arc for row in everything[0].rows}
    started = clock.now().strftime("%Y-%m")
    assert arcs == {
        "Dan owns a flat in Xuhui.": None,
        "Dan rented in Jing'an.": "2026-07 → 2026-11",
        "Dan works at Tencent.": None,
        "Dan works at Alibaba.": f"{started} → 2026-11",
    }
    assert texts(closed[0]) == ["Dan rented in Jing'an."]
    # And the meter is the block's, built from what is still believed, whichever is listed
    assert closed[0].meter == everything[0].meter != f"0 / {everything[0].chars_limit}"


def test_the_meter_is_the_block_a_private_chat_with_the_persona_would_hold(
    stores: Stores, clock: ManualClock, view: PersonaView
) -> None:
    # Given what Warren holds about Dan (a promise to him among it) and Dan's note
    remember(stores, clock, "Dan owns a flat in Xuhui.")
    remember(
        stores,
        clock,
        "Warren said he would send Dan the 1988 letter.",
        subject="self",
        counterpart=f"u:{DAN}",
        kind=Kind.PROMISE,
    )
    stores.user_state.put_settings(MemorySettings(user_id=DAN, note="Call me Dan."))
    # and a world fact Warren learned in some room (it rides every block of his)
    world = builders.memory(
        WARREN, "The Odyssey opened on 2026-07-17.", clock.now(), persona=WARREN, subject="world"
    )
    assert stores.persona_memories.add_persona_memory(world)

    # When the page is read, and Dan then opens a private chat with Warren
    [group] = view.by_persona(DAN)
    room = Room(
        room_id=f"room_{uuid.uuid4().hex}",
        kind=RoomKind.PRIVATE,
        created_at=clock.now(),
        personas=frozenset({WARREN}),
        members=frozenset({DAN}),
    )
    blocks = RoomBlocks(stores, clock)
    blocks.open(room)
    block = blocks.block(room.room_id, WARREN)

    # Then the page's meter is that block's
    assert (group.chars_current, group.chars_limit) == (block.chars_current, block.chars_limit)
    assert group.meter == block.meter and group.chars_current > len("Call me Dan.")
    assert "The Odyssey" in block.text


def test_reading_the_page_touches_no_memory(
    stores: Stores, clock: ManualClock, view: PersonaView
) -> None:
    # Given a memory no room ever loaded
    kept = remember(stores, clock, "Dan owns a flat in Xuhui.")
    clock.advance(timedelta(days=3))

    # When the page is read, twice
    view.by_persona(DAN)
    view.by_persona(DAN, status=None)

    # Then the memory is exactly as it was: not recalled, not reinforced
    assert stores.memories.get_memory(DAN, kept.memory_id) == kept


def test_a_muted_persona_or_memory_off_shows_the_rows_with_an_empty_meter(
    stores: Stores, clock: ManualClock, view: PersonaView
) -> None:
    # Given what both personas hold about Dan, and Dan's note
    remember(stores, clock, "Dan owns a flat in Xuhui.")
    remember(stores, clock, "Dan plays chess on Sundays.", persona=NOLAN)
    settings = MemorySettings(user_id=DAN, note="Call me Dan.", muted_personas=frozenset({NOLAN}))
    stores.user_state.put_settings(settings)

    # When Dan muted Nolan, and then switched memory off
    muted = {g.persona: g for g in view.by_persona(DAN)}
    stores.user_state.put_settings(MemorySettings(user_id=DAN, enabled=False))
    off = view.by_persona(DAN)

    # Then the rows stay on the page until deleted, but a room would load nothing of them
    assert texts(muted[NOLAN]) == ["Dan plays chess on Sundays."]
    assert muted[NOLAN].chars_current == 0 and muted[WARREN].chars_current > 0
    assert [g.chars_current for g in off] == [0, 0] and len(off[1].rows) == 1


def test_one_persona_may_be_asked_for(
    stores: Stores, clock: ManualClock, view: PersonaView
) -> None:
    remember(stores, clock, "Dan owns a flat in Xuhui.")
    remember(stores, clock, "Dan plays chess on Sundays.", persona=NOLAN)

    groups = view.by_persona(DAN, persona=NOLAN)

    assert [(g.persona, texts(g)) for g in groups] == [(NOLAN, ["Dan plays chess on Sundays."])]


def test_no_one_elses_memories_reach_the_page(
    stores: Stores, clock: ManualClock, view: PersonaView
) -> None:
    # Given what Warren holds about Cara, in her partition
    remember(stores, clock, "Cara is learning the cello.", user=CARA, witnessed=(CARA,))

    # Then Dan's page is empty, and hers holds it
    assert view.by_persona(DAN, status=None) == []
    assert texts(view.by_persona(CARA)[0]) == ["Cara is learning the cello."]
    assert list(stores.memories.iter_memories(DAN, MemoryQuery(status=None))) == []


def test_an_arc_reads_at_month_precision_and_only_for_history(clock: ManualClock) -> None:
    believed = builders.memory(DAN, "Dan owns a flat.", clock.now(), valid_from=JULY)
    closed = builders.memory(
        DAN,
        "Dan owned a flat.",
        clock.now(),
        status=Status.CLOSED,
        valid_from=JULY,
        valid_to=NOVEMBER,
    )

    assert arc(believed) is None
    assert arc(closed) == "2026-07 → 2026-11"
