"""The memory rows on DynamoDB: MEM#<memory_id> items, listed through the by_created LSI,
SAW#<owner> markers in the partition of each witness who is not the row's owner, and a
THREAD#<memory_id> marker beside each active thread row (see `threads`). An active row
whose uses wait to be written for it sits in the sweep's index under USES#<shard> (its
own gsi1 keys, set and cleared by the writes of the row itself).

Every write of a row that lists other users as witnesses also updates, in the same
transaction, a marker in each of their partitions `U#<witness>` naming the owner (and
counting the writes), so `drop_witness` reads the witness's markers instead of scanning
every user's rows. A marker never goes stale in the harmful direction: a row that names
a witness always has its marker, while a marker whose rows moved on only costs a query.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime
from functools import partial
from itertools import islice
from typing import Any

from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.digests import DigestMarkers, as_read
from chatmemory.adapters.dynamodb.events import event_items
from chatmemory.adapters.dynamodb.items import MemoryItem
from chatmemory.adapters.dynamodb.mapping import memory_from_item, memory_item, meta_text
from chatmemory.adapters.dynamodb.table import (
    TRANSACTION_MAX,
    LostRace,
    Table,
    Write,
    all_of,
    check_owner,
    chunks,
    strike_witness,
    unexpired,
    unique,
)
from chatmemory.adapters.dynamodb.threads import ThreadMarkers, is_active_thread
from chatmemory.domain import fading, rules
from chatmemory.domain.errors import ConcurrentChange, InvalidField, MemoryNotFound
from chatmemory.domain.events import MemoryEvent
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.time import epoch_seconds, to_storage
from chatmemory.domain.tombstone import MemoryTrace
from chatmemory.domain.uses_origin import awaits_uses, row_with_own_uses
from chatmemory.ports.memories import MAX_SCAN_SEGMENTS, MemoryQuery, MemoryStore
from chatmemory.ports.memory_visibility import MemoryVisibility
from chatmemory.ports.pages import MAX_PAGE, Page
from chatmemory.ports.threads import ThreadStore


class DynamoMemoryStore(MemoryStore, MemoryVisibility, ThreadStore):
    """Memory rows in the user's partition, and the thread rows' own reads and manners
    (one class: all work on the same rows); every read strongly consistent."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._cls = table.items.memory
        self._saw = table.items.saw
        self._threads = ThreadMarkers(table, self._visible)
        self._digests = DigestMarkers(table)

    # ---- reads ------------------------------------------------------------------------------

    def get_memory(self, user_id: str, memory_id: str) -> Memory | None:
        item = self._table.get(self._cls, user_id, keys.memory_sk(memory_id))
        if item is None or item.hidden:
            return None
        return self._visible(item, self._table.forgotten_before(user_id))

    def id_in_use(self, user_id: str, memory_id: str) -> bool:
        rules.user_id(user_id)
        cls = self._cls
        try:
            cls.get(
                keys.pk(user_id),
                keys.memory_sk(memory_id),
                consistent_read=True,
                attributes_to_get=["pk"],
            )
        except cls.DoesNotExist:
            return False
        return True

    def get_memories(self, user_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        wanted = unique(memory_ids)
        found = self._visible_among(user_id, wanted)
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
        upper = keys.MEMORY_LSI_END if cursor is None else keys.cursor_key(user_id, cursor)
        floors = [self._table.forgotten_before(user_id)]
        if query.created_after is not None:
            floors.append(to_storage(query.created_after))
        lower = keys.memory_lsi_after(max((f for f in floors if f is not None), default=None))
        if lower >= upper:
            return Page(items=[])
        cls = self._cls
        conditions: list[Condition] = [
            cls.hidden.does_not_exist(),
            unexpired(cls.ttl, self._table.now()),
        ]
        if query.status is not None:
            conditions.append(cls.status == query.status.value)
        if query.persona is not None:
            conditions.append(cls.persona == query.persona)
        if query.kind is not None:
            conditions.append(cls.kind == query.kind.value)
        rows = cls.by_created.query(
            keys.pk(user_id),
            cls.lsi1sk.between(lower, upper),
            filter_condition=all_of(*conditions),
            consistent_read=True,
            scan_index_forward=False,
            page_size=limit + 1,
        )
        found: list[Memory] = []
        for row in rows:
            if row.lsi1sk == upper:  # the cursor's own row: BETWEEN is inclusive
                continue
            memory = self._visible(row, None)
            if memory is None:
                continue
            found.append(memory)
            if len(found) > limit:
                break
        items = found[:limit]
        next_cursor = keys.memory_cursor(items[-1]) if len(found) > limit else None
        return Page(items=items, next_cursor=next_cursor)

    def _visible(self, item: MemoryItem, forgotten: str | None) -> Memory | None:
        """The row as a Memory if a read may return it (the port's visibility rules)."""
        if item.hidden:
            return None
        memory = memory_from_item(item)
        if memory.is_expired(self._table.now()):
            return None
        if forgotten is not None and to_storage(memory.created_at) <= forgotten:
            return None
        return memory

    def _visible_among(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """The visible rows among these (distinct) ids, by id: one consistent BatchGet."""
        if not memory_ids:
            return {}
        forgotten = self._table.forgotten_before(user_id)
        pk = keys.pk(user_id)
        visible: dict[str, Memory] = {}
        for item in self._cls.batch_get(
            [(pk, keys.memory_sk(memory_id)) for memory_id in memory_ids], consistent_read=True
        ):
            memory = self._visible(item, forgotten)
            if memory is not None:
                visible[memory.memory_id] = memory
        return visible

    # ---- writes -----------------------------------------------------------------------------

    def add_memory(self, memory: Memory, events: Sequence[MemoryEvent] = ()) -> bool:
        writes = [
            self._no_tombstone(memory.user_id, memory.memory_id),
            *self._saw_writes(memory),
            Write("put", memory_item(self._table.items, memory), self._cls.sk.does_not_exist()),
            *self._threads.written(memory),
            *self._digest_of_new(memory),
            *self._event_writes(memory.user_id, events),
        ]

        def add() -> bool:
            try:
                self._table.commit(writes)
            except LostRace:
                if self._taken(memory.user_id, memory.memory_id):
                    return False
                raise  # a transaction on a shared marker, not the id: try again
            return True

        return self._table.optimistic(add, what="it was added")

    def put_memory(self, memory: Memory, events: Sequence[MemoryEvent] = ()) -> None:
        # An update, not a put: every field is replaced but `hidden` is left as it is, so
        # rewriting a row (say, to attach its embedding) cannot undo a delete that won.
        item = memory_item(self._table.items, memory)
        actions: list[Action] = []
        for name, attribute in item.get_attributes().items():
            if name in ("pk", "sk", "hidden"):
                continue
            value = getattr(item, name)
            actions.append(attribute.remove() if value is None else attribute.set(value))
        writes = [
            self._no_tombstone(memory.user_id, memory.memory_id),
            *self._saw_writes(memory),
            Write("update", item, actions=tuple(actions)),
            *self._threads.written(memory),
            self._digests.written(memory),
            *self._event_writes(memory.user_id, events),
        ]

        def put() -> None:
            try:
                self._table.commit(writes)
            except LostRace as exc:
                if self._tombstoned(memory.user_id, memory.memory_id):
                    raise MemoryNotFound(memory.memory_id) from exc
                raise  # a transaction on a shared marker: the whole rewrite is safe again

        self._table.optimistic(put, what="it was written")

    def supersede_memory(
        self,
        user_id: str,
        old_memory_id: str,
        new_memory: Memory,
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        check_owner(user_id, new_memory.user_id)
        if new_memory.supersedes != old_memory_id:
            raise InvalidField("supersedes", "the new memory must name the row it supersedes")
        saw = self._saw_writes(new_memory)
        closed = self._active(user_id, old_memory_id).superseded_by(new_memory)
        item = memory_item(self._table.items, new_memory)
        insert = Write("put", item, self._cls.sk.does_not_exist())
        marker = [*self._threads.written(new_memory), *self._digest_of_new(new_memory)]
        self._status_change(user_id, old_memory_id, closed, [*saw, insert, *marker], events)
        return closed

    def close_memory(
        self,
        user_id: str,
        memory_id: str,
        at: datetime,
        closed_by: str | None = None,
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        closed = self._active(user_id, memory_id).closed(at, closed_by)
        self._status_change(user_id, memory_id, closed, [], events)
        return closed

    def record_use(
        self,
        user_id: str,
        memory_ids: Sequence[str],
        at: datetime,
        events: Sequence[MemoryEvent] = (),
    ) -> None:
        # A row, its digest marker and its event each: a third of a transaction.
        for chunk in chunks(unique(memory_ids), TRANSACTION_MAX // 3):
            once = partial(self._record_use_once, user_id, chunk, at, events)
            self._table.optimistic(once, what="their use was recorded")

    def set_fading(
        self, user_id: str, memories: Sequence[Memory], events: Sequence[MemoryEvent] = ()
    ) -> None:
        for chunk in chunks(list(memories), TRANSACTION_MAX // 3):
            once = partial(self._set_fading_once, user_id, chunk, events)
            self._table.optimistic(once, what="their fading was recorded")

    def set_uses(
        self,
        user_id: str,
        memory_id: str,
        *,
        expected: Memory,
        meta: Mapping[str, Any],
        embedding: bytes,
        own: bool = True,
    ) -> bool:
        check_owner(user_id, expected.user_id)
        row_with_own_uses(expected, memory_id, meta, embedding, own=own)  # refuses what it must
        forgotten = self._table.forgotten_before(user_id)
        if forgotten is not None and to_storage(expected.created_at) <= forgotten:
            return False
        cls = self._cls

        def attempt() -> bool:
            # The row as it is now: still shown, unexpired, active, with the same words,
            # category and meta as `expected` (the use count and fading may have moved,
            # and are kept). The update is guarded on it as read, so its digest marker,
            # written alongside, says exactly what the row will.
            current = self.get_memory(user_id, memory_id)
            if (
                current is None
                or current.status is not Status.ACTIVE
                or current.text != expected.text
                or current.category != expected.category
                or meta_text(current.meta) != meta_text(expected.meta)
            ):
                return False
            changed = row_with_own_uses(current, memory_id, meta, embedding, own=own)
            guard = all_of(
                *as_read(cls, current),
                unexpired(cls.ttl, self._table.now()),
                cls.text == expected.text,
            )
            actions = (
                cls.meta.set(meta_text(changed.meta)),
                cls.embedding.set(embedding),
                *self._uses_index_actions(changed),
            )
            update = Write("update", self._key(user_id, memory_id), guard, actions)
            self._table.commit([update, self._digests.written(changed)])
            return True

        try:
            return self._table.optimistic(attempt, what="its uses were written")
        except ConcurrentChange:
            return False

    def memory_owners(self, *, segment: int = 0, segments: int = 1) -> Iterator[str]:
        rules.int_range("segments", segments, 1, MAX_SCAN_SEGMENTS)
        rules.int_range("segment", segment, 0, segments - 1)
        cls = self._cls
        last: str | None = None
        # A partition's items come together in a scan, and a partition lies in one segment.
        for row in cls.scan(
            cls.sk.startswith(keys.MEMORY_PREFIX),
            segment=segment,
            total_segments=segments,
            attributes_to_get=["pk", "sk"],
        ):
            if str(row.pk).startswith(keys.USER_PK_PREFIX) and row.pk != last:
                last = str(row.pk)
                yield keys.user_of(last)

    def pending_uses(self, limit: int = 100) -> list[tuple[str, str]]:
        # A row without vectors waits under VECTORS# even when its uses wait too.
        return self._pending(
            (keys.USES_PREFIX, keys.VECTORS_PREFIX), lambda row: awaits_uses(row.meta), limit
        )

    def pending_vectors(self, limit: int = 100) -> list[tuple[str, str]]:
        return self._pending((keys.VECTORS_PREFIX,), lambda row: row.embedding is None, limit)

    def _pending(
        self, prefixes: Sequence[str], waiting: Callable[[Memory], bool], limit: int
    ) -> list[tuple[str, str]]:
        """The sweep index's entries under `prefixes` whose row still waits, oldest first."""
        rules.int_range("limit", limit, 1, MAX_PAGE)
        cls = self._cls
        shards: list[Iterable[MemoryItem]] = [
            cls.pending.query(shard, page_size=limit)
            for prefix in prefixes
            for shard in keys.pending_shards(prefix)
        ]
        # Each shard comes in index order (when written); merged, so do all of them.
        entries = (
            (keys.user_of(row.pk), row.sk.removeprefix(keys.MEMORY_PREFIX))
            for row in heapq.merge(*shards, key=lambda row: str(row.gsi1sk))
        )
        pending: list[tuple[str, str]] = []
        while len(pending) < limit:
            batch = list(islice(entries, limit - len(pending)))
            if not batch:
                break
            pending += self._still_awaiting(batch, waiting)
        return pending

    def drop_witness(self, witness: str) -> int:
        saw = self._saw
        owners = [
            marker.owner
            for marker in saw.query(
                keys.pk(witness), saw.sk.startswith(keys.SAW_PREFIX), consistent_read=True
            )
        ]
        return sum(self._drop_from(witness, owner) for owner in owners)

    def traces(self, user_id: str, memory_ids: Sequence[str] | None = None) -> list[MemoryTrace]:
        cls, pk = self._cls, keys.pk(user_id)
        # Only these attributes are read: a time that no longer reads (each is parsed as
        # the item loads) or words that break a rule never stand in a delete's way.
        if memory_ids is None:
            items: Iterable[MemoryItem] = cls.query(
                pk,
                cls.sk.startswith(keys.MEMORY_PREFIX),
                consistent_read=True,
                attributes_to_get=_TRACED,
            )
        else:
            wanted = unique(memory_ids)
            if not wanted:
                return []
            items = cls.batch_get(
                [(pk, keys.memory_sk(memory_id)) for memory_id in wanted],
                consistent_read=True,
                attributes_to_get=_TRACED,
            )
        forgotten = self._table.forgotten_before(user_id)
        floor = None if forgotten is None else keys.memory_lsi_after(forgotten)
        now = epoch_seconds(self._table.now())
        traces = [
            _trace_of(user_id, item)
            for item in items
            if not item.hidden
            and (item.ttl is None or item.ttl >= now)
            and (floor is None or item.lsi1sk >= floor)
        ]
        return sorted(traces, key=lambda trace: trace.memory_id)

    def hide_memories(self, user_id: str, memory_ids: Sequence[str]) -> None:
        wanted = unique(memory_ids)
        if not wanted:
            return
        cls, pk = self._cls, keys.pk(user_id)
        shown = [
            item.sk
            for item in cls.batch_get(
                [(pk, keys.memory_sk(memory_id)) for memory_id in wanted],
                consistent_read=True,
                attributes_to_get=["pk", "sk", "hidden"],
            )
            if not item.hidden
        ]
        # Guarded on the row existing, so a row the purge removed is never created again;
        # each row's digest marker goes with it.
        hides = [
            write
            for sk in shown
            for write in (
                Write("update", cls(pk, sk), cls.sk.exists(), (cls.hidden.set(True),)),
                self._digests.delete(user_id, sk.removeprefix(keys.MEMORY_PREFIX)),
            )
        ]
        self._table.commit_checked(hides, what="it was being hidden", in_order=True)

    def hide_active_memory(self, user_id: str, memory_id: str) -> None:
        cls = self._cls
        guard = all_of(*self._visible_guard(), cls.status == Status.ACTIVE.value)
        hide = Write("update", self._key(user_id, memory_id), guard, (cls.hidden.set(True),))
        marker = self._digests.delete(user_id, memory_id)
        self._table.commit_checked([hide, marker], what="it was being hidden")

    def reinstate_memory(self, reinstated: Memory, *, superseded_by: str) -> None:
        cls = self._cls
        guard = all_of(
            *self._visible_guard(),
            cls.status == Status.SUPERSEDED.value,
            cls.closed_by == superseded_by,
        )
        actions = (
            cls.status.set(Status.ACTIVE.value),
            cls.valid_to.remove(),
            cls.closed_by.remove(),
            cls.updated_at.set(reinstated.updated_at),
            *self._uses_index_actions(reinstated),
        )
        item = self._key(reinstated.user_id, reinstated.memory_id)
        marker = [self._threads.put(reinstated)] if is_active_thread(reinstated) else []
        marker.append(self._digests.written(reinstated))
        self._table.commit_checked(
            [Write("update", item, guard, actions), *marker], what="it was reinstated"
        )

    def purge_memories(self, user_id: str, memory_ids: Sequence[str]) -> None:
        # Its markers go with it (a thread's, a digest's); where there is none the delete
        # finds nothing.
        self._table.delete_all(
            [
                key
                for memory_id in unique(memory_ids)
                for key in (
                    self._key(user_id, memory_id),
                    self._threads.key(user_id, memory_id),
                    self._digests.key(user_id, memory_id),
                )
            ]
        )

    # ---- threads ----------------------------------------------------------------------------

    def list_threads(self, user_id: str, persona: str | None = None) -> list[Memory]:
        return self._threads.list_threads(user_id, persona)

    def set_thread_meta(
        self,
        user_id: str,
        memory_id: str,
        meta: Mapping[str, Any],
        at: datetime,
        *,
        expected: Mapping[str, Any],
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        expected_text = meta_text(expected)

        def change() -> Memory:
            current = self._active(user_id, memory_id)
            if current.kind is not Kind.THREAD:
                raise ConcurrentChange("only a thread's manners change in place")
            if meta_text(current.meta) != expected_text:
                raise ConcurrentChange("the thread's manners changed since they were read")
            changed = dataclasses.replace(
                current, meta=dict(meta), updated_at=max(at, current.updated_at)
            )
            self._commit_meta(current, changed, events)
            return changed

        # A lost race is read again: a use recorded meanwhile only moved `updated_at`, while
        # manners that moved on (or a row that stopped showing) end it on the next read.
        return self._table.optimistic(change, what="a thread's manners changed")

    def threads_due(self, on: date, limit: int = 100) -> list[tuple[str, str]]:
        rules.int_range("limit", limit, 1, MAX_PAGE)
        return self._threads.threads_due(on, limit)

    # ---- pieces of the writes ---------------------------------------------------------------

    def _key(self, user_id: str, memory_id: str) -> MemoryItem:
        return self._cls(keys.pk(user_id), keys.memory_sk(memory_id))

    def _digest_of_new(self, memory: Memory) -> list[Write]:
        """The digest marker of a row written for the first time: put while it is in use
        (a new row has no marker to delete)."""
        written = self._digests.written(memory)
        return [written] if written.kind == "put" else []

    def _uses_index_actions(self, memory: Memory) -> tuple[Action, Action]:
        """The row's keys in the sweep's index as `memory` says: set while it is active and
        waits for its vectors or its own uses, removed otherwise."""
        cls = self._cls
        pending = keys.pending_keys(memory)
        if not pending:
            return cls.gsi1pk.remove(), cls.gsi1sk.remove()
        return cls.gsi1pk.set(pending["gsi1pk"]), cls.gsi1sk.set(pending["gsi1sk"])

    def _still_awaiting(
        self, entries: Sequence[tuple[str, str]], waiting: Callable[[Memory], bool]
    ) -> list[tuple[str, str]]:
        """The entries whose row still shows, is active and still `waiting` (the index is
        eventually consistent, and a hidden row keeps its keys until its purge)."""
        awaiting: list[tuple[str, str]] = []
        by_user: dict[str, list[str]] = {}
        for user_id, memory_id in entries:
            by_user.setdefault(user_id, []).append(memory_id)
        rows = {
            user_id: self._visible_among(user_id, unique(memory_ids))
            for user_id, memory_ids in by_user.items()
        }
        for user_id, memory_id in entries:
            memory = rows[user_id].get(memory_id)
            if memory is not None and keys.pending_keys(memory) and waiting(memory):
                awaiting.append((user_id, memory_id))
        return awaiting

    def _visible_guard(self) -> tuple[Condition, Condition]:
        """A write's condition that the row exists and is not hidden."""
        return self._cls.sk.exists(), self._cls.hidden.does_not_exist()

    def _no_tombstone(self, user_id: str, memory_id: str) -> Write:
        """A transaction guard: the id was never deleted (so a purged row stays gone)."""
        tombstone = self._table.items.tombstone
        key = tombstone(keys.pk(user_id), keys.tombstone_sk(memory_id))
        return Write("check", key, tombstone.sk.does_not_exist())

    def _saw_writes(self, memory: Memory) -> list[Write]:
        """A marker update for every witness but the owner, for the row's transaction.

        An update, not a put: each write adds one to the marker's count, the token a
        `drop_witness` checks before it deletes the marker. InvalidField when the row and
        its markers cannot land in one atomic write.
        """
        saw, owner = self._saw, memory.user_id
        others = [witness for witness in unique(memory.witnessed) if witness != owner]
        # the row and its markers, and its guard or the row it closes and its markers
        if len(others) + 6 > TRANSACTION_MAX:
            raise InvalidField("witnessed", "too many to store in one atomic write")
        return [
            Write(
                "update",
                saw(keys.pk(witness), keys.saw_sk(owner)),
                actions=(saw.user_id.set(witness), saw.owner.set(owner), saw.writes.add(1)),
            )
            for witness in others
        ]

    def _taken(self, user_id: str, memory_id: str) -> bool:
        """True when the id is stored (shown or not) or was tombstoned."""
        row = self._table.get(self._cls, user_id, keys.memory_sk(memory_id))
        return row is not None or self._tombstoned(user_id, memory_id)

    def _tombstoned(self, user_id: str, memory_id: str) -> bool:
        tombstone = self._table.get(
            self._table.items.tombstone, user_id, keys.tombstone_sk(memory_id)
        )
        return tombstone is not None

    def _event_writes(self, user_id: str, events: Sequence[MemoryEvent]) -> list[Write]:
        return [Write("put", item) for item in event_items(self._table, events, owner=user_id)]

    def _active(self, user_id: str, memory_id: str) -> Memory:
        old = self.get_memory(user_id, memory_id)
        if old is None:
            raise MemoryNotFound(memory_id)
        if old.status is not Status.ACTIVE:
            raise ConcurrentChange(f"memory is {old.status}, not active")
        return old

    def _status_change(
        self,
        user_id: str,
        memory_id: str,
        changed: Memory,
        extra: Sequence[Write],
        events: Sequence[MemoryEvent],
    ) -> None:
        """Write a closed/superseded row, guarded so only an active visible row changes."""
        cls = self._cls
        valid_to, closed_by = changed.valid_to, changed.closed_by
        actions = (
            cls.status.set(changed.status.value),
            cls.updated_at.set(changed.updated_at),
            cls.valid_to.remove() if valid_to is None else cls.valid_to.set(valid_to),
            cls.closed_by.remove() if closed_by is None else cls.closed_by.set(closed_by),
            *self._uses_index_actions(changed),  # history waits for nothing
        )
        guard = all_of(*self._visible_guard(), cls.status == Status.ACTIVE.value)
        update = Write("update", self._key(user_id, memory_id), guard, actions)
        # A thread that stops being active drops its marker; any row, its digest marker.
        marker = [*self._threads.written(changed), self._digests.written(changed)]
        writes = [update, *marker, *extra, *self._event_writes(user_id, events)]
        try:
            self._table.commit_checked(writes, what="it was being updated")
        except ConcurrentChange as exc:
            if self.get_memory(user_id, memory_id) is None:
                raise MemoryNotFound(memory_id) from exc
            raise

    def _commit_meta(self, current: Memory, changed: Memory, events: Sequence[MemoryEvent]) -> None:
        """Write the new meta of a thread row, guarded on the row as read: still shown,
        active, a thread, with the same meta and `updated_at`; its marker follows (out of
        the sweep's index once the thread is no longer live)."""
        cls = self._cls
        guard = all_of(
            *self._visible_guard(),
            cls.status == Status.ACTIVE.value,
            cls.kind == Kind.THREAD.value,
            cls.meta == meta_text(current.meta),
            cls.updated_at == current.updated_at,
        )
        actions = (cls.meta.set(meta_text(changed.meta)), cls.updated_at.set(changed.updated_at))
        update = Write("update", self._key(current.user_id, current.memory_id), guard, actions)
        events_written = self._event_writes(current.user_id, events)
        digest = self._digests.written(changed)
        self._table.commit([update, self._threads.put(changed), digest, *events_written])

    def _record_use_once(
        self, user_id: str, memory_ids: Sequence[str], at: datetime, events: Sequence[MemoryEvent]
    ) -> None:
        cls = self._cls
        visible = self._visible_among(user_id, memory_ids)
        writes: list[Write] = []
        for memory in visible.values():
            used = fading.reinforced(memory, at) if memory.status is Status.ACTIVE else memory
            after = used.recalled(at)  # reinforcing leaves `updated_at` as read
            actions = (
                cls.last_used_at.set(at),
                cls.updated_at.set(after.updated_at),
                cls.recall_count.add(1),
                *self._fading_actions(used),
            )
            # Guarded on the row as read, but for what this write sets: its digest
            # marker, written alongside, copies the rest.
            guard = all_of(*as_read(cls, memory, besides=_USE_FIELDS))
            writes.append(Write("update", self._key(user_id, memory.memory_id), guard, actions))
            if memory.status is Status.ACTIVE:
                writes.append(self._digests.written(after))
        writes += self._event_writes(user_id, [e for e in events if e.memory_id in visible])
        # The updates and markers come first and always fit; only surplus events
        # (idempotent puts) can spill past one transaction, and they are written once it
        # has committed.
        self._table.commit(writes[:TRANSACTION_MAX])
        self._table.put_all([write.item for write in writes[TRANSACTION_MAX:]])

    def _set_fading_once(
        self, user_id: str, memories: Sequence[Memory], events: Sequence[MemoryEvent]
    ) -> None:
        cls = self._cls
        wanted = {memory.memory_id: memory for memory in memories}
        active = {
            memory_id: memory
            for memory_id, memory in self._visible_among(user_id, list(wanted)).items()
            if memory.status is Status.ACTIVE
        }
        writes: list[Write] = []
        for memory_id, current in active.items():
            given = wanted[memory_id]
            after = dataclasses.replace(
                current,
                stability_days=given.stability_days,
                reinforced_at=given.reinforced_at,
                archived_at=given.archived_at,
            )
            # Guarded on the row as read (active, and the rest its digest marker copies).
            guard = all_of(*as_read(cls, current, besides=_FADING_FIELDS))
            writes.append(
                Write("update", self._key(user_id, memory_id), guard, self._fading_actions(after))
            )
            writes.append(self._digests.written(after))
        writes += self._event_writes(user_id, [e for e in events if e.memory_id in active])
        self._table.commit(writes[:TRANSACTION_MAX])
        self._table.put_all([write.item for write in writes[TRANSACTION_MAX:]])

    def _fading_actions(self, memory: Memory) -> tuple[Action, ...]:
        cls = self._cls
        return (
            cls.stability_days.remove()
            if memory.stability_days is None
            else cls.stability_days.set(memory.stability_days),
            cls.reinforced_at.remove()
            if memory.reinforced_at is None
            else cls.reinforced_at.set(memory.reinforced_at),
            cls.archived_at.remove()
            if memory.archived_at is None
            else cls.archived_at.set(memory.archived_at),
        )

    def _drop_from(self, witness: str, owner: str) -> int:
        """Take the witness out of the owner's rows, then delete the marker — unless a
        write naming them landed meanwhile (its count moved on): then go round again."""
        cls, saw = self._cls, self._saw
        marker_key = saw(keys.pk(witness), keys.saw_sk(owner))
        changed = 0

        def sweep() -> None:
            nonlocal changed
            marker = self._table.get(saw, witness, keys.saw_sk(owner))
            if marker is None:
                return
            # Every status, hidden rows too: a row waiting for its purge keeps no id either.
            changed += strike_witness(
                self._table, cls, keys.pk(owner), witness, partial(self._key, owner)
            )
            self._table.commit([Write("delete", marker_key, saw.writes == marker.writes)])

        self._table.optimistic(sweep, what="a witness was dropped", changing="the rows")
        return changed


# What `set_fading` writes of a row, and `record_use` besides.
_FADING_FIELDS = ("stability_days", "reinforced_at", "archived_at")
_USE_FIELDS = (*_FADING_FIELDS, "last_used_at", "updated_at")


# What a delete reads of a row (MemoryTrace): its keys, whether it shows, and its ids.
_TRACED = [
    "pk",
    "sk",
    "lsi1sk",
    "hidden",
    "ttl",
    "memory_id",
    "persona",
    "kind",
    "status",
    "supersedes",
    "room_id",
    "source_message_id",
    "evidence",
]


def _trace_of(user_id: str, item: MemoryItem) -> MemoryTrace:
    evidence = item.evidence if isinstance(item.evidence, list) else []
    return MemoryTrace.read(
        user_id,
        item.sk.removeprefix(keys.MEMORY_PREFIX),
        persona=item.persona,
        kind=item.kind,
        status=item.status,
        supersedes=item.supersedes,
        room_id=item.room_id,
        message_ids=[item.source_message_id, *evidence],
    )
