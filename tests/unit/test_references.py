"""How a person speaks of their own people, pets and home: the book their memories give,
and how a message reads with it. A question saying "my husband" must reach the memory
saying "Chris" — but a question about cats in general must not be read as one about
their cat."""

from __future__ import annotations

import pytest

from chatmemory.domain.references import (
    Noted,
    References,
    book,
    home_in,
    may_refer,
    named_in,
    noted_in,
    read_with,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Is married to Chris, an ER nurse.", (("spouse", "Chris"),)),
        ("Her older sister, Hana, lives in Seattle.", (("sister", "Hana"),)),
        ("His wife Keiko teaches calligraphy.", (("spouse", "Keiko"),)),
        (
            "Has two children: a son, Theo, who is 8, and a daughter, June, who is 5.",
            (("son", "Theo"), ("daughter", "June")),
        ),
        ("Has a 15-year-old cat named Biscuit.", (("cat", "Biscuit"),)),
        ("Argues with a product manager named Kyle.", (("product manager", "Kyle"),)),
        ("Kasia, his partner, is a dentist.", (("partner", "Kasia"),)),
        ("Her partner\u2019s name never comes up.", ()),
    ],
)
def test_a_memory_names_the_persons_own_people_by_relation(
    text: str, expected: tuple[tuple[str, str], ...]
) -> None:
    assert named_in(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Sam's fiancée, Alexis, is a veterinarian.",  # Sam's, not hers
        "His son's daughter Hana turns 7.",  # a granddaughter, not a daughter
        "Has a Brother laser printer.",  # a brand
        "Her next-door neighbor, Mr. Alvarez, fixes things.",  # a title is not a name
        "Theo's best friend is Eli.",
    ],
)
def test_someone_elses_relations_and_look_alikes_are_not_the_persons_own(text: str) -> None:
    assert named_in(text) == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Lives in Denver, Colorado; moved there from Austin in 2024.", "Denver Colorado"),
        ("Moved from Delhi to Bengaluru in 2024.", "Bengaluru"),
        ("Lives in a fourth-floor apartment with no lift.", None),
        ("Her mother lives in Ankara.", None),  # where the mother lives, not the person
        ("Lives on a teacher's pension.", None),
    ],
)
def test_home_is_where_a_memory_says_the_person_lives(text: str, expected: str | None) -> None:
    assert home_in(text) == expected


LENA = book(
    noted_in(text)
    for text in (
        "Is married to Chris, an ER nurse.",
        "Has two children: a son, Theo, who is 8, and a daughter, June, who is 5.",
        "Has a 15-year-old cat named Biscuit.",
        "Lives in Denver, Colorado.",
        "Lives in Austin, Texas.",  # older: the newest home wins
    )
)


@pytest.mark.parametrize(
    ("message", "read"),
    [
        (
            "What should I get my husband for his birthday?",
            "What should I get my husband for his birthday? (Chris)",
        ),
        (
            "Which treats are okay for my senior kitty?",
            "Which treats are okay for my senior kitty? (Biscuit)",
        ),
        (
            "What can I put in the kids' stockings?",
            "What can I put in the kids' stockings? (Theo, June)",
        ),
        (
            "Where should Chris and I go on date night?",
            "Where should Chris and I go on date night? (my partner)",
        ),
        ("Grandma wants to see Theo.", "Grandma wants to see Theo. (my son)"),
        (
            "Where could I meet people around here?",
            "Where could I meet people around here? (Denver Colorado)",
        ),
        ("My son Theo loves trains.", "My son Theo loves trains."),  # nothing new to add
    ],
)
def test_a_message_reads_with_the_other_half_of_each_reference(message: str, read: str) -> None:
    assert read_with(message, LENA) == read


@pytest.mark.parametrize(
    "message",
    [
        "Why do cats purr?",  # cats in general
        "I'm dragging at 4pm every day. Espresso or tea?",  # "pm" inside a time
        "A cat from Dundee sat in a tree.",  # a cat, not my cat
        "What is the capital of France?",
    ],
)
def test_a_message_about_the_world_reads_as_it_was(message: str) -> None:
    assert read_with(message, LENA) == message


def test_an_empty_book_changes_nothing() -> None:
    assert read_with("What should I get my husband?", References()) == (
        "What should I get my husband?"
    )
    assert book([Noted(), Noted()]) == References()


@pytest.mark.parametrize(
    ("message", "may"),
    [
        ("What should I get my husband?", True),
        ("Is Theo old enough for a bike?", True),
        ("Anything fun to do around here?", True),
        ("what is the capital of france", False),
        ("How does photosynthesis work?", False),
    ],
)
def test_only_a_message_that_could_name_someone_opens_the_book(message: str, may: bool) -> None:
    assert may_refer(message) is may
