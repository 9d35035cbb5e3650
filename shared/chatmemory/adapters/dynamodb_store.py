"""The AWS Store: one DynamoDB table, one partition per user, through PynamoDB.

Item layout (pk = "U#<user_id>" for every item; sk by type):

    memory        MEM#<memory_id>                   lsi1sk MEM#<created_at>#<memory_id>
    tombstone     TOMB#<memory_id>
    user state    USER                              (forgotten_before watermark)
    conversation  CONV#<conversation_id>
    message       MSG#<conversation_id>#<seq:010d>
    profile       PROFILE#<persona>
    settings      SETTINGS
    event         EVT#<memory_id>#<at>#<event_id>
    notice        NOTICE#<notice_id>                lsi1sk NOTICE#<created_at>#<notice_id>

Every read is a GetItem, BatchGetItem or Query inside the caller's partition, strongly
consistent (the LSI allows it), so a delete is invisible to the very next read. TTL
deletes lazily, so reads also drop rows whose expiry passed by the injected clock.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeVar, cast

from pynamodb.attributes import NumberAttribute
from pynamodb.connection import Connection
from pynamodb.exceptions import DoesNotExist, PynamoDBException, TransactWriteError
from pynamodb.expressions.condition import And, Condition, Or
from pynamodb.expressions.update import Action
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chatmemory.adapters.cursors import decode_cursor, encode_cursor
from chatmemory.adapters.dynamodb_items import (
    ConversationItem,
    EventItem,
    MemoryItem,
    MessageItem,
    NoticeItem,
    TombstoneItem,
    bind_items,
)
from chatmemory.domain import rules
from chatmemory.domain.conversation import Conversation, Message, Role
from chatmemory.domain.errors import (
    ConcurrentChange,
    ConversationNotFound,
    InvalidField,
    MemoryNotFound,
)
from chatmemory.domain.events import Actor, MemoryEvent, Op
from chatmemory.domain.extraction import ExtractionRun, run_from_json, run_to_json
from chatmemory.domain.memory import Kind, Memory, StatedBy, Status
from chatmemory.domain.memory_settings import MemorySettings
from chatmemory.domain.notice import Notice
from chatmemory.domain.profile import Profile
from chatmemory.domain.time import epoch_seconds, from_storage, to_storage
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports import (
    MAX_PAGE,
    Clock,
    MemoryDigest,
    MemoryQuery,
    NewMessage,
    Page,
    Store,
)

_TRANSACTION_MAX = 100  # DynamoDB's limit on items in one TransactWriteItems
_ATTEMPTS = 8  # optimistic retries before a lost race is reported as ConcurrentChange
_AFTER_IDS = "~"  # sorts after every character an id may hold ([A-Za-z0-9_.:-])
_LOST_RACE_CODES = frozenset({"ConditionalCheckFailed", "TransactionConflict"})

_T = TypeVar("_T")


# ---- keys ---------------------------------------------------------------------------------


def _pk(user_id: str) -> str:
    return f"U#{user_id}"


def _memory_sk(memory_id: str) -> str:
    return f"MEM#{memory_id}"


def _memory_lsi(created_at: str, memory_id: str) -> str:
    return f"MEM#{created_at}#{memory_id}"


def _tombstone_sk(memory_id: str) -> str:
    return f"TOMB#{memory_id}"


def _conversation_sk(conversation_id: str) -> str:
    return f"CONV#{conversation_id}"


def _message_sk(conversation_id: str, seq: int) -> str:
    return f"MSG#{conversation_id}#{seq:010d}"


def _profile_sk(persona: str) -> str:
    return f"PROFILE#{persona}"


def _event_prefix(memory_id: str) -> str:
    return f"EVT#{memory_id}#"


def _event_sk(event: MemoryEvent) -> str:
    # Deterministic from the event, so re-adding it overwrites itself instead of duplicating.
    return f"{_event_prefix(event.memory_id)}{to_storage(event.at)}#{event.event_id}"


def _notice_sk(notice_id: str) -> str:
    return f"NOTICE#{notice_id}"


_USER_SK = "USER"
_SETTINGS_SK = "SETTINGS"
_MAX_SEQ = 9_999_999_999  # ten digits: the widest seq a message id carries


# ---- writes -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Write:
    """One item write, run alone or as part of a TransactWriteItems."""

    kind: Literal["put", "update", "delete", "check"]
    item: Model
    condition: Condition | None = None
    actions: tuple[Action, ...] = ()


def _lost_race(exc: PynamoDBException) -> bool:
    """True when DynamoDB refused a write because of a condition (someone else was first)."""
    if exc.cause_response_code == "ConditionalCheckFailedException":
        return True
    if isinstance(exc, TransactWriteError):
        codes = {reason.code for reason in exc.cancellation_reasons if reason is not None}
        return bool(codes) and codes <= _LOST_RACE_CODES
    return False


def _all_of(first: Condition, *rest: Condition) -> Condition:
    condition = first
    for other in rest:
        condition = And(condition, other)
    return condition


def _chunks(values: Sequence[_T], size: int = _TRANSACTION_MAX) -> Iterator[list[_T]]:
    for start in range(0, len(values), size):
        yield list(values[start : start + size])


def _unique(values: Iterable[_T]) -> list[_T]:
    return list(dict.fromkeys(values))


def _backoff(attempt: int) -> None:
    """Exponential backoff with full jitter, so writers that collided spread out."""
    time.sleep(random.uniform(0, min(0.2, 0.01 * 2**attempt)))  # noqa: S311 - jitter, not crypto


def _check_owner(user_id: str, owner: str) -> None:
    if user_id != owner:
        raise InvalidField("user_id", "a row may only be written under its own user")


def _unexpired(ttl: NumberAttribute, now: datetime) -> Condition:
    """A server-side prefilter on `ttl`; it never drops a live row, as epochs are floored."""
    return Or(ttl.does_not_exist(), ttl >= epoch_seconds(now))


class DynamoDbStore(Store):
    """Store on the DynamoDB table declared in template.yaml (or DynamoDB Local via `host`)."""

    def __init__(
        self, *, table_name: str, region: str, clock: Clock, host: str | None = None
    ) -> None:
        self._clock = clock
        self._items = bind_items(table_name, region, host)
        # TransactWrite needs a plain Connection; the table's own keeps one botocore client.
        self._transactions: Connection = self._items.connection.connection

    # ---- plumbing -----------------------------------------------------------------------

    def _commit(self, writes: Sequence[_Write]) -> None:
        """Apply writes atomically: alone when there is one, else as one transaction."""
        if not writes:
            return
        if len(writes) > _TRANSACTION_MAX:
            raise InvalidField("events", "too many to store in one atomic write")
        if len(writes) == 1:
            write = writes[0]
            if write.kind == "put":
                write.item.save(condition=write.condition)
            elif write.kind == "update":
                write.item.update(list(write.actions), condition=write.condition)
            else:
                write.item.delete(condition=write.condition)
            return
        with TransactWrite(connection=self._transactions) as transaction:
            for write in writes:
                if write.kind == "check":
                    key = cast(TombstoneItem, write.item)
                    transaction.condition_check(
                        type(key), key.pk, key.sk, condition=write.condition
                    )
                elif write.kind == "put":
                    transaction.save(write.item, condition=write.condition)
                elif write.kind == "update":
                    transaction.update(write.item, list(write.actions), condition=write.condition)
                else:
                    transaction.delete(write.item, condition=write.condition)

    def _now(self) -> datetime:
        return self._clock.now()

    def _event_writes(self, user_id: str | None, events: Sequence[MemoryEvent]) -> list[_Write]:
        items: dict[str, EventItem] = {}
        for event in events:
            if user_id is not None:
                _check_owner(user_id, event.user_id)
            sk = _event_sk(event)
            items.setdefault(
                sk,
                self._items.event(
                    _pk(event.user_id),
                    sk,
                    user_id=event.user_id,
                    memory_id=event.memory_id,
                    event_id=event.event_id,
                    op=event.op.value,
                    actor=event.actor.value,
                    at=event.at,
                    related_id=event.related_id,
                ),
            )
        return [_Write("put", item) for item in items.values()]

    def _forgotten_before(self, user_id: str) -> str | None:
        """The "forget everything" watermark (storage form), if there ever was one."""
        try:
            state = self._items.user_state.get(_pk(user_id), _USER_SK, consistent_read=True)
        except DoesNotExist:
            return None
        # PynamoDB types attributes as always set; this one is optional in the table.
        forgotten = cast("datetime | None", state.forgotten_before)
        return None if forgotten is None else to_storage(forgotten)

    # ---- memories -----------------------------------------------------------------------

    def _memory_item(self, memory: Memory) -> MemoryItem:
        created = to_storage(memory.created_at)
        return self._items.memory(
            _pk(memory.user_id),
            _memory_sk(memory.memory_id),
            lsi1sk=_memory_lsi(created, memory.memory_id),
            user_id=memory.user_id,
            memory_id=memory.memory_id,
            text=memory.text,
            persona=memory.persona,
            subject=memory.subject,
            witnessed=list(memory.witnessed),
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
            embedding=memory.embedding,
            meta=json.dumps(dict(memory.meta), ensure_ascii=False, sort_keys=True),
            ttl=None if memory.valid_until is None else epoch_seconds(memory.valid_until),
        )

    def _visible_memory(self, item: MemoryItem, forgotten: str | None) -> Memory | None:
        """The row as a Memory if a read may return it (Store's visibility rules)."""
        if item.hidden:
            return None
        memory = _memory_from_item(item)
        if memory.is_expired(self._now()):
            return None
        if forgotten is not None and to_storage(memory.created_at) <= forgotten:
            return None
        return memory

    def _get_memory_item(self, user_id: str, memory_id: str) -> MemoryItem | None:
        try:
            return self._items.memory.get(_pk(user_id), _memory_sk(memory_id), consistent_read=True)
        except DoesNotExist:
            return None

    def _no_tombstone(self, user_id: str, memory_id: str) -> _Write:
        """A transaction guard: the id was never deleted (so a purged row stays gone)."""
        key = self._items.tombstone(_pk(user_id), _tombstone_sk(memory_id))
        return _Write("check", key, self._items.tombstone.sk.does_not_exist())

    def add_memory(self, memory: Memory, events: Sequence[MemoryEvent] = ()) -> bool:
        cls = self._items.memory
        writes = [
            self._no_tombstone(memory.user_id, memory.memory_id),
            _Write("put", self._memory_item(memory), cls.sk.does_not_exist()),
        ]
        writes += self._event_writes(memory.user_id, events)
        try:
            self._commit(writes)
        except PynamoDBException as exc:
            if _lost_race(exc):
                return False
            raise
        return True

    def put_memory(self, memory: Memory, events: Sequence[MemoryEvent] = ()) -> None:
        # An update, not a put: every field is replaced but `hidden` is left as it is, so
        # rewriting a row (say, to attach its embedding) cannot undo a delete that won.
        item = self._memory_item(memory)
        actions: list[Action] = []
        for name, attribute in item.get_attributes().items():
            if name in ("pk", "sk", "hidden"):
                continue
            value = getattr(item, name)
            actions.append(attribute.remove() if value is None else attribute.set(value))
        writes = [
            self._no_tombstone(memory.user_id, memory.memory_id),
            _Write("update", item, actions=tuple(actions)),
        ]
        try:
            self._commit(writes + self._event_writes(memory.user_id, events))
        except PynamoDBException as exc:
            if _lost_race(exc):
                raise MemoryNotFound(memory.memory_id) from exc
            raise

    def get_memory(self, user_id: str, memory_id: str) -> Memory | None:
        item = self._get_memory_item(user_id, memory_id)
        if item is None or item.hidden:
            return None
        return self._visible_memory(item, self._forgotten_before(user_id))

    def get_memories(self, user_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        wanted = list(dict.fromkeys(memory_ids))
        if not wanted:
            return []
        forgotten = self._forgotten_before(user_id)
        pk = _pk(user_id)
        found: dict[str, Memory] = {}
        for item in self._items.memory.batch_get(
            [(pk, _memory_sk(memory_id)) for memory_id in wanted], consistent_read=True
        ):
            memory = self._visible_memory(item, forgotten)
            if memory is not None:
                found[memory.memory_id] = memory
        return [found[memory_id] for memory_id in wanted if memory_id in found]

    def list_memories(
        self,
        user_id: str,
        query: MemoryQuery | None = None,
        *,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Memory]:
        query = query or MemoryQuery()
        rules.int_range("limit", limit, 1, MAX_PAGE)
        # The LSI key is MEM#<created_at>#<id>: newest first is a descending query, and the
        # time bounds (forget watermark, created_after, cursor) become its key condition.
        upper = f"MEM#{_AFTER_IDS}" if cursor is None else _cursor_key(user_id, cursor)
        floors = [self._forgotten_before(user_id)]
        if query.created_after is not None:
            floors.append(to_storage(query.created_after))
        floor = max((f for f in floors if f is not None), default=None)
        lower = "MEM#" if floor is None else f"MEM#{floor}#{_AFTER_IDS}"
        if lower >= upper:
            return Page(items=[])
        cls = self._items.memory
        conditions: list[Condition] = [
            cls.hidden.does_not_exist(),
            _unexpired(cls.ttl, self._now()),
        ]
        if query.status is not None:
            conditions.append(cls.status == query.status.value)
        if query.persona is not None:
            conditions.append(cls.persona == query.persona)
        rows = cls.by_created.query(
            _pk(user_id),
            cls.lsi1sk.between(lower, upper),
            filter_condition=_all_of(*conditions),
            consistent_read=True,
            scan_index_forward=False,
            page_size=limit + 1,
        )
        found: list[Memory] = []
        for row in rows:
            if row.lsi1sk == upper:  # the cursor's own row: BETWEEN is inclusive
                continue
            memory = self._visible_memory(row, None)
            if memory is None:
                continue
            found.append(memory)
            if len(found) > limit:
                break
        items = found[:limit]
        next_cursor = None
        if len(found) > limit:
            last = items[-1]
            next_cursor = encode_cursor(
                user_id, {"c": to_storage(last.created_at), "i": last.memory_id}
            )
        return Page(items=items, next_cursor=next_cursor)

    def memory_digests(self, user_id: str, persona: str | None = None) -> list[MemoryDigest]:
        cls = self._items.memory
        floor = self._forgotten_before(user_id)
        lower = "MEM#" if floor is None else f"MEM#{floor}#{_AFTER_IDS}"
        now = self._now()
        conditions: list[Condition] = [
            cls.hidden.does_not_exist(),
            _unexpired(cls.ttl, now),
            cls.status == Status.ACTIVE.value,
        ]
        if persona is not None:
            conditions.append(cls.persona == persona)
        rows = cls.by_created.query(
            _pk(user_id),
            cls.lsi1sk.between(lower, f"MEM#{_AFTER_IDS}"),
            filter_condition=_all_of(*conditions),
            consistent_read=True,
            scan_index_forward=False,
            attributes_to_get=[
                "memory_id",
                "persona",
                "importance",
                "updated_at",
                "valid_until",
                "meta",
                "hidden",
            ],
        )
        digests = []
        for row in rows:
            valid_until = cast("datetime | None", row.valid_until)
            if row.hidden or (valid_until is not None and valid_until <= now):
                continue
            meta = cast("str | None", row.meta) or ""
            digests.append(
                MemoryDigest(
                    memory_id=row.memory_id,
                    persona=row.persona,
                    importance=int(row.importance),
                    # Vectors change only through put_memory, which stamps updated_at.
                    version=to_storage(row.updated_at),
                    borrowed_uses='"uses_from": "category"' in meta,
                )
            )
        return digests

    def memory_embeddings(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, bytes]:
        wanted = list(dict.fromkeys(memory_ids))
        if not wanted:
            return {}
        pk = _pk(user_id)
        found: dict[str, bytes] = {}
        for item in self._items.memory.batch_get(
            [(pk, _memory_sk(memory_id)) for memory_id in wanted],
            consistent_read=True,
            attributes_to_get=["pk", "sk", "memory_id", "embedding"],
        ):
            embedding = cast("bytes | None", item.embedding)
            if embedding:
                found[item.memory_id] = embedding
        return found

    def _status_change(
        self,
        user_id: str,
        memory_id: str,
        changed: Memory,
        extra: Sequence[_Write],
        events: Sequence[MemoryEvent],
    ) -> None:
        """Write a closed/superseded row, guarded so only an active visible row changes."""
        cls = self._items.memory
        actions: list[Action] = [
            cls.status.set(changed.status.value),
            cls.updated_at.set(changed.updated_at),
        ]
        valid_to, closed_by = changed.valid_to, changed.closed_by
        actions.append(cls.valid_to.remove() if valid_to is None else cls.valid_to.set(valid_to))
        actions.append(
            cls.closed_by.remove() if closed_by is None else cls.closed_by.set(closed_by)
        )
        guard = _all_of(
            cls.sk.exists(),
            cls.hidden.does_not_exist(),
            cls.status == Status.ACTIVE.value,
        )
        update = _Write(
            "update",
            cls(_pk(user_id), _memory_sk(memory_id)),
            guard,
            tuple(actions),
        )
        try:
            self._commit([update, *extra, *self._event_writes(user_id, events)])
        except PynamoDBException as exc:
            if not _lost_race(exc):
                raise
            if self.get_memory(user_id, memory_id) is None:
                raise MemoryNotFound(memory_id) from exc
            raise ConcurrentChange("the memory changed while it was being updated") from exc

    def _active_memory(self, user_id: str, memory_id: str) -> Memory:
        old = self.get_memory(user_id, memory_id)
        if old is None:
            raise MemoryNotFound(memory_id)
        if old.status is not Status.ACTIVE:
            raise ConcurrentChange(f"memory is {old.status}, not active")
        return old

    def supersede_memory(
        self,
        user_id: str,
        old_memory_id: str,
        new_memory: Memory,
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        _check_owner(user_id, new_memory.user_id)
        if new_memory.supersedes != old_memory_id:
            raise InvalidField("supersedes", "the new memory must name the row it supersedes")
        old = self._active_memory(user_id, old_memory_id)
        closed = old.superseded_by(new_memory)
        cls = self._items.memory
        insert = _Write("put", self._memory_item(new_memory), cls.sk.does_not_exist())
        self._status_change(user_id, old_memory_id, closed, [insert], events)
        return closed

    def close_memory(
        self,
        user_id: str,
        memory_id: str,
        at: datetime,
        closed_by: str | None = None,
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        old = self._active_memory(user_id, memory_id)
        closed = old.closed(at, closed_by)
        self._status_change(user_id, memory_id, closed, [], events)
        return closed

    def _visible_items(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Memory]:
        keys = [(_pk(user_id), _memory_sk(memory_id)) for memory_id in _unique(memory_ids)]
        if not keys:
            return {}
        forgotten = self._forgotten_before(user_id)
        visible: dict[str, Memory] = {}
        for item in self._items.memory.batch_get(keys, consistent_read=True):
            memory = self._visible_memory(item, forgotten)
            if memory is not None:
                visible[memory.memory_id] = memory
        return visible

    def record_use(
        self,
        user_id: str,
        memory_ids: Sequence[str],
        at: datetime,
        events: Sequence[MemoryEvent] = (),
    ) -> None:
        for chunk in _chunks(_unique(memory_ids), _TRANSACTION_MAX // 2):
            self._record_use_chunk(user_id, chunk, at, events)

    def _record_use_chunk(
        self, user_id: str, memory_ids: Sequence[str], at: datetime, events: Sequence[MemoryEvent]
    ) -> None:
        cls = self._items.memory
        for attempt in range(_ATTEMPTS):
            visible = self._visible_items(user_id, memory_ids)
            writes: list[_Write] = []
            for memory in visible.values():
                used = memory.recalled(at)
                actions = (
                    cls.last_used_at.set(at),
                    cls.updated_at.set(used.updated_at),
                    cls.recall_count.add(1),
                )
                guard = _all_of(cls.sk.exists(), cls.hidden.does_not_exist())
                item = cls(_pk(user_id), _memory_sk(memory.memory_id))
                writes.append(_Write("update", item, guard, actions))
            mine = [e for e in events if e.memory_id in visible]
            writes += self._event_writes(user_id, mine)
            # The updates come first and always fit; only surplus events (idempotent puts)
            # can spill past one transaction, and they are written once it has committed.
            try:
                self._commit(writes[:_TRANSACTION_MAX])
            except PynamoDBException as exc:
                if not _lost_race(exc):
                    raise
                _backoff(attempt)
                continue
            self._put_all(writes[_TRANSACTION_MAX:])
            return
        raise ConcurrentChange("memories kept changing while their use was recorded")

    # ---- deletion -----------------------------------------------------------------------

    def tombstone_memories(
        self, user_id: str, tombstones: Sequence[Tombstone], events: Sequence[MemoryEvent] = ()
    ) -> None:
        firsts: dict[str, Tombstone] = {}
        for tombstone in tombstones:
            _check_owner(user_id, tombstone.user_id)
            firsts.setdefault(tombstone.memory_id, tombstone)
        for attempt in range(_ATTEMPTS):
            writes = self._tombstone_writes(user_id, list(firsts.values()), events)
            try:
                # Each tombstone follows the rows it hides, so whenever a tombstone exists
                # its rows are already hidden, even when a batch needs several transactions.
                for chunk in _chunks(writes):
                    self._commit(chunk)
                return
            except PynamoDBException as exc:
                if not _lost_race(exc):
                    raise
                _backoff(attempt)
        raise ConcurrentChange("memories kept changing while they were being deleted")

    def _tombstone_writes(
        self, user_id: str, tombstones: Sequence[Tombstone], events: Sequence[MemoryEvent]
    ) -> list[_Write]:
        pk = _pk(user_id)
        tomb_cls, mem_cls = self._items.tombstone, self._items.memory
        existing = {
            item.sk
            for item in tomb_cls.batch_get(
                [(pk, _tombstone_sk(t.memory_id)) for t in tombstones],
                consistent_read=True,
                attributes_to_get=["pk", "sk"],
            )
        }
        versions = _unique(v for t in tombstones for v in t.versions)
        to_hide = {
            item.sk
            for item in mem_cls.batch_get(
                [(pk, _memory_sk(v)) for v in versions],
                consistent_read=True,
                attributes_to_get=["pk", "sk", "hidden"],
            )
            if not item.hidden
        }
        writes: list[_Write] = []
        for tombstone in tombstones:
            for version in tombstone.versions:
                sk = _memory_sk(version)
                if sk in to_hide:
                    to_hide.discard(sk)
                    writes.append(
                        _Write(
                            "update",
                            mem_cls(pk, sk),
                            mem_cls.sk.exists(),  # never create a row that was purged
                            (mem_cls.hidden.set(True),),
                        )
                    )
            item = self._tombstone_item(tombstone)
            if item.sk not in existing:
                writes.append(_Write("put", item, tomb_cls.sk.does_not_exist()))
        return writes + self._event_writes(user_id, events)

    def _tombstone_item(self, tombstone: Tombstone) -> TombstoneItem:
        item = self._items.tombstone(
            _pk(tombstone.user_id),
            _tombstone_sk(tombstone.memory_id),
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
        )
        keys = _purge_pending_keys(tombstone)
        if keys:
            item.gsi1pk, item.gsi1sk = keys["gsi1pk"], keys["gsi1sk"]
        return item

    def revert_supersede(
        self, user_id: str, tombstone: Tombstone, events: Sequence[MemoryEvent] = ()
    ) -> Memory:
        _check_owner(user_id, tombstone.user_id)
        if tombstone.versions != (tombstone.memory_id,):
            raise InvalidField("versions", "an undone supersede hides only the newer row")
        newer = self._active_memory(user_id, tombstone.memory_id)
        if newer.supersedes is None:
            raise ConcurrentChange("the memory is not a correction of another")
        older = self.get_memory(user_id, newer.supersedes)
        if older is None:
            raise ConcurrentChange("the earlier version is gone")
        reinstated = older.reinstated_from(newer, tombstone.deleted_at)
        cls, tomb_cls = self._items.memory, self._items.tombstone
        visible = (cls.sk.exists(), cls.hidden.does_not_exist())
        writes = [
            _Write(
                "update",
                cls(_pk(user_id), _memory_sk(older.memory_id)),
                _all_of(
                    *visible,
                    cls.status == Status.SUPERSEDED.value,
                    cls.closed_by == newer.memory_id,
                ),
                (
                    cls.status.set(Status.ACTIVE.value),
                    cls.valid_to.remove(),
                    cls.closed_by.remove(),
                    cls.updated_at.set(reinstated.updated_at),
                ),
            ),
            _Write(
                "update",
                cls(_pk(user_id), _memory_sk(newer.memory_id)),
                _all_of(*visible, cls.status == Status.ACTIVE.value),
                (cls.hidden.set(True),),
            ),
            _Write("put", self._tombstone_item(tombstone), tomb_cls.sk.does_not_exist()),
            *self._event_writes(user_id, events),
        ]
        try:
            self._commit(writes)
        except PynamoDBException as exc:
            if not _lost_race(exc):
                raise
            raise ConcurrentChange("the memory changed while the change was being undone") from exc
        return reinstated

    def forgotten_before(self, user_id: str) -> datetime | None:
        stored = self._forgotten_before(user_id)
        return None if stored is None else from_storage(stored)

    def forget_everything(self, user_id: str, at: datetime) -> None:
        # The watermark alone hides every older memory; the profiles go in the same
        # transaction while they fit (one per persona, so in practice they always do).
        state_cls = self._items.user_state
        watermark = _Write(
            "update",
            state_cls(_pk(user_id), _USER_SK),
            # Never moves back: an older "forget" replayed late must not un-hide anything.
            Or(state_cls.forgotten_before.does_not_exist(), state_cls.forgotten_before < at),
            (state_cls.forgotten_before.set(at),),
        )
        profiles = self._profile_keys(user_id)
        together, rest = profiles[: _TRANSACTION_MAX - 1], profiles[_TRANSACTION_MAX - 1 :]
        try:
            self._commit([watermark, *(_Write("delete", p) for p in together)])
        except PynamoDBException as exc:
            if not _lost_race(exc):
                raise
            rest = profiles  # a later watermark is already in place; the profiles still go
        self._delete_all(rest)

    def get_tombstone(self, user_id: str, memory_id: str) -> Tombstone | None:
        try:
            item = self._items.tombstone.get(
                _pk(user_id), _tombstone_sk(memory_id), consistent_read=True
            )
        except DoesNotExist:
            return None
        return _tombstone_from_item(item)

    def list_tombstones(self, user_id: str, *, unpurged_only: bool = False) -> list[Tombstone]:
        cls = self._items.tombstone
        rows = cls.query(
            _pk(user_id),
            cls.sk.startswith("TOMB#"),
            filter_condition=cls.purged_at.does_not_exist() if unpurged_only else None,
            consistent_read=True,
        )
        found = [_tombstone_from_item(row) for row in rows]
        return sorted(found, key=lambda t: (t.deleted_at, t.memory_id))

    def put_tombstone(self, tombstone: Tombstone) -> None:
        self._tombstone_item(tombstone).save()

    def purge_memories(self, user_id: str, memory_ids: Sequence[str]) -> None:
        cls = self._items.memory
        self._delete_all([cls(_pk(user_id), _memory_sk(m)) for m in _unique(memory_ids)])

    def _delete_all(self, items: Sequence[Model]) -> None:
        """Unconditional deletes, 25 to a BatchWriteItem; any item class, as all share the table."""
        with self._items.memory.batch_write() as batch:
            for item in items:
                batch.delete(item)

    # ---- conversations and messages -----------------------------------------------------

    def _conversation_item(self, conversation: Conversation) -> ConversationItem:
        expires = conversation.expires_at
        item = self._items.conversation(
            _pk(conversation.user_id),
            _conversation_sk(conversation.conversation_id),
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
        keys = _pending_keys(conversation)
        if keys:
            item.gsi1pk, item.gsi1sk = keys["gsi1pk"], keys["gsi1sk"]
        return item

    def create_conversation(self, conversation: Conversation) -> None:
        cls = self._items.conversation
        try:
            self._conversation_item(conversation).save(condition=cls.sk.does_not_exist())
        except PynamoDBException as exc:
            if _lost_race(exc):
                raise ConcurrentChange("conversation id already exists") from exc
            raise

    def get_conversation(self, user_id: str, conversation_id: str) -> Conversation | None:
        try:
            item = self._items.conversation.get(
                _pk(user_id), _conversation_sk(conversation_id), consistent_read=True
            )
        except DoesNotExist:
            return None
        conversation = _conversation_from_item(item)
        return None if conversation.is_expired(self._now()) else conversation

    def list_conversations(self, user_id: str) -> list[Conversation]:
        cls = self._items.conversation
        rows = cls.query(
            _pk(user_id),
            cls.sk.startswith("CONV#"),
            filter_condition=_unexpired(cls.ttl, self._now()),
            consistent_read=True,
        )
        now = self._now()
        found = [_conversation_from_item(row) for row in rows]
        live = [c for c in found if not c.is_expired(now)]
        return sorted(live, key=lambda c: (c.updated_at, c.conversation_id), reverse=True)

    def append_messages(
        self,
        user_id: str,
        conversation_id: str,
        messages: Sequence[NewMessage],
        at: datetime,
        *,
        create: Conversation | None = None,
    ) -> list[Message]:
        if create is not None:
            _check_owner(user_id, create.user_id)
            if create.conversation_id != conversation_id:
                raise InvalidField("conversation_id", "does not match the new conversation")
        conv_cls = self._items.conversation
        msg_cls = self._items.message
        for attempt in range(_ATTEMPTS):
            conversation = create or self.get_conversation(user_id, conversation_id)
            if conversation is None:
                raise ConversationNotFound(conversation_id)
            stored = [
                Message(
                    user_id=user_id,
                    conversation_id=conversation_id,
                    seq=conversation.last_seq + offset,
                    role=new.role,
                    content=new.content,
                    tokens=new.tokens,
                    created_at=at,
                    expires_at=conversation.expires_at,
                    memories_used=new.memories_used,
                )
                for offset, new in enumerate(messages, start=1)
            ]
            if not stored and create is None:
                return []
            said = any(message.role is Role.USER for message in stored)
            updated_at = max(conversation.updated_at, at)
            writes: list[_Write] = []
            if create is not None:
                changed = dataclasses.replace(
                    create,
                    last_seq=stored[-1].seq if stored else create.last_seq,
                    updated_at=updated_at,
                    last_user_message_at=at if said else create.last_user_message_at,
                )
                writes.append(
                    _Write("put", self._conversation_item(changed), conv_cls.sk.does_not_exist())
                )
            else:
                actions: list[Action] = [
                    conv_cls.last_seq.set(stored[-1].seq),
                    conv_cls.updated_at.set(updated_at),
                ]
                if said:
                    actions.append(conv_cls.last_user_message_at.set(at))
                    if not conversation.temporary:
                        keys = _pending_keys_at(user_id, conversation_id, at)
                        actions += [
                            conv_cls.gsi1pk.set(keys["gsi1pk"]),
                            conv_cls.gsi1sk.set(keys["gsi1sk"]),
                        ]
                # Sequence numbers come from the conversation row: the condition on last_seq
                # makes two appends that read the same state unable to both commit.
                guard = _all_of(
                    conv_cls.sk.exists(),
                    conv_cls.last_seq == conversation.last_seq,
                    conv_cls.updated_at <= updated_at,
                )
                writes.append(
                    _Write(
                        "update",
                        conv_cls(_pk(user_id), _conversation_sk(conversation_id)),
                        guard,
                        tuple(actions),
                    )
                )
            writes += [
                _Write("put", self._message_item(message), msg_cls.sk.does_not_exist())
                for message in stored
            ]
            try:
                self._commit(writes)
            except PynamoDBException as exc:
                if not _lost_race(exc):
                    raise
                if create is not None:
                    raise ConcurrentChange("conversation id already exists") from exc
                _backoff(attempt)
                continue
            return stored
        raise ConcurrentChange("the conversation kept changing while a message was appended")

    def _message_item(self, message: Message) -> MessageItem:
        expires = message.expires_at
        return self._items.message(
            _pk(message.user_id),
            _message_sk(message.conversation_id, message.seq),
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
        if last is not None:
            rules.int_range("last", last, 0)
        first = max(after_seq, 0) + 1
        final = _MAX_SEQ if upto_seq is None else min(upto_seq, _MAX_SEQ)
        if first > final or last == 0:
            return []
        cls = self._items.message
        rows = cls.query(
            _pk(user_id),
            cls.sk.between(
                _message_sk(conversation_id, first), _message_sk(conversation_id, final)
            ),
            filter_condition=_unexpired(cls.ttl, self._now()),
            consistent_read=True,
            scan_index_forward=last is None,
            limit=last,
        )
        now = self._now()
        found = [_message_from_item(row) for row in rows]
        return sorted((m for m in found if not m.is_expired(now)), key=lambda m: m.seq)

    def _conditional_conversation_update(
        self,
        user_id: str,
        conversation_id: str,
        actions: Sequence[Action],
        condition: Condition,
    ) -> bool:
        cls = self._items.conversation
        item = cls(_pk(user_id), _conversation_sk(conversation_id))
        try:
            self._commit(
                [_Write("update", item, _all_of(cls.sk.exists(), condition), tuple(actions))]
            )
        except PynamoDBException as exc:
            if _lost_race(exc):
                return False
            raise
        return True

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
        cls = self._items.conversation
        for _ in range(_ATTEMPTS):
            conversation = self.get_conversation(user_id, conversation_id)
            if conversation is None or conversation.summary_upto_seq != expected_upto_seq:
                return False
            if expected_fold_count is not None and conversation.fold_count != expected_fold_count:
                return False
            if conversation.last_seq < upto_seq:
                return False
            updated_at = max(conversation.updated_at, at)
            applied = self._conditional_conversation_update(
                user_id,
                conversation_id,
                [
                    cls.summary.set(summary),
                    cls.summary_upto_seq.set(upto_seq),
                    cls.fold_count.set(fold_count),
                    cls.updated_at.set(updated_at),
                ],
                _all_of(
                    cls.summary_upto_seq == expected_upto_seq,
                    cls.fold_count == conversation.fold_count,
                    cls.last_seq >= upto_seq,
                    cls.updated_at <= updated_at,
                    Or(cls.expires_at.does_not_exist(), cls.expires_at > self._now()),
                ),
            )
            if applied:
                return True
            # Re-read: either another fold won (False above), or only updated_at moved.
        return False

    def advance_extraction(
        self, user_id: str, conversation_id: str, *, upto_seq: int, expected_upto_seq: int
    ) -> bool:
        rules.int_range("upto_seq", upto_seq, 0)
        cls = self._items.conversation
        # Caught up with the last message: leave the sweep's index in the same write. If a
        # message arrived meanwhile, only the cursor moves and the conversation stays listed.
        caught_up = self._conditional_conversation_update(
            user_id,
            conversation_id,
            [cls.extracted_upto_seq.set(upto_seq), cls.gsi1pk.remove(), cls.gsi1sk.remove()],
            _all_of(cls.extracted_upto_seq == expected_upto_seq, cls.last_seq == upto_seq),
        )
        return caught_up or self._conditional_conversation_update(
            user_id,
            conversation_id,
            [cls.extracted_upto_seq.set(upto_seq)],
            _all_of(cls.extracted_upto_seq == expected_upto_seq, cls.last_seq >= upto_seq),
        )

    def pending_extractions(
        self, *, said_before: datetime, limit: int = 100
    ) -> list[tuple[str, str]]:
        cls = self._items.conversation
        before = to_storage(said_before)
        found: list[tuple[str, str, str]] = []
        for shard in range(_PENDING_SHARDS):
            for row in cls.pending.query(
                f"PENDING#{shard}", cls.gsi1sk < before, limit=limit, page_size=limit
            ):
                said_at, _, _ = str(row.gsi1sk).partition("#")
                found.append((said_at, row.pk.removeprefix("U#"), row.sk.removeprefix("CONV#")))
        found.sort()
        return [(user_id, conversation_id) for _, user_id, conversation_id in found[:limit]]

    def pending_purges(self, *, deleted_before: datetime, limit: int = 100) -> list[str]:
        cls = self._items.tombstone
        before = to_storage(deleted_before)
        oldest: dict[str, str] = {}
        for shard in range(_PENDING_SHARDS):
            rows = cls.pending.query(
                f"{_PURGE_PREFIX}{shard}", cls.gsi1sk < before, page_size=MAX_PAGE
            )
            users_here = 0
            for row in rows:  # a shard's rows come oldest first
                deleted_at, _, rest = str(row.gsi1sk).partition("#")
                user_id = rest.rpartition("#")[0]
                if user_id not in oldest:
                    oldest[user_id] = deleted_at
                    users_here += 1
                    if users_here >= limit:  # later rows of this shard cannot rank higher
                        break
        ranked = sorted(oldest.items(), key=lambda pair: (pair[1], pair[0]))
        return [user_id for user_id, _ in ranked[:limit]]

    # ---- the write pipeline's runs ------------------------------------------------------

    def put_extraction_run(self, run: ExtractionRun, *, only_if_new: bool = False) -> bool:
        cls = self._items.run
        item = cls(
            _pk(run.user_id),
            f"RUN#{run.run_id}",
            user_id=run.user_id,
            run_id=run.run_id,
            conversation_id=run.conversation_id,
            body=json.dumps(run_to_json(run), ensure_ascii=False),
            ttl=epoch_seconds(run.expires_at),
        )
        try:
            item.save(condition=cls.sk.does_not_exist() if only_if_new else None)
        except PynamoDBException as exc:
            if _lost_race(exc):
                return False
            raise
        return True

    def get_extraction_run(self, user_id: str, run_id: str) -> ExtractionRun | None:
        try:
            item = self._items.run.get(_pk(user_id), f"RUN#{run_id}", consistent_read=True)
        except DoesNotExist:
            return None
        run = run_from_json(json.loads(item.body))
        return None if run.expires_at <= self._now() else run

    def delete_extraction_runs(self, user_id: str, conversation_id: str) -> None:
        cls = self._items.run
        rows = cls.query(
            _pk(user_id),
            cls.sk.startswith("RUN#"),
            filter_condition=cls.conversation_id == conversation_id,
            consistent_read=True,
        )
        with cls.batch_write() as batch:
            for row in rows:
                batch.delete(row)

    # ---- profile, settings --------------------------------------------------------------

    def get_profile(self, user_id: str, persona: str = rules.DEFAULT_PERSONA) -> Profile | None:
        try:
            item = self._items.profile.get(_pk(user_id), _profile_sk(persona), consistent_read=True)
        except DoesNotExist:
            return None
        return Profile(
            user_id=item.user_id,
            persona=item.persona,
            text=item.text,
            token_count=int(item.token_count),
            built_from=tuple(item.built_from),
            rebuilt_at=item.rebuilt_at,
        )

    def put_profile(self, profile: Profile) -> None:
        self._items.profile(
            _pk(profile.user_id),
            _profile_sk(profile.persona),
            user_id=profile.user_id,
            persona=profile.persona,
            text=profile.text,
            token_count=profile.token_count,
            built_from=list(profile.built_from),
            rebuilt_at=profile.rebuilt_at,
        ).save()

    def _profile_keys(self, user_id: str) -> list[Model]:
        cls = self._items.profile
        rows = cls.query(
            _pk(user_id),
            cls.sk.startswith("PROFILE#"),
            consistent_read=True,
            attributes_to_get=["pk", "sk"],
        )
        return [cls(row.pk, row.sk) for row in rows]

    def delete_profiles(self, user_id: str) -> None:
        self._delete_all(self._profile_keys(user_id))

    def get_settings(self, user_id: str) -> MemorySettings:
        try:
            item = self._items.settings.get(_pk(user_id), _SETTINGS_SK, consistent_read=True)
        except DoesNotExist:
            return MemorySettings(user_id=user_id)
        return MemorySettings(
            user_id=item.user_id,
            enabled=bool(item.enabled),
            note=item.note,
            muted_personas=frozenset(item.muted_personas),
            updated_at=item.updated_at,
        )

    def put_settings(self, settings: MemorySettings) -> None:
        self._items.settings(
            _pk(settings.user_id),
            _SETTINGS_SK,
            user_id=settings.user_id,
            enabled=settings.enabled,
            note=settings.note,
            muted_personas=sorted(settings.muted_personas),
            updated_at=settings.updated_at,
        ).save()

    # ---- events and notices -------------------------------------------------------------

    def add_events(self, events: Sequence[MemoryEvent]) -> None:
        self._put_all(self._event_writes(None, events))

    def _put_all(self, writes: Sequence[_Write]) -> None:
        """Unconditional puts, 25 to a BatchWriteItem; any item class, as all share the table."""
        with self._items.event.batch_write() as batch:
            for write in writes:
                batch.save(write.item)

    def list_events(self, user_id: str, memory_id: str) -> list[MemoryEvent]:
        cls = self._items.event
        rows = cls.query(
            _pk(user_id), cls.sk.startswith(_event_prefix(memory_id)), consistent_read=True
        )
        return [
            MemoryEvent(
                user_id=row.user_id,
                memory_id=row.memory_id,
                event_id=row.event_id,
                op=Op(row.op),
                actor=Actor(row.actor),
                at=row.at,
                related_id=row.related_id,
            )
            for row in rows
        ]

    def _notice_item(self, notice: Notice) -> NoticeItem:
        return self._items.notice(
            _pk(notice.user_id),
            _notice_sk(notice.notice_id),
            lsi1sk=f"NOTICE#{to_storage(notice.created_at)}#{notice.notice_id}",
            user_id=notice.user_id,
            notice_id=notice.notice_id,
            text=notice.text,
            memory_ids=list(notice.memory_ids),
            created_at=notice.created_at,
            persona=notice.persona,
            conversation_id=notice.conversation_id,
            undone_at=notice.undone_at,
        )

    def add_notice(self, notice: Notice) -> None:
        cls = self._items.notice
        try:
            self._notice_item(notice).save(condition=cls.sk.does_not_exist())
        except PynamoDBException as exc:
            if not _lost_race(exc):
                raise

    def get_notice(self, user_id: str, notice_id: str) -> Notice | None:
        try:
            item = self._items.notice.get(_pk(user_id), _notice_sk(notice_id), consistent_read=True)
        except DoesNotExist:
            return None
        return _notice_from_item(item)

    def list_notices(
        self, user_id: str, *, include_undone: bool = False, limit: int = 50
    ) -> list[Notice]:
        rules.int_range("limit", limit, 1, MAX_PAGE)
        cls = self._items.notice
        rows = cls.by_created.query(
            _pk(user_id),
            cls.lsi1sk.between("NOTICE#", f"NOTICE#{_AFTER_IDS}"),
            filter_condition=None if include_undone else cls.undone_at.does_not_exist(),
            consistent_read=True,
            scan_index_forward=False,
            limit=limit,
        )
        return [_notice_from_item(row) for row in rows]

    def notices_about(self, user_id: str, memory_ids: Sequence[str]) -> list[Notice]:
        wanted = set(memory_ids)
        if not wanted:
            return []
        cls = self._items.notice
        rows = cls.by_created.query(
            _pk(user_id),
            cls.lsi1sk.between("NOTICE#", f"NOTICE#{_AFTER_IDS}"),
            consistent_read=True,
            scan_index_forward=False,
        )
        notices = (_notice_from_item(row) for row in rows)
        return [notice for notice in notices if wanted.intersection(notice.memory_ids)]

    def mark_notice_undone(self, user_id: str, notice_id: str, at: datetime) -> bool:
        cls = self._items.notice
        item = cls(_pk(user_id), _notice_sk(notice_id))
        guard = _all_of(cls.sk.exists(), cls.undone_at.does_not_exist())
        try:
            self._commit([_Write("update", item, guard, (cls.undone_at.set(at),))])
        except PynamoDBException as exc:
            if _lost_race(exc):
                return False
            raise
        return True

    def delete_notices(self, user_id: str, notice_ids: Sequence[str]) -> None:
        cls = self._items.notice
        self._delete_all([cls(_pk(user_id), _notice_sk(n)) for n in _unique(notice_ids)])


# ---- item mapping ---------------------------------------------------------------------------


def _cursor_key(user_id: str, cursor: str) -> str:
    """The LSI key of the row a cursor stopped at; InvalidField("next") for anything else."""
    position = decode_cursor(user_id, cursor)
    created, memory_id = position.get("c"), position.get("i")
    refused = InvalidField("next", "is not a cursor this service issued")
    if not isinstance(created, str) or not isinstance(memory_id, str):
        raise refused
    try:
        rules.opaque_id("memory_id", memory_id)
        canonical = to_storage(from_storage(created))
    except ValueError as exc:  # InvalidField is a ValueError too
        raise refused from exc
    if canonical != created:
        raise refused
    return _memory_lsi(created, memory_id)


_PENDING_SHARDS = 8  # spreads the sweep's index over partitions


def _pending_keys_at(user_id: str, conversation_id: str, said_at: datetime) -> dict[str, str]:
    shard = int(hashlib.sha256(user_id.encode()).hexdigest(), 16) % _PENDING_SHARDS
    return {
        "gsi1pk": f"PENDING#{shard}",
        "gsi1sk": f"{to_storage(said_at)}#{user_id}#{conversation_id}",
    }


_PURGE_PREFIX = "PURGE#"


def _purge_pending_keys(tombstone: Tombstone) -> dict[str, str]:
    """The sweep's index keys while a tombstone's purge has not finished."""
    if tombstone.purged_at is not None:
        return {}
    shard = int(hashlib.sha256(tombstone.user_id.encode()).hexdigest(), 16) % _PENDING_SHARDS
    return {
        "gsi1pk": f"{_PURGE_PREFIX}{shard}",
        "gsi1sk": f"{to_storage(tombstone.deleted_at)}#{tombstone.user_id}#{tombstone.memory_id}",
    }


def _pending_keys(conversation: Conversation) -> dict[str, str]:
    """The sweep's index keys while the conversation has user messages the pipeline has
    not read (never for temporary chats, which nothing reads)."""
    said = conversation.last_user_message_at
    if (
        conversation.temporary
        or said is None
        or conversation.extracted_upto_seq >= conversation.last_seq
    ):
        return {}
    return _pending_keys_at(conversation.user_id, conversation.conversation_id, said)


def _memory_from_item(item: MemoryItem) -> Memory:
    return Memory(
        user_id=item.user_id,
        memory_id=item.memory_id,
        text=item.text,
        persona=item.persona,
        subject=item.subject,
        witnessed=tuple(item.witnessed),
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
        embedding=item.embedding,
        meta=json.loads(item.meta),
    )


def _tombstone_from_item(item: TombstoneItem) -> Tombstone:
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
    )


def _conversation_from_item(item: ConversationItem) -> Conversation:
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


def _message_from_item(item: MessageItem) -> Message:
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


def _notice_from_item(item: NoticeItem) -> Notice:
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
