"""A persona's own rows on DynamoDB: MEM#<memory_id> items under `P#<persona>`, listed
through the by_created LSI, and WITNESS#<persona> markers in each witness's partition.

A row is written together with a marker in the partition `U#<user>` of every user it
lists as a witness (an idempotent put), so `drop_witness` reads the user's markers
instead of scanning every persona's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import partial

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.items import MemoryItem
from chatmemory.adapters.dynamodb.mapping import (
    memory_from_item,
    persona_memory_item,
    witness_item,
)
from chatmemory.adapters.dynamodb.table import (
    TRANSACTION_MAX,
    LostRace,
    Table,
    Write,
    all_of,
    chunks,
    strike_witness,
    unexpired,
    unique,
)
from chatmemory.domain.errors import ConcurrentChange, InvalidField, MemoryNotFound
from chatmemory.domain.memory import Memory, Status
from chatmemory.domain.memory import check_persona_row as domain_check_persona_row
from chatmemory.ports.persona_memories import PersonaMemoryStore


class DynamoPersonaMemoryStore(PersonaMemoryStore):
    """A persona's rows in its own partition; every read strongly consistent."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._cls = table.items.memory
        self._witness = table.items.witness

    # ---- reads ------------------------------------------------------------------------------

    def list_persona_memories(
        self, persona: str, status: Status | None = Status.ACTIVE
    ) -> list[Memory]:
        cls = self._cls
        condition = unexpired(cls.ttl, self._table.now())
        if status is not None:
            condition = all_of(condition, cls.status == status.value)
        # The LSI key is MEM#<created_at>#<id>: newest first is a descending query.
        rows = cls.by_created.query(
            keys.persona_pk(persona),
            cls.lsi1sk.between(keys.MEMORY_PREFIX, keys.MEMORY_LSI_END),
            filter_condition=condition,
            consistent_read=True,
            scan_index_forward=False,
        )
        found = (self._live(row) for row in rows)
        return [memory for memory in found if memory is not None]

    def _get(self, persona: str, memory_id: str) -> Memory | None:
        item = self._table.get_at(self._cls, keys.persona_pk(persona), keys.memory_sk(memory_id))
        return None if item is None else self._live(item)

    def _live(self, item: MemoryItem) -> Memory | None:
        """The row, unless its shelf life passed (TTL deletes lazily)."""
        memory = memory_from_item(item)
        return None if memory.is_expired(self._table.now()) else memory

    # ---- writes -----------------------------------------------------------------------------

    def add_persona_memory(self, memory: Memory) -> bool:
        check_persona_row(memory)
        writes = [self._insert(memory), *self._witness_writes(memory)]

        def add() -> bool:
            try:
                self._table.commit(writes)
            except LostRace:
                if self._get(memory.persona, memory.memory_id) is not None:
                    return False
                raise  # a conflicting transaction, not the id: try again
            return True

        return self._table.optimistic(add, what="it was added")

    def supersede_persona_memory(self, persona: str, old_memory_id: str, new: Memory) -> Memory:
        check_persona_row(new, persona)
        if new.supersedes != old_memory_id:
            raise InvalidField("supersedes", "the new memory must name the row it supersedes")
        closed = self._active(persona, old_memory_id).superseded_by(new)
        self._status_change(closed, [self._insert(new), *self._witness_writes(new)])
        return closed

    def close_persona_memory(
        self, persona: str, memory_id: str, at: datetime, closed_by: str | None = None
    ) -> Memory:
        closed = self._active(persona, memory_id).closed(at, closed_by)
        self._status_change(closed, [])
        return closed

    def record_persona_use(self, persona: str, memory_ids: Sequence[str], at: datetime) -> None:
        for chunk in chunks(unique(memory_ids)):
            once = partial(self._record_use_once, persona, chunk, at)
            self._table.optimistic(once, what="their use was recorded")

    def drop_witness(self, user_id: str) -> int:
        markers = self._witness.query(
            keys.pk(user_id),
            self._witness.sk.startswith(keys.WITNESS_PREFIX),
            consistent_read=True,
        )
        return sum(self._drop_from(user_id, marker.persona) for marker in markers)

    # ---- pieces of the writes ---------------------------------------------------------------

    def _key(self, persona: str, memory_id: str) -> MemoryItem:
        return self._cls(keys.persona_pk(persona), keys.memory_sk(memory_id))

    def _insert(self, memory: Memory) -> Write:
        item = persona_memory_item(self._table.items, memory)
        return Write("put", item, self._cls.sk.does_not_exist())

    def _witness_writes(self, memory: Memory) -> list[Write]:
        """The markers of every witness, in the row's transaction (one per user)."""
        items = self._table.items
        return [
            Write("put", witness_item(items, user, memory)) for user in unique(memory.witnessed)
        ]

    def _active(self, persona: str, memory_id: str) -> Memory:
        old = self._get(persona, memory_id)
        if old is None:
            raise MemoryNotFound(memory_id)
        if old.status is not Status.ACTIVE:
            raise ConcurrentChange(f"memory is {old.status}, not active")
        return old

    def _status_change(self, changed: Memory, extra: Sequence[Write]) -> None:
        """Write a closed/superseded row, guarded so only an active row changes."""
        cls = self._cls
        valid_to, closed_by = changed.valid_to, changed.closed_by
        actions = (
            cls.status.set(changed.status.value),
            cls.updated_at.set(changed.updated_at),
            cls.valid_to.remove() if valid_to is None else cls.valid_to.set(valid_to),
            cls.closed_by.remove() if closed_by is None else cls.closed_by.set(closed_by),
        )
        guard = all_of(cls.sk.exists(), cls.status == Status.ACTIVE.value)
        update = Write("update", self._key(changed.persona, changed.memory_id), guard, actions)
        self._table.commit_checked([update, *extra], what="it was being updated")

    def _record_use_once(self, persona: str, memory_ids: Sequence[str], at: datetime) -> None:
        cls = self._cls
        pk = keys.persona_pk(persona)
        found = cls.batch_get(
            [(pk, keys.memory_sk(memory_id)) for memory_id in memory_ids], consistent_read=True
        )
        writes = [
            Write(
                "update",
                self._key(persona, row.memory_id),
                cls.sk.exists(),
                (
                    cls.last_used_at.set(at),
                    cls.updated_at.set(memory_from_item(row).recalled(at).updated_at),
                    cls.recall_count.add(1),
                ),
            )
            for row in found
        ]
        self._table.commit(writes)

    def _drop_from(self, user_id: str, persona: str) -> int:
        """Take the user out of this persona's rows, then delete the marker — unless a row
        naming them was written meanwhile (the marker moved on): then go round again."""
        cls, witness = self._cls, self._witness
        marker_key = witness(keys.pk(user_id), keys.witness_sk(persona))
        changed = 0

        def sweep() -> None:
            nonlocal changed
            marker = self._table.get(witness, user_id, keys.witness_sk(persona))
            if marker is None:
                return
            changed += strike_witness(
                self._table, cls, keys.persona_pk(persona), user_id, partial(self._key, persona)
            )
            self._table.commit([Write("delete", marker_key, witness.memory_id == marker.memory_id)])

        self._table.optimistic(sweep, what="a witness was dropped", changing="the persona's rows")
        return changed


def check_persona_row(memory: Memory, persona: str | None = None) -> None:
    """The domain's rule, and one more of this table: the row and a marker per witness
    must fit one transaction."""
    domain_check_persona_row(memory, persona)
    if len(unique(memory.witnessed)) + 2 > TRANSACTION_MAX:
        raise InvalidField("witnessed", "too many to store in one atomic write")
