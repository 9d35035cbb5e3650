"""The user's controls, on both stores: see, add, correct, delete, switch off, undo."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.errors import (
    ConcurrentChange,
    InvalidField,
    MemoryDisabled,
    MemoryNotFound,
    NoticeNotFound,
    SecretRefused,
)
from chatmemory.domain.events import Actor, Op
from chatmemory.domain.ids import message_id_for, new_conversation_id, new_notice_id
from chatmemory.domain.memory import Status
from chatmemory.domain.notice import Notice
from chatmemory.domain.profile import Profile
from chatmemory.ports.memories import MemoryQuery
from chatmemory.ports.stores import Stores
from chatmemory.services.memories import MemoryService, NewMemory
from chatmemory.services.memory_settings import SettingsService
from chatmemory.services.notices import NoticeService

ALICE, BOB = "alice", "bob"


@pytest.fixture
def memories(stores: Stores, clock: ManualClock) -> MemoryService:
    return MemoryService(stores, clock)


@pytest.fixture
def settings(stores: Stores, clock: ManualClock) -> SettingsService:
    return SettingsService(stores, clock)


@pytest.fixture
def notices(stores: Stores, clock: ManualClock, memories: MemoryService) -> NoticeService:
    return NoticeService(stores, clock, memories)


def visible_ids(stores: Stores, user_id: str) -> set[str]:
    return {m.memory_id for m in stores.memories.iter_memories(user_id, MemoryQuery(status=None))}


# ---- add ------------------------------------------------------------------------------


def test_a_stated_memory_is_stored_with_its_add_event(
    memories: MemoryService, stores: Stores
) -> None:
    created = memories.create(ALICE, NewMemory(text="Is vegetarian.", category="diet"))

    assert created.created
    assert created.memory.stated_by.value == "user" and created.memory.category == "diet"
    assert [
        (e.op, e.actor) for e in stores.events.list_events(ALICE, created.memory.memory_id)
    ] == [(Op.ADD, Actor.USER)]


def test_stating_the_same_thing_twice_keeps_one_memory(
    memories: MemoryService, stores: Stores
) -> None:
    first = memories.create(ALICE, NewMemory(text="Is vegetarian."))
    again = memories.create(ALICE, NewMemory(text="  is VEGETARIAN "))

    assert not again.created and again.memory.memory_id == first.memory.memory_id
    assert len(visible_ids(stores, ALICE)) == 1


def test_a_secret_is_refused_and_nothing_is_stored(memories: MemoryService, stores: Stores) -> None:
    with pytest.raises(SecretRefused):
        memories.create(ALICE, NewMemory(text="My card is 4111 1111 1111 1111"))

    assert visible_ids(stores, ALICE) == set()


def test_nothing_is_written_while_memory_is_switched_off(
    memories: MemoryService, settings: SettingsService, stores: Stores
) -> None:
    settings.update(ALICE, enabled=False)

    with pytest.raises(MemoryDisabled):
        memories.create(ALICE, NewMemory(text="Is vegetarian."))

    assert visible_ids(stores, ALICE) == set()


def test_a_shelf_life_in_the_past_is_refused(memories: MemoryService, clock: ManualClock) -> None:
    with pytest.raises(InvalidField) as refused:
        memories.create(ALICE, NewMemory(text="Travels soon.", valid_until=clock.now()))
    assert refused.value.field == "valid_until"


# ---- correct --------------------------------------------------------------------------


def test_a_correction_supersedes_and_keeps_the_old_version_as_history(
    memories: MemoryService, stores: Stores, clock: ManualClock
) -> None:
    pune = memories.create(ALICE, NewMemory(text="Lives in Pune.", category="location")).memory
    clock.advance(timedelta(days=40))

    bengaluru = memories.correct(ALICE, pune.memory_id, text="Lives in Bengaluru.")

    assert bengaluru.memory_id != pune.memory_id and bengaluru.supersedes == pune.memory_id
    assert bengaluru.category == "location"
    active = memories.list_memories(ALICE).items
    assert [m.text for m in active] == ["Lives in Bengaluru."]
    history = memories.list_memories(ALICE, status=Status.SUPERSEDED).items
    assert [(m.text, m.closed_by) for m in history] == [("Lives in Pune.", bengaluru.memory_id)]
    events = memories.history(ALICE, bengaluru.memory_id)
    assert [(e.memory_id, e.op) for e in events] == [
        (pune.memory_id, Op.ADD),
        (pune.memory_id, Op.UPDATE),
        (bengaluru.memory_id, Op.ADD),
    ]


def test_a_correction_holding_a_secret_changes_nothing(memories: MemoryService) -> None:
    note = memories.create(ALICE, NewMemory(text="Uses a password manager.")).memory

    with pytest.raises(SecretRefused):
        memories.correct(ALICE, note.memory_id, text="my password is Tr0ub4dor&3")

    assert memories.get(ALICE, note.memory_id).status is Status.ACTIVE
    assert [m.memory_id for m in memories.list_memories(ALICE).items] == [note.memory_id]


def test_history_cannot_be_corrected(memories: MemoryService) -> None:
    pune = memories.create(ALICE, NewMemory(text="Lives in Pune.")).memory
    memories.correct(ALICE, pune.memory_id, text="Lives in Goa.")

    with pytest.raises(ConcurrentChange):
        memories.correct(ALICE, pune.memory_id, text="Lives in Delhi.")


def test_an_unchanged_correction_writes_no_new_version(
    memories: MemoryService, stores: Stores
) -> None:
    tea = memories.create(ALICE, NewMemory(text="Likes tea.")).memory

    same = memories.correct(ALICE, tea.memory_id, text="Likes tea.")

    assert same == tea
    assert visible_ids(stores, ALICE) == {tea.memory_id}


# ---- delete ---------------------------------------------------------------------------


def test_a_deleted_memory_and_its_history_are_gone_from_every_read(
    memories: MemoryService, stores: Stores
) -> None:
    pune = memories.create(ALICE, NewMemory(text="Lives in Pune.")).memory
    goa = memories.correct(ALICE, pune.memory_id, text="Lives in Goa.")
    keep = memories.create(ALICE, NewMemory(text="Likes tea.")).memory

    tombstone = memories.delete(ALICE, goa.memory_id)

    assert set(tombstone.versions) == {pune.memory_id, goa.memory_id}
    assert visible_ids(stores, ALICE) == {keep.memory_id}
    for status in (Status.ACTIVE, Status.SUPERSEDED, Status.CLOSED, None):
        assert goa.memory_id not in [
            m.memory_id for m in memories.list_memories(ALICE, status=status).items
        ]
    with pytest.raises(MemoryNotFound):
        memories.get(ALICE, goa.memory_id)
    with pytest.raises(MemoryNotFound):
        memories.delete(ALICE, goa.memory_id)
    # the audit trail (ids and times, no text) stays readable
    assert [e.op for e in memories.history(ALICE, goa.memory_id)][-1] is Op.DELETE


def test_the_tombstone_points_at_every_place_a_copy_may_live(
    memories: MemoryService, stores: Stores, clock: ManualClock
) -> None:
    conversation_id = new_conversation_id()
    source = message_id_for(conversation_id, 3)
    saved = memories.create(
        ALICE, NewMemory(text="Is vegetarian.", source_message_id=source, room_id=conversation_id)
    ).memory

    tombstone = memories.delete(ALICE, saved.memory_id)

    assert tombstone.source_message_ids == (source,)
    assert tombstone.conversation_ids == (conversation_id,)
    assert stores.tombstones.get_tombstone(ALICE, saved.memory_id) == tombstone


def test_saying_it_again_after_a_delete_creates_a_new_memory(
    memories: MemoryService, clock: ManualClock
) -> None:
    first = memories.create(ALICE, NewMemory(text="Is vegetarian.")).memory
    memories.delete(ALICE, first.memory_id)
    clock.advance(timedelta(minutes=5))

    again = memories.create(ALICE, NewMemory(text="Is vegetarian."))

    assert again.created and again.memory.memory_id != first.memory_id
    assert [m.memory_id for m in memories.list_memories(ALICE).items] == [again.memory.memory_id]


def test_forgetting_everything_removes_memories_history_and_profile(
    memories: MemoryService, stores: Stores, clock: ManualClock
) -> None:
    pune = memories.create(ALICE, NewMemory(text="Lives in Pune.")).memory
    memories.correct(ALICE, pune.memory_id, text="Lives in Goa.")
    for index in range(30):
        memories.create(ALICE, NewMemory(text=f"Fact number {index}."))
    stores.user_state.put_profile(
        Profile(
            user_id=ALICE,
            text="Lives in Goa.",
            token_count=4,
            built_from=(pune.memory_id,),
            rebuilt_at=clock.now(),
        )
    )
    bobs = memories.create(BOB, NewMemory(text="Bob likes chess.")).memory

    forgotten = memories.forget_everything(ALICE)

    assert forgotten == 32
    assert visible_ids(stores, ALICE) == set()
    assert stores.user_state.get_profile(ALICE) is None
    assert len(stores.tombstones.list_tombstones(ALICE)) == 32
    assert visible_ids(stores, BOB) == {bobs.memory_id}
    clock.advance(timedelta(seconds=1))
    fresh = memories.create(ALICE, NewMemory(text="Starts over.")).memory
    assert visible_ids(stores, ALICE) == {fresh.memory_id}


# ---- isolation --------------------------------------------------------------------------


def test_another_users_ids_do_not_exist_for_you(memories: MemoryService) -> None:
    secret = memories.create(ALICE, NewMemory(text="Is vegetarian.")).memory

    with pytest.raises(MemoryNotFound):
        memories.get(BOB, secret.memory_id)
    with pytest.raises(MemoryNotFound):
        memories.correct(BOB, secret.memory_id, text="Eats meat.")
    with pytest.raises(MemoryNotFound):
        memories.delete(BOB, secret.memory_id)
    with pytest.raises(MemoryNotFound):
        memories.history(BOB, secret.memory_id)
    assert memories.get(ALICE, secret.memory_id) == secret


# ---- settings ---------------------------------------------------------------------------


def test_settings_change_only_what_was_sent(settings: SettingsService) -> None:
    settings.update(ALICE, note="Call me Al; I use metric units.")

    switched_off = settings.update(ALICE, enabled=False)

    assert switched_off.enabled is False
    assert switched_off.note == "Call me Al; I use metric units."
    assert settings.get(ALICE) == switched_off


def test_a_note_holding_a_secret_is_refused(settings: SettingsService) -> None:
    with pytest.raises(SecretRefused):
        settings.update(ALICE, note="my wifi password is hunter2hunter")

    assert settings.get(ALICE).note == ""


# ---- notices ----------------------------------------------------------------------------


def test_a_notice_shows_only_memories_that_still_exist(
    memories: MemoryService, notices: NoticeService, stores: Stores, clock: ManualClock
) -> None:
    veg = memories.create(ALICE, NewMemory(text="Is vegetarian.")).memory
    pune = memories.create(ALICE, NewMemory(text="Lives in Pune.")).memory
    notice = Notice(
        user_id=ALICE,
        notice_id=new_notice_id(),
        text="noted: Is vegetarian. · Lives in Pune.",
        memory_ids=(veg.memory_id, pune.memory_id),
        created_at=clock.now(),
    )
    stores.notices.add_notice(notice)

    memories.delete(ALICE, pune.memory_id)

    [shown] = notices.pending(ALICE)
    assert shown.text == "noted: Is vegetarian."
    assert "Pune" not in shown.text and shown.memory_ids == (veg.memory_id,)
    memories.delete(ALICE, veg.memory_id)
    assert notices.pending(ALICE) == []


def test_undo_deletes_what_the_notice_announced_once(
    memories: MemoryService, notices: NoticeService, stores: Stores, clock: ManualClock
) -> None:
    veg = memories.create(ALICE, NewMemory(text="Is vegetarian.")).memory
    keep = memories.create(ALICE, NewMemory(text="Likes tea.")).memory
    notice = Notice(
        user_id=ALICE,
        notice_id=new_notice_id(),
        text="noted: Is vegetarian.",
        memory_ids=(veg.memory_id,),
        created_at=clock.now(),
    )
    stores.notices.add_notice(notice)

    assert notices.undo(ALICE, notice.notice_id) == [veg.memory_id]
    assert notices.undo(ALICE, notice.notice_id) == []

    assert visible_ids(stores, ALICE) == {keep.memory_id}
    assert notices.pending(ALICE) == []
    with pytest.raises(NoticeNotFound):
        notices.undo(BOB, notice.notice_id)
