"""The unit of work on DynamoDB: what a piece of work writes lands in one TransactWriteItems."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from chatmemory.adapters.dynamodb.table import LostRace, Table, memory_changed
from chatmemory.ports.unit_of_work import UnitOfWork

R = TypeVar("R")


class DynamoUnitOfWork(UnitOfWork):
    """Stages every store write made on this thread while the work runs, then commits them.

    The staged writes go as one TransactWriteItems (a single write alone); more than a
    transaction holds commit in order, a transaction at a time, so each write still
    follows the ones before it (a tombstone the rows it hides). Work that raises writes
    nothing; a `run` inside a `run` joins the outer unit.
    """

    def __init__(self, table: Table) -> None:
        self._table = table

    def run(self, work: Callable[[], R], *, retry: bool = False, what: str = "") -> R:
        if self._table.in_unit:
            return work()
        if retry:
            return self._table.optimistic(lambda: self._once(work), what=what)
        try:
            return self._once(work)
        except LostRace as exc:
            raise memory_changed(what) from exc

    def _once(self, work: Callable[[], R]) -> R:
        """`work()` on a fresh staging, then its writes committed (LostRace if one lost)."""
        with self._table.staging() as staged:
            result = work()
        self._table.commit_in_order(staged)
        return result
