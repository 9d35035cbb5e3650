"""The room store contract, on both backends: the room and its members, the transcript's
sequence numbers and windows, each persona's stored block and extraction cursor, the
daily sweep's listing of quiet rooms, rooms kept apart from one another, and a user's
lines forgotten in every room."""

from __future__ import annotations

import dataclasses
import sys
import threading
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest

from chatmemory.adapters.clock import ManualClock
from chatmemory.domain.errors import ConcurrentChange, RoomNotFound
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.persona_block import PersonaBlock
from chatmemory.domain.rooms import FORGOTTEN_LINE, NewRoomMessage, Room, RoomKind, RoomMessage
from chatmemory.domain.rules import MESSAGE_MAX
from chatmemory.ports.stores import Stores
from tests.contract.stores.common import (
    ALICE,
    BOB,
    CAROL,
    EVERY_STATUS,
    all_ids,
    at_once,
    concurrently,
)
from tests.support import builders
from tests.support.stored import nothing_stored_for

WARREN = "warren"
MIRA = "mira"


def new_room(at: datetime, **fields: Any) -> Room:
    """A fresh group room with Alice in it and Warren and Mira as its personas."""
    values: dict[str, Any] = {
        "room_id": f"room_{uuid.uuid4().hex}",
        "kind": RoomKind.GROUP,
        "created_at": at,
        "personas": frozenset({WARREN, MIRA}),
        "members": frozenset({ALICE}),
    }
    values.update(fields)
    return Room(**values)


def created(stores: Stores, clock: ManualClock, **fields: Any) -> Room:
    room = new_room(clock.now(), **fields)
    stores.rooms.create_room(room)
    return room


def said(stores: Stores, room: Room, clock: ManualClock, *texts: str) -> None:
    """Alice says each text in the room, one append each."""
    for text in texts:
        stores.rooms.append_room_messages(
            room.room_id, [NewRoomMessage(f"u:{ALICE}", text)], clock.now()
        )


def block(persona: str, text: str) -> PersonaBlock:
    return PersonaBlock(
        persona=persona,
        text=text,
        memory_ids=("mem_b", "mem_a"),
        chars_current=len(text),
        chars_limit=1200,
    )


# ---- the room and its members -------------------------------------------------------------


def test_a_room_reads_back_with_every_field_and_cannot_be_created_twice(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room with every field set away from its default
    room = new_room(
        clock.now(),
        kind=RoomKind.PRIVATE,
        incognito=True,
        fiction=True,
        members=frozenset({ALICE, BOB}),
        version=3,
        last_seq=7,
        last_message_at=clock.now() + timedelta(minutes=1),
        threads_asked_on=clock.now().date(),
    )

    # When it is stored
    stores.rooms.create_room(room)

    # Then it reads back whole, and a second create of the same id is refused
    assert stores.rooms.get_room(room.room_id) == room
    with pytest.raises(ConcurrentChange):
        stores.rooms.create_room(new_room(clock.now(), room_id=room.room_id))
    assert stores.rooms.get_room(room.room_id) == room


def test_a_room_that_was_never_created_reads_as_none(stores: Stores) -> None:
    assert stores.rooms.get_room("room_missing") is None


def test_joins_and_leaves_change_the_members_and_bump_the_version(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room with Alice
    room = created(stores, clock)

    # When Bob and Carol join, then Alice leaves
    joined = stores.rooms.change_members(room.room_id, join=[BOB, CAROL])
    left = stores.rooms.change_members(room.room_id, leave=[ALICE])

    # Then each change moved the version by one and is what the store holds
    assert (joined.members, joined.version) == (frozenset({ALICE, BOB, CAROL}), 1)
    assert (left.members, left.version) == (frozenset({BOB, CAROL}), 2)
    assert stores.rooms.get_room(room.room_id) == left


def test_a_change_that_changes_no_member_keeps_the_version(
    stores: Stores, clock: ManualClock
) -> None:
    room = created(stores, clock)

    again = stores.rooms.change_members(room.room_id, join=[ALICE], leave=[CAROL])

    assert again == room
    assert stores.rooms.get_room(room.room_id) == room


def test_members_change_in_a_room_that_does_not_exist_is_refused(stores: Stores) -> None:
    with pytest.raises(RoomNotFound):
        stores.rooms.change_members("room_missing", join=[BOB])


# ---- the day a thread was last raised (one ask per room per day) -------------------------


def test_marking_threads_asked_stamps_the_room_and_a_later_day_moves_the_stamp(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room where no thread was ever raised
    room = created(stores, clock)
    today = clock.now().date()
    assert room.threads_asked_on is None

    # When a persona raises one today, and another tomorrow
    stores.rooms.mark_threads_asked(room.room_id, today)
    stamped = stores.rooms.get_room(room.room_id)
    stores.rooms.mark_threads_asked(room.room_id, today + timedelta(days=1))

    # Then the room says so each time, and nothing else about it changed
    assert stamped == dataclasses.replace(room, threads_asked_on=today)
    assert stores.rooms.get_room(room.room_id) == dataclasses.replace(
        room, threads_asked_on=today + timedelta(days=1)
    )


def test_marking_threads_asked_on_the_same_or_an_earlier_day_keeps_the_stamp(
    stores: Stores, clock: ManualClock
) -> None:
    room = created(stores, clock)
    today = clock.now().date()
    stores.rooms.mark_threads_asked(room.room_id, today)

    stores.rooms.mark_threads_asked(room.room_id, today)
    stores.rooms.mark_threads_asked(room.room_id, today - timedelta(days=3))

    stored = stores.rooms.get_room(room.room_id)
    assert stored is not None and stored.threads_asked_on == today


def test_the_threads_asked_stamp_survives_the_rooms_other_changes(
    stores: Stores, clock: ManualClock
) -> None:
    room = created(stores, clock)
    today = clock.now().date()
    stores.rooms.mark_threads_asked(room.room_id, today)

    stores.rooms.change_members(room.room_id, join=[BOB])
    said(stores, room, clock, "hello")

    stored = stores.rooms.get_room(room.room_id)
    assert stored is not None and stored.threads_asked_on == today


def test_marking_threads_asked_in_a_room_that_does_not_exist_is_refused(
    stores: Stores, clock: ManualClock
) -> None:
    with pytest.raises(RoomNotFound):
        stores.rooms.mark_threads_asked("room_missing", clock.now().date())
    assert stores.rooms.get_room("room_missing") is None


# ---- the transcript ------------------------------------------------------------------------


def test_messages_get_consecutive_sequence_numbers_and_move_the_room(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room
    room = created(stores, clock)

    # When Alice speaks, and later Warren and Mira answer in one append
    first = stores.rooms.append_room_messages(
        room.room_id, [NewRoomMessage(f"u:{ALICE}", "Hallo 👋 wer ist da?")], clock.now()
    )
    answered_at = clock.advance(timedelta(seconds=3))
    answers = stores.rooms.append_room_messages(
        room.room_id,
        [NewRoomMessage(f"p:{WARREN}", "Ich."), NewRoomMessage(f"p:{MIRA}", "Ich auch.")],
        answered_at,
    )

    # Then the seqs run on, the transcript holds them, and the room moved with them
    assert [m.seq for m in first + answers] == [1, 2, 3]
    assert [m.created_at for m in answers] == [answered_at, answered_at]
    assert stores.rooms.list_room_messages(room.room_id) == first + answers
    state = stores.rooms.get_room(room.room_id)
    assert state is not None
    assert (state.last_seq, state.last_message_at) == (3, answered_at)
    assert (state.members, state.version) == (room.members, room.version)


def test_an_empty_append_stores_nothing_and_leaves_the_room(
    stores: Stores, clock: ManualClock
) -> None:
    room = created(stores, clock)

    assert stores.rooms.append_room_messages(room.room_id, [], clock.now()) == []
    assert stores.rooms.get_room(room.room_id) == room


def test_appending_to_a_room_that_does_not_exist_is_refused(
    stores: Stores, clock: ManualClock
) -> None:
    with pytest.raises(RoomNotFound):
        stores.rooms.append_room_messages(
            "room_missing", [NewRoomMessage(f"u:{ALICE}", "hi")], clock.now()
        )
    assert stores.rooms.list_room_messages("room_missing") == []


def test_concurrent_appends_never_share_a_sequence_number(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room, and three writers appending at once
    room = created(stores, clock)

    def writer(name: str) -> None:
        for index in range(8):
            stores.rooms.append_room_messages(
                room.room_id, [NewRoomMessage(f"u:{name}", f"{name} {index}")], clock.now()
            )

    errors = concurrently(writer)

    # Then every message has its own seq, with no gap, and the room counted them all
    assert errors == []
    messages = stores.rooms.list_room_messages(room.room_id)
    assert [m.seq for m in messages] == list(range(1, 25))
    assert sorted(m.text for m in messages) == sorted(
        f"w{n} {index}" for n in range(3) for index in range(8)
    )
    state = stores.rooms.get_room(room.room_id)
    assert state is not None and state.last_seq == 24


def test_message_windows(stores: Stores, clock: ManualClock) -> None:
    room = created(stores, clock)
    said(stores, room, clock, *(f"turn {turn}" for turn in range(1, 13)))

    def seqs(**window: int) -> list[int]:
        return [m.seq for m in stores.rooms.list_room_messages(room.room_id, **window)]

    assert seqs() == list(range(1, 13))
    assert seqs(after_seq=8) == [9, 10, 11, 12]
    assert seqs(after_seq=2, upto_seq=6) == [3, 4, 5, 6]
    assert seqs(last=4) == [9, 10, 11, 12]
    assert seqs(upto_seq=6, last=2) == [5, 6]
    assert seqs(last=0) == []
    assert seqs(after_seq=12) == []


def test_a_persona_may_say_more_than_a_human_and_it_is_kept_whole(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room, and a persona's answer longer than any human message may be
    room = created(stores, clock)
    long_answer = "Es war einmal ein Drache, der Tee mochte. " * 400
    assert len(long_answer.strip()) > MESSAGE_MAX

    # When the persona says it
    stored = stores.rooms.append_room_messages(
        room.room_id, [NewRoomMessage(f"p:{WARREN}", long_answer)], clock.now()
    )

    # Then it reads back to the character, with its speaker
    (message,) = stores.rooms.list_room_messages(room.room_id)
    assert message == stored[0]
    assert (message.speaker, message.text) == (f"p:{WARREN}", long_answer)


# ---- each persona's block ------------------------------------------------------------------


def test_a_block_comes_back_only_for_the_version_it_was_built_for(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a block of Warren's built for the room's members at version 1
    room = created(stores, clock)
    built = block(WARREN, "<persona_memory>Alice likes tea.</persona_memory>")
    stores.rooms.put_block(room.room_id, 1, built, clock.now())

    # Then it comes back for version 1, and for no other version
    assert stores.rooms.get_block(room.room_id, WARREN, 1) == built
    assert stores.rooms.get_block(room.room_id, WARREN, 0) is None
    assert stores.rooms.get_block(room.room_id, WARREN, 2) is None


def test_a_newer_block_replaces_the_stored_one_and_an_older_never_does(
    stores: Stores, clock: ManualClock
) -> None:
    # Given Warren's block at version 1, rebuilt after a join at version 2
    room = created(stores, clock)
    stores.rooms.put_block(room.room_id, 1, block(WARREN, "for Alice"), clock.now())
    rebuilt = block(WARREN, "for Alice and Bob")
    stores.rooms.put_block(room.room_id, 2, rebuilt, clock.now())

    # When a slow build for the old members lands afterwards
    stores.rooms.put_block(room.room_id, 1, block(WARREN, "stale"), clock.now())

    # Then only the rebuilt block is served
    assert stores.rooms.get_block(room.room_id, WARREN, 2) == rebuilt
    assert stores.rooms.get_block(room.room_id, WARREN, 1) is None


def test_an_empty_block_is_kept_as_built(stores: Stores, clock: ManualClock) -> None:
    room = created(stores, clock)
    empty = PersonaBlock(persona=MIRA, text="", memory_ids=(), chars_current=0, chars_limit=1200)

    stores.rooms.put_block(room.room_id, 0, empty, clock.now())

    assert stores.rooms.get_block(room.room_id, MIRA, 0) == empty


def test_a_block_of_one_persona_is_not_another_personas(stores: Stores, clock: ManualClock) -> None:
    room = created(stores, clock)
    warrens = block(WARREN, "what Warren remembers")
    stores.rooms.put_block(room.room_id, 0, warrens, clock.now())

    assert stores.rooms.get_block(room.room_id, MIRA, 0) is None
    miras = block(MIRA, "what Mira remembers")
    stores.rooms.put_block(room.room_id, 0, miras, clock.now())
    assert stores.rooms.get_block(room.room_id, WARREN, 0) == warrens
    assert stores.rooms.get_block(room.room_id, MIRA, 0) == miras


# ---- each persona's extraction cursor ------------------------------------------------------


def test_the_cursor_moves_only_from_where_it_was_read(stores: Stores, clock: ManualClock) -> None:
    # Given a room of three messages, read by no one yet
    room = created(stores, clock)
    said(stores, room, clock, "one", "two", "three")
    assert stores.rooms.extraction_cursor(room.room_id, WARREN) == 0

    # When Warren's pipeline moves from 0 to 2, and a second run that also read 0 tries
    moved = stores.rooms.advance_room_extraction(
        room.room_id, WARREN, upto_seq=2, expected_upto_seq=0
    )
    raced = stores.rooms.advance_room_extraction(
        room.room_id, WARREN, upto_seq=3, expected_upto_seq=0
    )

    # Then only the first moved it, and it moves on from where it now is
    assert (moved, raced) == (True, False)
    assert stores.rooms.extraction_cursor(room.room_id, WARREN) == 2
    assert stores.rooms.advance_room_extraction(
        room.room_id, WARREN, upto_seq=3, expected_upto_seq=2
    )
    assert stores.rooms.extraction_cursor(room.room_id, WARREN) == 3
    # and Mira's cursor is her own
    assert stores.rooms.extraction_cursor(room.room_id, MIRA) == 0


def test_the_cursor_never_passes_the_last_message(stores: Stores, clock: ManualClock) -> None:
    room = created(stores, clock)
    said(stores, room, clock, "one", "two")

    assert not stores.rooms.advance_room_extraction(
        room.room_id, WARREN, upto_seq=3, expected_upto_seq=0
    )
    assert stores.rooms.extraction_cursor(room.room_id, WARREN) == 0
    assert not stores.rooms.advance_room_extraction(
        "room_missing", WARREN, upto_seq=0, expected_upto_seq=0
    )
    assert stores.rooms.extraction_cursor("room_missing", WARREN) == 0


# ---- the daily sweep's listing of quiet rooms ----------------------------------------------


def read_to(stores: Stores, room: Room, persona: str, upto_seq: int) -> None:
    """The persona's pipeline reads the room up to `upto_seq`, from wherever it was."""
    at = stores.rooms.extraction_cursor(room.room_id, persona)
    assert stores.rooms.advance_room_extraction(
        room.room_id, persona, upto_seq=upto_seq, expected_upto_seq=at
    )


def test_a_room_is_listed_until_every_seated_persona_has_read_to_its_last_message(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room with Warren and Mira, and three messages said at `said_at`
    room = created(stores, clock)
    said_at = clock.advance(timedelta(minutes=1))
    said(stores, room, clock, "one", "two", "three")
    later = clock.advance(timedelta(hours=1))

    # Then it is listed as of then (and as of the very moment), not as of before it
    assert stores.rooms.quiet_rooms(later) == [room.room_id]
    assert stores.rooms.quiet_rooms(said_at) == [room.room_id]
    assert stores.rooms.quiet_rooms(said_at - timedelta(microseconds=1)) == []

    # When Warren reads to the end, and Mira part of the way, it stays listed
    read_to(stores, room, WARREN, 3)
    read_to(stores, room, MIRA, 2)
    assert stores.rooms.quiet_rooms(later) == [room.room_id]

    # When Mira reads to the end too, it is no longer listed
    read_to(stores, room, MIRA, 3)
    assert stores.rooms.quiet_rooms(later) == []


def test_a_new_message_lists_a_read_room_again_as_of_its_time(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room both personas have read to the end
    room = created(stores, clock)
    said(stores, room, clock, "one")
    read_to(stores, room, WARREN, 1)
    read_to(stores, room, MIRA, 1)
    first_quiet = clock.advance(timedelta(hours=1))
    assert stores.rooms.quiet_rooms(first_quiet) == []

    # When someone speaks again
    spoke_at = clock.advance(timedelta(minutes=5))
    said(stores, room, clock, "two")

    # Then it is listed again, as of the new message's time only
    assert stores.rooms.quiet_rooms(spoke_at) == [room.room_id]
    assert stores.rooms.quiet_rooms(first_quiet) == []


def test_a_cursor_moved_back_from_the_end_lists_the_room_again(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room both personas have read to the end
    room = created(stores, clock)
    said(stores, room, clock, "one", "two")
    read_to(stores, room, WARREN, 2)
    read_to(stores, room, MIRA, 2)
    now = clock.advance(timedelta(hours=1))
    assert stores.rooms.quiet_rooms(now) == []

    # When Mira's cursor is moved back (say, to read the slice again)
    read_to(stores, room, MIRA, 1)

    # Then the room is listed again
    assert stores.rooms.quiet_rooms(now) == [room.room_id]


def test_quiet_rooms_come_oldest_last_message_first_and_at_most_limit(
    stores: Stores, clock: ManualClock
) -> None:
    # Given three rooms, created in one order and last spoken in in another
    rooms = [created(stores, clock) for _ in range(3)]
    for room in (rooms[1], rooms[2], rooms[0]):
        clock.advance(timedelta(minutes=1))
        said(stores, room, clock, "hello")
    now = clock.advance(timedelta(hours=1))

    # Then they are listed by their last message, oldest first, `limit` at most
    oldest_first = [rooms[1].room_id, rooms[2].room_id, rooms[0].room_id]
    assert stores.rooms.quiet_rooms(now) == oldest_first
    assert stores.rooms.quiet_rooms(now, limit=2) == oldest_first[:2]
    assert stores.rooms.quiet_rooms(said_before=now, limit=1) == oldest_first[:1]


def test_a_room_without_messages_or_without_personas_is_never_listed(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room no one spoke in, and a room with no persona seated that Alice spoke in
    created(stores, clock)
    empty_of_personas = created(stores, clock, personas=frozenset())
    said(stores, empty_of_personas, clock, "anyone?")

    # Then neither is listed
    assert stores.rooms.quiet_rooms(clock.advance(timedelta(days=1))) == []


def test_a_room_created_with_a_transcript_is_listed_and_an_unseated_cursor_does_not_count(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room created with seven messages already said, that no persona has read
    said_at = clock.now()
    room = created(stores, clock, last_seq=7, last_message_at=said_at)
    now = clock.advance(timedelta(hours=1))
    assert stores.rooms.quiet_rooms(now) == [room.room_id]

    # When a persona that is not seated there reads it to the end, it stays listed
    read_to(stores, room, "nolan", 7)
    assert stores.rooms.quiet_rooms(now) == [room.room_id]

    # and once both seated personas have, it is not
    read_to(stores, room, WARREN, 7)
    read_to(stores, room, MIRA, 7)
    assert stores.rooms.quiet_rooms(now) == []


def test_personas_that_finish_at_once_still_take_the_room_off_the_list(
    stores: Stores, clock: ManualClock
) -> None:
    # Given rooms of two messages, and in each both personas about to read to the end
    rooms = [created(stores, clock) for _ in range(8)]
    for room in rooms:
        said(stores, room, clock, "one", "two")

    # When, room by room, both move their cursors at the same moment (threads switched
    # as often as the interpreter allows, so their reads and writes interleave)
    errors: list[BaseException] = []

    def reader(room: Room, persona: str, start: threading.Barrier) -> None:
        try:
            start.wait()
            read_to(stores, room, persona, 2)
        except BaseException as exc:  # handed back to the test
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for room in rooms:
            start = threading.Barrier(2)
            threads = [
                threading.Thread(target=reader, args=(room, persona, start))
                for persona in (WARREN, MIRA)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        sys.setswitchinterval(interval)

    # Then every cursor moved, and no room was left listed by two personas each
    # concluding that the other was still behind
    assert errors == []
    assert all(
        stores.rooms.extraction_cursor(room.room_id, persona) == 2
        for room in rooms
        for persona in (WARREN, MIRA)
    )
    assert stores.rooms.quiet_rooms(clock.advance(timedelta(hours=1))) == []


# ---- rooms apart ---------------------------------------------------------------------------


def test_one_rooms_messages_blocks_and_cursors_never_show_through_another(
    stores: Stores, clock: ManualClock
) -> None:
    # Given two rooms, one with a transcript, a block and a moved cursor
    busy = created(stores, clock)
    quiet = created(stores, clock)
    said(stores, busy, clock, "one", "two")
    stores.rooms.put_block(busy.room_id, 0, block(WARREN, "about Alice"), clock.now())
    assert stores.rooms.advance_room_extraction(
        busy.room_id, WARREN, upto_seq=2, expected_upto_seq=0
    )

    # Then the other room shows none of it, and cannot move a cursor on the first's seqs
    assert stores.rooms.list_room_messages(quiet.room_id) == []
    assert stores.rooms.get_block(quiet.room_id, WARREN, 0) is None
    assert stores.rooms.extraction_cursor(quiet.room_id, WARREN) == 0
    assert not stores.rooms.advance_room_extraction(
        quiet.room_id, WARREN, upto_seq=2, expected_upto_seq=0
    )
    state = stores.rooms.get_room(quiet.room_id)
    assert state is not None and (state.last_seq, state.last_message_at) == (0, None)
    # and its first message is its own seq 1
    (first,) = stores.rooms.append_room_messages(
        quiet.room_id, [NewRoomMessage(f"u:{BOB}", "hi")], clock.now()
    )
    assert (first.room_id, first.seq) == (quiet.room_id, 1)
    assert [m.seq for m in stores.rooms.list_room_messages(busy.room_id)] == [1, 2]


# ---- a user's lines forgotten ----------------------------------------------------------------

ROUNDS = 20  # races run per concurrency test: each is a chance to land in the gap


def lines_of(stores: Stores, room: Room) -> list[RoomMessage]:
    return stores.rooms.list_room_messages(room.room_id)


def forgotten(message: RoomMessage) -> RoomMessage:
    """The line as it reads once its speaker forgot everything."""
    return dataclasses.replace(message, text=FORGOTTEN_LINE)


def test_forget_speaker_replaces_the_users_lines_in_every_room_and_only_theirs(
    stores: Stores, clock: ManualClock
) -> None:
    # Given two rooms where Alice spoke among Bob and the personas (she has since left
    # the second), and each persona's cursor part of the way through the first
    first = created(stores, clock, members=frozenset({ALICE, BOB}))
    second = created(stores, clock, members=frozenset({ALICE, CAROL}))
    stores.rooms.append_room_messages(
        first.room_id,
        [
            NewRoomMessage(f"u:{ALICE}", "I'm interviewing at Tencent."),
            NewRoomMessage(f"u:{BOB}", "Good luck!"),
            NewRoomMessage(f"p:{WARREN}", "Alice, which team?"),
        ],
        clock.now(),
    )
    clock.advance(timedelta(minutes=1))
    said(stores, first, clock, "The payments team.")
    said(stores, second, clock, "I sold my flat in Xuhui.")
    stores.rooms.append_room_messages(
        second.room_id, [NewRoomMessage(f"u:{CAROL}", "Congrats, Alice.")], clock.now()
    )
    stores.rooms.change_members(second.room_id, leave=[ALICE])
    read_to(stores, first, WARREN, 2)
    before = {room.room_id: lines_of(stores, room) for room in (first, second)}
    rooms_before = {room.room_id: stores.rooms.get_room(room.room_id) for room in (first, second)}

    # When Alice's lines are forgotten
    changed = stores.rooms.forget_speaker(ALICE)

    # Then her three lines read as forgotten, with their seq, speaker and time; every
    # other line, the rooms and the cursors are as they were
    assert changed == 3
    for room in (first, second):
        assert lines_of(stores, room) == [
            forgotten(line) if line.speaker == f"u:{ALICE}" else line
            for line in before[room.room_id]
        ]
        assert stores.rooms.get_room(room.room_id) == rooms_before[room.room_id]
    assert [line.seq for line in lines_of(stores, first)] == [1, 2, 3, 4]
    assert stores.rooms.extraction_cursor(first.room_id, WARREN) == 2
    assert stores.rooms.extraction_cursor(first.room_id, MIRA) == 0
    assert stores.rooms.advance_room_extraction(
        first.room_id, MIRA, upto_seq=4, expected_upto_seq=0
    )
    words = " ".join(line.text for room in (first, second) for line in lines_of(stores, room))
    assert "Tencent" not in words and "payments" not in words and "Xuhui" not in words


def test_forget_speaker_is_idempotent(stores: Stores, clock: ManualClock) -> None:
    # Given a room where Alice spoke, and her lines forgotten once
    room = created(stores, clock)
    said(stores, room, clock, "one", "two")
    assert stores.rooms.forget_speaker(ALICE) == 2
    after = lines_of(stores, room)

    # When they are forgotten again, Then nothing changes
    assert stores.rooms.forget_speaker(ALICE) == 0
    assert lines_of(stores, room) == after == [forgotten(line) for line in after]


def test_forget_speaker_of_someone_who_said_nothing_changes_nothing(
    stores: Stores, clock: ManualClock
) -> None:
    room = created(stores, clock, members=frozenset({ALICE, BOB}))
    said(stores, room, clock, "hello")
    before = lines_of(stores, room)

    assert stores.rooms.forget_speaker(BOB) == 0
    assert stores.rooms.forget_speaker(CAROL) == 0
    assert lines_of(stores, room) == before


def test_lines_said_after_a_forget_are_reached_by_the_next(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room where Alice's lines were forgotten
    room = created(stores, clock)
    said(stores, room, clock, "one")
    assert stores.rooms.forget_speaker(ALICE) == 1

    # When she speaks there again, and in a new room, Then the next forget reaches both
    other = created(stores, clock)
    said(stores, room, clock, "two")
    said(stores, other, clock, "three")
    assert stores.rooms.forget_speaker(ALICE) == 2
    assert {line.text for line in lines_of(stores, room) + lines_of(stores, other)} == {
        FORGOTTEN_LINE
    }


def test_what_a_forget_keeps_track_of_never_shows_in_a_listing_of_the_user(
    stores: Stores, clock: ManualClock
) -> None:
    # Given rooms Bob spoke in, and nothing else of his
    rooms = [created(stores, clock, members=frozenset({BOB})) for _ in range(2)]
    for room in rooms:
        stores.rooms.append_room_messages(
            room.room_id, [NewRoomMessage(f"u:{BOB}", "hi all")], clock.now()
        )

    # Then nothing shows as his, in any listing, before his lines are forgotten or after
    assert nothing_stored_for(stores, BOB)
    assert stores.recall.memory_digests(BOB) == []
    assert stores.memories.list_memories(BOB, EVERY_STATUS).items == []
    assert stores.user_state.get_settings(BOB) == MemorySettings(user_id=BOB)
    assert stores.rooms.forget_speaker(BOB) == 2
    assert nothing_stored_for(stores, BOB)

    # and when he has a memory of his own and speaks again, it is all he lists
    own = builders.memory(BOB, "Bob plays go.", clock.now())
    assert stores.memories.add_memory(own)
    stores.rooms.append_room_messages(
        rooms[0].room_id, [NewRoomMessage(f"u:{BOB}", "again")], clock.now()
    )
    assert all_ids(stores, BOB, EVERY_STATUS) == [own.memory_id]
    assert [d.memory_id for d in stores.recall.memory_digests(BOB)] == [own.memory_id]
    assert stores.conversations.list_conversations(BOB) == []
    assert stores.notices.list_notices(BOB, include_undone=True) == []


def test_a_line_said_while_the_user_is_forgotten_is_never_left_behind(
    stores: Stores, clock: ManualClock
) -> None:
    # Given a room
    room = created(stores, clock)

    for round_ in range(ROUNDS):
        # where Alice said a few lines
        said(stores, room, clock, *(f"said {round_}.{n}" for n in range(3)))

        # When she says another while her lines are forgotten (a little later each round,
        # so that in some round it lands between the forget's reads and its writes)
        def speak(later: int = round_ % 6, text: str = f"also {round_}") -> None:
            for _ in range(later):
                stores.rooms.get_room(room.room_id)
            said(stores, room, clock, text)

        assert at_once(speak, lambda: stores.rooms.forget_speaker(ALICE)) == []

        # Then the next forget reaches it if that one did not: no word of hers is left
        stores.rooms.forget_speaker(ALICE)
        lines = lines_of(stores, room)
        assert [line.seq for line in lines] == list(range(1, 4 * (round_ + 1) + 1))
        assert {line.text for line in lines} == {FORGOTTEN_LINE}
    assert stores.rooms.forget_speaker(ALICE) == 0
