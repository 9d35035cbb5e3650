"""The seam for writes that span aggregates: they land together or not at all."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TypeVar

R = TypeVar("R")


class UnitOfWork(ABC):
    """Runs a piece of work whose store writes commit as one atomic write.

    Every write a store makes while `work` runs (on this thread) joins the unit instead
    of committing alone; reads see the state before the unit. On SQLite the unit is one
    transaction; on DynamoDB one TransactWriteItems, whose conditions are checked when
    it commits. A failed condition is a ConcurrentChange and nothing is written.
    """

    @abstractmethod
    def run(self, work: Callable[[], R], *, retry: bool = False, what: str = "") -> R:
        """`work()`, its writes committed together; its result.

        `retry`: when another writer won the race, read again and re-run `work` a few
        times before giving up with ConcurrentChange ("… kept changing while {what}").
        """
