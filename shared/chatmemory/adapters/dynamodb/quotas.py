"""A user's quota counters on DynamoDB: one QUOTA#<quota>#<window> item per minute."""

from __future__ import annotations

from datetime import datetime, timedelta

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.items import QuotaItem, bind_item
from chatmemory.adapters.dynamodb.table import LostRace, Table, Write
from chatmemory.domain.quotas import (
    Quota,
    QuotaDecision,
    Stored,
    allowed,
    refused,
    window_end,
    window_key,
)
from chatmemory.domain.time import epoch_seconds
from chatmemory.ports.quotas import QuotaStore

#: how long a counter outlives its window before TTL may delete it (TTL is lazy: a row
#: past its time is never read again anyway, since the next window has its own key)
KEPT_AFTER_WINDOW = timedelta(minutes=5)


class DynamoQuotaStore(QuotaStore):
    """A take is one UpdateItem: `ADD taken :cost` on the window's item, conditioned on
    the count leaving room for it, so DynamoDB counts and compares in one atomic step."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._item = bind_item(table.items, QuotaItem)

    def take(self, user_id: str, quota: Quota, now: datetime, cost: int = 1) -> QuotaDecision:
        if not quota.enforced:
            return allowed()
        if self._table.in_unit:  # a staged take would count nothing until the unit commits
            raise RuntimeError("a quota is taken on its own, never inside a unit of work")
        cost = quota.cost_of(cost)
        cls = self._item
        item = cls(keys.pk(user_id), keys.quota_sk(quota.name, window_key(now)))
        room_left = cls.taken.does_not_exist() | (cls.taken <= quota.per_minute - cost)
        expires = epoch_seconds(window_end(now) + KEPT_AFTER_WINDOW)
        try:
            self._table.commit(
                [Write("update", item, room_left, (cls.taken.add(cost), cls.ttl.set(expires)))]
            )
        except LostRace:
            return refused(now)
        return allowed()

    def stored(self, user_id: str) -> Stored:
        """Two counting queries on the user's partition (keys only are read)."""
        items = self._table.items
        memories = items.memory.count(
            keys.pk(user_id), items.memory.sk.startswith(keys.MEMORY_PREFIX)
        )
        messages = items.message.count(
            keys.pk(user_id), items.message.sk.startswith(keys.MESSAGE_PREFIX)
        )
        return Stored(memory_rows=memories, messages=messages)
