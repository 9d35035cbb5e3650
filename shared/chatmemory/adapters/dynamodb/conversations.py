"""Conversations on DynamoDB: CONV#<id> items, their MSG#<id>#<seq> messages, the sweep index."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import cast

from pynamodb.expressions.condition import Condition, Or
from pynamodb.expressions.update import Action

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.items import ConversationItem, ObservedTurnItem, bind_item
from chatmemory.adapters.dynamodb.mapping import (
    conversation_from_item,
    conversation_item,
    message_from_item,
    message_item,
    observed_turn_from_item,
    observed_turn_item,
)
from chatmemory.adapters.dynamodb.table import (
    LostRace,
    Table,
    Write,
    all_of,
    check_owner,
    unexpired,
)
from chatmemory.domain import rules
from chatmemory.domain.conversation import Conversation, Message, NewMessage, Role
from chatmemory.domain.errors import ConcurrentChange, ConversationNotFound, InvalidField
from chatmemory.domain.observed_turn import ObservedTurn
from chatmemory.domain.time import epoch_seconds, to_storage
from chatmemory.ports.conversations import ConversationStore


class DynamoConversationStore(ConversationStore):
    """A user's conversations and messages; sequence numbers come from the conversation row."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._cls = table.items.conversation
        self._turn = bind_item(table.items, ObservedTurnItem)

    def create_conversation(self, conversation: Conversation) -> None:
        try:
            self._table.commit([self._insert(conversation)])
        except LostRace as exc:
            raise ConcurrentChange("conversation id already exists") from exc

    def get_conversation(self, user_id: str, conversation_id: str) -> Conversation | None:
        item = self._table.get(self._cls, user_id, keys.conversation_sk(conversation_id))
        if item is None or _deleted(item):
            return None
        conversation = conversation_from_item(item)
        return None if conversation.is_expired(self._table.now()) else conversation

    def list_conversations(self, user_id: str) -> list[Conversation]:
        cls = self._cls
        rows = cls.query(
            keys.pk(user_id),
            cls.sk.startswith(keys.CONVERSATION_PREFIX),
            filter_condition=all_of(
                unexpired(cls.ttl, self._table.now()), cls.deleted_at.does_not_exist()
            ),
            consistent_read=True,
        )
        now = self._table.now()
        found = [conversation_from_item(row) for row in rows if not _deleted(row)]
        live = [c for c in found if not c.is_expired(now)]
        return sorted(live, key=lambda c: (c.updated_at, c.conversation_id), reverse=True)

    def last_seen(self, user_id: str, persona: str) -> datetime | None:
        cls = self._cls
        now = self._table.now()
        latest_first = cls.by_created.query(
            keys.pk(user_id),
            cls.lsi1sk.startswith(keys.seen_prefix(persona)),
            filter_condition=unexpired(cls.ttl, now),
            consistent_read=True,
            scan_index_forward=False,
            page_size=1,  # only a conversation with messages has the key: the first is it
        )
        for row in latest_first:
            if _deleted(row):  # a delete takes the key away; an item from before it cannot
                continue
            conversation = conversation_from_item(row)
            if not conversation.is_expired(now):
                return conversation.updated_at
        # None keyed: a first meeting, or conversations last written before the key
        # existed (each gets it on its next write), read as they were before.
        earlier = [
            c
            for c in self.list_conversations(user_id)
            if c.persona == persona and not c.temporary and c.last_seq > 0
        ]
        return max((c.updated_at for c in earlier), default=None)

    def append_messages(
        self,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        at: datetime,
        *,
        create: Conversation | None = None,
    ) -> list[Message]:
        _check_create(user_id, conversation_id, create)

        def append() -> list[Message]:
            stored, writes = self._append_writes(user_id, conversation_id, messages, at, create)
            if not writes:
                return []
            try:
                self._table.commit(writes)
            except LostRace as exc:
                if create is not None:
                    raise ConcurrentChange("conversation id already exists") from exc
                raise
            return stored

        return self._table.optimistic(
            append, what="a message was appended", changing="the conversation"
        )

    def append_observed(
        self,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        at: datetime,
        *,
        turn_id: str,
        fingerprint: str,
        create: Conversation | None = None,
    ) -> tuple[ObservedTurn, bool]:
        _check_create(user_id, conversation_id, create)
        cls = self._turn

        def append() -> tuple[ObservedTurn, bool]:
            recorded = self._observed(user_id, turn_id)
            deleted = (
                recorded is not None
                and self.get_conversation(user_id, recorded.conversation_id) is None
            )
            if recorded is not None and not deleted:
                return recorded, False
            stored, writes = self._append_writes(user_id, conversation_id, messages, at, create)
            if not stored:
                raise InvalidField("messages", "an observed turn stores at least one message")
            turn = ObservedTurn(
                user_id=user_id,
                turn_id=turn_id,
                conversation_id=conversation_id,
                first_seq=stored[0].seq,
                count=len(stored),
                fingerprint=fingerprint,
                observed_at=at,
                expires_at=stored[0].expires_at,
            )
            # A record whose conversation expired (its ttl not reaped yet) frees the id.
            free = Or(cls.sk.does_not_exist(), cls.ttl <= epoch_seconds(self._table.now()))
            if recorded is not None:
                # Its conversation was deleted (its purge not done yet): the id is free too.
                free = Or(free, cls.conversation_id == recorded.conversation_id)
            writes.append(Write("put", observed_turn_item(cls, turn), free))
            # Lost: the same turn was stored meanwhile (read again: found), or the
            # conversation moved on (numbered again).
            self._table.commit(writes)
            return turn, True

        return self._table.optimistic(
            append, what="an observed turn was stored", changing="the conversation"
        )

    def _observed(self, user_id: str, turn_id: str) -> ObservedTurn | None:
        item = self._table.get(self._turn, user_id, keys.observed_turn_sk(turn_id))
        if item is None:
            return None
        turn = observed_turn_from_item(item)
        return None if turn.is_expired(self._table.now()) else turn

    def _append_writes(
        self,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        at: datetime,
        create: Conversation | None,
    ) -> tuple[list[Message], list[Write]]:
        """The messages numbered after the conversation as read, and the writes that store
        them with it (none when there is nothing to write)."""
        conversation = create or self.get_conversation(user_id, conversation_id)
        if conversation is None:
            raise ConversationNotFound(conversation_id)
        stored = conversation.numbered(messages, at)
        if not stored and create is None:
            return [], []
        writes = [self._appended(conversation, stored, at, created=create is not None)]
        writes += [
            Write(
                "put",
                message_item(self._table.items, m),
                self._table.items.message.sk.does_not_exist(),
            )
            for m in stored
        ]
        return stored, writes

    def list_messages(
        self,
        user_id: str,
        conversation_id: str,
        *,
        after_seq: int = 0,
        upto_seq: int | None = None,
        last: int | None = None,
    ) -> list[Message]:
        if self.get_conversation(user_id, conversation_id) is None:
            return []
        window = keys.seq_range(after_seq, upto_seq, last)
        if window is None:
            return []
        first, final = window
        cls = self._table.items.message
        rows = cls.query(
            keys.pk(user_id),
            cls.sk.between(
                keys.message_sk(conversation_id, first), keys.message_sk(conversation_id, final)
            ),
            filter_condition=unexpired(cls.ttl, self._table.now()),
            consistent_read=True,
            scan_index_forward=last is None,
            limit=last,
        )
        now = self._table.now()
        found = [message_from_item(row) for row in rows]
        return sorted((m for m in found if not m.is_expired(now)), key=lambda m: m.seq)

    def update_summary(
        self,
        user_id: str,
        conversation_id: str,
        *,
        summary: str,
        upto_seq: int,
        expected_upto_seq: int,
        fold_count: int,
        at: datetime,
        expected_fold_count: int | None = None,
    ) -> bool:
        rules.text("summary", summary, rules.SUMMARY_MAX_CHARS, allow_empty=True)
        rules.int_range("upto_seq", upto_seq, 0)
        rules.int_range("fold_count", fold_count, 0)
        cls = self._cls

        def fold() -> bool:
            conversation = self.get_conversation(user_id, conversation_id)
            if conversation is None or conversation.summary_upto_seq != expected_upto_seq:
                return False
            if expected_fold_count is not None and conversation.fold_count != expected_fold_count:
                return False
            if conversation.last_seq < upto_seq:
                return False
            updated_at = max(conversation.updated_at, at)
            actions = [
                cls.summary.set(summary),
                cls.summary_upto_seq.set(upto_seq),
                cls.fold_count.set(fold_count),
                cls.updated_at.set(updated_at),
                *self._seen_actions(dataclasses.replace(conversation, updated_at=updated_at)),
            ]
            guard = all_of(
                cls.summary_upto_seq == expected_upto_seq,
                cls.fold_count == conversation.fold_count,
                cls.last_seq >= upto_seq,
                cls.updated_at <= updated_at,
                Or(cls.expires_at.does_not_exist(), cls.expires_at > self._table.now()),
            )
            # Lost: re-read, and either another fold won (False above) or only updated_at moved.
            self._table.commit([self._update(user_id, conversation_id, actions, guard)])
            return True

        try:
            return self._table.optimistic(
                fold, what="its summary was folded", changing="the conversation"
            )
        except ConcurrentChange:
            return False

    def advance_extraction(
        self, user_id: str, conversation_id: str, *, upto_seq: int, expected_upto_seq: int
    ) -> bool:
        rules.int_range("upto_seq", upto_seq, 0)
        cls = self._cls
        # Caught up with the last message: leave the sweep's index in the same write. If a
        # message arrived meanwhile, only the cursor moves and the conversation stays listed.
        caught_up = self._applied(
            self._update(
                user_id,
                conversation_id,
                [cls.extracted_upto_seq.set(upto_seq), cls.gsi1pk.remove(), cls.gsi1sk.remove()],
                all_of(cls.extracted_upto_seq == expected_upto_seq, cls.last_seq == upto_seq),
            )
        )
        return caught_up or self._applied(
            self._update(
                user_id,
                conversation_id,
                [cls.extracted_upto_seq.set(upto_seq)],
                all_of(cls.extracted_upto_seq == expected_upto_seq, cls.last_seq >= upto_seq),
            )
        )

    def pending_extractions(
        self, *, said_before: datetime, limit: int = 100
    ) -> list[tuple[str, str]]:
        cls = self._cls
        before = to_storage(said_before)
        found: list[tuple[str, str, str]] = []
        for shard in keys.pending_shards(keys.PENDING_PREFIX):
            for row in cls.pending.query(shard, cls.gsi1sk < before, limit=limit, page_size=limit):
                said_at = keys.sweep_time(str(row.gsi1sk))
                conversation_id = row.sk.removeprefix(keys.CONVERSATION_PREFIX)
                found.append((said_at, keys.user_of(row.pk), conversation_id))
        found.sort()
        return [(user_id, conversation_id) for _, user_id, conversation_id in found[:limit]]

    # ---- pieces of the writes ---------------------------------------------------------------

    def _insert(self, conversation: Conversation) -> Write:
        item = conversation_item(self._table.items, conversation)
        return Write("put", item, self._cls.sk.does_not_exist())

    def _update(
        self, user_id: str, conversation_id: str, actions: Sequence[Action], condition: Condition
    ) -> Write:
        """An update of a conversation row that exists, is not deleted and meets `condition`."""
        cls = self._cls
        item = cls(keys.pk(user_id), keys.conversation_sk(conversation_id))
        guard = all_of(cls.sk.exists(), cls.deleted_at.does_not_exist(), condition)
        return Write("update", item, guard, tuple(actions))

    def _seen_actions(self, conversation: Conversation) -> list[Action]:
        """Its `by_created` key moved to its new time (none for a temporary one)."""
        seen = keys.conversation_seen_key(conversation)
        return [] if seen is None else [self._cls.lsi1sk.set(seen)]

    def _applied(self, write: Write) -> bool:
        try:
            self._table.commit([write])
        except LostRace:
            return False
        return True

    def _appended(
        self, conversation: Conversation, stored: Sequence[Message], at: datetime, *, created: bool
    ) -> Write:
        """The conversation row's write for an append: an insert when it is being created,
        else an update guarded on the `last_seq` the append numbered from."""
        changed = conversation.appended(stored, at)
        if created:
            # Created and appended to in one write: it carries the time of the append.
            updated_at = max(conversation.updated_at, at)
            return self._insert(dataclasses.replace(changed, updated_at=updated_at))
        cls = self._cls
        actions: list[Action] = [
            cls.last_seq.set(changed.last_seq),
            cls.updated_at.set(changed.updated_at),
            *self._seen_actions(changed),
        ]
        if any(message.role is Role.USER for message in stored):
            actions.append(cls.last_user_message_at.set(at))
            sweep = keys.pending_extraction_keys(changed)
            if sweep:
                actions += [cls.gsi1pk.set(sweep["gsi1pk"]), cls.gsi1sk.set(sweep["gsi1sk"])]
        # The condition on last_seq makes two appends that read the same state unable to
        # both commit; the one on updated_at keeps the row's time from moving back.
        guard = all_of(cls.last_seq == conversation.last_seq, cls.updated_at <= changed.updated_at)
        return self._update(conversation.user_id, conversation.conversation_id, actions, guard)


def _deleted(item: ConversationItem) -> bool:
    """Whether its owner deleted it (its purge may not have removed it yet)."""
    # PynamoDB types attributes as always set; this one is optional in the table.
    return cast("datetime | None", item.deleted_at) is not None


def _check_create(user_id: str, conversation_id: str, create: Conversation | None) -> None:
    if create is not None:
        check_owner(user_id, create.user_id)
        if create.conversation_id != conversation_id:
            raise InvalidField("conversation_id", "does not match the new conversation")
