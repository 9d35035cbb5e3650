"""Items to domain values and back, one pair per item type (the only place either is built)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.items import (
    BoundItems,
    ConversationItem,
    EventItem,
    MemoryItem,
    MessageItem,
    NoticeItem,
    ObservedTurnItem,
    ProfileItem,
    RunItem,
    SettingsItem,
    ThreadItem,
    TombstoneItem,
    WitnessItem,
)
from chatmemory.domain.conversation import Conversation, Message, Role
from chatmemory.domain.events import Actor, MemoryEvent, Op
from chatmemory.domain.extraction import ExtractionRun, run_from_json, run_to_json
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status
from chatmemory.domain.memory_settings import DEFAULT_TIMEZONE, MemorySettings
from chatmemory.domain.notice import Notice
from chatmemory.domain.observed_turn import ObservedTurn
from chatmemory.domain.profile import Profile
from chatmemory.domain.threads import review_date
from chatmemory.domain.time import epoch_seconds, to_storage
from chatmemory.domain.tombstone import Tombstone

# ---- memory ---------------------------------------------------------------------------------


def memory_item(items: BoundItems, memory: Memory) -> MemoryItem:
    item = items.memory(
        keys.pk(memory.user_id),
        keys.memory_sk(memory.memory_id),
        lsi1sk=keys.memory_lsi(to_storage(memory.created_at), memory.memory_id),
        user_id=memory.user_id,
        memory_id=memory.memory_id,
        text=memory.text,
        persona=memory.persona,
        subject=memory.subject,
        witnessed=list(memory.witnessed),
        counterpart=memory.counterpart,
        room_id=memory.room_id,
        kind=memory.kind.value,
        category=memory.category,
        key=memory.key,
        importance=memory.importance,
        stated_by=memory.stated_by.value,
        status=memory.status.value,
        valid_from=memory.valid_from,
        valid_to=memory.valid_to,
        closed_by=memory.closed_by,
        supersedes=memory.supersedes,
        valid_until=memory.valid_until,
        evidence=list(memory.evidence),
        source_message_id=memory.source_message_id,
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        last_used_at=memory.last_used_at,
        recall_count=memory.recall_count,
        stability_days=memory.stability_days,
        reinforced_at=memory.reinforced_at,
        archived_at=memory.archived_at,
        embedding=memory.embedding,
        meta=meta_text(memory.meta),
        ttl=None if memory.valid_until is None else epoch_seconds(memory.valid_until),
    )
    pending = keys.pending_keys(memory)  # in the sweep's index while it waits for its uses
    if pending:
        item.gsi1pk, item.gsi1sk = pending["gsi1pk"], pending["gsi1sk"]
    return item


def meta_text(meta: Mapping[str, Any]) -> str:
    """A meta as the `meta` attribute holds it (JSON, keys sorted), so two metas compare
    as stored."""
    return json.dumps(dict(meta), ensure_ascii=False, sort_keys=True)


def memory_from_item(item: MemoryItem) -> Memory:
    return Memory(
        user_id=item.user_id,
        memory_id=item.memory_id,
        text=item.text,
        persona=item.persona,
        subject=item.subject,
        witnessed=tuple(item.witnessed),
        counterpart=item.counterpart,
        room_id=item.room_id,
        kind=Kind(item.kind),
        category=item.category,
        key=item.key,
        importance=int(item.importance),
        stated_by=StatedBy(item.stated_by),
        status=Status(item.status),
        valid_from=item.valid_from,
        valid_to=item.valid_to,
        closed_by=item.closed_by,
        supersedes=item.supersedes,
        valid_until=item.valid_until,
        evidence=tuple(item.evidence),
        source_message_id=item.source_message_id,
        created_at=item.created_at,
        updated_at=item.updated_at,
        last_used_at=item.last_used_at,
        recall_count=int(item.recall_count),
        stability_days=None if item.stability_days is None else float(item.stability_days),
        reinforced_at=item.reinforced_at,
        archived_at=item.archived_at,
        embedding=item.embedding,
        meta=json.loads(item.meta),
    )


def persona_memory_item(items: BoundItems, memory: Memory) -> MemoryItem:
    """A persona's own row: the memory item, in the persona's partition `P#<persona>`."""
    item = memory_item(items, memory)
    item.pk = keys.persona_pk(memory.persona)
    # No sweep reads a persona's partition: its rows never wait in the uses index.
    item.gsi1pk = item.gsi1sk = None
    return item


def witness_item(items: BoundItems, user_id: str, memory: Memory) -> WitnessItem:
    return items.witness(
        keys.pk(user_id),
        keys.witness_sk(memory.persona),
        user_id=user_id,
        persona=memory.persona,
        memory_id=memory.memory_id,
    )


def thread_item(items: BoundItems, memory: Memory) -> ThreadItem:
    """The marker of an active thread row; in the sweep's index while the thread is live."""
    item = items.thread(
        keys.pk(memory.user_id),
        keys.thread_sk(memory.memory_id),
        user_id=memory.user_id,
        memory_id=memory.memory_id,
        persona=memory.persona,
        ttl=None if memory.valid_until is None else epoch_seconds(memory.valid_until),
    )
    review_on = review_date(memory)
    if review_on is not None:
        due = keys.thread_due_keys(memory.user_id, memory.memory_id, review_on)
        item.gsi1pk, item.gsi1sk = due["gsi1pk"], due["gsi1sk"]
    return item


# ---- tombstone ------------------------------------------------------------------------------


def tombstone_item(items: BoundItems, tombstone: Tombstone) -> TombstoneItem:
    item = items.tombstone(
        keys.pk(tombstone.user_id),
        keys.tombstone_sk(tombstone.memory_id),
        user_id=tombstone.user_id,
        memory_id=tombstone.memory_id,
        deleted_at=tombstone.deleted_at,
        actor=tombstone.actor.value,
        persona=tombstone.persona,
        versions=list(tombstone.versions),
        source_message_ids=list(tombstone.source_message_ids),
        conversation_ids=list(tombstone.conversation_ids),
        purged_at=tombstone.purged_at,
        purge_error=tombstone.purge_error,
        kind=None if tombstone.kind is None else tombstone.kind.value,
    )
    pending = keys.purge_pending_keys(tombstone)
    if pending:
        item.gsi1pk, item.gsi1sk = pending["gsi1pk"], pending["gsi1sk"]
    return item


def tombstone_from_item(item: TombstoneItem) -> Tombstone:
    return Tombstone(
        user_id=item.user_id,
        memory_id=item.memory_id,
        deleted_at=item.deleted_at,
        actor=Actor(item.actor),
        persona=item.persona,
        versions=tuple(item.versions),
        source_message_ids=tuple(item.source_message_ids),
        conversation_ids=tuple(item.conversation_ids),
        purged_at=item.purged_at,
        purge_error=item.purge_error,
        kind=None if item.kind is None else Kind(item.kind),
    )


# ---- conversation and message ---------------------------------------------------------------


def conversation_item(items: BoundItems, conversation: Conversation) -> ConversationItem:
    expires = conversation.expires_at
    item = items.conversation(
        keys.pk(conversation.user_id),
        keys.conversation_sk(conversation.conversation_id),
        user_id=conversation.user_id,
        conversation_id=conversation.conversation_id,
        persona=conversation.persona,
        temporary=conversation.temporary,
        expires_at=expires,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
        last_seq=conversation.last_seq,
        summary=conversation.summary,
        summary_upto_seq=conversation.summary_upto_seq,
        fold_count=conversation.fold_count,
        extracted_upto_seq=conversation.extracted_upto_seq,
        last_user_message_at=conversation.last_user_message_at,
        ttl=None if expires is None else epoch_seconds(expires),
    )
    item.lsi1sk = keys.conversation_seen_key(conversation)
    pending = keys.pending_extraction_keys(conversation)
    if pending:
        item.gsi1pk, item.gsi1sk = pending["gsi1pk"], pending["gsi1sk"]
    return item


def conversation_from_item(item: ConversationItem) -> Conversation:
    return Conversation(
        user_id=item.user_id,
        conversation_id=item.conversation_id,
        persona=item.persona,
        temporary=bool(item.temporary),
        expires_at=item.expires_at,
        created_at=item.created_at,
        updated_at=item.updated_at,
        last_seq=int(item.last_seq),
        summary=item.summary,
        summary_upto_seq=int(item.summary_upto_seq),
        fold_count=int(item.fold_count),
        extracted_upto_seq=int(item.extracted_upto_seq),
        last_user_message_at=item.last_user_message_at,
    )


def message_item(items: BoundItems, message: Message) -> MessageItem:
    expires = message.expires_at
    return items.message(
        keys.pk(message.user_id),
        keys.message_sk(message.conversation_id, message.seq),
        user_id=message.user_id,
        conversation_id=message.conversation_id,
        seq=message.seq,
        role=message.role.value,
        content=message.content,
        tokens=message.tokens,
        created_at=message.created_at,
        expires_at=expires,
        memories_used=list(message.memories_used),
        ttl=None if expires is None else epoch_seconds(expires),
    )


def message_from_item(item: MessageItem) -> Message:
    return Message(
        user_id=item.user_id,
        conversation_id=item.conversation_id,
        seq=int(item.seq),
        role=Role(item.role),
        content=item.content,
        tokens=int(item.tokens),
        created_at=item.created_at,
        expires_at=item.expires_at,
        memories_used=tuple(item.memories_used),
    )


def observed_turn_item(cls: type[ObservedTurnItem], turn: ObservedTurn) -> ObservedTurnItem:
    expires = turn.expires_at
    return cls(
        keys.pk(turn.user_id),
        keys.observed_turn_sk(turn.turn_id),
        user_id=turn.user_id,
        turn_id=turn.turn_id,
        conversation_id=turn.conversation_id,
        first_seq=turn.first_seq,
        message_count=turn.count,
        fingerprint=turn.fingerprint,
        observed_at=turn.observed_at,
        expires_at=expires,
        ttl=None if expires is None else epoch_seconds(expires),
    )


def observed_turn_from_item(item: ObservedTurnItem) -> ObservedTurn:
    return ObservedTurn(
        user_id=item.user_id,
        turn_id=item.turn_id,
        conversation_id=item.conversation_id,
        first_seq=int(item.first_seq),
        count=int(item.message_count),
        fingerprint=item.fingerprint,
        observed_at=item.observed_at,
        expires_at=item.expires_at,
    )


# ---- notice ---------------------------------------------------------------------------------


def notice_item(items: BoundItems, notice: Notice) -> NoticeItem:
    return items.notice(
        keys.pk(notice.user_id),
        keys.notice_sk(notice.notice_id),
        lsi1sk=keys.notice_lsi(notice.created_at, notice.notice_id),
        user_id=notice.user_id,
        notice_id=notice.notice_id,
        text=notice.text,
        memory_ids=list(notice.memory_ids),
        created_at=notice.created_at,
        persona=notice.persona,
        conversation_id=notice.conversation_id,
        undone_at=notice.undone_at,
    )


def notice_from_item(item: NoticeItem) -> Notice:
    return Notice(
        user_id=item.user_id,
        notice_id=item.notice_id,
        text=item.text,
        memory_ids=tuple(item.memory_ids),
        created_at=item.created_at,
        persona=item.persona,
        conversation_id=item.conversation_id,
        undone_at=item.undone_at,
    )


# ---- profile and settings -------------------------------------------------------------------


def profile_item(items: BoundItems, profile: Profile) -> ProfileItem:
    return items.profile(
        keys.pk(profile.user_id),
        keys.profile_sk(profile.persona),
        user_id=profile.user_id,
        persona=profile.persona,
        text=profile.text,
        token_count=profile.token_count,
        built_from=list(profile.built_from),
        rebuilt_at=profile.rebuilt_at,
        review_at=profile.review_at,
        built_by=profile.built_by,
    )


def profile_from_item(item: ProfileItem) -> Profile:
    return Profile(
        user_id=item.user_id,
        persona=item.persona,
        text=item.text,
        token_count=int(item.token_count),
        built_from=tuple(item.built_from),
        rebuilt_at=item.rebuilt_at,
        review_at=item.review_at,
        built_by=int(item.built_by) if item.built_by is not None else 1,
    )


def settings_item(items: BoundItems, settings: MemorySettings) -> SettingsItem:
    return items.settings(
        keys.pk(settings.user_id),
        keys.SETTINGS_SK,
        user_id=settings.user_id,
        enabled=settings.enabled,
        note=settings.note,
        muted_personas=sorted(settings.muted_personas),
        timezone=settings.timezone,
        updated_at=settings.updated_at,
    )


def settings_from_item(item: SettingsItem) -> MemorySettings:
    return MemorySettings(
        user_id=item.user_id,
        enabled=bool(item.enabled),
        note=item.note,
        muted_personas=frozenset(item.muted_personas),
        timezone=item.timezone or DEFAULT_TIMEZONE,
        updated_at=item.updated_at,
    )


# ---- event ----------------------------------------------------------------------------------


def event_item(items: BoundItems, event: MemoryEvent) -> EventItem:
    return items.event(
        keys.pk(event.user_id),
        keys.event_sk(event),
        user_id=event.user_id,
        memory_id=event.memory_id,
        event_id=event.event_id,
        op=event.op.value,
        actor=event.actor.value,
        at=event.at,
        related_id=event.related_id,
        persona=event.persona,
        kind=None if event.kind is None else event.kind.value,
    )


def event_from_item(item: EventItem) -> MemoryEvent:
    return MemoryEvent(
        user_id=item.user_id,
        memory_id=item.memory_id,
        event_id=item.event_id,
        op=Op(item.op),
        actor=Actor(item.actor),
        at=item.at,
        related_id=item.related_id,
        persona=item.persona,
        kind=None if item.kind is None else Kind(item.kind),
    )


# ---- extraction run -------------------------------------------------------------------------


def run_item(items: BoundItems, run: ExtractionRun) -> RunItem:
    return items.run(
        keys.pk(run.user_id),
        keys.run_sk(run.run_id),
        user_id=run.user_id,
        run_id=run.run_id,
        conversation_id=run.conversation_id,
        body=json.dumps(run_to_json(run), ensure_ascii=False),
        ttl=epoch_seconds(run.expires_at),
    )


def run_from_item(item: RunItem) -> ExtractionRun:
    return run_from_json(json.loads(item.body))
