"""Digest markers on DynamoDB: a DIGEST#<memory_id> item in the user's partition beside
each of their rows in use, holding what per-turn recall reads of it (never its text or
vectors), and the read that starts from them.

Per-turn recall needs every memory in use: the exact index scores them all, the
OpenSearch path checks its hits against them. Read from the rows, that is one query over
every version the user ever kept — superseded, closed, set aside, faded — and a query
pays for every item it reads before its filter, so each turn would cost more as the
history grows. Read from the markers, it costs what the memories in use weigh (the cap
keeps them at 500), whatever the history.

The row's own transactions keep its marker exact: a write that leaves the row active and
in use puts the marker (the digest as the write leaves the row), one that makes it
history, hides it or sets it aside deletes it, and the purge removes both. A write that
changes a row it read first is guarded on the fields the marker copies, so the two
never disagree (a lost race reads again).

Time alone takes a belief out of use — it fades — with no write to say so. The read
therefore asks fading about each marker's shelf life, as of now, and deletes the markers
of beliefs no longer in use, each delete conditioned on the marker being unchanged (a
revival rewrote it, and wins). A marker may outlive what it stands for only harmlessly:
a forgotten row's is dropped by the read, a hidden row's at its purge, and every read
that puts memories in a prompt reads their rows.

A partition written before the markers existed has none: until the USER item's
`digest_markers` says the user's markers are complete (at this `LAYOUT`), the read goes to
the rows as it used to, writes every active row's marker (each guarded on its row as
read) and sets it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import cast

from pynamodb.exceptions import PynamoDBException
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from chatmemory.adapters.dynamodb import keys
from chatmemory.adapters.dynamodb.items import (
    DigestItem,
    MemoryItem,
    UserMarkersItem,
    bind_item,
)
from chatmemory.adapters.dynamodb.mapping import memory_from_item, meta_text
from chatmemory.adapters.dynamodb.table import (
    TRANSACTION_MAX,
    LostRace,
    Table,
    Write,
    all_of,
    chunks,
    unexpired,
)
from chatmemory.domain import fading
from chatmemory.domain.memory import Kind, Memory, Status
from chatmemory.domain.time import epoch_seconds, to_storage
from chatmemory.domain.uses_origin import FROM_CATEGORY, USES_FROM
from chatmemory.ports.recall_source import MemoryDigest

log = logging.getLogger(__name__)

#: what `digest_markers` on the USER item says once every marker of the user is written
LAYOUT = 1

#: the fields of a row a marker copies, as the MemoryItem names them
COPIED = (
    "persona",
    "importance",
    "updated_at",
    "meta",
    "status",
    "kind",
    "category",
    "valid_until",
    "stability_days",
    "reinforced_at",
    "last_used_at",
    "archived_at",
)


def version_of(memory: Memory) -> str:
    """Changes whenever the row's vectors may have changed: a rewrite stamps `updated_at`
    (and may change the vectors' size), and the uses job, which leaves `updated_at`
    alone, changes where the row's uses came from."""
    meta = memory.meta
    size = len(memory.embedding or b"")
    return f"{to_storage(memory.updated_at)}:{size}:{int(USES_FROM in meta)}{int('uses' in meta)}"


def shows(memory: fading.Fadable, valid_until: datetime | None, now: datetime) -> bool:
    """Whether a row (or a marker) stands for a memory in use now."""
    if valid_until is not None and valid_until <= now:
        return False
    return fading.in_use(memory, now)


class DigestMarkers:
    """The markers' writes, for the memory store's transactions, and the read they serve."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._cls = bind_item(table.items, DigestItem)
        self._state = bind_item(table.items, UserMarkersItem)

    # ---- writes, each for the transaction of the row it follows -------------------------

    def written(self, memory: Memory) -> Write:
        """The marker's write for a row as a write leaves it: put while it is active and in
        use, deleted otherwise."""
        if memory.status is Status.ACTIVE and shows(memory, memory.valid_until, self._table.now()):
            return self.put(memory)
        return self.delete(memory.user_id, memory.memory_id)

    def put(self, memory: Memory) -> Write:
        return Write("put", self._item(memory))

    def delete(self, user_id: str, memory_id: str) -> Write:
        return Write("delete", self.key(user_id, memory_id))

    def key(self, user_id: str, memory_id: str) -> DigestItem:
        return self._cls(keys.pk(user_id), keys.digest_sk(memory_id))

    def _item(self, memory: Memory) -> DigestItem:
        item = self._cls(
            keys.pk(memory.user_id),
            keys.digest_sk(memory.memory_id),
            memory_id=memory.memory_id,
            persona=memory.persona,
            importance=memory.importance,
            version=version_of(memory),
            borrowed_uses=memory.meta.get(USES_FROM) == FROM_CATEGORY,
            created_at=memory.created_at,
            kind=memory.kind.value,
            category=memory.category,
            stability_days=memory.stability_days,
            reinforced_at=memory.reinforced_at,
            last_used_at=memory.last_used_at,
            archived_at=memory.archived_at,
            valid_until=memory.valid_until,
            ttl=None if memory.valid_until is None else epoch_seconds(memory.valid_until),
            stamp="",
        )
        item.stamp = _stamp(item)
        return item

    # ---- the read -----------------------------------------------------------------------

    def digests(self, user_id: str, persona: str | None) -> list[MemoryDigest]:
        """Every memory of the user (of `persona`) in use now, newest first."""
        state = self._table.get(self._state, user_id, keys.USER_SK)
        forgotten = None if state is None else cast("datetime | None", state.forgotten_before)
        if state is None or state.digest_markers != LAYOUT:
            return self._from_rows(user_id, persona, forgotten)
        cls = self._cls
        now = self._table.now()
        shown: list[DigestItem] = []
        gone: list[DigestItem] = []
        for marker in cls.query(
            keys.pk(user_id), cls.sk.startswith(keys.DIGEST_PREFIX), consistent_read=True
        ):
            if _marker_shows(marker, forgotten, now):
                shown.append(marker)
            else:
                gone.append(marker)
        self._prune(gone)
        shown.sort(key=lambda m: (to_storage(m.created_at), m.memory_id), reverse=True)
        return [_digest(marker) for marker in shown if persona is None or marker.persona == persona]

    def _prune(self, markers: Sequence[DigestItem]) -> None:
        """Delete markers of beliefs out of use, each only while it is as read. Never inside
        a unit of work (its deletes would ride on, and could fail, someone else's write);
        a failure only leaves them for the next read."""
        if not markers or self._table.in_unit:
            return
        cls = self._cls
        for marker in markers:
            try:
                self._table.commit([Write("delete", marker, cls.stamp == marker.stamp)])
            except LostRace:
                continue  # rewritten meanwhile: the new marker speaks for the row
            except PynamoDBException as exc:
                log.warning("digest marker prune failed", extra={"error_type": type(exc).__name__})
                return

    # ---- a partition without its markers yet --------------------------------------------

    def _from_rows(
        self, user_id: str, persona: str | None, forgotten: datetime | None
    ) -> list[MemoryDigest]:
        """The digests read from the rows (what every read did before the markers), then,
        outside a unit of work, every active row's marker written and the user marked
        complete; a failure only leaves that for the next read."""
        now = self._table.now()
        active = [memory_from_item(row) for row in self._active_rows(user_id, forgotten)]
        in_use = [m for m in active if shows(m, m.valid_until, now)]
        if not self._table.in_unit:
            try:
                self._complete(user_id, active, now)
            except (LostRace, PynamoDBException) as exc:
                log.warning(
                    "digest markers not written yet", extra={"error_type": type(exc).__name__}
                )
        return [
            MemoryDigest(
                memory_id=m.memory_id,
                persona=m.persona,
                importance=m.importance,
                version=version_of(m),
                borrowed_uses=m.meta.get(USES_FROM) == FROM_CATEGORY,
            )
            for m in in_use
            if persona is None or m.persona == persona
        ]

    def _active_rows(self, user_id: str, forgotten: datetime | None) -> list[MemoryItem]:
        cls = self._table.items.memory
        lower = keys.memory_lsi_after(None if forgotten is None else to_storage(forgotten))
        rows = cls.by_created.query(
            keys.pk(user_id),
            cls.lsi1sk.between(lower, keys.MEMORY_LSI_END),
            filter_condition=all_of(
                cls.hidden.does_not_exist(),
                unexpired(cls.ttl, self._table.now()),
                cls.status == Status.ACTIVE.value,
            ),
            consistent_read=True,
            scan_index_forward=False,
        )
        return [row for row in rows if not row.hidden]

    def _complete(self, user_id: str, active: Sequence[Memory], now: datetime) -> None:
        """Write the marker of every active row as read: put for those in use, deleted for
        the others, each with a check that its row is still as read (so a row changed
        meanwhile never ends with a stale marker, or without its marker); then mark the
        user's markers complete. Markers already there are rewritten, so a new `LAYOUT`
        rewrites every partition's markers once."""
        memory_cls = self._table.items.memory
        pk = keys.pk(user_id)
        for chunk in chunks(list(active), TRANSACTION_MAX // 2):
            writes: list[Write] = []
            for memory in chunk:
                row = memory_cls(pk, keys.memory_sk(memory.memory_id))
                writes.append(Write("check", row, all_of(*as_read(memory_cls, memory))))
                if shows(memory, memory.valid_until, now):
                    writes.append(self.put(memory))
                else:
                    writes.append(self.delete(user_id, memory.memory_id))
            self._table.commit(writes)
        mark_user(self._table, self._state, user_id, self._state.digest_markers.set(LAYOUT))


def mark_user(table: Table, state: type[UserMarkersItem], user_id: str, action: Action) -> None:
    """Record on the USER item that one kind of the user's markers is complete."""
    table.commit([Write("update", state(keys.pk(user_id), keys.USER_SK), actions=(action,))])


def as_read(
    cls: type[MemoryItem], memory: Memory, *, besides: Iterable[str] = ()
) -> list[Condition]:
    """Conditions that the row still shows and holds, in every field a marker copies
    (but those in `besides`, which the write itself sets), what `memory` says."""
    skip = set(besides)
    conditions: list[Condition] = [cls.sk.exists(), cls.hidden.does_not_exist()]
    values = {
        "persona": memory.persona,
        "importance": memory.importance,
        "updated_at": memory.updated_at,
        "meta": meta_text(memory.meta),
        "status": memory.status.value,
        "kind": memory.kind.value,
        "category": memory.category,
        "valid_until": memory.valid_until,
        "stability_days": memory.stability_days,
        "reinforced_at": memory.reinforced_at,
        "last_used_at": memory.last_used_at,
        "archived_at": memory.archived_at,
    }
    for name in COPIED:
        if name in skip:
            continue
        attribute = getattr(cls, name)
        value = values[name]
        conditions.append(attribute.does_not_exist() if value is None else attribute == value)
    return conditions


def _marker_shows(marker: DigestItem, forgotten: datetime | None, now: datetime) -> bool:
    created = marker.created_at
    if forgotten is not None and created <= forgotten:
        return False
    shelf = fading.ShelfLife(
        kind=Kind(marker.kind),
        category=marker.category,
        created_at=created,
        stability_days=None if marker.stability_days is None else float(marker.stability_days),
        reinforced_at=marker.reinforced_at,
        last_used_at=marker.last_used_at,
        archived_at=marker.archived_at,
    )
    return shows(shelf, marker.valid_until, now)


def _digest(marker: DigestItem) -> MemoryDigest:
    return MemoryDigest(
        memory_id=marker.memory_id,
        persona=marker.persona,
        importance=int(marker.importance),
        version=marker.version,
        borrowed_uses=bool(marker.borrowed_uses),
    )


def _stamp(item: DigestItem) -> str:
    """A digest of everything the marker says (what a conditional delete compares)."""
    said = sorted(
        (name, repr(value)) for name, value in item.serialize().items() if name != "stamp"
    )
    text = repr(said)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
