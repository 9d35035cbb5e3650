"""The room's rules: members and their version, numbering a transcript, who may speak and
how much a line may hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chatmemory.domain.errors import InvalidField
from chatmemory.domain.rooms import NewRoomMessage, Room, RoomKind, RoomMessage, check_speaker
from chatmemory.domain.rules import ASSISTANT_MESSAGE_MAX, MESSAGE_MAX

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def room(**fields: Any) -> Room:
    """A group room with Alice in it, changed by `fields`."""
    values: dict[str, Any] = {
        "room_id": "room_1",
        "kind": RoomKind.GROUP,
        "created_at": NOW,
        "members": frozenset({"alice"}),
    }
    return Room(**(values | fields))


def line(speaker: str, text: str, seq: int = 1) -> RoomMessage:
    return RoomMessage(room_id="room_1", seq=seq, speaker=speaker, text=text, created_at=NOW)


# ---- members ---------------------------------------------------------------------------


def test_a_join_and_a_leave_change_the_members_and_move_the_version_once() -> None:
    before = room(version=4)

    after = before.with_members(join=["bob", "carol"], leave=["alice"])

    assert after.members == frozenset({"bob", "carol"})
    assert after.version == 5
    assert (before.members, before.version) == (frozenset({"alice"}), 4)


def test_a_change_that_changes_no_one_is_the_same_room() -> None:
    before = room(version=4)

    assert before.with_members(join=["alice"], leave=["dave"]) is before
    assert before.with_members() is before


def test_a_private_chat_is_one_human_in_a_private_room() -> None:
    private = room(kind=RoomKind.PRIVATE)

    assert private.is_private_chat
    assert not private.with_members(join=["bob"]).is_private_chat
    assert not room().is_private_chat


# ---- numbering -------------------------------------------------------------------------


def test_new_messages_are_numbered_after_the_last_one() -> None:
    before = room(last_seq=7)
    at = NOW + timedelta(minutes=1)

    stored = before.numbered(
        [NewRoomMessage("u:alice", "hi"), NewRoomMessage("p:warren", "hello")], at
    )

    assert [(m.seq, m.speaker, m.text, m.created_at) for m in stored] == [
        (8, "u:alice", "hi", at),
        (9, "p:warren", "hello", at),
    ]
    assert all(m.room_id == before.room_id for m in stored)


def test_an_append_moves_last_seq_and_last_message_at_together() -> None:
    before = room(last_seq=7)
    at = NOW + timedelta(minutes=1)
    stored = before.numbered([NewRoomMessage("u:alice", "hi")], at)

    after = before.appended(stored, at)

    assert (after.last_seq, after.last_message_at) == (8, at)
    assert (after.members, after.version) == (before.members, before.version)


def test_appending_nothing_leaves_the_room_as_it_was() -> None:
    before = room(last_seq=7)

    assert before.numbered([], NOW) == []
    assert before.appended([], NOW) is before


def test_a_message_id_names_the_room_and_the_seq() -> None:
    assert line("u:alice", "hi", seq=12).message_id == "room_1_12"


# ---- speakers and limits ---------------------------------------------------------------


@pytest.mark.parametrize("speaker", ["u:alice", "u:42", "p:warren", "p:mira-2"])
def test_a_human_or_a_persona_may_speak(speaker: str) -> None:
    assert check_speaker(speaker) == speaker


@pytest.mark.parametrize(
    "speaker",
    ["alice", "u:", "p:", ":alice", "x:alice", "p:Warren", "p:war ren", "u: alice", "u:a\nb", ""],
)
def test_a_speaker_that_is_neither_is_refused(speaker: str) -> None:
    with pytest.raises(InvalidField):
        check_speaker(speaker)


def test_a_room_message_with_a_bad_speaker_is_refused() -> None:
    with pytest.raises(InvalidField):
        line("assistant", "hi")


def test_a_human_may_say_up_to_8000_characters() -> None:
    assert MESSAGE_MAX == 8000
    assert line("u:alice", "a" * MESSAGE_MAX).text == "a" * MESSAGE_MAX
    with pytest.raises(InvalidField):
        line("u:alice", "a" * (MESSAGE_MAX + 1))


def test_a_persona_may_say_more_than_a_human_up_to_its_own_limit() -> None:
    assert ASSISTANT_MESSAGE_MAX > MESSAGE_MAX
    assert line("p:warren", "a" * (MESSAGE_MAX + 1)).speaker == "p:warren"
    assert len(line("p:warren", "a" * ASSISTANT_MESSAGE_MAX).text) == ASSISTANT_MESSAGE_MAX
    with pytest.raises(InvalidField):
        line("p:warren", "a" * (ASSISTANT_MESSAGE_MAX + 1))


@pytest.mark.parametrize("text", ["", "   "])
def test_a_blank_room_message_is_refused(text: str) -> None:
    with pytest.raises(InvalidField):
        line("u:alice", text)


def test_a_room_message_needs_a_seq_of_at_least_one() -> None:
    with pytest.raises(InvalidField):
        line("u:alice", "hi", seq=0)


def test_a_room_refuses_a_bad_kind_a_naive_time_and_a_bad_persona() -> None:
    with pytest.raises(InvalidField):
        Room(room_id="room_1", kind="party", created_at=NOW)  # type: ignore[arg-type]
    with pytest.raises(InvalidField):
        Room(room_id="room_1", kind=RoomKind.GROUP, created_at=NOW.replace(tzinfo=None))
    with pytest.raises(InvalidField):
        Room(room_id="room_1", kind=RoomKind.GROUP, created_at=NOW, personas=frozenset({"W"}))
    with pytest.raises(InvalidField):
        Room(room_id="room 1", kind=RoomKind.GROUP, created_at=NOW)
