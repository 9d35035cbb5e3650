"""Conversations on DynamoDB removed for good, and their stored messages masked.

A conversation is many items in its user's partition: the CONV#<id> row, its
MSG#<id>#<seq> messages and the TURN#<turn id> records of its observed turns (its runs
are the run store's). No one write can take them all, so a delete is two halves:

1. Hide: one conditional update of the row sets `deleted_at` (every read of the
   conversation store treats the row as missing from then on, and every update of it is
   guarded on its absence, so an append that read it before cannot land after), empties
   the summary, takes the `by_created` key away and puts the row in the sweep's index
   under ERASE#<shard>.
2. Purge: the messages and turn records are deleted 25 to a BatchWriteItem, then the row
   itself, last, only while it is still marked. Deleting what is already gone is a no-op,
   so a purge that stopped half way (a timeout, a throttle) is finished by running it
   again: the row stays in the index until then, and the daily sweep re-drives it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from datetime import datetime
from itertools import islice
from typing import Any, TypeVar, cast

from pynamodb.expressions.condition import Or

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.items import (
    ConversationItem,
    DataMigrationItem,
    ObservedTurnItem,
    bind_item,
)
from chatmemory.adapters.dynamodb.mapping import message_from_item
from chatmemory.adapters.dynamodb.table import LostRace, Table, Write, all_of
from chatmemory.domain import rules
from chatmemory.domain.conversation import masked_transcript
from chatmemory.ports.conversation_erasure import ConversationErasure, MaskingProgress

#: items deleted per pass of a purge (four BatchWriteItem calls)
_PURGE_PAGE = 100
_KEYS = ["pk", "sk"]

T = TypeVar("T")


class DynamoConversationErasure(ConversationErasure):
    """Hide, purge and mask a user's conversations in their partition."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._cls = table.items.conversation
        self._message = table.items.message
        self._turn = bind_item(table.items, ObservedTurnItem)
        self._record = bind_item(table.items, DataMigrationItem)

    def hide_conversations(
        self, user_id: str, conversation_ids: Sequence[str] | None = None
    ) -> list[str]:
        cls = self._cls
        now = self._table.now()
        guard = all_of(cls.sk.exists(), cls.deleted_at.does_not_exist())
        if conversation_ids is None:  # every one, expired too: nothing waits for its ttl
            rows = cls.query(
                keys.pk(user_id),
                cls.sk.startswith(keys.CONVERSATION_PREFIX),
                consistent_read=True,
                attributes_to_get=[*_KEYS, "deleted_at"],
            )
            wanted = [str(row.sk).removeprefix(keys.CONVERSATION_PREFIX) for row in rows]
        else:
            wanted = list(dict.fromkeys(conversation_ids))
            guard = all_of(guard, Or(cls.expires_at.does_not_exist(), cls.expires_at > now))
        hidden = []
        for conversation_id in wanted:
            erase = keys.erase_pending_keys(user_id, conversation_id, now)
            actions = (
                cls.deleted_at.set(now),
                cls.summary.set(""),  # its words go at once; the messages with the purge
                cls.lsi1sk.remove(),
                cls.gsi1pk.set(erase["gsi1pk"]),
                cls.gsi1sk.set(erase["gsi1sk"]),
            )
            item = cls(keys.pk(user_id), keys.conversation_sk(conversation_id))
            try:
                self._table.commit([Write("update", item, guard, actions)])
            except LostRace:  # absent, another user's, expired or already deleted
                continue
            hidden.append(conversation_id)
        return hidden

    def purge_conversation(self, user_id: str, conversation_id: str) -> None:
        cls = self._cls
        pk = keys.pk(user_id)
        row = self._table.get(cls, user_id, keys.conversation_sk(conversation_id))
        if row is not None and not _deleted(row):
            return  # still visible: only a delete's purge removes a conversation
        messages = self._message.query(
            pk,
            self._message.sk.startswith(keys.messages_prefix(conversation_id)),
            consistent_read=True,
            attributes_to_get=_KEYS,
        )
        turns = self._turn.query(
            pk,
            self._turn.sk.startswith(keys.OBSERVED_TURN_PREFIX),
            filter_condition=self._turn.conversation_id == conversation_id,
            consistent_read=True,
            attributes_to_get=_KEYS,
        )
        for said in _pages(messages, _PURGE_PAGE):
            self._table.delete_all(said)
        for records in _pages(turns, _PURGE_PAGE):
            self._table.delete_all(records)
        if row is None:
            return
        # Last, and only while still marked: until here the sweep can find it again.
        item = cls(pk, keys.conversation_sk(conversation_id))
        with suppress(LostRace):  # another purge of it got there first
            self._table.commit([Write("delete", item, cls.deleted_at.exists())])

    def hidden_conversations(self, *, limit: int = 100) -> list[tuple[str, str]]:
        rules.int_range("limit", limit, 1)
        cls = self._cls
        found: list[tuple[str, str, str]] = []
        for shard in keys.pending_shards(keys.ERASE_PREFIX):
            for row in cls.pending.query(shard, limit=limit, page_size=limit):
                conversation_id = str(row.sk).removeprefix(keys.CONVERSATION_PREFIX)
                found.append((str(row.gsi1sk), keys.user_of(str(row.pk)), conversation_id))
        found.sort()  # the longest waiting first
        return [(user_id, conversation_id) for _, user_id, conversation_id in found[:limit]]

    def mask_stored_messages(self, *, batch: int = 50) -> MaskingProgress:
        rules.int_range("batch", batch, 1)
        record = self._table.get_at(self._record, keys.MIGRATION_PK, keys.MASK_MESSAGES_SK)
        if record is not None and _done_at(record) is not None:
            return MaskingProgress(conversations=0, rewritten=0, done=True)
        start = _cursor(record)
        cls = self._cls
        # One parallel-free scan of the table, resumed from the recorded key: a run that
        # stops (a Lambda's timeout) loses at most this batch, which masks the same again.
        rows = cls.scan(
            cls.sk.startswith(keys.CONVERSATION_PREFIX),
            limit=batch,
            last_evaluated_key=start,
        )
        conversations = rewritten = 0
        for row in rows:
            conversations += 1
            if not _deleted(row):
                rewritten += self._mask(row)
        after = rows.last_evaluated_key
        done = after is None
        self._record(
            keys.MIGRATION_PK,
            keys.MASK_MESSAGES_SK,
            cursor=None if done else json.dumps(after, sort_keys=True),
            done_at=self._table.now() if done else None,
        ).save()
        return MaskingProgress(conversations=conversations, rewritten=rewritten, done=done)

    def _mask(self, row: ConversationItem) -> int:
        """Mask one conversation's stored words in place, each text guarded on the words
        read (a text changed or deleted meanwhile is left); how many texts changed."""
        cls, message = self._cls, self._message
        conversation_id = str(row.conversation_id)
        items = list(
            message.query(
                row.pk,
                message.sk.startswith(keys.messages_prefix(conversation_id)),
                consistent_read=True,
            )
        )
        stored = {int(item.seq): item for item in items}
        masked = masked_transcript([message_from_item(item) for item in items], row.summary)
        writes = [
            Write(
                "update",
                message(row.pk, keys.message_sk(conversation_id, seq)),
                all_of(message.sk.exists(), message.content == stored[seq].content),
                (message.content.set(content),),
            )
            for seq, content in masked.messages.items()
        ]
        if masked.summary is not None:
            writes.append(
                Write(
                    "update",
                    cls(row.pk, row.sk),
                    all_of(cls.sk.exists(), cls.summary == row.summary),
                    (cls.summary.set(masked.summary),),
                )
            )
        changed = 0
        for write in writes:
            try:
                self._table.commit([write])
            except LostRace:
                continue
            changed += 1
        return changed


def _deleted(item: ConversationItem) -> bool:
    # PynamoDB types attributes as always set; this one is optional in the table.
    return cast("datetime | None", item.deleted_at) is not None


def _done_at(record: DataMigrationItem) -> datetime | None:
    return cast("datetime | None", record.done_at)


def _cursor(record: DataMigrationItem | None) -> dict[str, Any] | None:
    text = None if record is None else cast("str | None", record.cursor)
    return None if text is None else cast("dict[str, Any]", json.loads(text))


def _pages(rows: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(rows)
    while page := list(islice(iterator, size)):
        yield page
