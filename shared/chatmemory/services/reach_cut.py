"""Deleting a version takes its words out of the row that replaced it (domain/reach.py).

The delete cuts them at once, so the very next read no longer finds the corrected memory
through what the user deleted; the purge cuts again before it removes the index
documents, so a cut the delete could not finish (the row kept changing, a store error)
is finished by the step that retries until it succeeds. The cut is byte for byte: no
embedder is needed, and what stays scores exactly as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from chatmemory.domain import reach
from chatmemory.domain.events import Op
from chatmemory.domain.memory import Memory, Status
from chatmemory.ports.stores import Stores

log = logging.getLogger(__name__)

# A row that keeps changing under the cut (a use recorded, uses written) is re-read.
_ATTEMPTS = 3


def cut_reach_to(
    stores: Stores,
    user_id: str,
    deleted_ids: Iterable[str],
    publish: Callable[[Memory], None],
) -> int:
    """Cut the deleted versions' words out of every row that replaced one of them and
    still shows; `publish` re-indexes an active row. Returns how many rows were cut.

    An active row is cut by compare-and-set on the row as read; a history row, which
    nothing but an undo rewrites, in place. Idempotent: a row already cut is left alone.
    """
    cut_rows = 0
    for deleted_id in dict.fromkeys(deleted_ids):
        for successor_id in _successors(stores, user_id, deleted_id):
            if _cut(stores, user_id, deleted_id, successor_id, publish):
                cut_rows += 1
    return cut_rows


def _successors(stores: Stores, user_id: str, deleted_id: str) -> list[str]:
    """The rows that replaced a version, from its audit trail (ids only, never words)."""
    events = stores.events.list_events(user_id, deleted_id)
    return sorted({e.related_id for e in events if e.op is Op.UPDATE and e.related_id})


def _cut(
    stores: Stores,
    user_id: str,
    deleted_id: str,
    successor_id: str,
    publish: Callable[[Memory], None],
) -> bool:
    for _attempt in range(_ATTEMPTS):
        row = stores.memories.get_memory(user_id, successor_id)
        if row is None or row.supersedes != deleted_id or not reach.reaches_replaced(row):
            return False
        cut = reach.without_reach(row)
        if row.status is not Status.ACTIVE:
            stores.memories.put_memory(cut)
            return True
        assert cut.embedding is not None  # a row that reaches has vectors
        if stores.memories.set_uses(
            user_id,
            successor_id,
            expected=row,
            meta=cut.meta,
            embedding=cut.embedding,
            own=False,
        ):
            publish(cut)
            return True
    log.warning("replaced words not cut yet: the row kept changing")
    return False
