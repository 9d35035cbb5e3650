"""Deletion bookkeeping on DynamoDB: TOMB#<memory_id> items, their UNPURGED#<memory_id>
copies while a purge is pending, and the USER item's watermark.

Every turn asks for the tombstones whose purge has not finished (a summary or profile
that may still hold a deleted memory is withheld until then). Tombstones are kept for
good, so reading them all would cost each turn more the more the user ever deleted; the
copy of each pending one, written and deleted in the same transaction as the tombstone
itself, makes that read cost what is pending. A partition from before the copies reads
its tombstones once, writes the copies missing and marks the USER item's
`unpurged_copies`, as the digest markers do (see `digests`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from pynamodb.exceptions import PynamoDBException
from pynamodb.expressions.condition import Or

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.digests import mark_user
from chatmemory.adapters.dynamodb.items import UserMarkersItem, bind_item
from chatmemory.adapters.dynamodb.mapping import tombstone_from_item, tombstone_item
from chatmemory.adapters.dynamodb.table import (
    TRANSACTION_MAX,
    LostRace,
    Table,
    Write,
    all_of,
    check_owner,
    chunks,
)
from chatmemory.domain.time import from_storage, to_storage
from chatmemory.domain.tombstone import Tombstone
from chatmemory.ports.deletions import TombstoneStore
from chatmemory.ports.pages import MAX_PAGE

log = logging.getLogger(__name__)

#: what `unpurged_copies` on the USER item says once every pending tombstone has its copy
COPIES = 1


class DynamoTombstoneStore(TombstoneStore):
    """Tombstones in the user's partition; unpurged ones also in the sweep's sparse index."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._state = bind_item(table.items, UserMarkersItem)

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
        # Each copy lands before its tombstone, so a turn never misses a pending purge.
        puts = [
            write
            for memory_id, t in firsts.items()
            if memory_id not in existing
            for write in (
                self._copy(t),
                Write("put", tombstone_item(self._table.items, t), cls.sk.does_not_exist()),
            )
        ]
        self._table.commit_checked(puts, what="it was being deleted", in_order=True)

    def get_tombstone(self, user_id: str, memory_id: str) -> Tombstone | None:
        item = self._table.get(self._table.items.tombstone, user_id, keys.tombstone_sk(memory_id))
        return None if item is None else tombstone_from_item(item)

    def list_tombstones(self, user_id: str, *, unpurged_only: bool = False) -> list[Tombstone]:
        cls = self._table.items.tombstone
        if unpurged_only and self._copies_complete(user_id):
            prefix = keys.UNPURGED_PREFIX
        else:
            prefix = keys.TOMBSTONE_PREFIX
        rows = cls.query(
            keys.pk(user_id),
            cls.sk.startswith(prefix),
            filter_condition=cls.purged_at.does_not_exist() if unpurged_only else None,
            consistent_read=True,
        )
        found = [tombstone_from_item(row) for row in rows]
        if unpurged_only and prefix == keys.TOMBSTONE_PREFIX:
            self._complete(user_id, found)
        return sorted(found, key=lambda t: (t.deleted_at, t.memory_id))

    def put_tombstone(self, tombstone: Tombstone) -> None:
        # Through commit, so it joins a unit of work (the purge marks a tombstone purged
        # and records the purge's audit event together); the copy goes with it.
        self._table.commit(
            [self._copy(tombstone), Write("put", tombstone_item(self._table.items, tombstone))]
        )

    # ---- the copies of pending tombstones -----------------------------------------------

    def _copy(self, tombstone: Tombstone) -> Write:
        """The copy's write for a tombstone as written: put while its purge is pending,
        deleted once it is done. A copy is never in the sweep's index."""
        cls = self._table.items.tombstone
        key = keys.unpurged_sk(tombstone.memory_id)
        if tombstone.is_purged:
            return Write("delete", cls(keys.pk(tombstone.user_id), key))
        copy = tombstone_item(self._table.items, tombstone)
        copy.sk, copy.gsi1pk, copy.gsi1sk = key, None, None
        return Write("put", copy)

    def _copies_complete(self, user_id: str) -> bool:
        state = self._table.get(self._state, user_id, keys.USER_SK)
        return state is not None and state.unpurged_copies == COPIES

    def _complete(self, user_id: str, pending: Sequence[Tombstone]) -> None:
        """Write the copy of each of these pending tombstones (again, if it has one), each
        with a check that its tombstone is still as read, then mark the user's copies
        complete. Outside a unit of work only; a failure leaves it for the next read."""
        if self._table.in_unit:
            return
        cls = self._table.items.tombstone
        pk = keys.pk(user_id)
        try:
            for chunk in chunks(list(pending), TRANSACTION_MAX // 2):
                writes: list[Write] = []
                for tombstone in chunk:
                    # Only the purge changes a tombstone, and only these two fields.
                    as_read = all_of(
                        cls.sk.exists(),
                        cls.purged_at.does_not_exist(),
                        cls.purge_error.does_not_exist()
                        if tombstone.purge_error is None
                        else cls.purge_error == tombstone.purge_error,
                    )
                    key = cls(pk, keys.tombstone_sk(tombstone.memory_id))
                    writes += [Write("check", key, as_read), self._copy(tombstone)]
                self._table.commit(writes)
            mark_user(self._table, self._state, user_id, self._state.unpurged_copies.set(COPIES))
        except (LostRace, PynamoDBException) as exc:
            log.warning(
                "tombstone copies not written yet", extra={"error_type": type(exc).__name__}
            )

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
