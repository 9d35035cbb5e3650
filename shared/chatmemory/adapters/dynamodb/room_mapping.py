"""Room items <-> domain objects: a room, its messages, its stored blocks and cursors.

Apart from `mapping.py` because a room is not one user's: everything here lives under
the room's own partition key.
"""

from __future__ import annotations

from datetime import datetime

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.items import (
    BoundItems,
    RoomBlockItem,
    RoomCursorItem,
    RoomItem,
    RoomMessageItem,
)
from chatmemory.domain.persona_block import PersonaBlock
from chatmemory.domain.rooms import Room, RoomKind, RoomMessage

# ---- room, its messages and its blocks ------------------------------------------------------


def room_item(items: BoundItems, room: Room) -> RoomItem:
    return items.room(
        keys.room_pk(room.room_id),
        keys.ROOM_SK,
        room_id=room.room_id,
        kind=room.kind.value,
        incognito=room.incognito,
        fiction=room.fiction,
        personas=sorted(room.personas),
        members=room_members(room),
        created_at=room.created_at,
        version=room.version,
        last_seq=room.last_seq,
        last_message_at=room.last_message_at,
        threads_asked_on=room.threads_asked_on,
    )


def room_members(room: Room) -> list[str]:
    """The members attribute: the user ids, sorted."""
    return sorted(room.members)


def room_from_item(item: RoomItem) -> Room:
    return Room(
        room_id=item.room_id,
        kind=RoomKind(item.kind),
        incognito=bool(item.incognito),
        fiction=bool(item.fiction),
        personas=frozenset(item.personas),
        members=frozenset(item.members),
        created_at=item.created_at,
        version=int(item.version),
        last_seq=int(item.last_seq),
        last_message_at=item.last_message_at,
        threads_asked_on=item.threads_asked_on,
    )


def room_message_item(items: BoundItems, message: RoomMessage) -> RoomMessageItem:
    return items.room_message(
        keys.room_pk(message.room_id),
        keys.room_message_sk(message.seq),
        room_id=message.room_id,
        seq=message.seq,
        speaker=message.speaker,
        text=message.text,
        created_at=message.created_at,
    )


def room_message_from_item(item: RoomMessageItem) -> RoomMessage:
    return RoomMessage(
        room_id=item.room_id,
        seq=int(item.seq),
        speaker=item.speaker,
        text=item.text,
        created_at=item.created_at,
    )


def room_block_item(
    items: BoundItems, room_id: str, version: int, block: PersonaBlock, built_at: datetime
) -> RoomBlockItem:
    return items.room_block(
        keys.room_pk(room_id),
        keys.room_block_sk(block.persona),
        room_id=room_id,
        persona=block.persona,
        version=version,
        text=block.text,
        memory_ids=list(block.memory_ids),
        chars_current=block.chars_current,
        chars_limit=block.chars_limit,
        built_at=built_at,
    )


def room_block_from_item(item: RoomBlockItem) -> PersonaBlock:
    return PersonaBlock(
        persona=item.persona,
        text=item.text,
        memory_ids=tuple(item.memory_ids),
        chars_current=int(item.chars_current),
        chars_limit=int(item.chars_limit),
    )


def room_cursor_item(
    items: BoundItems, room_id: str, persona: str, upto_seq: int
) -> RoomCursorItem:
    return items.room_cursor(
        keys.room_pk(room_id),
        keys.room_cursor_sk(persona),
        room_id=room_id,
        persona=persona,
        upto_seq=upto_seq,
    )
