"""The memory rows: what chatmemory believes about a user, with every version it kept.

Visibility, the same in every adapter: a memory is hidden from every read once it has
a tombstone (its row is hidden), once a "forget everything" happened after it was
created, or once `valid_until` passed (DynamoDB's TTL deletes lazily, so adapters filter
expired rows themselves). Listings are newest first (created_at, then id, descending).
Writes that take `events` store those audit events in the same atomic write.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chatmemory.domain.events import MemoryEvent
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.ports.pages import MAX_PAGE, Page

#: the most parts `MemoryStore.memory_owners` splits into (DynamoDB's TotalSegments limit)
MAX_SCAN_SEGMENTS = 1_000_000


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """Which of a user's memories to list. `status=None` means every status, `kind=None`
    every kind."""

    status: Status | None = Status.ACTIVE
    persona: str | None = None
    created_after: datetime | None = None
    kind: Kind | None = None


class MemoryStore(ABC):
    """Reads and writes of a user's memory rows."""

    @abstractmethod
    def add_memory(self, memory: Memory, events: Sequence[MemoryEvent] = ()) -> bool:
        """Insert a new row; False (and nothing written) if the id exists or was tombstoned."""

    @abstractmethod
    def put_memory(self, memory: Memory, events: Sequence[MemoryEvent] = ()) -> None:
        """Insert or replace the whole row (e.g. to attach an embedding); a hidden row stays
        hidden. MemoryNotFound for an id with a tombstone: a deleted memory is never
        written again, even after the purge removed its row."""

    @abstractmethod
    def get_memory(self, user_id: str, memory_id: str) -> Memory | None:
        """The visible row, or None (absent, another user's, tombstoned, forgotten, expired)."""

    @abstractmethod
    def get_memories(self, user_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        """The visible rows among these ids, in the order asked (missing ones left out)."""

    @abstractmethod
    def list_memories(
        self,
        user_id: str,
        query: MemoryQuery | None = None,
        *,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Memory]:
        """A page of visible rows matching `query` (default: active), newest first.

        `limit` is 1..MAX_PAGE; `created_after` keeps rows created strictly after it.
        InvalidField("next") for a cursor this store did not issue for this user.
        """

    def iter_memories(self, user_id: str, query: MemoryQuery | None = None) -> Iterator[Memory]:
        """Every visible row matching `query`, newest first, page by page."""
        cursor: str | None = None
        while True:
            page = self.list_memories(user_id, query, limit=MAX_PAGE, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    @abstractmethod
    def id_in_use(self, user_id: str, memory_id: str) -> bool:
        """Whether any row of the user holds this id, shown or not (deleted, an older
        version of a deleted memory, forgotten, expired): an id once used is never given
        to another row, and only this read sees the rows no other read shows."""

    def visible_ids(self, user_id: str, memory_ids: Sequence[str]) -> set[str]:
        """Which of these ids still name a visible memory (any status): ids only, no text.

        The read path's check that a recent reply it is about to show did not quote a
        memory deleted since; it reads no memory into the prompt.
        """
        return {memory.memory_id for memory in self.get_memories(user_id, memory_ids)}

    @abstractmethod
    def supersede_memory(
        self,
        user_id: str,
        old_memory_id: str,
        new_memory: Memory,
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        """Atomically close `old_memory_id` as superseded by `new_memory` and write the new row.

        The old row becomes `old.superseded_by(new_memory)`; the new row must say
        `supersedes=old_memory_id`. Returns the old row as stored. MemoryNotFound if the
        old row is not visible, ConcurrentChange if it is no longer active or the new id
        exists — in every failure nothing is written.
        """

    @abstractmethod
    def close_memory(
        self,
        user_id: str,
        memory_id: str,
        at: datetime,
        closed_by: str | None = None,
        events: Sequence[MemoryEvent] = (),
    ) -> Memory:
        """Mark an active row closed (stopped being true, nothing replaced it).

        Returns the closed row. MemoryNotFound if not visible; ConcurrentChange if not active.
        """

    @abstractmethod
    def record_use(
        self,
        user_id: str,
        memory_ids: Sequence[str],
        at: datetime,
        events: Sequence[MemoryEvent] = (),
    ) -> None:
        """Reinforce memories loaded into a prompt: `last_used_at=at`, `recall_count += 1`,
        and, on an active row, the fading fields as `fading.reinforced(row, at)` says.

        Ids that are not visible are skipped silently (a delete may race a read), and so
        are the events about them.
        """

    @abstractmethod
    def set_fading(
        self, user_id: str, memories: Sequence[Memory], events: Sequence[MemoryEvent] = ()
    ) -> None:
        """Write only the fading fields (`stability_days`, `reinforced_at`, `archived_at`)
        of these rows as given: new evidence, the cap setting one aside, a revival.

        Rows that are no longer visible and active are skipped silently, with their events.
        """

    @abstractmethod
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
        """Write a row's own uses (`meta`, whose uses must be written for the memory:
        InvalidField if it still says they wait, domain/uses_origin.py) and the vectors
        made from them, in one atomic compare-and-set on the row as it was read
        (`expected`). `own=False` is a re-index: new vectors for the uses it has, borrowed
        or not.

        Written only while the row still shows, is active and says what `expected` says:
        the same text, category and meta. False, and nothing written, otherwise: a
        correction, a delete, a close or a rewrite since always wins. A use recorded
        meanwhile (`updated_at` and the fading fields) is no change to what was read, and
        is kept. `updated_at` is left alone: what the memory says did not change.
        """

    @abstractmethod
    def memory_owners(self, *, segment: int = 0, segments: int = 1) -> Iterator[str]:
        """Every user with a memory row, each once, in no set order: what a re-index goes
        through. `segments` splits them into that many disjoint parts (parallel runs), of
        which this is part `segment`. Reads every row's key on DynamoDB (a scan): an
        operator's tool, never a request's."""

    @abstractmethod
    def pending_uses(self, limit: int = 100) -> list[tuple[str, str]]:
        """(user id, memory id) of visible active rows, of every user, whose uses still
        wait to be written for them (borrowed, carried or none), oldest first: what
        `chatmemory flush` catches up. Ids only; the caller reads each row again."""

    @abstractmethod
    def pending_vectors(self, limit: int = 100) -> list[tuple[str, str]]:
        """(user id, memory id) of visible active rows, of every user, stored without
        vectors (the embedder failed when they were written), oldest first: recall cannot
        find them until the uses job embeds them again. Ids only, as `pending_uses`."""

    @abstractmethod
    def drop_witness(self, witness: str) -> int:
        """Take this user out of the `witnessed` list of every row in other users'
        partitions that lists them (any status, hidden rows too); how many rows changed.

        Nothing else about a row changes (not `updated_at`: what it says did not), and
        the witness's own rows are left alone. Idempotent: a second call changes none.
        """
