"""Which words a corrected memory keeps reaching through, and how deleting them cuts one
packed vector out and leaves every other byte as it was (domain/reach.py)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import numpy as np
import pytest

from chatmemory.domain import reach, vectors
from chatmemory.domain.errors import InvalidField
from chatmemory.domain.memory import Memory, Status
from tests.support import builders

NOW = datetime(2026, 11, 30, 9, 15, tzinfo=UTC)
ROWS = np.random.default_rng(5).normal(size=(4, 32)).astype(np.float32)


def correction_of(old: Memory, text: str) -> Memory:
    return builders.memory(old.user_id, text, NOW, supersedes=old.memory_id)


def test_a_correction_keeps_the_words_of_the_version_it_replaced() -> None:
    old = builders.memory("alice", "Commutes by bike.", NOW)

    new = correction_of(old, "Works from home.")

    assert reach.words_to_keep(new, old) == old.text  # while the correction is written
    history = dataclasses.replace(
        old, status=Status.SUPERSEDED, valid_to=NOW, closed_by=new.memory_id
    )
    assert reach.words_to_keep(new, history) == old.text  # and after, as history


@pytest.mark.parametrize(
    "why",
    ["nothing replaced", "another row", "another user", "closed", "same words"],
)
def test_no_words_are_kept_from_a_version_that_may_not_lend_them(why: str) -> None:
    old = builders.memory("alice", "Commutes by bike.", NOW)
    new = correction_of(old, "Works from home.")
    replaced: Memory | None = {
        "nothing replaced": None,
        "another row": builders.memory("alice", "Commutes by bike.", NOW),
        "another user": dataclasses.replace(old, user_id="bob"),
        "closed": dataclasses.replace(old, status=Status.CLOSED, valid_to=NOW),
        "same words": old,
    }[why]
    if why == "same words":
        new = correction_of(old, "  commutes by BIKE ")

    assert reach.words_to_keep(new, replaced) is None


def test_cutting_a_row_leaves_every_other_one_byte_for_byte() -> None:
    packed = vectors.pack_rows(ROWS, compact_after=1)

    cut = vectors.without_row(packed, 1)

    assert len(cut) == len(packed) - vectors.packed_size(32, bits=4)
    assert cut == vectors.pack_rows(ROWS[[0, 2, 3]], compact_after=1)
    assert (vectors.unpack_rows(cut) == vectors.unpack_rows(packed)[[0, 2, 3]]).all()


def test_a_row_that_is_not_there_or_the_only_one_is_not_cut() -> None:
    packed = vectors.pack_rows(ROWS, compact_after=1)

    with pytest.raises(InvalidField):
        vectors.without_row(packed, 4)
    with pytest.raises(InvalidField):
        vectors.without_row(vectors.pack_rows(ROWS[:1]), 0)


def test_without_reach_drops_the_mark_and_the_row_and_nothing_else() -> None:
    packed = vectors.pack_rows(ROWS, compact_after=1)
    memory = builders.memory(
        "alice",
        "Works from home.",
        NOW,
        embedding=packed,
        meta={"uses": ["a", "b"], reach.REACH: reach.REPLACED},
    )

    cut = reach.without_reach(memory)

    assert not reach.reaches_replaced(cut)
    assert cut.meta == {"uses": ["a", "b"]}
    assert cut.embedding == vectors.without_row(packed, reach.REACH_ROW)
    # a row that never reached is left as it is
    plain = dataclasses.replace(memory, meta={"uses": ["a", "b"]})
    assert reach.without_reach(plain) == plain
