"""Two-stage recall's pure rules: a memory's label, the 15 + 3 pick, and why it was stored."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from chatmemory.domain.ids import message_id_for, new_conversation_id
from chatmemory.domain.labels import (
    LABEL_CHARS,
    LABEL_WORDS,
    Ranked,
    label_for,
    pick,
    reasoning_for,
)
from chatmemory.domain.memory import Kind, StatedBy
from tests.support import builders

AT = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)

# ---- the label ---------------------------------------------------------------------------


def test_a_short_sentence_is_its_own_label_without_the_final_period() -> None:
    assert label_for("Is pescatarian: eats fish but no meat or poultry.") == (
        "Is pescatarian: eats fish but no meat or poultry"
    )


def test_a_question_or_an_exclamation_keeps_its_mark() -> None:
    assert label_for("Asked whether Rome is worth it?") == "Asked whether Rome is worth it?"


def test_a_long_sentence_is_cut_at_a_word_boundary_with_an_ellipsis() -> None:
    text = " ".join(f"word{i}" for i in range(40)) + "."

    label = label_for(text)

    assert label.endswith("…")
    assert len(label.split()) <= LABEL_WORDS and len(label) <= LABEL_CHARS
    assert text.startswith(label.removesuffix("…"))


def test_long_words_keep_the_label_within_its_characters() -> None:
    text = "Keeps " + " ".join(["extraordinarily-long-hyphenated-compound"] * 6)

    label = label_for(text)

    assert len(label) <= LABEL_CHARS and label.endswith("…")
    assert label.removesuffix("…").split() == text.split()[: len(label.split())]


def test_the_label_is_one_line() -> None:
    assert label_for("Lives in Denver\nwith  two kids.") == "Lives in Denver with two kids"


@given(st.text(min_size=1, max_size=500).filter(lambda t: t.strip()))
def test_every_label_fits_the_index(text: str) -> None:
    label = label_for(text)

    assert 0 < len(label) <= LABEL_CHARS
    assert len(label.split()) <= LABEL_WORDS
    assert "\n" not in label


# ---- the pick ----------------------------------------------------------------------------


def _ranked(spec: list[tuple[str, float]]) -> list[Ranked]:
    """Memories named by category and score, best first: `food-0`, `food-1`, …"""
    counts: dict[str, int] = {}
    out = []
    for category, score in spec:
        n = counts.get(category, 0)
        counts[category] = n + 1
        out.append(Ranked(f"{category}-{n}", category, score))
    return out


def test_the_unasked_three_are_not_ranks_16_to_18_when_those_share_the_chosen_categories() -> None:
    # Given 18 strong matches in two categories, then weaker ones in three other categories
    ranked = _ranked(
        [("diet", 0.9 - i * 0.01) for i in range(9)]
        + [("health", 0.8 - i * 0.01) for i in range(9)]
        + [("travel", 0.35), ("pets", 0.33), ("diet", 0.32), ("work", 0.31), ("home", 0.2)]
    )

    # When 15 are picked with the 3 unasked
    picked = pick(ranked, floor=0.3, k=15)

    # Then the 15 are the best 15, and the 3 come from the categories none of them is in
    ranks_16_to_18 = [r.memory_id for r in sorted(ranked, key=lambda r: -r.score)[15:18]]
    assert [r.memory_id for r in picked.relevant] == [
        r.memory_id for r in sorted(ranked, key=lambda r: -r.score)[:15]
    ]
    assert [r.memory_id for r in picked.unasked] == ["travel-0", "pets-0", "work-0"]
    assert not {r.memory_id for r in picked.unasked} & set(ranks_16_to_18)
    assert {r.category for r in picked.unasked}.isdisjoint({"diet", "health"})


def test_one_unasked_memory_per_category_best_category_first() -> None:
    ranked = _ranked([("diet", 0.9), ("pets", 0.5), ("pets", 0.45), ("work", 0.4), ("home", 0.35)])

    picked = pick(ranked, floor=0.6, k=15)

    assert [r.memory_id for r in picked.relevant] == ["diet-0"]
    assert [r.memory_id for r in picked.unasked] == ["pets-0", "work-0", "home-0"]


def test_only_matches_at_or_above_the_floor_are_relevant() -> None:
    ranked = _ranked([("diet", 0.5), ("diet", 0.3), ("diet", 0.29)])

    picked = pick(ranked, floor=0.3, k=15)

    assert [r.score for r in picked.relevant] == [0.5, 0.3]


def test_the_unasked_ones_must_be_related_enough() -> None:
    ranked = _ranked([("diet", 0.5), ("pets", 0.25), ("work", 0.15), ("home", 0.05)])

    picked = pick(ranked, floor=0.3, related_floor=0.2, k=15)

    assert [r.memory_id for r in picked.unasked] == ["pets-0"]


def test_hidden_counts_the_matches_left_out() -> None:
    # 20 matches above the floor in one category, one in another: 15 shown, 1 unasked above
    # the floor shown too, so 5 are hidden
    ranked = _ranked([("diet", 0.9 - i * 0.01) for i in range(20)] + [("pets", 0.4)])

    picked = pick(ranked, floor=0.3, k=15)

    assert len(picked.relevant) == 15 and [r.memory_id for r in picked.unasked] == ["pets-0"]
    assert picked.hidden == 5


def test_nothing_relevant_still_offers_related_ones() -> None:
    picked = pick(_ranked([("pets", 0.25), ("work", 0.22)]), floor=0.3, related_floor=0.2)

    assert picked.relevant == ()
    assert [r.memory_id for r in picked.unasked] == ["pets-0", "work-0"]
    assert picked.hidden == 0


def test_a_memory_listed_twice_counts_once_with_its_best_score() -> None:
    ranked = [Ranked("m1", "diet", 0.4), Ranked("m1", "diet", 0.9), Ranked("m2", "diet", 0.5)]

    picked = pick(ranked, floor=0.3, k=15)

    assert [(r.memory_id, r.score) for r in picked.relevant] == [("m1", 0.9), ("m2", 0.5)]


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c", "d", "e", "f"]), st.floats(-1, 2)),
        max_size=60,
    ),
    st.integers(1, 20),
)
def test_the_unasked_never_share_a_category_with_the_relevant_or_each_other(
    spec: list[tuple[str, float]], k: int
) -> None:
    picked = pick(_ranked(spec), floor=0.5, related_floor=0.2, k=k)

    chosen = {r.category for r in picked.relevant}
    extra = [r.category for r in picked.unasked]
    assert len(picked.relevant) <= k and len(picked.unasked) <= 3
    assert len(extra) == len(set(extra)) and chosen.isdisjoint(extra)
    assert all(r.score >= 0.5 for r in picked.relevant)
    assert all(r.score >= 0.2 for r in picked.unasked)
    assert picked.hidden >= 0


# ---- why it was stored -------------------------------------------------------------------


def test_a_memory_said_in_a_chat_that_corrected_another_says_so() -> None:
    source = message_id_for(new_conversation_id(), 3)
    memory = builders.memory(
        "alice",
        "Lives in Bengaluru.",
        AT,
        source_message_id=source,
        evidence=(source,),
        supersedes="mem_old",
        category="location",
    )

    assert reasoning_for(memory) == (
        "You said it in a chat on 2026-11-30; it replaced an earlier version. "
        "Kept as a fact under location."
    )


def test_an_inferred_memory_from_a_room_says_it_was_inferred() -> None:
    memory = builders.memory(
        "alice",
        "Likes quiet mornings.",
        AT,
        room_id="room_42",
        source_message_id="room_42_7",
        evidence=("room_42_7",),
        stated_by=StatedBy.INFERRED,
        kind=Kind.PREFERENCE,
        category="schedule",
    )

    assert reasoning_for(memory) == (
        "Inferred on 2026-11-30 from what was said in a room. Kept as a preference under schedule."
    )


def test_a_memory_written_through_the_api_was_added_by_the_user() -> None:
    memory = builders.memory("alice", "Is vegetarian.", AT, category="diet")

    assert (
        reasoning_for(memory) == "You added it yourself on 2026-11-30. Kept as a fact under diet."
    )
