"""A corrected memory keeps the reach of the version it replaced.

A question that found the old words is the one that needs the correction most ("can we do
dinner on Monday?" after the Monday darts night moved to Thursday), yet the new words may
no longer match it: on bench/data, 3 of the people set's 30 corrections were found before
and lost after. So while the replaced version is kept as history, the corrected row's
vectors hold its words too, as the row after the memory's own words, voting like one of
its uses. They are never sent: only the current words enter a prompt.

`meta["reach"]` marks that row, so deleting the old version can drop it from the row's
bytes with no embedder at hand, and a later re-embedding (uses written, a re-index) puts
it back only while the old version is still kept.
"""

from __future__ import annotations

import dataclasses

from chatmemory.domain import vectors
from chatmemory.domain.ids import normalise_for_identity
from chatmemory.domain.memory import Memory, Status

#: the meta key that says the row after the memory's words embeds another version's words
REACH = "reach"
#: ...those of the version it replaced
REPLACED = "replaced"
_KEPT = frozenset({Status.ACTIVE, Status.SUPERSEDED})
#: where that row sits among the packed vectors (0 is what the memory says)
REACH_ROW = 1


def words_to_keep(memory: Memory, replaced: Memory | None) -> str | None:
    """The replaced version's words, if `memory` should still reach what they reached: it
    is the version this row replaces (active while the correction is being written,
    history after; a deleted one is never read), of the same user, and says something
    else."""
    if replaced is None or memory.supersedes != replaced.memory_id:
        return None
    if replaced.user_id != memory.user_id or replaced.status not in _KEPT:
        return None
    if normalise_for_identity(replaced.text) == normalise_for_identity(memory.text):
        return None
    return replaced.text


def reaches_replaced(memory: Memory) -> bool:
    """Whether the row's vectors still hold the replaced version's words."""
    return memory.meta.get(REACH) == REPLACED and memory.embedding is not None


def without_reach(memory: Memory) -> Memory:
    """The row with the replaced version's words taken out of its vectors (and the mark
    out of its meta), the rest byte for byte as they were: what deleting that version
    leaves."""
    meta = {key: value for key, value in memory.meta.items() if key != REACH}
    if not reaches_replaced(memory):
        return dataclasses.replace(memory, meta=meta)
    assert memory.embedding is not None
    return dataclasses.replace(
        memory, meta=meta, embedding=vectors.without_row(memory.embedding, REACH_ROW)
    )
