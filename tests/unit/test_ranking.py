"""Ranking rules: the per-turn cut and the persona block order."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from chatmemory.domain.ranking import Scored, select_for_turn

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def test_a_turn_keeps_at_most_five_above_the_threshold_best_first() -> None:
    candidates = [
        Scored(f"m{i}", score) for i, score in enumerate([0.9, 0.2, 0.55, 0.8, 0.61, 0.7, 0.65])
    ]

    chosen = select_for_turn(candidates, threshold=0.5)

    assert [c.memory_id for c in chosen] == ["m0", "m3", "m5", "m6", "m4"]


def test_on_most_turns_fewer_than_five_qualify_and_that_is_fine() -> None:
    assert select_for_turn([Scored("a", 0.3), Scored("b", 0.49)], threshold=0.5) == []
    assert [c.memory_id for c in select_for_turn([Scored("a", 0.51)], threshold=0.5)] == ["a"]


@given(
    st.lists(st.tuples(st.sampled_from("abcdefgh"), st.floats(-1, 1)), max_size=30),
    st.floats(-1, 1),
)
def test_the_cut_never_returns_a_memory_twice_or_below_threshold(
    pairs: list[tuple[str, float]], threshold: float
) -> None:
    chosen = select_for_turn([Scored(m, s) for m, s in pairs], threshold=threshold)

    assert len(chosen) <= 5
    assert len({c.memory_id for c in chosen}) == len(chosen)
    assert all(c.score >= threshold for c in chosen)
    assert [c.score for c in chosen] == sorted((c.score for c in chosen), reverse=True)
