"""Rows <-> domain objects for the embedded stores, each mapping written once."""

from __future__ import annotations

import json
import sqlite3
from datetime import date, datetime
from typing import Any

from chatmemory.domain.conversation import Conversation, Message, Role
from chatmemory.domain.events import Actor
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status
from chatmemory.domain.notice import Notice
from chatmemory.domain.observed_turn import ObservedTurn
from chatmemory.domain.persona_block import PersonaBlock
from chatmemory.domain.rooms import Room, RoomKind, RoomMessage
from chatmemory.domain.threads import review_date
from chatmemory.domain.time import from_storage, to_storage
from chatmemory.domain.tombstone import Tombstone

MEMORY_COLUMNS = (
    "user_id, memory_id, persona, subject, witnessed, counterpart, room_id, kind, category, "
    "key, text, importance, stated_by, status, valid_from, valid_to, closed_by, supersedes, "
    "valid_until, evidence, source_message_id, created_at, updated_at, last_used_at, "
    "recall_count, embedding, meta, thread_review_on, stability_days, reinforced_at, archived_at"
)
MEMORY_PLACEHOLDERS = ", ".join("?" for _ in MEMORY_COLUMNS.split(","))


CONVERSATION_COLUMNS = (
    "user_id, conversation_id, persona, temporary, expires_at, created_at, updated_at, "
    "last_seq, summary, summary_upto_seq, fold_count, extracted_upto_seq, last_user_message_at"
)
ROOM_COLUMNS = (
    "room_id, kind, incognito, fiction, personas, members, created_at, version, last_seq, "
    "last_message_at, threads_asked_on"
)
ROOM_BLOCK_COLUMNS = (
    "room_id, persona, version, text, memory_ids, chars_current, chars_limit, built_at"
)
OBSERVED_TURN_COLUMNS = (
    "user_id, turn_id, conversation_id, first_seq, count, fingerprint, observed_at, expires_at"
)
TOMBSTONE_COLUMNS = (
    "user_id, memory_id, deleted_at, actor, persona, versions, source_message_ids, "
    "conversation_ids, purged_at, purge_error, kind"
)


def conversation_row(conversation: Conversation) -> tuple[Any, ...]:
    return (
        conversation.user_id,
        conversation.conversation_id,
        conversation.persona,
        int(conversation.temporary),
        opt_time(conversation.expires_at),
        to_storage(conversation.created_at),
        to_storage(conversation.updated_at),
        conversation.last_seq,
        conversation.summary,
        conversation.summary_upto_seq,
        conversation.fold_count,
        conversation.extracted_upto_seq,
        opt_time(conversation.last_user_message_at),
    )


def opt_time(value: datetime | None) -> str | None:
    return None if value is None else to_storage(value)


def opt_parse(value: str | None) -> datetime | None:
    return None if value is None else from_storage(value)


def opt_date(value: date | None) -> str | None:
    return None if value is None else value.isoformat()


def memory_row(memory: Memory) -> tuple[Any, ...]:
    return (
        memory.user_id,
        memory.memory_id,
        memory.persona,
        memory.subject,
        json.dumps(list(memory.witnessed)),
        memory.counterpart,
        memory.room_id,
        memory.kind.value,
        memory.category,
        memory.key,
        memory.text,
        memory.importance,
        memory.stated_by.value,
        memory.status.value,
        opt_time(memory.valid_from),
        opt_time(memory.valid_to),
        memory.closed_by,
        memory.supersedes,
        opt_time(memory.valid_until),
        json.dumps(list(memory.evidence)),
        memory.source_message_id,
        to_storage(memory.created_at),
        to_storage(memory.updated_at),
        opt_time(memory.last_used_at),
        memory.recall_count,
        memory.embedding,
        json.dumps(dict(memory.meta), ensure_ascii=False, sort_keys=True),
        opt_date(review_date(memory)),
        memory.stability_days,
        opt_time(memory.reinforced_at),
        opt_time(memory.archived_at),
    )


def memory_from_row(row: sqlite3.Row) -> Memory:
    return Memory(
        user_id=row["user_id"],
        memory_id=row["memory_id"],
        persona=row["persona"],
        subject=row["subject"],
        witnessed=tuple(json.loads(row["witnessed"])),
        counterpart=row["counterpart"],
        room_id=row["room_id"],
        kind=Kind(row["kind"]),
        category=row["category"],
        key=row["key"],
        text=row["text"],
        importance=row["importance"],
        stated_by=StatedBy(row["stated_by"]),
        status=Status(row["status"]),
        valid_from=opt_parse(row["valid_from"]),
        valid_to=opt_parse(row["valid_to"]),
        closed_by=row["closed_by"],
        supersedes=row["supersedes"],
        valid_until=opt_parse(row["valid_until"]),
        evidence=tuple(json.loads(row["evidence"])),
        source_message_id=row["source_message_id"],
        created_at=from_storage(row["created_at"]),
        updated_at=from_storage(row["updated_at"]),
        last_used_at=opt_parse(row["last_used_at"]),
        recall_count=row["recall_count"],
        stability_days=row["stability_days"],
        reinforced_at=opt_parse(row["reinforced_at"]),
        archived_at=opt_parse(row["archived_at"]),
        embedding=row["embedding"],
        meta=json.loads(row["meta"]),
    )


def tombstone_row(tombstone: Tombstone) -> tuple[Any, ...]:
    return (
        tombstone.user_id,
        tombstone.memory_id,
        to_storage(tombstone.deleted_at),
        tombstone.actor.value,
        tombstone.persona,
        json.dumps(list(tombstone.versions)),
        json.dumps(list(tombstone.source_message_ids)),
        json.dumps(list(tombstone.conversation_ids)),
        opt_time(tombstone.purged_at),
        tombstone.purge_error,
        None if tombstone.kind is None else tombstone.kind.value,
    )


def tombstone_from_row(row: sqlite3.Row) -> Tombstone:
    return Tombstone(
        user_id=row["user_id"],
        memory_id=row["memory_id"],
        deleted_at=from_storage(row["deleted_at"]),
        actor=Actor(row["actor"]),
        persona=row["persona"],
        versions=tuple(json.loads(row["versions"])),
        source_message_ids=tuple(json.loads(row["source_message_ids"])),
        conversation_ids=tuple(json.loads(row["conversation_ids"])),
        purged_at=opt_parse(row["purged_at"]),
        purge_error=row["purge_error"],
        kind=None if row["kind"] is None else Kind(row["kind"]),
    )


def conversation_from_row(row: sqlite3.Row) -> Conversation:
    return Conversation(
        user_id=row["user_id"],
        conversation_id=row["conversation_id"],
        persona=row["persona"],
        temporary=bool(row["temporary"]),
        expires_at=opt_parse(row["expires_at"]),
        created_at=from_storage(row["created_at"]),
        updated_at=from_storage(row["updated_at"]),
        last_seq=row["last_seq"],
        summary=row["summary"],
        summary_upto_seq=row["summary_upto_seq"],
        fold_count=row["fold_count"],
        extracted_upto_seq=row["extracted_upto_seq"],
        last_user_message_at=opt_parse(row["last_user_message_at"]),
    )


def message_from_row(row: sqlite3.Row) -> Message:
    return Message(
        user_id=row["user_id"],
        conversation_id=row["conversation_id"],
        seq=row["seq"],
        role=Role(row["role"]),
        content=row["content"],
        tokens=row["tokens"],
        created_at=from_storage(row["created_at"]),
        expires_at=opt_parse(row["expires_at"]),
        memories_used=tuple(json.loads(row["memories_used"])),
    )


def observed_turn_row(turn: ObservedTurn) -> tuple[Any, ...]:
    return (
        turn.user_id,
        turn.turn_id,
        turn.conversation_id,
        turn.first_seq,
        turn.count,
        turn.fingerprint,
        to_storage(turn.observed_at),
        opt_time(turn.expires_at),
    )


def observed_turn_from_row(row: sqlite3.Row) -> ObservedTurn:
    return ObservedTurn(
        user_id=row["user_id"],
        turn_id=row["turn_id"],
        conversation_id=row["conversation_id"],
        first_seq=row["first_seq"],
        count=row["count"],
        fingerprint=row["fingerprint"],
        observed_at=from_storage(row["observed_at"]),
        expires_at=opt_parse(row["expires_at"]),
    )


def notice_from_row(row: sqlite3.Row) -> Notice:
    return Notice(
        user_id=row["user_id"],
        notice_id=row["notice_id"],
        text=row["text"],
        memory_ids=tuple(json.loads(row["memory_ids"])),
        created_at=from_storage(row["created_at"]),
        persona=row["persona"],
        conversation_id=row["conversation_id"],
        undone_at=opt_parse(row["undone_at"]),
    )


def room_row(room: Room) -> tuple[Any, ...]:
    return (
        room.room_id,
        room.kind.value,
        int(room.incognito),
        int(room.fiction),
        json.dumps(sorted(room.personas)),
        room_members(room),
        to_storage(room.created_at),
        room.version,
        room.last_seq,
        opt_time(room.last_message_at),
        opt_date(room.threads_asked_on),
    )


def room_members(room: Room) -> str:
    """The members column: the user ids as a sorted JSON list."""
    return json.dumps(sorted(room.members))


def room_from_row(row: sqlite3.Row) -> Room:
    return Room(
        room_id=row["room_id"],
        kind=RoomKind(row["kind"]),
        incognito=bool(row["incognito"]),
        fiction=bool(row["fiction"]),
        personas=frozenset(json.loads(row["personas"])),
        members=frozenset(json.loads(row["members"])),
        created_at=from_storage(row["created_at"]),
        version=row["version"],
        last_seq=row["last_seq"],
        last_message_at=opt_parse(row["last_message_at"]),
        threads_asked_on=(
            date.fromisoformat(row["threads_asked_on"]) if row["threads_asked_on"] else None
        ),
    )


def room_message_row(message: RoomMessage) -> tuple[Any, ...]:
    return (
        message.room_id,
        message.seq,
        message.speaker,
        message.text,
        to_storage(message.created_at),
    )


def room_message_from_row(row: sqlite3.Row) -> RoomMessage:
    return RoomMessage(
        room_id=row["room_id"],
        seq=row["seq"],
        speaker=row["speaker"],
        text=row["text"],
        created_at=from_storage(row["created_at"]),
    )


def room_block_row(
    room_id: str, version: int, block: PersonaBlock, built_at: datetime
) -> tuple[Any, ...]:
    return (
        room_id,
        block.persona,
        version,
        block.text,
        json.dumps(list(block.memory_ids)),
        block.chars_current,
        block.chars_limit,
        to_storage(built_at),
    )


def room_block_from_row(row: sqlite3.Row) -> PersonaBlock:
    return PersonaBlock(
        persona=row["persona"],
        text=row["text"],
        memory_ids=tuple(json.loads(row["memory_ids"])),
        chars_current=row["chars_current"],
        chars_limit=row["chars_limit"],
    )
