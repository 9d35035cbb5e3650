"""The plumbing every DynamoDB store shares: one `Table`, its writes and their retries.

A write is a `Write`; `Table.commit` applies a list of them as one atomic write (alone
when there is one, else one TransactWriteItems) and reports a failed condition as
`LostRace`. While a unit of work runs on this thread, `commit` and the batch writes
stage instead, and the unit commits everything it staged when its work returns.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypeVar, cast

from pynamodb.attributes import NumberAttribute
from pynamodb.connection import Connection
from pynamodb.exceptions import DoesNotExist, PynamoDBException, TransactWriteError
from pynamodb.expressions.condition import And, Condition, Or
from pynamodb.expressions.update import Action
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.items import BoundItems, MemoryItem, TombstoneItem
from chatmemory.domain.errors import ConcurrentChange, InvalidField
from chatmemory.domain.time import epoch_seconds, to_storage
from chatmemory.ports.clock import Clock

TRANSACTION_MAX = 100  # DynamoDB's limit on items in one TransactWriteItems
ATTEMPTS = 8  # optimistic retries before a lost race is reported as ConcurrentChange
_LOST_RACE_CODES = frozenset({"ConditionalCheckFailed", "TransactionConflict"})

T = TypeVar("T")
M = TypeVar("M", bound=Model)


class LostRace(Exception):
    """DynamoDB refused a write because of a condition: someone else was first."""


@dataclass(frozen=True, slots=True)
class Write:
    """One item write, run alone or as part of a TransactWriteItems."""

    kind: Literal["put", "update", "delete", "check"]
    item: Model
    condition: Condition | None = None
    actions: tuple[Action, ...] = ()


class Table:
    """The bound item classes, the clock, and the one way writes reach the table."""

    def __init__(self, items: BoundItems, clock: Clock) -> None:
        self.items = items
        self.clock = clock
        # TransactWrite needs a plain Connection; the table's own keeps one botocore client.
        self._transactions: Connection = items.connection.connection
        self._unit = threading.local()

    def now(self) -> datetime:
        return self.clock.now()

    # ---- the unit of work's staging ---------------------------------------------------------

    @contextmanager
    def staging(self) -> Iterator[list[Write]]:
        """The list this thread's writes are staged on until the block ends."""
        staged: list[Write] = []
        self._unit.staged = staged
        try:
            yield staged
        finally:
            self._unit.staged = None

    @property
    def in_unit(self) -> bool:
        """True while a unit of work stages this thread's writes."""
        return self._staged() is not None

    def _staged(self) -> list[Write] | None:
        staged: list[Write] | None = getattr(self._unit, "staged", None)
        return staged

    # ---- writes -----------------------------------------------------------------------------

    def commit(self, writes: Sequence[Write]) -> None:
        """Apply writes atomically (staged instead inside a unit of work).

        LostRace when a condition failed: nothing was written.
        """
        staged = self._staged()
        if staged is not None:
            staged.extend(writes)
            return
        try:
            self._apply(writes)
        except PynamoDBException as exc:
            if _lost_race(exc):
                raise LostRace from exc
            raise

    def commit_in_order(self, writes: Sequence[Write]) -> None:
        """Commit `writes` a transaction at a time, in order: a write never lands before
        the ones ahead of it (so a tombstone always follows the rows it hides)."""
        for chunk in chunks(writes):
            self.commit(chunk)

    def commit_checked(self, writes: Sequence[Write], *, what: str, in_order: bool = False) -> None:
        """`commit` (`commit_in_order` if `in_order`), a lost race reported as
        `memory_changed(what)`: for the writes no caller retries."""
        try:
            if in_order:
                self.commit_in_order(writes)
            else:
                self.commit(writes)
        except LostRace as exc:
            raise memory_changed(what) from exc

    def put_all(self, items: Sequence[Model]) -> None:
        """Unconditional puts, 25 to a BatchWriteItem (staged inside a unit of work)."""
        self._batch("put", items)

    def delete_all(self, items: Sequence[Model]) -> None:
        """Unconditional deletes, 25 to a BatchWriteItem (staged inside a unit of work)."""
        self._batch("delete", items)

    def _batch(self, kind: Literal["put", "delete"], items: Sequence[Model]) -> None:
        staged = self._staged()
        if staged is not None:
            staged.extend(Write(kind, item) for item in items)
            return
        # Any item class's batch will do: they all share the table.
        with self.items.memory.batch_write() as batch:
            for item in items:
                if kind == "put":
                    batch.save(item)
                else:
                    batch.delete(item)

    def optimistic(self, work: Callable[[], T], *, what: str, changing: str = "memories") -> T:
        """`work()`, run again (after a jittered pause) each time it loses a race.

        ConcurrentChange("<changing> kept changing while <what>") once it lost every time.
        """
        for attempt in range(ATTEMPTS):
            try:
                return work()
            except LostRace:
                _backoff(attempt)
        raise ConcurrentChange(f"{changing} kept changing while {what}")

    def _apply(self, writes: Sequence[Write]) -> None:
        if not writes:
            return
        if len(writes) > TRANSACTION_MAX:
            raise InvalidField("events", "too many to store in one atomic write")
        if len(writes) == 1 and writes[0].kind != "check":
            write = writes[0]
            if write.kind == "put":
                write.item.save(condition=write.condition)
            elif write.kind == "update":
                write.item.update(list(write.actions), condition=write.condition)
            else:
                write.item.delete(condition=write.condition)
            return
        with TransactWrite(connection=self._transactions) as transaction:
            for write in writes:
                if write.kind == "check":
                    key = cast(TombstoneItem, write.item)
                    transaction.condition_check(
                        type(key), key.pk, key.sk, condition=write.condition
                    )
                elif write.kind == "put":
                    transaction.save(write.item, condition=write.condition)
                elif write.kind == "update":
                    transaction.update(write.item, list(write.actions), condition=write.condition)
                else:
                    transaction.delete(write.item, condition=write.condition)

    # ---- reads every store needs ------------------------------------------------------------

    def get(self, cls: type[M], user_id: str, sk: str) -> M | None:
        """The user's item under `sk` (a strongly consistent GetItem), or None."""
        return self.get_at(cls, keys.pk(user_id), sk)

    def get_at(self, cls: type[M], pk: str, sk: str) -> M | None:
        """The item under (pk, sk), a strongly consistent GetItem, or None: for partitions
        that are no user's (a room's)."""
        try:
            return cls.get(pk, sk, consistent_read=True)
        except DoesNotExist:
            return None

    def forgotten_before(self, user_id: str) -> str | None:
        """The "forget everything" watermark (storage form), if there ever was one."""
        state = self.get(self.items.user_state, user_id, keys.USER_SK)
        if state is None:
            return None
        # PynamoDB types attributes as always set; this one is optional in the table.
        forgotten = cast("datetime | None", state.forgotten_before)
        return None if forgotten is None else to_storage(forgotten)


def strike_witness(
    table: Table, cls: type[MemoryItem], pk: str, witness: str, key_of: Callable[[str], Model]
) -> int:
    """Take `witness` out of the `witnessed` list of every memory item in partition `pk`
    that lists them (any status, hidden ones too); how many changed. Each rewrite is
    guarded on the list as read, so two witnesses dropped at once never put each other
    back, and a purged row is never written again (LostRace: go round again)."""
    changed = 0
    rows = cls.query(
        pk,
        cls.sk.startswith(keys.MEMORY_PREFIX),
        filter_condition=cls.witnessed.contains(witness),
        consistent_read=True,
    )
    for row in rows:
        kept = [w for w in row.witnessed if w != witness]
        guard = cls.witnessed == list(row.witnessed)
        table.commit([Write("update", key_of(row.memory_id), guard, (cls.witnessed.set(kept),))])
        changed += 1
    return changed


def _lost_race(exc: PynamoDBException) -> bool:
    """True when DynamoDB refused a write because of a condition (someone else was first)."""
    if exc.cause_response_code == "ConditionalCheckFailedException":
        return True
    if isinstance(exc, TransactWriteError):
        codes = {reason.code for reason in exc.cancellation_reasons if reason is not None}
        return bool(codes) and codes <= _LOST_RACE_CODES
    return False


def _backoff(attempt: int) -> None:
    """Exponential backoff with full jitter, so writers that collided spread out."""
    time.sleep(random.uniform(0, min(0.2, 0.01 * 2**attempt)))  # noqa: S311 - jitter, not crypto


# ---- small pieces -------------------------------------------------------------------------


def memory_changed(what: str) -> ConcurrentChange:
    """The error for a write that lost its race and is not retried."""
    return ConcurrentChange(f"the memory changed while {what}")


def all_of(first: Condition, *rest: Condition) -> Condition:
    condition = first
    for other in rest:
        condition = And(condition, other)
    return condition


def unexpired(ttl: NumberAttribute, now: datetime) -> Condition:
    """A server-side prefilter on `ttl`; it never drops a live row, as epochs are floored."""
    return Or(ttl.does_not_exist(), ttl >= epoch_seconds(now))


def check_owner(user_id: str, owner: str) -> None:
    if user_id != owner:
        raise InvalidField("user_id", "a row may only be written under its own user")


def chunks(values: Sequence[T], size: int = TRANSACTION_MAX) -> Iterator[list[T]]:
    for start in range(0, len(values), size):
        yield list(values[start : start + size])


def unique(values: Iterable[T]) -> list[T]:
    return list(dict.fromkeys(values))
