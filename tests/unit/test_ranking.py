"""Ranking rules: the per-turn cut and the persona block order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from chatmemory.domain.ranking import BlockCandidate, Scored, rank_block, recency, select_for_turn

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


def _candidate(
    memory_id: str,
    kind: str = "fact",
    importance: int = 5,
    days_ago: float = 0,
    used_days_ago: float | None = None,
) -> BlockCandidate:
    return BlockCandidate(
        memory_id=memory_id,
        kind=kind,
        importance=importance,
        created_at=NOW - timedelta(days=days_ago),
        last_used_at=None if used_days_ago is None else NOW - timedelta(days=used_days_ago),
    )


def test_recency_decays_two_percent_a_day_from_last_use() -> None:
    assert recency(_candidate("a", days_ago=0), NOW) == 1.0
    assert abs(recency(_candidate("a", days_ago=10), NOW) - 0.98**10) < 1e-9
    assert recency(_candidate("a", days_ago=300, used_days_ago=1), NOW) == 0.98


def test_the_block_prefers_recent_important_relevant_memories() -> None:
    old_trivial = _candidate("old", importance=2, days_ago=200)
    fresh_important = _candidate("fresh", importance=9, days_ago=1)
    relevant = _candidate("topic", importance=5, days_ago=50)

    order = rank_block([old_trivial, fresh_important, relevant], NOW, {"topic": 0.9, "fresh": 0.1})

    assert order[0] == "fresh" and order[-1] == "old"


def test_the_block_takes_at_most_two_of_a_kind_before_the_rest() -> None:
    facts = [_candidate(f"fact{i}", importance=9 - i) for i in range(4)]
    loop = _candidate("loop", kind="open_loop", importance=3)

    order = rank_block([*facts, loop], NOW)

    assert order[:3] == ["fact0", "fact1", "loop"]
    assert order[3:] == ["fact2", "fact3"]
