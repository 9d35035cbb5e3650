"""Thread markers on DynamoDB: a THREAD#<memory_id> item in the user's partition for each
of their active thread rows, and the two reads that start from them.

A marker is written, or deleted, in the same transaction as the row write that makes the
row an active thread or stops it being one, so a user's threads are one query of their
markers and one BatchGet of those rows — never a read of their other rows. While the
thread is live the marker also sits in the sweep's index under THREAD#<shard>, keyed by
the day the nightly review would put it to sleep.

A marker may outlive what it stands for: a hidden row keeps its marker until the purge
removes both, a forgotten one until its purge. Every read therefore checks the row
itself, so a stale marker only costs a read.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date
from itertools import islice

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.items import MemoryItem, ThreadItem
from chatmemory.adapters.dynamodb.mapping import thread_item
from chatmemory.adapters.dynamodb.table import Table, Write
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.threads import review_date
from chatmemory.domain.time import to_storage

#: a row as a read may return it, given the user's forget watermark (None when it is hidden,
#: expired or forgotten)
Visible = Callable[[MemoryItem, str | None], Memory | None]


def is_active_thread(memory: Memory) -> bool:
    return memory.kind is Kind.THREAD and memory.status is Status.ACTIVE


class ThreadMarkers:
    """The markers' writes, for the memory store's transactions, and the reads they serve."""

    def __init__(self, table: Table, visible: Visible) -> None:
        self._table = table
        self._cls = table.items.thread
        self._visible = visible

    # ---- writes, each for the transaction of the row it follows -------------------------

    def written(self, memory: Memory) -> list[Write]:
        """The marker's write for a row written whole: put while it is an active thread,
        deleted when a thread row is written as history; nothing for other kinds."""
        if is_active_thread(memory):
            return [self.put(memory)]
        if memory.kind is Kind.THREAD:
            return [self.delete(memory.user_id, memory.memory_id)]
        return []

    def put(self, memory: Memory) -> Write:
        """The marker of an active thread row, with its review keys while it is live."""
        return Write("put", thread_item(self._table.items, memory))

    def delete(self, user_id: str, memory_id: str) -> Write:
        return Write("delete", self.key(user_id, memory_id))

    def key(self, user_id: str, memory_id: str) -> ThreadItem:
        return self._cls(keys.pk(user_id), keys.thread_sk(memory_id))

    # ---- reads --------------------------------------------------------------------------

    def list_threads(self, user_id: str, persona: str | None = None) -> list[Memory]:
        """The user's visible active thread rows (of `persona`), newest first."""
        cls = self._cls
        markers = cls.query(
            keys.pk(user_id),
            cls.sk.startswith(keys.THREAD_PREFIX),
            filter_condition=None if persona is None else cls.persona == persona,
            consistent_read=True,
            attributes_to_get=["pk", "sk", "memory_id"],
        )
        memory_ids = [marker.memory_id for marker in markers]
        if not memory_ids:
            return []
        forgotten = self._table.forgotten_before(user_id)
        pk = keys.pk(user_id)
        rows = self._table.items.memory.batch_get(
            [(pk, keys.memory_sk(memory_id)) for memory_id in memory_ids], consistent_read=True
        )
        threads = [
            memory
            for memory in (self._visible(row, forgotten) for row in rows)
            if memory is not None
            and is_active_thread(memory)
            and (persona is None or memory.persona == persona)
        ]
        threads.sort(key=lambda m: (m.created_at, m.memory_id), reverse=True)
        return threads

    def threads_due(self, on: date, limit: int) -> list[tuple[str, str]]:
        """(user id, memory id) of live threads due on or before `on`, oldest first: the
        index's entries merged across shards, each checked against its row, until `limit`
        of them hold."""
        cls = self._cls
        below = keys.thread_due_after(on)
        shards: list[Iterable[ThreadItem]] = [
            cls.pending.query(shard, cls.gsi1sk < below, page_size=limit)
            for shard in keys.pending_shards(keys.THREAD_PREFIX)
        ]
        # Each shard comes in index order; merged, so do all of them.
        entries = (
            (keys.user_of(row.pk), row.sk.removeprefix(keys.THREAD_PREFIX))
            for row in heapq.merge(*shards, key=lambda row: str(row.gsi1sk))
        )
        due: list[tuple[date, str, str]] = []
        while len(due) < limit:
            batch = list(islice(entries, limit - len(due)))
            if not batch:
                break
            due += self._still_due(batch, on)
        due.sort()
        return [(user_id, memory_id) for _, user_id, memory_id in due]

    def _still_due(
        self, entries: Sequence[tuple[str, str]], on: date
    ) -> Iterator[tuple[date, str, str]]:
        """The entries whose row is still a visible live thread due by `on` (the index is
        eventually consistent, and a hidden or forgotten row keeps its marker a while)."""
        users = list(dict.fromkeys(user_id for user_id, _ in entries))
        forgotten = self._watermarks(users)
        rows = {
            (row.user_id, row.memory_id): row
            for row in self._table.items.memory.batch_get(
                [(keys.pk(u), keys.memory_sk(m)) for u, m in dict.fromkeys(entries)],
                consistent_read=True,
            )
        }
        for user_id, memory_id in entries:
            row = rows.get((user_id, memory_id))
            memory = None if row is None else self._visible(row, forgotten.get(user_id))
            review_on = None if memory is None else review_date(memory)
            if review_on is not None and review_on <= on:
                yield review_on, user_id, memory_id

    def _watermarks(self, users: Sequence[str]) -> dict[str, str]:
        """Each user's "forget everything" watermark (storage form), for those who have one."""
        cls = self._table.items.user_state
        found: dict[str, str] = {}
        for state in cls.batch_get(
            [(keys.pk(user_id), keys.USER_SK) for user_id in users], consistent_read=True
        ):
            if state.forgotten_before is not None:
                found[keys.user_of(state.pk)] = to_storage(state.forgotten_before)
        return found
