"""Notices on DynamoDB: NOTICE#<notice_id> items, listed newest first through by_created."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime

from pynamodb.expressions.condition import Condition

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.mapping import notice_from_item, notice_item
from chatmemory.adapters.dynamodb.table import LostRace, Table, Write, all_of, unique
from chatmemory.domain import rules
from chatmemory.domain.notice import Notice
from chatmemory.ports.notices import NoticeStore
from chatmemory.ports.pages import MAX_PAGE


class DynamoNoticeStore(NoticeStore):
    """A user's notices in their partition."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._cls = table.items.notice

    def add_notice(self, notice: Notice) -> None:
        # Conditional: re-adding a notice changes nothing (an undo stays undone).
        insert = Write("put", notice_item(self._table.items, notice), self._cls.sk.does_not_exist())
        try:
            self._table.commit([insert])
        except LostRace:
            return

    def get_notice(self, user_id: str, notice_id: str) -> Notice | None:
        item = self._table.get(self._cls, user_id, keys.notice_sk(notice_id))
        return None if item is None else notice_from_item(item)

    def list_notices(
        self, user_id: str, *, include_undone: bool = False, limit: int = 50
    ) -> list[Notice]:
        rules.int_range("limit", limit, 1, MAX_PAGE)
        undone = None if include_undone else self._cls.undone_at.does_not_exist()
        return list(self._newest_first(user_id, undone, limit))

    def notices_about(self, user_id: str, memory_ids: Sequence[str]) -> list[Notice]:
        wanted = set(memory_ids)
        if not wanted:
            return []
        notices = self._newest_first(user_id, None, None)
        return [notice for notice in notices if wanted.intersection(notice.memory_ids)]

    def mark_notice_undone(self, user_id: str, notice_id: str, at: datetime) -> bool:
        cls = self._cls
        guard = all_of(cls.sk.exists(), cls.undone_at.does_not_exist())
        item = cls(keys.pk(user_id), keys.notice_sk(notice_id))
        try:
            self._table.commit([Write("update", item, guard, (cls.undone_at.set(at),))])
        except LostRace:
            return False
        return True

    def delete_notices(self, user_id: str, notice_ids: Sequence[str]) -> None:
        cls, pk = self._cls, keys.pk(user_id)
        self._table.delete_all([cls(pk, keys.notice_sk(n)) for n in unique(notice_ids)])

    def _newest_first(
        self, user_id: str, condition: Condition | None, limit: int | None
    ) -> Iterator[Notice]:
        cls = self._cls
        rows = cls.by_created.query(
            keys.pk(user_id),
            cls.lsi1sk.between(keys.NOTICE_PREFIX, keys.NOTICE_LSI_END),
            filter_condition=condition,
            consistent_read=True,
            scan_index_forward=False,
            limit=limit,
        )
        return (notice_from_item(row) for row in rows)
