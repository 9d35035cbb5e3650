"""Where a memory's uses came from, and so whether it still waits for its own.

A memory is indexed with its uses (domain/uses.py). The extractor writes them for what
it learns; a memory typed through the API or saved mid-chat without them borrows its
category's (or has none, when no category fits), and a correction carries over the uses
of the version it replaces. None of those was written for the memory's own words, so
each waits for the uses job to write them (services/uses.py). `meta["uses_from"]` says
which: absent once the uses are the memory's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from chatmemory.domain.errors import InvalidField
from chatmemory.domain.memory import Memory, Status

#: the meta key that says where the uses came from (absent: written for this memory)
USES_FROM = "uses_from"
#: borrowed from the category (the read path weighs these less: services/relevance.py)
FROM_CATEGORY = "category"
#: carried over from the version a correction replaced: the same belief answers the same
#: questions, so recall treats them as the memory's own; only the words they were
#: written for are older
CARRIED = "carried"
#: the origins that still wait for uses written for the memory itself
AWAITING: frozenset[str] = frozenset({FROM_CATEGORY, CARRIED})


def awaits_uses(meta: Mapping[str, Any]) -> bool:
    """Whether this meta holds no uses written for its memory's words: borrowed,
    carried, or none at all."""
    return meta.get(USES_FROM) in AWAITING or not meta.get("uses")


def waits_for_job(memory: Memory, model_writes_uses: bool) -> bool:
    """Whether a stored active row needs the uses job: its vectors are missing (the
    embedder failed when it was written, so recall cannot find it), or its uses were not
    written for its words and a model can write them."""
    if memory.status is not Status.ACTIVE:
        return False
    return memory.embedding is None or (model_writes_uses and awaits_uses(memory.meta))


def carried_over(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The meta a correction keeps: the same uses, marked as carried when they were the
    old version's own (borrowed ones stay borrowed)."""
    kept = dict(meta)
    if kept.get("uses") and USES_FROM not in kept:
        kept[USES_FROM] = CARRIED
    return kept


def with_own_uses(meta: Mapping[str, Any], uses: Sequence[str]) -> dict[str, Any]:
    """The meta with `uses` written for the memory itself: no longer borrowed or carried."""
    own = {key: value for key, value in meta.items() if key != USES_FROM}
    own["uses"] = list(uses)
    return own


def row_with_own_uses(
    expected: Memory,
    memory_id: str,
    meta: Mapping[str, Any],
    embedding: bytes,
    *,
    own: bool = True,
) -> Memory:
    """The row as read, with its own uses and their vectors: what a store's compare-and-set
    writes. InvalidField for another row's id, or (`own`) a meta that still says its uses
    are borrowed or carried; without `own` only the vectors are new (a re-index)."""
    if expected.memory_id != memory_id:
        raise InvalidField("memory_id", "must be the id of the row read")
    if own and awaits_uses(meta):
        raise InvalidField("meta", "the uses written must be the memory's own")
    return dataclasses.replace(expected, meta=dict(meta), embedding=embedding)
