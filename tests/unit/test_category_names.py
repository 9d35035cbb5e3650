"""Any category name an app gives maps to the recommended category whose uses fit it, so a
memory typed as "food" or "pet_care" is found by the questions a "diet" or "pets" one is."""

from __future__ import annotations

import pytest

from chatmemory.domain.uses import CATEGORY_USES, recommended_category


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("food", "diet"),
        ("dietary_restrictions", "diet"),
        ("pet_care", "pets"),
        ("career", "work"),
        ("work_schedule", "work"),
        ("home_city", "location"),
        ("kids", "family"),
        ("medical", "health"),
        ("interests", "hobbies"),
        ("money", "finance"),
        ("devices", "tech"),
        ("trips", "travel"),
        ("Hobby", "hobbies"),
        ("small_animals", "pets"),
    ],
)
def test_a_name_the_api_does_not_recommend_finds_the_one_it_stands_for(
    name: str, category: str
) -> None:
    assert recommended_category(name) == category


@pytest.mark.parametrize("name", list(CATEGORY_USES))
def test_a_recommended_name_is_itself(name: str) -> None:
    assert recommended_category(name) == name


@pytest.mark.parametrize("name", ["general", "misc", "personal_info", "other", "notes"])
def test_a_name_that_says_nothing_of_the_topic_is_left_to_the_memorys_words(name: str) -> None:
    assert recommended_category(name) is None
