"""What counts as sensitive (domain/sensitive.py): by category, a free-text name of one,
or words no ordinary fact uses — and the ordinary facts that must stay always-on."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chatmemory.domain.sensitive import is_sensitive, sensitive_category
from tests.support import builders

NOW = datetime(2026, 12, 1, 9, tzinfo=UTC)


@pytest.mark.parametrize(
    ("category", "sensitive"),
    [
        ("health", "health"),
        ("medical", "health"),
        ("Mental-Health", "health"),
        ("faith", "religion"),
        ("political_views", "politics"),
        ("sexual_orientation", "sexuality"),
        ("criminal_record", "criminal"),
        ("diet", None),
        ("pets", None),
        ("general", None),
    ],
)
def test_a_category_is_read_as_the_sensitive_one_it_stands_for(
    category: str, sensitive: str | None
) -> None:
    assert sensitive_category(category) == sensitive


@pytest.mark.parametrize(
    "text",
    [
        "Has diabetes.",
        "Was diagnosed with ADHD in 2024.",
        "Sees a therapist every Tuesday.",
        "Goes to church on Sundays.",
        "Is Muslim.",
        "Is gay.",
        "Is a Labour voter.",
        "Was arrested in 2019.",
        "Is in debt after the divorce.",
        "Earns 80k a year.",
    ],
)
def test_sensitive_words_mark_a_memory_whatever_its_category(text: str) -> None:
    assert is_sensitive(builders.memory("alice", text, NOW, category="general"))


@pytest.mark.parametrize(
    "text",
    [
        "Lives in Lisbon.",
        "Is vegetarian.",
        "Is allergic to peanuts.",
        "Is pregnant with their first child.",
        "Works as a physical therapist.",
        "Is a criminal lawyer.",
        "Works at a hospital.",
        "Has a bi-weekly team meeting.",
        "Works in operations.",
        "Plays guitar in a band.",
    ],
)
def test_ordinary_facts_stay_in_the_always_on_blocks(text: str) -> None:
    assert not is_sensitive(builders.memory("alice", text, NOW, category="general"))
