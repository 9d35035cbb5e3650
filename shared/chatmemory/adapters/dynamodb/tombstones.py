"""Deletion bookkeeping on DynamoDB: TOMB#<memory_id> items and the USER item's watermark."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pynamodb.expressions.condition import Or

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.mapping import tombstone_from_item, tombstone_item
from chatmemory.adapters.dynamodb.table import LostRace, Table, Write, check_owner
from chatmemory.domain.time import from_storage, to_storage
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.deletions import TombstoneStore
from chatmemory.ports.pages import MAX_PAGE


class DynamoTombstoneStore(TombstoneStore):
    """Tombstones in the user's partition; unpurged ones also in the sweep's sparse index."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def add_tombstones(
        self, user_id: str, tombstones: Sequence[Tombstone], *, first_only: bool = True
    ) -> None:
        firsts: dict[str, Tombstone] = {}
        for tombstone in tombstones:
            check_owner(user_id, tombstone.user_id)
            firsts.setdefault(tombstone.memory_id, tombstone)
        if not firsts:
            return
        existing = self._existing(user_id, list(firsts)) if first_only else set()
        cls = self._table.items.tombstone
        # Guarded even when read as new: a tombstone written since fails the unit of work
        # (which, retrying, reads it as existing next time), or alone a ConcurrentChange.
        puts = [
            Write("put", tombstone_item(self._table.items, t), cls.sk.does_not_exist())
            for memory_id, t in firsts.items()
            if memory_id not in existing
        ]
        self._table.commit_checked(puts, what="it was being deleted", in_order=True)

    def get_tombstone(self, user_id: str, memory_id: str) -> Tombstone | None:
        item = self._table.get(self._table.items.tombstone, user_id, keys.tombstone_sk(memory_id))
        return None if item is None else tombstone_from_item(item)

    def list_tombstones(self, user_id: str, *, unpurged_only: bool = False) -> list[Tombstone]:
        cls = self._table.items.tombstone
        rows = cls.query(
            keys.pk(user_id),
            cls.sk.startswith(keys.TOMBSTONE_PREFIX),
            filter_condition=cls.purged_at.does_not_exist() if unpurged_only else None,
            consistent_read=True,
        )
        found = [tombstone_from_item(row) for row in rows]
        return sorted(found, key=lambda t: (t.deleted_at, t.memory_id))

    def put_tombstone(self, tombstone: Tombstone) -> None:
        # Through commit, so it joins a unit of work (the purge marks a tombstone purged
        # and records the purge's audit event together).
        self._table.commit([Write("put", tombstone_item(self._table.items, tombstone))])

    def raise_forget_watermark(self, user_id: str, at: datetime) -> bool:
        cls = self._table.items.user_state
        watermark = Write(
            "update",
            cls(keys.pk(user_id), keys.USER_SK),
            # Never moves back: an older "forget" replayed late must not un-hide anything.
            Or(cls.forgotten_before.does_not_exist(), cls.forgotten_before < at),
            (cls.forgotten_before.set(at),),
        )
        try:
            self._table.commit([watermark])
        except LostRace:
            return False
        return True

    def forgotten_before(self, user_id: str) -> datetime | None:
        stored = self._table.forgotten_before(user_id)
        return None if stored is None else from_storage(stored)

    def pending_purges(self, *, deleted_before: datetime, limit: int = 100) -> list[str]:
        cls = self._table.items.tombstone
        before = to_storage(deleted_before)
        oldest: dict[str, str] = {}
        for shard in keys.pending_shards(keys.PURGE_PREFIX):
            users_here = 0
            for row in cls.pending.query(shard, cls.gsi1sk < before, page_size=MAX_PAGE):
                # A shard's rows come oldest first.
                deleted_at, user_id = keys.purge_pending_of(str(row.gsi1sk))
                if user_id not in oldest:
                    oldest[user_id] = deleted_at
                    users_here += 1
                    if users_here >= limit:  # later rows of this shard cannot rank higher
                        break
        ranked = sorted(oldest.items(), key=lambda pair: (pair[1], pair[0]))
        return [user_id for user_id, _ in ranked[:limit]]

    def _existing(self, user_id: str, memory_ids: Sequence[str]) -> set[str]:
        """Which of these ids already have a tombstone: one consistent BatchGet of keys."""
        pk = keys.pk(user_id)
        found = self._table.items.tombstone.batch_get(
            [(pk, keys.tombstone_sk(memory_id)) for memory_id in memory_ids],
            consistent_read=True,
            attributes_to_get=["pk", "sk"],
        )
        return {item.sk.removeprefix(keys.TOMBSTONE_PREFIX) for item in found}
